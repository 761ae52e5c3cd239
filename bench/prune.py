"""The retention prune of old jobs under load, on a real Postgres (tests/postgres_server.py).

Fills a fresh database with N old finished jobs (default 100,000: created 200 days ago, a question and a
model/tool trace row for every tenth) and a few thousand recent ones, then serves the real console
API over it (uvicorn on loopback) and keeps it under a paced load from CLIENTS threads (RATE requests a
second each): runs of an agent (`POST /v1/agents/echo/runs`: a journal insert and its updates, one
request in ten), job reads (`GET /v1/jobs/{id}`) and job searches (`GET /v1/jobs?status=succeeded`). The
load runs alone for SECONDS, then while `edge.runtime.retention.prune` removes the old jobs (90-day
retention, in its batches), then alone again for SECONDS, so the figure with the prune stands beside the
same machine's figure without it, measured in the same minute (a shared machine's own spikes show in
both). It prints each phase's p50, p99 and max side by side with the load average, what the prune adds,
the prune's batches (how many, their sizes, how long each transaction was open) and how many requests
of each phase took over 200 ms. The target: no request slower than 200 ms during the prune.
`--pause-ms` is the prune's pause between batches (OZ0_RETENTION_PAUSE_MS; 0 to see what it buys).

    .venv/bin/python bench/prune.py [--jobs 100000] [--clients 4] [--rate 5] [--seconds 10] [--apart]
                                    [--pause-ms 100] [--batch 1000]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support")]

import httpx
from console_plugin import ConsoleThread, installed_runtime
from postgres_server import PostgresServer
from sqlalchemy import text

from oz0.edge.runtime.retention import BATCH, DEFAULT_PAUSE_MS, Retention, count, prune

DAY = 86_400
SLOW_MS = 200.0
APART = """
import json, logging, sys
from sqlalchemy import create_engine
from oz0.edge.runtime.retention import Retention, prune
sys.path.insert(0, sys.argv[4])
from prune import Batches
batches = Batches()
log = logging.getLogger("oz0.retention"); log.setLevel(logging.DEBUG); log.addHandler(batches)
policy = Retention(jobs_days=90, audit_days=365, pause_ms=float(sys.argv[2]))
removed = prune(create_engine(sys.argv[1]), policy, batch=int(sys.argv[3]))
print(json.dumps({"removed": removed, "batches": batches.seen}))
"""
FILL = """
INSERT INTO jobs (id, agent, requester, channel, input, status, output, created, started, ended, attempts)
SELECT 'old' || lpad(to_hex(n), 29, '0'), 'echo', 'user-' || (n % 500), 'api', 'hello', 'succeeded',
       '"You said: hello"', :old - n, :old - n + 0.1, :old - n + 0.2, 1
FROM generate_series(1, :jobs) AS n
"""
FILL_RECENT = """
INSERT INTO jobs (id, agent, requester, channel, input, status, output, created, started, ended, attempts)
SELECT 'new' || lpad(to_hex(n), 29, '0'), 'echo', 'user-' || (n % 500), 'api', 'hello', 'succeeded',
       '"You said: hello"', :now - n * 60, :now - n * 60 + 0.1, :now - n * 60 + 0.2, 1
