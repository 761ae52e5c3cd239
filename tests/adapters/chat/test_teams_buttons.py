"""An answer's own buttons on Teams: Stop (ends the conversation) and 👍 / 👎 (audited `job.feedback`,
counted in `oz0_feedback_total`), as `Action.Execute` in the Adaptive Card, clicked as `adaptiveCard/action`
invokes whose HTTP response is what the clicker alone reads."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from teams_harness import run
from teams_standin import cards, runs_text
from test_teams_conversations import card_with, channel, final_cards, home  # noqa: F401  (home is a fixture)

from oz0.edge.runtime.feedback import FeedbackCollector

CHAT = {"conversation": "a:personal-chat", "kind": "personal", "mention": False}


def buttons(h: Any, text: str) -> dict[str, dict[str, Any]]:
    """The final card's Action.Execute buttons by title."""
    [call] = [c for c in h.standin.calls if c.method == "PUT" and text in runs_text(cards(c))][-1:]
    return {a["title"]: a for a in cards(call).get("actions", ())}


def test_thumbs_up_is_audited_once_and_counted(home: Path) -> None:
    async def scenario() -> None:
        async with channel(home) as h:
            await h.post(h.standin.message("echo hi", **CHAT))
            await card_with(h, "echo: hi")
            shown = buttons(h, "echo: hi")
            [job] = h.runtime.jobs(limit=1)
            assert shown["👍"]["type"] == "Action.Execute"
            assert shown["👍"]["data"] == {"id": "oz0_feedback", "value": f"good:{job.id}"}
            assert shown["👎"]["data"] == {"id": "oz0_feedback", "value": f"bad:{job.id}"}
            said = []
            for _ in (1, 2):
                status, body = await h.post(h.standin.invoke(shown["👍"]["data"], conversation="a:personal-chat"))
                assert status == 200 and body["type"] == "application/vnd.microsoft.activity.message"
                said.append(body["value"])
            assert said == ["Thanks: your 👍 was recorded.", "You gave feedback on this answer already."]
            [record] = [r for r in h.runtime.audit_log() if r.action == "job.feedback"]
            assert record.actor == "teams:aad-user-1"
            assert record.detail == {"job": job.id, "agent": "echo", "value": "good", "platform": "teams"}
            registry = CollectorRegistry()
            registry.register(FeedbackCollector(h.runtime.store))
            assert 'oz0_feedback_total{agent="echo",value="good"} 1.0' in generate_latest(registry).decode()
    run(scenario())


def test_the_stop_button_under_an_answer_ends_the_conversation(home: Path) -> None:
    async def scenario() -> None:
        async with channel(home) as h:
            root = h.standin.message("recall first")
            await h.post(root)
            await card_with(h, "first")
            stop = buttons(h, "first")["Stop"]
            assert stop["verb"] == "oz0_stop" and stop["style"] == "destructive"
            status, body = await h.post(h.standin.invoke(stop["data"]))
            assert status == 200 and body["value"].startswith("The conversation has ended")
            status, body = await h.post(h.standin.invoke(stop["data"]))
            assert body["value"] == "This conversation had ended already."
            await h.post(h.standin.message("and then?", mention=False, thread=root["id"]))
            await asyncio.sleep(0.5)
            assert len(h.runtime.jobs()) == 1
            [ended] = [t for t in h.runtime.conversations.turns(stop["data"]["value"]) if t["kind"] == "stop"]
            assert ended["by"] == "teams:aad-user-1"
    run(scenario())


def test_the_stop_button_on_the_working_message_stops_the_askers_job(tmp_path: Path, monkeypatch: Any) -> None:
    from cancel_kit import install_sleeper, started, wait_gone
    from teams_harness import running_channel

    from oz0.edge.runtime.runner import Runtime

    monkeypatch.setenv("OZ0_TEST_PIDS", str(tmp_path / "pids.jsonl"))
    home = tmp_path / "home"
    install_sleeper(home)
    runtime = Runtime(home, backoff_s=0.01)

    async def scenario() -> None:
        async with running_channel(home, runtime=runtime) as h:
            await h.post(h.standin.message("sleeper zzz", **CHAT))
            sleeper = await asyncio.to_thread(started, tmp_path / "pids.jsonl")

            def stop_buttons() -> list[dict[str, Any]]:
                return [a for c in h.standin.calls if c.method in ("POST", "PUT")
                        for a in cards(c).get("actions", ()) if a.get("title") == "Stop"]
            [stop, *_] = await h.standin.wait_for(lambda calls: stop_buttons())
            assert stop["data"] == {"id": "oz0_cancel", "value": sleeper["job"]}
            status, body = await h.post(h.standin.invoke(stop["data"], conversation="a:personal-chat"))
            assert status == 200 and body["value"] == f"Stopping job {sleeper['job']}…"
            await asyncio.to_thread(wait_gone, sleeper["pids"])
            await card_with(h, "stopped by")
            assert runtime.job(sleeper["job"]).status == "cancelled"
            assert len([t for t in final_cards(h) if "stopped by" in t]) == 1
    try:
        run(scenario())
    finally:
        runtime.close()
