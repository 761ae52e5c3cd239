"""The Stop button on a slash command's private view (the Slack stand-in, the real HTTP endpoint): the
command's ack, the first thing the asker sees, already carries the job's Stop; a click on it ends the
job `cancelled` and the view becomes the card "stopped by Ana Lima", once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cancel_kit import install_sleeper, started, wait_gone
from slack_harness import running_channel
from slack_standin import block_action_body, signed_headers


def test_the_slash_commands_ack_carries_stop_and_a_click_on_it_stops_the_job(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OZ0_TEST_PIDS", str(tmp_path / "pids.jsonl"))
    home = tmp_path / "home"
    install_sleeper(home)

    async def scenario() -> None:
        async with running_channel(home) as h:
            status, ack, _ = await h.command("sleeper zzz", trigger_id="7.7.ask")
            assert status == 200 and ack["response_type"] == "ephemeral"
            assert "Working on sleeper" in json.dumps(ack["blocks"])
            [stop] = [e for b in ack["blocks"] if b["type"] == "actions" for e in b["elements"]]
            assert stop["action_id"] == "oz0_cancel" and stop["text"]["text"] == "Stop"
            job_id = stop["value"]
            sleeper = await asyncio.to_thread(started, tmp_path / "pids.jsonl")
            assert sleeper["job"] == job_id   # the button names the job the ack was for
            assert h.runtime.job(job_id).status == "running"

            click = block_action_body(action_id="oz0_cancel", value=job_id, block_id="oz0_working",
                                      response_url=h.slack.response_url("stop1"))
            status, _, _ = await h.post(click, signed_headers(click))
            assert status == 200
            await asyncio.to_thread(wait_gone, sleeper["pids"])

            def cards() -> list:
                return [c for c in h.slack.of("response") if "stopped by" in json.dumps(c.args)]
            for _ in range(300):
                if cards():
                    break
                await asyncio.sleep(0.05)
            [card] = cards()
            assert card.path.endswith("/7.7.ask")   # the asker's private view, replaced
            assert "stopped by Ana Lima" in json.dumps(card.args) and "oz0_cancel" not in json.dumps(card.args)
            await asyncio.sleep(1.0)   # room for a second "stopped", which must not come
            assert len(cards()) == 1
            notices = [c.args.get("text") for c in h.slack.of("response") if c.path.endswith("stop1")]
            assert notices == [f"Stopping job {job_id}…"]
            job = h.runtime.job(job_id)
            assert job.status == "cancelled" and job.failure_reason == "stopped by Ana Lima"
    asyncio.run(asyncio.wait_for(scenario(), 90))
