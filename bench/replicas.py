"""Replicas: 200 concurrent signed `/ask` over two `oz0 serve` replicas sharing one Postgres, and what
the durable job engine costs per job.

1. Two real replicas (subprocesses) over a real Postgres started here (tests/support/postgres_server.py), the
   loopback Slack stand-in as the Web API; 200 signed slash commands fired at once, alternating between
   the replicas. Prints the ack latency (target: p99 <= 100 ms) and checks every card was posted once;
   and, as the floor, the same burst against two bare aiohttp servers that answer at once.
2. A no-op agent run to its end in one process, journal alone (no engine) vs journal + engine (each job
   a DBOS workflow on its agent's queue), on SQLite and on Postgres: per-job time one at a time, and for
   200 at once; printed as ratios against the journal alone, measured in the same run.

    PYTHONPATH=... .venv/bin/python bench/replicas.py [--count 200] [--ack-only]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support")]

import aiohttp
from ports import free_port
from postgres_server import PostgresServer
from replica_harness import bench_replicas, install_replica_plugin
from slack_standin import SlackStandIn, signed_headers, slash_command_body

from oz0.edge.flows.engine import FLOW_ENGINE

ACK_P99_TARGET_MS = 100.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


async def ask(http: aiohttp.ClientSession, url: str, slack: SlackStandIn, text: str, trigger: str) -> tuple[int, float]:
    """One signed /ask through aiohttp (warm-ups); the burst itself goes through `burst`."""
    body = slash_command_body(text, response_url=slack.response_url(trigger), trigger_id=trigger)
    started = time.perf_counter()
    async with http.post(url, data=body.encode(), headers=signed_headers(body)) as resp:
        await resp.read()
        return resp.status, (time.perf_counter() - started) * 1000


def _request(url: str, body: str) -> bytes:
    """The whole HTTP request Slack would send, as bytes, built before the burst."""
    parts = urlsplit(url)
    headers = {"Host": parts.netloc, **signed_headers(body), "Content-Length": str(len(body.encode())),
               "Connection": "close"}
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"POST {parts.path} HTTP/1.1\r\n{head}\r\n".encode() + body.encode()


async def _raw_post(url: str, request: bytes) -> tuple[int, float]:
    """Connect, send, read the whole answer: (status, ms from connect to the last byte)."""
    parts = urlsplit(url)
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(request)
    answer = await reader.read()
    writer.close()
    return int(answer.split(b" ", 2)[1]), (time.perf_counter() - started) * 1000


async def burst(urls: list[str], slack: SlackStandIn, count: int, prefix: str) -> tuple[list[tuple[int, float]], float]:
    """`count` signed /ask at once, alternating over `urls`, from a lean client (requests built and
    signed beforehand, plain sockets: the client's own cost is not the ack's); the results and the
    client's CPU time (ms) during the burst."""
    requests = [(urls[i % len(urls)], _request(urls[i % len(urls)], slash_command_body(
        f"noop ask {i}", response_url=slack.response_url(f"{prefix}-{i}"), trigger_id=f"{prefix}-{i}")))
        for i in range(count)]
    cpu = time.process_time()
    results = await asyncio.gather(*(_raw_post(url, request) for url, request in requests))
    return list(results), (time.process_time() - cpu) * 1000


# The floor: the same burst from the same client against two bare aiohttp servers that answer at once
# (what the load generator, loopback TCP and the shared cores cost before oz0 does anything).
BARE = """
import sys
from aiohttp import web
async def answer(request):
    await request.read()
    return web.json_response({"response_type": "ephemeral", "text": "working"})
app = web.Application()
app.router.add_post("/slack/events", answer)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, backlog=1024, print=None)
"""


async def bare_floor(http: aiohttp.ClientSession, slack: SlackStandIn, count: int) -> tuple[list[float], float]:
    """The acks' latencies (ms), and the CPU time the client itself spent on the burst (ms)."""
    ports = [free_port(), free_port()]
    servers = [subprocess.Popen([sys.executable, "-c", BARE, str(port)]) for port in ports]
    try:
        urls = [f"http://127.0.0.1:{port}/slack/events" for port in ports]
        for url in urls:
            for _ in range(200):
                try:
                    await ask(http, url, slack, "warm", "bare-warm")
                    break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
        results, client_ms = await burst(urls, slack, count, "bare")
        return [ms for _, ms in results], client_ms
    finally:
        for process in servers:
            process.terminate()
            process.wait(timeout=10)


