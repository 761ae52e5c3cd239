"""The benchmark measures what it says: its results are valid, drawn, of the right form and size.

No timing is asserted here (that is the benchmark's own report); this only keeps `bench/pipeline.py`
honest and runnable as the code under it changes.
"""

from __future__ import annotations

import importlib.util
import sys

import orjson
import pytest
from paths import ROOT

from oz0.edge.cards.choice import MAX_CARD_BYTES, choose_card
from oz0.edge.contracts.schema import compile_count, load_contract

BENCH = ROOT / "bench" / "pipeline.py"


def _load_bench():
    spec = importlib.util.spec_from_file_location("oz0_bench_pipeline", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _load_bench()

EXPECTED_FORM = {"table": "table", "key_values": "key_values", "diff": "diff", "markdown": "text", "qzx": "table"}


@pytest.mark.parametrize("size", list(bench.SIZES))
@pytest.mark.parametrize("form", list(bench.FORMS))
def test_built_results_are_valid_drawn_and_of_their_form(form: str, size: str) -> None:
    case = bench.build(form, size)
    assert bench.SIZES[size] * 0.9 <= len(case.data) <= bench.SIZES[size]
    assert len(case.data) < MAX_CARD_BYTES
    contract = load_contract(case.schema, source=case.label)
    result = orjson.loads(case.data)
    assert contract.validate(result) == ()
    card = choose_card(result, contract)
    assert card.drawn, card.reason
    assert card.form == EXPECTED_FORM[form]
    assert (card.status is not None) == (form == "qzx")


def test_builds_are_the_same_on_every_run() -> None:
    assert bench.build("table", "16").data == bench.build("table", "16").data


def test_pipeline_and_naive_draw_the_same_payloads_without_compiling_again() -> None:
    case = bench.build("qzx", "16")
    contract = load_contract(case.schema)
    before = compile_count()
    ours = bench.pipeline(case.data, contract)
    theirs = bench.naive(case.data, case.schema, contract)
    assert compile_count() == before
    assert ours == theirs
    slack, discord = (r.payload for r in ours)
    assert slack["blocks"] and discord["components"]


def test_the_script_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--forms", "table,markdown", "--sizes", "1", "--budget", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "pipe/floor" in out and "naive/pipe" in out
    assert "table:1" in out and "markdown:1" in out
    assert "0 while timing" in out


def test_unknown_form_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main(["--forms", "tabel"])
    assert "tabel" in capsys.readouterr().err
