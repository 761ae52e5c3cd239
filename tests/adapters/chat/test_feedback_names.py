"""People by name in chat (adapters.chat.names) and feedback on answers (edge.runtime.feedback):
Slack's users.info and feedback buttons, Discord's member names and 👍 / 👎, audited and counted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from slack_harness import running_channel
from slack_standin import signed_headers
from test_conversations import discord_running, home, run  # noqa: F401  (the fixture: the conversations plugin installed)

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

# ---- people by name ---------------------------------------------------------------------------------

def test_slack_names_people_by_display_name_once_an_hour_and_never_as_a_live_mention() -> None:
    from slack_sdk.web.async_client import AsyncWebClient
    from slack_standin import BOT_TOKEN, SlackStandIn

    from oz0.adapters.chat.names import Names
    from oz0.adapters.chat.slack_wire import SlackWire
    from oz0.edge.cards.model import Card
    from oz0.edge.runtime.access import AccessPolicy
    from oz0.renderers import render

    async def main() -> None:
        people = {"U0EVIL": {"name": "eve", "real_name": "Eve", "display_name": "<!channel> Eve"},
                  "U0PLAIN": {"name": "bo", "real_name": "Bo Chen", "display_name": ""}}
        async with SlackStandIn(people=people) as slack:
            wire = SlackWire(AsyncWebClient(token=BOT_TOKEN, base_url=slack.api_url), AccessPolicy.load(Path("/nonexistent")))
            names = Names("slack", wire.display_name)
            assert await names.of("slack:U0EVIL") == "<!channel> Eve"
            assert await names.of("slack:U0EVIL") == "<!channel> Eve"
            assert await names.of("slack:U0PLAIN") == "Bo Chen"      # no display name: the real name
            assert await names.of("slack:U0GONE") == "@U0GONE"       # users.info says user_not_found
            assert await names.of("console:ana") == "ana" and await names.of("cli") == "cli"
            assert [c.args["user"] for c in slack.of("users.info")] == ["U0EVIL", "U0PLAIN", "U0GONE"]
            drawn = render(Card(form="text", text="x", text_format="plain", notes=("Asked by <!channel> Eve",)),
                           "slack").payload
            [note] = [e for b in drawn["blocks"] if b["type"] == "context" for e in b["elements"]]
            assert note == {"type": "plain_text", "text": "Asked by <!channel> Eve", "emoji": False}  # Slack expands no mention there
            assert "<!channel>" not in drawn["text"]
    run(main())


# ---- feedback -----------------------------------------------------------------------------------------

def test_feedback_under_a_slack_answer_is_audited_once_counted_in_metrics_and_on_the_agent_page(home: Path) -> None:
    import httpx
    from console_plugin import ConsoleThread
    from slack_standin import block_action_body

    async def main() -> None:
        async with running_channel(home) as h:
            await h.mention("echo hi", event_id="Ev1", ts="1700000000.000100")
            [card] = await h.slack.wait_for("chat.update")
            [block] = [b for b in card.args["blocks"] if b["type"] == "context_actions"]
            [element] = block["elements"]
            assert element["type"] == "feedback_buttons" and element["action_id"] == "oz0_feedback"
            good = element["positive_button"]["value"]
            job = h.runtime.jobs(limit=1)[0]
            assert good == f"good:{job.id}"
            for n in (1, 2):
                body = block_action_body(action_id="oz0_feedback", value=good,
                                         response_url=h.slack.response_url(f"fb{n}"), trigger_id=f"3000.{n}")
                assert (await h.post(body, signed_headers(body)))[0] == 200
            said = sorted(c.args["text"] for c in await h.slack.wait_for("response", 2))
            assert said == ["Thanks: your 👍 was recorded.", "You gave feedback on this answer already."]
            [record] = [r for r in h.runtime.audit_log() if r.action == "job.feedback"]
            assert record.actor == "slack:U0ASKER" and record.detail == {"job": job.id, "agent": "echo",
                                                                         "value": "good", "platform": "slack"}
    run(main())
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        with ConsoleThread(runtime) as console, httpx.Client(base_url=console.url, timeout=20) as http:
            metrics = http.get("/metrics").text
            assert 'oz0_feedback_total{agent="echo",value="good"} 1.0' in metrics
            assert "Feedback from chat: 👍 1 · 👎 0" in http.get("/agents/echo").text
    finally:
        runtime.close()


def test_discord_thumbs_down_is_audited(home: Path) -> None:
    from test_discord import buttons, component

    async def main() -> None:
        async with discord_running(home) as h:
            ask = await h.send(h.standin.slash("ask", {"agent": "echo", "input": "hi"}, **h.where()))
            private = (await h.edit(ask)).body
            [bad] = [b for b in buttons(private["components"], feedback=True) if b["label"] == "👎"]
            message = h.standin.message_from(private, channel_id=h.where()["channel_id"])
            click = await h.send(component(h, bad["custom_id"], message))
            said = (await h.callback(click)).body
            assert "your 👎 was recorded" in said["data"]["content"]
            [record] = [r for r in h.runtime.audit_log() if r.action == "job.feedback"]
            assert record.detail["value"] == "bad" and record.actor == "discord:2000"
    run(main())


def test_an_ordinary_slack_ask_names_its_asker_on_the_console(home: Path) -> None:
    import httpx
    from console_plugin import ConsoleThread
    from slack_standin import SlackStandIn

    people = {"U0ASKER": {"name": "ana", "real_name": "Ana Lima", "display_name": "Ana Lima"}}

    async def main() -> str:
        async with SlackStandIn(people=people) as slack, running_channel(home, slack=slack) as h:
            await h.mention("echo hi", event_id="Ev1", ts="1700000000.000100")
            await h.slack.wait_for("chat.update")
            await h.slack.wait_for("users.info")
            for _ in range(100):
                if h.runtime.people.names(["slack:U0ASKER"]):
                    break
                await asyncio.sleep(0.05)
            return h.runtime.jobs(limit=1)[0].id
    job_id = run(main())
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        with ConsoleThread(runtime) as console, httpx.Client(base_url=console.url, timeout=20) as http:
            page = http.get(f"/jobs/{job_id}").text
            assert "Ana Lima" in page
    finally:
        runtime.close()