FROM generate_series(1, :recent) AS n
"""
FILL_QUESTIONS = """
INSERT INTO questions (job_id, step, message, answer_schema, answerers, asked_at, action, answered_by, answered_at)
SELECT 'old' || lpad(to_hex(n), 29, '0'), 'approve', 'Ship it?', '{}', '{}', :old - n, 'accept', 'ana', :old - n
FROM generate_series(10, :jobs, 10) AS n
"""
FILL_TRACE = """
INSERT INTO job_trace (job_id, seq, kind, name, detail, ms, at)
SELECT 'old' || lpad(to_hex(n), 29, '0'), 1, 'model', 'gpt', '{}', 120, :old - n
FROM generate_series(10, :jobs, 10) AS n
"""


KINDS = ("run", "read", "search")
Took = dict[str, list[float]]  # each kind's latencies in ms


def load(url: str, clients: int, recent: int, rate: float, going: Callable[[], bool]) -> Took:
    """CLIENTS threads, each sending `rate` requests a second (paced, so this measures latency, not a
    saturated server's queue) while `going()`: runs, reads and searches in turn; each kind's latencies in ms."""
    took: Took = {k: [] for k in KINDS}
    lock = threading.Lock()

    def client(n: int) -> None:
        mine: Took = {k: [] for k in KINDS}
        with httpx.Client(base_url=url, timeout=30) as http:
            i = 0
            due = time.monotonic() + n / (clients * rate)
            while going():
                i += 1
                kind = KINDS[0] if i % 10 == 0 else KINDS[1 + i % 2]
                start = time.perf_counter()
                if kind == "run":
                    r = http.post("/v1/agents/echo/runs", content=f"load {n} {i}",
                                  headers={"content-type": "text/plain"})
                elif kind == "read":
                    r = http.get(f"/v1/jobs/new{(i * 7 + n) % recent + 1:029x}")
                else:
                    r = http.get("/v1/jobs", params={"status": "succeeded", "limit": 20})
                mine[kind].append((time.perf_counter() - start) * 1000)
                if r.status_code >= 400:
                    raise SystemExit(f"request failed: {r.status_code} {r.text[:200]}")
                due += 1 / rate
                time.sleep(max(0.0, due - time.monotonic()))
        with lock:
            for k in KINDS:
                took[k].extend(mine[k])

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return took


@dataclass(frozen=True)
class Phase:
    """One phase's requests and the machine's 1-minute load average at its end."""

    name: str
    took: Took
    load: float

    def every(self) -> list[float]:
        return sorted(ms for k in KINDS for ms in self.took[k])

    def p99(self) -> float:
        every = self.every()
        return every[min(len(every) - 1, int(len(every) * 0.99))]

    def slow(self) -> int:
        return sum(1 for ms in self.every() if ms > SLOW_MS)

    def line(self) -> str:
        every = self.every()
        kinds = "  ".join(f"{max(self.took[k]):10.1f}" if self.took[k] else f"{'-':>10}" for k in KINDS)
        return (f"{self.name:<18} {self.load:5.2f} {len(every):6,} {statistics.median(every):7.1f} "
                f"{self.p99():7.1f} {every[-1]:7.1f} {self.slow():6,}  {kinds}")


def table(phases: list[Phase]) -> None:
    print(f"{'phase':<18} {'load':>5} {'reqs':>6} {'p50':>7} {'p99':>7} {'max':>7} {'>200':>6}  "
          + "  ".join(f"{'max ' + k:>10}" for k in KINDS) + "  (ms)")
    for phase in phases:
        print(phase.line())


class Batches(logging.Handler):
    """The prune's batches from its debug log (edge.runtime.retention): (jobs removed, ms its transaction took)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[tuple[int, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "a batch of" in str(record.msg) and isinstance(record.args, tuple):
            self.seen.append((int(record.args[0]), float(record.args[2])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="old jobs to prune (default 100,000)")
    parser.add_argument("--recent", type=int, default=5_000, help="recent jobs kept (default 5,000)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent API clients (default 4)")
    parser.add_argument("--seconds", type=float, default=10.0, help="each phase of load without the prune (default 10 s)")
    parser.add_argument("--apart", action="store_true", help="prune from another process (default: in this one, "
                        "beside the API, as `oz0 serve`'s daily prune runs)")
    parser.add_argument("--pause-ms", type=float, default=DEFAULT_PAUSE_MS,
                        help=f"the prune's pause between batches (default {DEFAULT_PAUSE_MS:g} ms)")
    parser.add_argument("--batch", type=int, default=BATCH, help=f"the prune's largest batch (default {BATCH:,} jobs)")
    parser.add_argument("--rate", type=float, default=5.0, help="requests a second per client (default 5)")
    args = parser.parse_args()
    server = PostgresServer.start()
    try:
        home = Path(tempfile.mkdtemp(prefix="oz0-prune-")) / "home"
        runtime = installed_runtime(home, database_url=server.database())
        engine = runtime.store.engine
        now = time.time()
        old = now - 200 * DAY
        start = time.perf_counter()
        with engine.begin() as conn:
            for sql in (FILL, FILL_RECENT, FILL_QUESTIONS, FILL_TRACE):
                conn.execute(text(sql), {"now": now, "old": old, "jobs": args.jobs, "recent": args.recent})
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE"))
        policy = Retention(jobs_days=90, audit_days=365, pause_ms=args.pause_ms)
        print(f"filled {args.jobs:,} old jobs and {args.recent:,} recent ones in {time.perf_counter() - start:.1f} s; "
              f"a prune would remove {count(engine, policy)}")
        with ConsoleThread(runtime) as console:
            def for_(seconds: float) -> Callable[[], bool]:
                stop = time.monotonic() + seconds
                return lambda: time.monotonic() < stop

            def phase(name: str, going: Callable[[], bool]) -> Phase:
                took = load(console.url, args.clients, args.recent, args.rate, going)
                return Phase(name, took, os.getloadavg()[0])

            load(console.url, args.clients, args.recent, args.rate, for_(2.0))  # warm up: connections, caches
            before = phase("alone, before", for_(args.seconds))
            removed: dict[str, int] = {}
            pruned_in = [0.0]
            batches = Batches()
            retention_log = logging.getLogger("oz0.retention")
            retention_log.setLevel(logging.DEBUG)
            retention_log.addHandler(batches)

            def pruner() -> None:
                began = time.perf_counter()
                if args.apart:  # `oz0 db prune` as its own process: no share of this process's GIL
                    done = subprocess.run([sys.executable, "-c", APART, runtime.store.url, str(args.pause_ms),
                                           str(args.batch), str(ROOT / "bench")], capture_output=True, text=True,
                                          check=True)
                    out = json.loads(done.stdout)
                    removed.update(out["removed"])
                    batches.seen.extend((int(n), float(ms)) for n, ms in out["batches"])
                else:  # in the serving process, as the daily scheduled prune runs
                    removed.update(prune(engine, policy, batch=args.batch))
                pruned_in[0] = time.perf_counter() - began

            thread = threading.Thread(target=pruner)
            thread.start()
            during = phase("during the prune", thread.is_alive)
            thread.join()
            retention_log.removeHandler(batches)
            after = phase("alone, after", for_(args.seconds))
        runtime.close()
        table([before, during, after])
        alone_p99 = max(before.p99(), after.p99())
        alone_max = max(before.every()[-1], after.every()[-1])
        busy = during.every()[-1]
        print(f"the prune adds: p99 {during.p99() - alone_p99:+.1f} ms, max {busy - alone_max:+.1f} ms "
              "(against the worse of the two phases alone)")
        took = sorted(ms for _, ms in batches.seen)
        sizes = sorted(n for n, _ in batches.seen if n)
        if took and sizes:
            print(f"the prune: {len(took)} batches of {sizes[0]:,} to {sizes[-1]:,} jobs; a batch's transaction "
                  f"p50 {statistics.median(took):.1f} ms, max {took[-1]:.1f} ms; open {sum(took) / 1000:.1f} s "
                  f"of the prune's {pruned_in[0]:.1f} s")
        print(f"the prune removed {removed.get('jobs', 0):,} jobs, {removed.get('questions', 0):,} questions, "
              f"{removed.get('job_trace', 0):,} trace rows in {pruned_in[0]:.1f} s")
        ok = busy <= SLOW_MS
        where = "another process" if args.apart else "the serving process"
        print(f"pruned in {where}; max request latency during the prune {busy:.1f} ms vs {alone_max:.1f} ms without "
              f"it: {'within' if ok else 'OVER'} {SLOW_MS:.0f} ms"
              + ("" if alone_max <= SLOW_MS else " (the load alone is over it too: the machine is busy)"))
        return 0 if ok else 1
    finally:
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
