"""Throughput: no-op asks over two `oz0 serve` replicas sharing one Postgres, sustained for a while, against
the same asks journaled without the engine (the floor, measured in the same run), and each replica's
memory over the run.

1. Floor: in this process, a Runtime over a fresh database of the same Postgres, no engine: each ask
   journaled (`submit`) and run to its end (`execute_here`) by a no-op agent, `--window` at once, for
   `--floor-seconds`. What the journal alone costs per job on this machine now.
2. Engine: two real replicas (subprocesses), the loopback Slack stand-in as the Web API, signed
   `app_mention` events posted alternately to each, at most `--window` asks without their card at
   any time (a new ask as soon as a card is posted), for `--seconds`. Sustained jobs/s counts the cards
   posted after the first `--warmup` seconds. RSS of each replica (VmRSS) after the warm-up and at the
   end. Every card must be posted exactly once.

Target (issue 30): sustained >= 50% of the floor, RSS growth <= 30 MB per replica after the warm-up.

    .venv/bin/python bench/throughput.py [--seconds 120] [--window 64]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support")]

import aiohttp
from postgres_server import PostgresServer
from replica_harness import bench_replicas, install_replica_plugin
from slack_standin import SlackStandIn, mention_event_body, signed_headers

TARGET_RATIO = 0.5
TARGET_RSS_MB = 30.0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def floor(tmp: Path, url: str, seconds: float, window: int) -> float:
    """Jobs/s of the journal alone: submit + run to the end, `window` at once, in this process."""
    from oz0.edge.model.reply_ref import ReplyRef
    from oz0.edge.runtime.runner import Runtime

    home = tmp / "floor"
    install_replica_plugin(home, database_url=url)
    runtime = Runtime(home, database_url=url)

    async def worker(deadline: float, counter: list[int], n: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            job, _ = await asyncio.to_thread(runtime.submit, "noop", f"floor {n}-{i}", requester="bench",
                                             channel="bench", reply_to=ReplyRef("slack", 1, {"channel": "C1"}))
            ended = await runtime.execute_here(job.id)
            assert ended.status == "succeeded", ended
            counter[0] += 1
            i += 1

    async def run() -> float:
        await worker(time.monotonic() + 1.0, [0], -1)   # warm the pool and the agent
        counter = [0]
        started = time.monotonic()
        await asyncio.gather(*(worker(started + seconds, counter, n) for n in range(window)))
        return counter[0] / (time.monotonic() - started)

    try:
        return asyncio.run(run())
    finally:
        runtime.close()


async def engine(tmp: Path, url: str, seconds: float, warmup: float, window: int) -> dict[str, float]:
    async with SlackStandIn() as slack, aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        made = bench_replicas(tmp, api_url=slack.api_url, database_url=url, OZ0_MAX_QUEUED="100000")
        try:
            await asyncio.gather(*(asyncio.to_thread(r.start) for r in made))
            sent = 0
            statuses: dict[int, int] = {}
            posted = lambda: len(slack.of("chat.update"))  # noqa: E731  the cards (each replaces its working message)

            async def post(i: int) -> None:
                body = mention_event_body(f"noop ask {i}", event_id=f"EvT{i}", ts=f"1700000000.{i:06d}")
                async with http.post(made[i % 2].events_url, data=body.encode(),
                                     headers=signed_headers(body, content_type="application/json")) as resp:
                    await resp.read()
                    statuses[resp.status] = statuses.get(resp.status, 0) + 1

            started = time.monotonic()
            warm_at = started + warmup
            end_at = started + seconds
            rss_warm: list[float] = []
            at_warm = 0
            pending: set[asyncio.Task[None]] = set()
            while time.monotonic() < end_at:
                if not rss_warm and time.monotonic() >= warm_at:
                    rss_warm = [rss_mb(r.process.pid) for r in made]
                    cpu_warm = sum(cpu_s(r.process.pid) for r in made)
                    at_warm, warm_at = posted(), time.monotonic()
                while sent - posted() < window:
                    task = asyncio.create_task(post(sent))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
                    sent += 1
                await asyncio.sleep(0.005)
            done_at, at_end = time.monotonic(), posted()
            rss_end = [rss_mb(r.process.pid) for r in made]
            cpu_end = sum(cpu_s(r.process.pid) for r in made)
            await asyncio.gather(*pending)
            await slack.wait_for("chat.update", sent, timeout=120)
            await asyncio.sleep(1.0)
        finally:
            for r in made:
                r.stop()
        texts = [str(c.args.get("blocks") or c.args.get("text")) for c in slack.of("chat.update")]
        once = len(set(texts)) == len(texts) == sent
        return {"rate": (at_end - at_warm) / (done_at - warm_at), "sent": sent, "once": once,
                "statuses": statuses, "rss_warm": rss_warm, "rss_end": rss_end,
                "cpu_ms_per_job": (cpu_end - cpu_warm) * 1000 / max(1, at_end - at_warm)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--floor-seconds", type=float, default=15.0)
    parser.add_argument("--window", type=int, default=64)
    args = parser.parse_args()
    server = PostgresServer.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = floor(Path(tmp), server.database(), args.floor_seconds, args.window)
            got = asyncio.run(engine(Path(tmp), server.database(), args.seconds, args.warmup, args.window))
    finally:
        server.stop()
    ratio = got["rate"] / base
    growth = [end - warm for warm, end in zip(got["rss_warm"], got["rss_end"])]
    print(f"no-op asks, {args.window} without their card at a time, two replicas over one Postgres (loopback)")
    print(f"  floor (journal alone, one process): {base:7.1f} jobs/s")
    print(f"  engine (2 replicas, Slack events):  {got['rate']:7.1f} jobs/s sustained over "
          f"{args.seconds - args.warmup:.0f} s   ratio {ratio:4.2f}   (target >= {TARGET_RATIO:.2f}: "
          f"{'met' if ratio >= TARGET_RATIO else 'MISSED'})")
    print(f"  replicas' CPU per job: {got['cpu_ms_per_job']:.0f} ms (both replicas, after the warm-up)")
    print(f"  asks {got['sent']}, HTTP statuses {got['statuses']}, every card posted exactly once: {got['once']}")
    for i, (warm, end) in enumerate(zip(got["rss_warm"], got["rss_end"])):
        print(f"  replica {'ab'[i]} RSS {warm:6.1f} MB after warm-up -> {end:6.1f} MB at the end "
              f"(+{growth[i]:.1f} MB; target <= {TARGET_RSS_MB:.0f}: {'met' if growth[i] <= TARGET_RSS_MB else 'MISSED'})")


if __name__ == "__main__":
    main()