async def replicas_ack(tmp: Path, server: PostgresServer, count: int) -> None:
    url = server.database()
    # no client-side cap on connections (aiohttp's default is 100): Slack's requests do not wait for each other
    async with SlackStandIn() as slack, aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        floor, client_ms = await bare_floor(http, slack, count)
    async with SlackStandIn() as slack, aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        made = bench_replicas(tmp, api_url=slack.api_url, database_url=url)
        try:
            await asyncio.gather(*(asyncio.to_thread(r.start) for r in made))
            for i, r in enumerate(made):  # warm each replica's connections and the agent's queue
                await ask(http, r.events_url, slack, "noop warm", f"warm-{i}")
            await slack.wait_for("response", len(made), timeout=60)
            started = time.perf_counter()
            results, burst_client_ms = await burst([r.events_url for r in made], slack, count, "b")
            await slack.wait_for("response", len(made) + count, timeout=300)
            answered = time.perf_counter() - started
            await asyncio.sleep(1.0)
        finally:
            for r in made:
                r.stop()
    acks = [ms for _, ms in results]
    per_trigger: dict[str, int] = {}
    for call in slack.of("response"):
        trigger = call.path.rsplit("/", 1)[1]
        per_trigger[trigger] = per_trigger.get(trigger, 0) + 1
    once = sum(1 for i in range(count) if per_trigger.get(f"b-{i}") == 1)
    p99 = percentile(acks, 99)
    print(f"{count} concurrent signed /ask over 2 replicas, one Postgres (loopback)")
    print(f"  ack latency  p50 {statistics.median(acks):6.1f} ms   p99 {p99:6.1f} ms   max {max(acks):6.1f} ms"
          f"   (target p99 <= {ACK_P99_TARGET_MS:.0f} ms: {'met' if p99 <= ACK_P99_TARGET_MS else 'MISSED'})"
          f"   client CPU {burst_client_ms:.0f} ms")
    print(f"  floor (bare servers answering at once, same client): p50 {statistics.median(floor):6.1f} ms   "
          f"p99 {percentile(floor, 99):6.1f} ms   ratio of p99s {p99 / percentile(floor, 99):4.1f}x"
          f"   (the client alone used {client_ms:.0f} ms of CPU for it)")
    print(f"  HTTP statuses {sorted({s for s, _ in results})}; cards posted exactly once: {once}/{count}"
          f"; all answered after {answered:.2f} s")


def engine_cost(tmp: Path, server: PostgresServer, count: int) -> None:
    from oz0.edge.runtime.runner import Runtime

    print("engine cost per job, no-op agent (journal alone = 1.00)")
    for backend in ("SQLite", "Postgres"):
        url = server.database() if backend == "Postgres" else None
        home = tmp / f"cost-{backend}"
        install_replica_plugin(home, database_url=url)
        runtime = Runtime(home, database_url=url, flow_engine=FLOW_ENGINE)
        try:
            alone = _timings(runtime, count)
            runtime.launch_engine(env={"OZ0_REPLICA_ID": f"bench-{backend}"})
            engine = _timings(runtime, count)
        finally:
            runtime.close()
        print(f"  {backend:8s} one at a time: {alone[0]:6.2f} ms alone, {engine[0]:6.2f} ms with the engine"
              f"  ratio {engine[0] / alone[0]:5.1f}x")
        print(f"  {backend:8s} {count} at once:   {alone[1]:6.2f} ms alone, {engine[1]:6.2f} ms with the engine"
              f"  ratio {engine[1] / alone[1]:5.1f}x   (wall time per job)")


def _timings(runtime, count: int) -> tuple[float, float]:
    async def one_by_one() -> float:
        await runtime.run("noop", "warm")
        started = time.perf_counter()
        for i in range(20):
            job = await runtime.run("noop", f"seq {i}")
            assert job.status == "succeeded", job
        return (time.perf_counter() - started) / 20 * 1000

    async def at_once() -> float:
        started = time.perf_counter()
        jobs = await asyncio.gather(*(runtime.run("noop", f"par {i}") for i in range(count)))
        assert all(j.status == "succeeded" for j in jobs)
        return (time.perf_counter() - started) / count * 1000

    return asyncio.run(one_by_one()), asyncio.run(at_once())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--ack-only", action="store_true", help="measure the acks, not the engine's cost")
    args = parser.parse_args()
    server = PostgresServer.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(replicas_ack(Path(tmp), server, args.count))
            if not args.ack_only:
                engine_cost(Path(tmp), server, args.count)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
