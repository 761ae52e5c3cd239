"""A graceful stop under load, as Kubernetes does it: SIGTERM to a real `oz0 serve` (SQLite) with jobs
running. /readyz answers 503 at once, new asks are turned away (a mention with a 5xx, so Slack resends
it), the jobs that finish within OZ0_SHUTDOWN_S post their cards, the process exits 0 with no
traceback, and the job that did not finish resumes at the next start."""

from __future__ import annotations

import asyncio
import re
import signal
import time

import aiohttp
from replica_harness import runs
from slack_standin import SlackStandIn
from test_replicas import cards, post_mention, replicas, wait_runs

SHUTDOWN_S = 4


def test_sigterm_finishes_running_jobs_posts_their_cards_and_exits_0(tmp_path):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            (a,) = replicas(tmp_path, slack, ["solo"], database_url=None, OZ0_SHUTDOWN_S=str(SHUTDOWN_S))
            try:
                await asyncio.to_thread(a.start)
                console = re.search(r"console listening on (\S+)", a.wait_log(r"console listening on")).group(1)
                for i in range(5):
                    assert await post_mention(http, a, f"echo sleep 1.{i}", event_id=f"EvShort{i}") == 200
                assert await post_mention(http, a, "echo sleep 9", event_id="EvLong") == 200
                await wait_runs(tmp_path / "runs.txt", "start", 6)
                a.process.send_signal(signal.SIGTERM)
                termed = time.monotonic()
                await asyncio.sleep(0.3)
                async with http.get(f"{console}/readyz") as resp:
                    assert resp.status == 503, await resp.text()
                assert await post_mention(http, a, "echo during the stop", event_id="EvDuring") >= 500
                code = await asyncio.to_thread(a.process.wait, SHUTDOWN_S + 15)
                took = time.monotonic() - termed
                assert code == 0, "\n".join(a.lines)
                assert took < SHUTDOWN_S + 8, took
                assert not any("Traceback" in line for line in a.lines), "\n".join(a.lines)
                for i in range(5):
                    assert len(cards(slack, f"echo: sleep 1.{i}")) == 1, (i, "\n".join(a.lines))
                assert not cards(slack, "echo: sleep 9")
                # Slack resends the event it got a 5xx for; the long job resumes at the next start
                await asyncio.to_thread(a.start)
                assert await post_mention(http, a, "echo during the stop", event_id="EvDuring") == 200
                await slack.wait_for("chat.update", 7, timeout=40)
            finally:
                a.stop()
            assert len(cards(slack, "echo: sleep 9")) == 1 and len(cards(slack, "echo: during the stop")) == 1
            ends = [r[2] for r in runs(tmp_path / "runs.txt") if r[0] == "end"]
            assert sorted(ends) == sorted([*(f"sleep 1.{i}" for i in range(5)), "sleep 9", "during the stop"]), ends
    asyncio.run(main())
