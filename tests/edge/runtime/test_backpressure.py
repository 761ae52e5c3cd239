"""Back-pressure, as askers meet it: a real `oz0 serve` (SQLite), the Slack stand-in, the console's API.
An agent with `limits.max_queued: 2` and one job at a time: the asks queued say their place in the
queue; the next is told "busy: N asks ahead, try again in a minute" at once (a mention and a slash
command privately, the API as a 429 with Retry-After) and is not queued."""

from __future__ import annotations

import asyncio
import re

import aiohttp
from replica_harness import runs
from slack_standin import SlackStandIn
from test_replicas import post_command, post_mention, replicas, wait_runs

TIGHT = {"agents/tight.yaml": "description: Like echo, one at a time and at most two waiting\nkind: python\n"
                              "entry: impl:echo\ninput: text\noutput: text\n"
                              "limits: {concurrency: 1, max_queued: 2}\n"}


def test_past_max_queued_an_ask_is_told_busy_at_once_and_not_queued(tmp_path):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            (a,) = replicas(tmp_path, slack, ["solo"], database_url=None, files=TIGHT)
            try:
                await asyncio.to_thread(a.start)
                console = re.search(r"console listening on (\S+)", a.wait_log(r"console listening on")).group(1)
                assert await post_mention(http, a, "tight sleep 4", event_id="EvRun") == 200
                await wait_runs(tmp_path / "runs.txt", "start", 1)
                for i in (1, 2):
                    await asyncio.sleep(1.1)   # the queue count is at most a second old
                    assert await post_mention(http, a, f"tight queued {i}", event_id=f"EvQ{i}") == 200
                posted = await slack.wait_for("chat.postMessage", 3, timeout=10)
                assert "Queued for tight: 1 ask ahead of yours" in str(posted[2].args), posted[2].args
                await asyncio.sleep(1.1)
                assert await post_mention(http, a, "tight one too many", event_id="EvBusy") == 200
                (busy,) = await slack.wait_for("chat.postEphemeral", 1, timeout=10)
                assert "busy: 2 asks ahead, try again in a minute" in str(busy.args), busy.args
                status, _ = await post_command(http, a, slack, "tight by command", trigger_id="1.2.busy")
                assert status == 200
                async with http.post(f"{console}/v1/agents/tight/runs", json="by api") as resp:
                    body = await resp.json(content_type=None)
                    assert resp.status == 429 and body["error_code"] == "busy", body
                    assert body["message"].startswith("busy: 2 asks ahead") and resp.headers["Retry-After"] == "60"
                await slack.wait_for("chat.update", 3, timeout=30)
            finally:
                a.stop()
            ends = [r[2] for r in runs(tmp_path / "runs.txt") if r[0] == "end"]
            assert ends == ["sleep 4", "queued 1", "queued 2"], ends
            assert not any("too many" in str(c.args) and c.method == "chat.postMessage" for c in slack.calls)
    asyncio.run(main())
