"""Budgets: what reserving and settling costs per call.

An http agent answering from a loopback server, run to its end one job at a time, in one process
(journal alone, no engine): without any budget, then covered by two budgets (its own, per day, and an
access.yaml budget of its channel), each call reserved in one transaction and settled in another. On
SQLite, and on a real Postgres when its server binaries are installed (tests/support/postgres_server.py).
Prints the per-job medians and the ratio against the run without budgets, measured in the same run.

    PYTHONPATH=... .venv/bin/python bench/budgets.py [--count 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support")]

import yaml
from loopback import Loopback
from plugin_kit import make_plugin

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime


def runtime(folder: Path, url: str, *, budgets: bool, count: int, database_url: str | None) -> Runtime:
    agent: dict[str, object] = {"kind": "http", "url": url, "input": "text", "output": "text"}
    if budgets:
        agent["budget"] = {"calls": count * 10, "per": "day"}
    rt = Runtime(folder / "home", database_url=database_url, flow_engine=FLOW_ENGINE)
    install_plugin(rt, load_plugin(make_plugin(folder / "plugin", agents={"hook": agent})))
    if budgets:
        (folder / "home" / "access.yaml").write_text(yaml.safe_dump({"budgets": [{"platform": "cli",
                                                                                   "calls": count * 10}]}))
    return rt


def measure(label: str, count: int, database_url: Callable[[], str] | None) -> None:
    """Jobs of the two runtimes taken in turns (plain, budgeted, plain, ...), so a busy machine slows both."""
    with Loopback(lambda data, headers, path: (200, "ok")) as server, tempfile.TemporaryDirectory() as tmp:
        runtimes = {budgets: runtime(Path(tmp) / str(budgets), server.url, budgets=budgets, count=count,
                                     database_url=database_url() if database_url else None)
                    for budgets in (False, True)}
        times: dict[bool, list[float]] = {False: [], True: []}

        async def main() -> None:
            for i in range(count * 2):
                budgets = bool(i % 2)
                started = time.perf_counter()
                job = await runtimes[budgets].run("hook", f"n{i}", channel="cli")
                times[budgets].append(time.perf_counter() - started)
                assert job.status == "succeeded", job.failure_reason
        asyncio.run(main())
        [own, place] = runtimes[True].budgets.report(runtimes[True].jobs(limit=1)[0])
        assert own.spent.calls == count and place.spent.calls == count
        for rt in runtimes.values():
            rt.close()
    plain, budgeted = (statistics.median(times[b]) * 1000 for b in (False, True))
    print(f"{label}: per job (median of {count}), no budget {plain:.2f} ms, two budgets {budgeted:.2f} ms "
          f"(ratio {budgeted / plain:.2f}, {budgeted - plain:+.2f} ms per call)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    measure("SQLite", args.count, None)
    from postgres_server import PostgresServer, find_binaries

    if find_binaries() is None:
        print("Postgres: skipped (no server binaries)")
        return
    server = PostgresServer.start()
    try:
        measure("Postgres", args.count, server.database)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
