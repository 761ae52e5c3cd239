"""Ack latency of the Slack channel: 200 concurrent signed `/ask` commands on loopback.

Runs the real channel (`oz0.adapters.chat.slack.serve`, its HTTP endpoint, a Runtime on a SQLite file)
against the loopback Slack stand-in of the tests, fires the commands at once, and prints the time
from sending each request to reading its acknowledgement: p50, p99 and max. Slack gives an app
3 seconds; every job also runs and its card is posted, so the acks compete with real work.

    .venv/bin/python bench/slack_ack.py [--count 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

from slack_harness import install_test_plugin, running_channel

ACK_LIMIT_S = 3.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


async def measure(home: Path, count: int) -> None:
    async with running_channel(home) as h:
        await h.command("echo warm-up", trigger_id="warm-up")
        await h.slack.wait_for("response")
        started = time.perf_counter()
        results = await asyncio.gather(*(h.command(f"echo ask {i}", trigger_id=f"bench-{i}")
                                         for i in range(count)))
        wall = time.perf_counter() - started
        await h.slack.wait_for("response", count + 1, timeout=120)
        answered = time.perf_counter() - started
    statuses = {status for status, _, _ in results}
    acks = [took * 1000 for _, _, took in results]
    late = sum(1 for ms in acks if ms >= ACK_LIMIT_S * 1000)
    print(f"{count} concurrent /ask commands on loopback (HTTP mode, signed, SQLite journal)")
    print(f"  ack latency  p50 {statistics.median(acks):7.1f} ms   p99 {percentile(acks, 99):7.1f} ms   "
          f"max {max(acks):7.1f} ms")
    print(f"  over Slack's 3 s: {late}   HTTP statuses: {sorted(statuses)}")
    print(f"  all acks in {wall:.2f} s; all {count} cards posted after {answered:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "oz0home"
        home.mkdir()
        install_test_plugin(home)
        asyncio.run(measure(home, args.count))


if __name__ == "__main__":
    main()
