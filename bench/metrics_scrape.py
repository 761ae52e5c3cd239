"""What one /metrics scrape costs as the journal grows: the JournalCollector's two grouped queries,
against a plain `SELECT count(*) FROM jobs` over the same SQLite file, measured in the same run.

    PYTHONPATH=... python bench/metrics_scrape.py [ROWS ...]      (default: 10000 100000)

Prints, per journal size, the first scrape (it tallies up to 20000 finished jobs), then, once every job
is tallied, the median scrape, the baseline's median and their ratio.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from prometheus_client import generate_latest
from sqlalchemy import func, insert, select

from oz0.edge.runtime.metrics import metrics_registry
from oz0.edge.runtime.store import Store, jobs

AGENTS = [f"agent-{i}" for i in range(12)]
STATUSES = ["succeeded"] * 8 + ["failed", "interrupted", "queued", "running"]


class _Runtime:
    def __init__(self, store: Store) -> None:
        self.store = store


def fill(store: Store, rows: int) -> None:
    rng = random.Random(7)
    batch = []
    for i in range(rows):
        started = 1_700_000_000.0 + i
        status = rng.choice(STATUSES)
        ended = None if status in ("queued", "running") else started + rng.expovariate(1.0)
        batch.append({"id": f"{i:032x}", "agent": rng.choice(AGENTS), "requester": "bench", "channel": "cli",
                      "input": "x", "status": status, "created": started, "started": started, "ended": ended,
                      "attempts": 1})
        if len(batch) == 5000:
            with store.engine.begin() as conn:
                conn.execute(insert(jobs), batch)
            batch = []
    if batch:
        with store.engine.begin() as conn:
            conn.execute(insert(jobs), batch)


def median_s(fn, repeat: int = 9) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(sizes: list[int]) -> None:
    for rows in sizes:
        with tempfile.TemporaryDirectory() as folder:
            store = Store(f"sqlite:///{Path(folder) / 'oz0.db'}")
            fill(store, rows)
            registry = metrics_registry(_Runtime(store))

            def baseline() -> None:
                with store.engine.connect() as conn:
                    conn.execute(select(func.count()).select_from(jobs)).scalar()

            first = median_s(lambda: generate_latest(registry), repeat=1)  # reads up to 20000 finished jobs
            for _ in range(rows // 20_000 + 1):  # caught up: every finished job tallied
                generate_latest(registry)
            scrape = median_s(lambda: generate_latest(registry))
            base = median_s(baseline)
            print(f"{rows:>8} jobs: first scrape {first * 1000:7.1f} ms; caught up: scrape {scrape * 1000:6.1f} ms, "
                  f"count(*) {base * 1000:5.2f} ms, ratio {scrape / base:6.1f}x; body {len(generate_latest(registry)):,} bytes")
            store.close()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])
