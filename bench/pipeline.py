"""How much the edge costs on a result's path, against the cost of reading its JSON at all.

A chat bot gets about 3 seconds to answer and shares its process with every other ask, so the
edge (parse, check against the contract, choose the card, draw it for Slack and Discord) must cost
about what `json.loads` of the same bytes costs. This script builds results of about 1 KiB, 16 KiB
and 64 KiB in each form (a table, key-values, a diff of two texts, markdown text, a QZX envelope),
and measures, by the median of many repetitions in one run (of CPU time by default, so that other
work on the machine does not blur the figures; `--clock wall` for elapsed time; the floor and the
pipeline taken in turn, so that both see the machine at the same speed):

- floor:    `json.loads(data)`;
- pipeline: `json.loads(data)` (as the runtime reads a job's answer back from its journal, whose JSON
  column SQLAlchemy parses with `json`; orjson would save 0.26 ms on the 64 KiB table but its parse
  buffer alone adds 16x the payload to the peak memory, against 9x for the whole pipeline with
  `json`), `contract.validate(result)` (the runtime's output check, with a
  Contract held once, as the runtime holds it), `choose_card(result, contract, checked=True)` (the
  runtime does not check the same answer twice), and the Slack and Discord renderers from
  `renderers.RENDERERS` (each returns a `Rendered`: payload, uploads and cuts);
- naive:    `json.loads(data)`, `jsonschema.validate(result, schema)` on every call (the
  python-jsonschema one-liner: it checks the schema and builds a validator each time), then the same
  `choose_card` and renderers.

It prints the medians, the ratios pipeline/floor and naive/pipeline, the peak memory the pipeline
adds (tracemalloc) for each 64 KiB result, and how many schemas were compiled while timing (none:
each contract is compiled once). The targets: pipeline/floor at most 15x on the 1 KiB table (where
the edge's fixed cost per card shows most) and at most 4x on the 64 KiB table; on the 64 KiB table
also naive/pipeline at least 20x and the added peak at most 10x the payload; and no schema compiled
while timing.

The "64 KiB" results are sized just under the 65,536-byte card limit, so they are drawn (the most
work); a larger result is not drawn but attached, which is cheaper.

Run: `python bench/pipeline.py` (or `make bench`). `--profile table:64` prints a pyinstrument
profile of the pipeline for one result (pyinstrument must be installed; the benchmark itself does
not need it). `--strict` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jsonschema
import orjson

from oz0.edge.cards.choice import MAX_CARD_BYTES, choose_card
from oz0.edge.contracts.schema import Contract, compile_count, load_contract
from oz0.renderers import RENDERERS, Rendered

__all__ = ["FORMS", "SIZES", "Case", "build", "main"]

SIZES: dict[str, int] = {"1": 1_024, "16": 16_384, "64": MAX_CARD_BYTES - 512}
PLATFORMS = ("slack", "discord")
DIALECT = "https://json-schema.org/draft/2020-12/schema"
QZX_SCHEMA = ROOT / "schemas" / "qzx-result-v1.schema.json"

TARGET_FLOOR_RATIOS: dict[str, float] = {"table:1": 15.0, "table:64": 4.0}  # pipeline/floor, at most
TARGET_NAIVE_RATIO = 20.0
TARGET_MEMORY_FACTOR = 10.0

_SERVICES = ("billing", "auth", "search", "checkout", "ledger", "notifier", "gateway", "reports")
_STATUSES = ("succeeded", "failed", "rolled_back", "running")
_WORDS = ("deploy", "latency", "cache", "queue", "shard", "replica", "timeout", "retry", "<@U024BE7LH>",
          "*bold*", "`tick`", "naïve", "Zürich", "日本語", "@everyone", "p99", "rollout", "canary")


@dataclass(frozen=True)
class Case:
    """One result to measure: its form, nominal size, schema and the JSON bytes an agent sent."""

    form: str
    size: str
    schema: dict[str, Any]
    data: bytes

    @property
    def label(self) -> str:
        return f"{self.form}:{self.size}"


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _deploy_row(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": i,
        "service": rng.choice(_SERVICES),
        "version": f"{rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}",
        "status": rng.choice(_STATUSES),
        "started": f"2025-03-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
        "duration_ms": round(rng.uniform(100, 90_000), 1),
        "note": _sentence(rng, rng.randint(2, 6)),
    }


_ROW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "service", "version", "status", "started"],
    "additionalProperties": False,
    "x-oz0-order": ["service", "version", "status"],
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "service": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
        "version": {"type": "string", "pattern": "^\\d+\\.\\d+\\.\\d+$"},
        "status": {"enum": list(_STATUSES)},
        "started": {"type": "string", "format": "date-time"},
        "duration_ms": {"type": "number", "minimum": 0},
        "note": {"type": "string", "maxLength": 500},
    },
}


def _grow(target: int, make: Callable[[int], Any], wrap: Callable[[list[Any]], Any]) -> Any:
    """The largest `wrap([make(0), make(1), ...])` whose compact JSON stays within `target` bytes."""
    items: list[Any] = []
    while True:
        candidate = items + [make(len(items))]
        if len(orjson.dumps(wrap(candidate))) > target and items:
            return wrap(items)
        items = candidate


def _table(target: int, rng: random.Random) -> tuple[dict[str, Any], Any]:
    schema = {
        "$schema": DIALECT,
        "type": "object",
        "required": ["deploys"],
        "properties": {"deploys": {"type": "array", "items": {"$ref": "#/$defs/deploy"}}},
        "$defs": {"deploy": _ROW_SCHEMA},
    }
    return schema, _grow(target, lambda i: _deploy_row(rng, i), lambda rows: {"deploys": rows})


def _key_values(target: int, rng: random.Random) -> tuple[dict[str, Any], Any]:
    schema = {
        "$schema": DIALECT,
        "type": "object",
        "required": ["incident", "severity", "opened"],
        "properties": {
            "incident": {"type": "string"},
            "severity": {"enum": ["sev1", "sev2", "sev3"]},
            "opened": {"type": "string", "format": "date-time"},
            "owner": {"type": "string"},
        },
        "additionalProperties": {"type": ["string", "number", "boolean", "object"]},
    }

    def fact(i: int) -> tuple[str, Any]:
        kind = i % 4
        if kind == 0:
            return f"metric_{i}", round(rng.uniform(0, 1_000), 3)
        if kind == 1:
            return f"observed_{i}", _sentence(rng, rng.randint(4, 14))
        if kind == 2:
            return f"flag_{i}", rng.random() < 0.5
        return f"host_{i}", {"name": f"host-{i}.example.net", "zone": rng.choice(("a", "b", "c"))}

    head = {"incident": "INC-2041: checkout latency", "severity": "sev2", "opened": "2025-03-04T10:22:00Z",
            "owner": "<@U024BE7LH> on call"}
    return schema, _grow(target, fact, lambda facts: {**head, **dict(facts)})


def _config_lines(rng: random.Random, count: int) -> list[str]:
    return [f"{rng.choice(_SERVICES)}.{rng.choice(_WORDS[:8])}_{i} = {rng.randint(0, 10_000)}  # {_sentence(rng, 3)}"
            for i in range(count)]


def _diff(target: int, rng: random.Random) -> tuple[dict[str, Any], Any]:
    schema = {
        "$schema": DIALECT,
        "type": "object",
        "x-oz0-diff": {"before": "old", "after": "new"},
        "x-oz0-order": ["path"],
        "required": ["path", "old", "new"],
        "properties": {"path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}},
    }
    base = _config_lines(rng, 4_000)

    def make(lines: list[str]) -> dict[str, Any]:
        new = [ln.replace("= ", "= 1") if i % 9 == 4 else ln for i, ln in enumerate(lines)]
        return {"path": "/etc/oz0/services.conf", "old": "\n".join(lines), "new": "\n".join(new)}

    return schema, _grow(target, lambda i: base[i], make)


def _markdown(target: int, rng: random.Random) -> tuple[dict[str, Any], Any]:
    schema = {"$schema": DIALECT, "type": "string", "maxLength": 200_000}

    def section(i: int) -> str:
        kind = i % 5
        if kind == 0:
            return f"## {_sentence(rng, 3)} {i}\n\n{_sentence(rng, 30)} **{_sentence(rng, 2)}** _{_sentence(rng, 2)}_."
        if kind == 1:
            return "\n".join(f"- {_sentence(rng, 6)} [runbook](https://example.com/r/{i}/{j})" for j in range(4))
        if kind == 2:
            return "```yaml\n" + "\n".join(f"{w}: {rng.randint(0, 99)}" for w in _WORDS[:6]) + "\n```"
        if kind == 3:
            return "| service | p99 | note |\n|---|---:|---|\n" + "\n".join(
                f"| {rng.choice(_SERVICES)} | {rng.randint(10, 900)} | {_sentence(rng, 3)} |" for _ in range(4))
        return "> " + _sentence(rng, 20) + "\n>\n> 1. " + _sentence(rng, 5) + "\n> 2. `" + _sentence(rng, 3) + "`"

    return schema, _grow(target, section, lambda parts: "\n\n".join(parts))


def _qzx(target: int, rng: random.Random) -> tuple[dict[str, Any], Any]:
    schema = json.loads(QZX_SCHEMA.read_text(encoding="utf-8"))

    def wrap(rows: list[Any]) -> dict[str, Any]:
        return {"success": True, "message": f"Deploys read: {len(rows)} in the last 30 days.",
                "deploys": rows, "warnings": ["2 deploys were rolled back"],
                "meta": {"schema_version": 1, "command": "deploys list --days 30", "duration_ms": 41.5}}

    return schema, _grow(target, lambda i: _deploy_row(rng, i), wrap)


FORMS: dict[str, Callable[[int, random.Random], tuple[dict[str, Any], Any]]] = {
    "table": _table,
    "key_values": _key_values,
    "diff": _diff,
    "markdown": _markdown,
    "qzx": _qzx,
}


def build(form: str, size: str) -> Case:
    """The result of `form` (a key of FORMS) at `size` (a key of SIZES), the same on every run."""
    schema, result = FORMS[form](SIZES[size], random.Random(f"{form}:{size}"))
    return Case(form, size, schema, orjson.dumps(result))


# Measuring ---------------------------------------------------------------------------------------

def pipeline(data: bytes, contract: Contract) -> list[Rendered]:
    """What the edge does to every result: parse, check, choose the card, draw it for each platform.

    As in the runtime, an answer that met its contract is not checked again by `choose_card`.
    """
    result = json.loads(data)
    checked = not contract.validate(result)
    card = choose_card(result, contract, checked=checked)
    return [RENDERERS[p](card) for p in PLATFORMS]


def naive(data: bytes, schema: dict[str, Any], contract: Contract) -> list[Rendered]:
    """The same with the one-liner that builds a validator on every call (it raises unless the result conforms)."""
    result = json.loads(data)
    jsonschema.validate(result, schema)
    card = choose_card(result, contract, checked=True)
    return [RENDERERS[p](card) for p in PLATFORMS]


CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = CLOCKS["cpu"]


def median_seconds(call: Callable[[], Any], *, budget: float, least: int = 7, most: int = 5_000) -> float:
    """The median time of `call` over as many runs as fit `budget` seconds (at least `least`)."""
    return median_pair(call, None, budget=budget, least=least, most=most)[0]


def median_pair(first: Callable[[], Any], second: Callable[[], Any] | None, *, budget: float, least: int = 7,
                most: int = 5_000) -> tuple[float, float]:
    """The median times of `first` and `second`, run in turn, over as many rounds as fit `budget` seconds.

    Taken in turn, the floor and the pipeline see the same machine: a shared 2-core machine runs at one
    speed for some seconds, then at another (json.loads of the 1 KiB table took 13 us, then 26 us, for
    seconds at a time), so medians taken one after the other could move their ratio twofold."""
    calls = [c for c in (first, second) if c is not None]
    for call in calls:
        call()
    gc.collect()
    times: list[list[float]] = [[] for _ in calls]
    spent = 0.0
    while len(times[0]) < least or (spent < budget and len(times[0]) < most):
        for call, taken in zip(calls, times):
            start = _clock()
            call()
            elapsed = _clock() - start
            taken.append(elapsed)
            spent += elapsed
    medians = [statistics.median(t) for t in times]
    return medians[0], medians[-1]


def added_peak(call: Callable[[], Any]) -> int:
    """The peak bytes `call` allocates above what was already held (tracemalloc)."""
    call()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


@dataclass(frozen=True)
class Row:
    case: Case
    floor: float
    ours: float
    naive: float
    peak: int | None


def measure(cases: list[Case], *, budget: float) -> tuple[list[Row], int, int]:
    """Every case measured; also the schemas compiled before timing and while timing."""
    before = compile_count()
    contracts = {c.label: load_contract(c.schema, source=c.label) for c in cases}
    compiled_at_load = compile_count() - before
    for case in cases:
        problems = contracts[case.label].validate(orjson.loads(case.data))
        if problems:
            raise SystemExit(f"{case.label}: the built result breaks its own schema: {problems[0].describe()}")
    timed_from = compile_count()
    rows = []
    for case in cases:
        contract = contracts[case.label]
        data, schema = case.data, case.schema
        floor, ours = median_pair(lambda: json.loads(data), lambda: pipeline(data, contract), budget=2 * budget)
        rows.append(Row(
            case,
            floor=floor,
            ours=ours,
            naive=median_seconds(lambda: naive(data, schema, contract), budget=budget, least=5),
            peak=added_peak(lambda: pipeline(data, contract)) if case.size == "64" else None,
        ))
    return rows, compiled_at_load, compile_count() - timed_from


def _ms(seconds: float) -> str:
    return f"{seconds * 1_000:9.3f}"


def report(rows: list[Row], compiled_at_load: int, compiled_while_timing: int, *, elapsed: float,
           clock: str = "cpu") -> bool:
    """Print the table and the verdicts; True when every target holds."""
    print(f"oz0-edge pipeline benchmark — Python {sys.version.split()[0]}, medians in ms of {clock} time")
    print(f"{'result':<14}{'bytes':>8} {'floor':>9} {'pipeline':>9} {'naive':>9} {'pipe/floor':>11}"
          f" {'naive/pipe':>11} {'peak KiB':>9} {'peak/bytes':>11}")
    for r in rows:
        size = len(r.case.data)
        peak = f"{r.peak / 1024:9.0f} {r.peak / size:10.1f}x" if r.peak is not None else f"{'':9} {'':11}"
        print(f"{r.case.label:<14}{size:>8} {_ms(r.floor)} {_ms(r.ours)} {_ms(r.naive)}"
              f" {r.ours / r.floor:10.1f}x {r.naive / r.ours:10.1f}x {peak}")
    print(f"schemas compiled: {compiled_at_load} at load ({len(rows)} contracts), "
          f"{compiled_while_timing} while timing")
    checks = [(f"{r.case.label} pipeline/floor {r.ours / r.floor:.1f} <= {TARGET_FLOOR_RATIOS[r.case.label]:g}",
               r.ours / r.floor <= TARGET_FLOOR_RATIOS[r.case.label]) for r in rows if r.case.label in TARGET_FLOOR_RATIOS]
    target = next((r for r in rows if r.case.label == "table:64"), None)
    if target is not None:
        size = len(target.case.data)
        checks += [
            (f"table:64 naive/pipeline {target.naive / target.ours:.1f} >= {TARGET_NAIVE_RATIO:g}",
             target.naive / target.ours >= TARGET_NAIVE_RATIO),
            (f"table:64 added peak {target.peak / size:.1f}x the payload <= {TARGET_MEMORY_FACTOR:g}x",
             target.peak is not None and target.peak / size <= TARGET_MEMORY_FACTOR),
        ]
    checks.append((f"compilations while timing {compiled_while_timing} == 0", compiled_while_timing == 0))
    print("targets:")
    ok = True
    for text, held in checks:
        print(f"  {'ok  ' if held else 'MISS'} {text}")
        ok = ok and held
    print(f"ran in {elapsed:.1f} s")
    return ok


def profile(label: str, *, seconds: float = 3.0) -> None:
    """A pyinstrument profile of the pipeline on one result, repeated for `seconds`."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        raise SystemExit("--profile needs pyinstrument: .venv/bin/pip install pyinstrument") from None
    form, _, size = label.partition(":")
    if form not in FORMS or size not in SIZES:
        raise SystemExit(f"--profile takes FORM:SIZE with FORM in {', '.join(FORMS)} and SIZE in {', '.join(SIZES)}")
    case = build(form, size)
    contract = load_contract(case.schema, source=case.label)
    pipeline(case.data, contract)
    profiler = Profiler(interval=0.0001)
    calls = 0
    with profiler:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pipeline(case.data, contract)
            calls += 1
    print(f"{calls} pipeline calls on {case.label} ({len(case.data):,} bytes)")
    print(profiler.output_text(unicode=True, color=False, show_all=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forms", default=",".join(FORMS), help="comma-separated forms (default: all)")
    parser.add_argument("--sizes", default=",".join(SIZES), help="comma-separated sizes in KiB: 1,16,64")
    parser.add_argument("--budget", type=float, default=0.4,
                        help="seconds of repetitions per measurement (default 0.4)")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu",
                        help="cpu: this process's CPU time, steady on a busy machine (default); wall: elapsed time")
    parser.add_argument("--profile", metavar="FORM:SIZE", help="print a pyinstrument profile instead")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile)
        return 0
    forms = [f for f in args.forms.split(",") if f]
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [f for f in forms if f not in FORMS] + [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown form or size: {', '.join(unknown)}; forms: {', '.join(FORMS)}; sizes: {', '.join(SIZES)}")
    missing = [p for p in PLATFORMS if p not in RENDERERS]
    if missing:
        raise SystemExit(f"renderers.RENDERERS has no {', '.join(missing)} renderer")
    global _clock
    _clock = CLOCKS[args.clock]
    started = time.perf_counter()
    cases = [build(f, s) for f in forms for s in sizes]
    rows, at_load, while_timing = measure(cases, budget=args.budget)
    ok = report(rows, at_load, while_timing, elapsed=time.perf_counter() - started, clock=args.clock)
    return 1 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
