"""The Stop button on Discord's working message (the Discord stand-in, a real discord.py client): the
interaction's first answer carries it; only the asker may stop the job; the command's processes end and the working message becomes the card
"stopped by Ana Lima", once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cancel_kit import install_sleeper, started, wait_gone
from discord_harness import install_test_plugin, running_channel, texts, working_stop

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

EPHEMERAL = 1 << 6


def _component(h, custom_id: str, message: dict, **where) -> dict:
    return h.standin.interaction(3, {"custom_id": custom_id, "component_type": 2}, message=message,
                                 **h.where(**where))


def test_the_discord_stop_button_stops_the_askers_job_and_refuses_anyone_else(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OZ0_TEST_PIDS", str(tmp_path / "pids.jsonl"))
    home = tmp_path / "home"
    install_sleeper(home)
    runtime = Runtime(home, backoff_s=0.01, flow_engine=FLOW_ENGINE)
    install_test_plugin(runtime, tmp_path / "plugin-src")

    async def scenario() -> None:
        async with running_channel(home, runtime=runtime) as h:
            ask = await h.send(h.standin.slash("ask", {"agent": "sleeper", "input": "zzz"}, **h.where()))
            working = (await h.callback(ask)).body["data"]   # the interaction's own answer, at once
            stop = working_stop(await h.callback(ask), "sleeper")
            sleeper = await asyncio.to_thread(started, tmp_path / "pids.jsonl")
            assert stop["custom_id"] == f"oz0_cancel:{sleeper['job']}"
            message = h.standin.message_from(working, channel_id=h.where()["channel_id"])

            stranger = await h.send(_component(h, stop["custom_id"], message, user_id="666"))
            refused = (await h.callback(stranger)).body
            assert refused["data"]["content"] == (f"Not stopped: only the asker of job {sleeper['job']} or an "
                                                  "admin may stop it.")
            assert refused["data"]["flags"] == EPHEMERAL
            assert runtime.job(sleeper["job"]).status == "running"

            click = await h.send(_component(h, stop["custom_id"], message))
            said = (await h.callback(click)).body
            assert said["data"]["content"] == f"Stopping job {sleeper['job']}…"
            await asyncio.to_thread(wait_gone, sleeper["pids"])
            path = f"/webhooks/{h.standin.app_id}/{ask['token']}/messages/@original"

            def card_edits() -> list:
                return [r for r in h.standin.requests if r.method == "PATCH" and r.path == path
                        and "stopped by" in json.dumps(r.body)]
            [card] = await h.standin.wait_for(lambda r: r in card_edits(), timeout=15)
            assert "stopped by Ana Lima" in texts(card.body["components"])
            await asyncio.sleep(1.0)
            assert len(card_edits()) == 1
            job = runtime.job(sleeper["job"])
            assert job.status == "cancelled" and job.failure_reason == "stopped by Ana Lima"
    try:
        asyncio.run(scenario())
    finally:
        runtime.close()
