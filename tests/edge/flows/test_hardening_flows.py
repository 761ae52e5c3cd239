"""Flow expressions that grow without bound (issue 29 item 9): a doubling JMESPath expression over a
3-element input is refused early, naming the limit, in little memory and time, and the flow fails
with that one line instead of running for a minute."""

from __future__ import annotations

import asyncio
import time
import tracemalloc

import pytest
from flow_kit import RELEASE
from test_flows import installed

from oz0.edge.plugins.expressions import MAX_EXPRESSION_GROWTH, MAX_EXPRESSION_S, ExpressionError, evaluate

STATE = {"input": {"repo": "acme/api", "pr": 2, "tags": ["a", "b", "c"]}, "steps": {}}
NESTED = "input.tags" + " | [@, @]" * 40      # shared halves: 2**40 values once written out
FLATTENED = "input.tags" + " | [@, @][]" * 40  # real copies: doubles each time


def test_a_doubling_expression_is_refused_at_the_size_limit_early_and_in_little_memory():
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(ExpressionError) as err:
            evaluate(NESTED, STATE)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"{MAX_EXPRESSION_GROWTH:,} more than the flow's state holds: refused" in str(err.value)
    assert time.monotonic() - started < 1.0 and peak < 5 << 20


def test_a_flattening_doubling_expression_is_refused_by_size_or_time():
    started = time.monotonic()
    with pytest.raises(ExpressionError, match=r"refused$") as err:
        evaluate(FLATTENED, STATE)
    assert "more than the flow's state holds" in str(err.value) or f"more than {MAX_EXPRESSION_S:g} s" in str(err.value)
    assert time.monotonic() - started < MAX_EXPRESSION_S + 1.5


def test_ordinary_expressions_over_a_large_state_still_evaluate():
    rows = [{"id": i, "name": f"row {i}"} for i in range(50_000)]
    state = {"input": {"rows": rows}, "steps": {}}
    assert evaluate("length(input.rows[*].{n: name})", state) == 50_000
    assert evaluate("input.rows[?id == `7`].name | [0]", state) == "row 7"


def test_a_flow_whose_mapping_doubles_fails_with_one_line_naming_the_limit(tmp_path):
    flow = {**RELEASE, "steps": [{"id": "merge", "agent": "merger", "input": {
        "repo": "input.repo", "pr": "input.pr", "note": "to_string([input.repo]" + " | [@, @]" * 22 + ")"}}]}
    runtime = installed(tmp_path, flows={"release": flow})
    try:
        started = time.monotonic()
        job = asyncio.run(runtime.run("release", '{"repo": "acme/api", "pr": 2}'))
        assert time.monotonic() - started < 10
        assert (job.status, job.failure_kind) == ("failed", "Misconfigured")
        assert job.failure_reason.startswith("step merge input.note: ")
        assert job.failure_reason.endswith(f"{MAX_EXPRESSION_GROWTH:,} more than the flow's state holds: refused")
    finally:
        runtime.close()
