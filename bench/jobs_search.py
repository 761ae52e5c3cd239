"""Job search over a large journal on a real Postgres (tests/support/postgres_server.py).

Fills a fresh database with N jobs in one bulk INSERT ... SELECT generate_series (default 1,000,000:
30 agents, 7 statuses, 2,000 askers, created over 180 days) and a tenth more of an agent whose jobs are all
100 to 180 days old (one in a hundred cancelled), the case where reading the newest jobs and filtering
them reads most of the journal; VACUUM ANALYZEs it (as autovacuum does a journal), then runs each filter of
edge.runtime.job_search (a page of 50, as `GET /v1/jobs` does) and prints its p50/p99 against the floor
of a primary-key lookup (Store.job) measured in the same run. The target: every filter <= 100 ms.

    .venv/bin/python bench/jobs_search.py [--jobs 1000000] [--rounds 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support")]

from postgres_server import PostgresServer
from sqlalchemy import text

from oz0.edge.runtime.job_search import parse_query, search_jobs
from oz0.edge.runtime.store import Store

FILL = """
INSERT INTO jobs (id, agent, requester, channel, input, status, created, attempts)
SELECT lpad(to_hex(n), 32, '0'), 'agent-' || (n % 30), 'user-' || (n % 2000), 'cli', 'x',
       (ARRAY['succeeded','succeeded','succeeded','succeeded','failed','interrupted','skipped'])[1 + n % 7],
       :now - (n::float8 / :jobs) * 180 * 86400, 1
FROM generate_series(1, :jobs) AS n
"""
FILL_OLD = """
INSERT INTO jobs (id, agent, requester, channel, input, status, created, attempts)
SELECT 'old' || lpad(to_hex(n), 29, '0'), 'agent-retired', 'user-' || (n % 2000), 'cli', 'x',
       CASE WHEN n % 100 = 0 THEN 'cancelled' ELSE 'succeeded' END,
       :now - 100 * 86400 - (n::float8 / (:jobs / 10)) * 80 * 86400, 1
FROM generate_series(1, :jobs / 10) AS n
"""


def timed(fn: Callable[[], object], rounds: int) -> tuple[float, float]:
    fn()
    took = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000, help="how many jobs to fill (default 1,000,000)")
    parser.add_argument("--rounds", type=int, default=50, help="queries per filter (default 50)")
    args = parser.parse_args()
    server = PostgresServer.start()
    try:
        store = Store(server.database())
        now = time.time()
        start = time.perf_counter()
        with store.engine.begin() as conn:
            conn.execute(text(FILL), {"now": now, "jobs": args.jobs})
            conn.execute(text(FILL_OLD), {"now": now, "jobs": args.jobs})
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE jobs"))
        print(f"filled {args.jobs + args.jobs // 10:,} jobs in {time.perf_counter() - start:.1f} s "
              f"(load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
        second = search_jobs(store.engine, parse_query(agent="agent-7")).next_cursor
        second_old = search_jobs(store.engine, parse_query(agent="agent-retired")).next_cursor
        filters: dict[str, dict[str, str | None]] = {
            "newest (no filter)": {},
            "agent": {"agent": "agent-7"},
            "status=failed": {"status": "failed"},
            "asker": {"asker": "user-42"},
            "since 2h": {"since": "2h"},
            "agent + since 30d": {"agent": "agent-7", "since": "30d"},
            "agent + status": {"agent": "agent-7", "status": "failed"},
            "asker + until 90d": {"asker": "user-42", "until": "90d"},
            "agent, 2nd page": {"agent": "agent-7", "cursor": second},
            "old agent": {"agent": "agent-retired"},
            "old agent + since 30d (none)": {"agent": "agent-retired", "since": "30d"},
            "old agent + status": {"agent": "agent-retired", "status": "succeeded"},
            "status=cancelled (old)": {"status": "cancelled"},
            "old agent, 2nd page": {"agent": "agent-retired", "cursor": second_old},
        }
        some_id = f"{args.jobs // 2:032x}"
        floor50, floor99 = timed(lambda: store.job(some_id), args.rounds)
        print(f"{'floor: primary-key lookup':<30} p50 {floor50:7.2f} ms  p99 {floor99:7.2f} ms")
        worst = 0.0
        for name, params in filters.items():
            query = parse_query(**params)
            p50, p99 = timed(lambda: search_jobs(store.engine, query), args.rounds)
            worst = max(worst, p99)
            print(f"{name:<30} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  ({p50 / floor50:5.1f}x the floor)")
        print(f"worst p99 {worst:.1f} ms over {args.jobs + args.jobs // 10:,} jobs: "
              f"{'within' if worst <= 100 else 'OVER'} 100 ms (load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
        store.close()
        return 0 if worst <= 100 else 1
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
