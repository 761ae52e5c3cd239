"""`oz0 serve` stopped by SIGTERM while Slack jobs run and more wait in the queue (issue 29 item 12):
it stops cleanly, exit 0, and logs no traceback ("Event loop is closed" came from a job's coroutine
left pending on the closed jobs loop and finalized later)."""

from __future__ import annotations

import asyncio

import aiohttp
from slack_standin import SlackStandIn
from test_replicas import post_mention, replicas, wait_runs


def test_sigterm_with_jobs_running_and_queued_stops_without_a_traceback(tmp_path):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            (solo,) = replicas(tmp_path, slack, ["solo"], database_url=None)
            try:
                await asyncio.to_thread(solo.start)
                for i in range(4):   # `single` runs one job at a time: one runs, three wait their turn
                    assert await post_mention(http, solo, "single sleep 1.5", event_id=f"EvStop{i}") == 200
                await wait_runs(tmp_path / "runs.txt", "start", 1)
                await asyncio.sleep(1.0)   # the first has ended: the second runs, two wait
                assert await asyncio.to_thread(solo.stop) == 0
                await asyncio.sleep(0.3)   # the log reader takes the last lines
            finally:
                solo.kill()
            log = "\n".join(solo.lines)
            assert "stopping cleanly" in log and "oz0.serve: stopped" in log
            for bad in ("Traceback", "Event loop is closed", "Task was destroyed but it is pending"):
                assert bad not in log, log
    asyncio.run(main())
