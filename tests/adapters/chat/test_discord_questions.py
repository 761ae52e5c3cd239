"""A job that asks a person, in Discord: a real discord.py client against the loopback Discord
stand-in, a real Runtime whose python agent calls `ctx.ask_person`. Assertions are on the wire: the
question's buttons and modal, the deferred clicks, what the clicker alone was told, and the message
edited to say who decided."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from ask_plugin import install_ask_plugin
from discord_harness import CHANNEL, buttons, running_channel, texts, working_stop

from oz0.adapters.chat import discord as discord_client

DEFERRED_UPDATE = 6
MODAL = 9
EPHEMERAL = 1 << 6


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.fixture
def home(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OZ0_TEST_RUNS", str(oz0_home.parent / "runs.txt"))
    return oz0_home


def channel(home: Path):
    return running_channel(home, before_serve=lambda rt: install_ask_plugin(rt, home.parent / "ask-plugin"))


async def asked(h: Any, text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """/ask approve TEXT: the ask's interaction and the question's follow-up body."""
    ask = await h.send(h.standin.slash("ask", {"agent": "approve", "input": text}, **h.where()))
    working_stop(await h.callback(ask), "approve")
    followup = f"/webhooks/{h.standin.app_id}/{ask['token']}"
    [posted] = await h.standin.wait_for(lambda r: r.method == "POST" and r.path == followup)
    return ask, posted.body


def click(h: Any, custom_id: str, question: dict[str, Any], *, user_id: str = "2000") -> dict[str, Any]:
    message = h.standin.message_from(question, channel_id=CHANNEL)
    return h.standin.interaction(3, {"custom_id": custom_id, "component_type": 2}, message=message,
                                 **h.where(user_id=user_id))


async def followup_of(h: Any, interaction: dict[str, Any]) -> dict[str, Any]:
    path = f"/webhooks/{h.standin.app_id}/{interaction['token']}"
    [said] = await h.standin.wait_for(lambda r: r.method == "POST" and r.path == path)
    return said.body


def test_a_question_answered_by_its_buttons_edits_its_message_and_a_second_click_is_refused(home):
    async def scenario():
        async with channel(home) as h:
            ask, question = await asked(h, "bool")
            assert question["flags"] & EPHEMERAL            # the asker alone answers: shown to them alone
            assert question["allowed_mentions"] == {"parse": []}
            assert "Merge \\<!here\\> #12 & ship? (bool)" in texts(question["components"])   # drawn as written
            yes, no = buttons(question["components"])
            assert (yes["label"], no["label"]) == ("Yes", "No")

            first = await h.send(click(h, yes["custom_id"], question))
            assert (await h.callback(first)).body == {"type": DEFERRED_UPDATE}
            edited = (await h.edit(first)).body              # the message clicked, edited into the decision
            assert "Yes — by Ana Lima at" in texts(edited["components"])
            assert buttons(edited["components"]) == []
            final = await h.standin.wait_for(lambda r: r.method == "PATCH" and ask["token"] in r.path
                                             and "accept" in texts((r.body or {}).get("components") or []))
            assert 'accept {"approved": true} by discord:2000' in texts(final[0].body["components"])

            again = await h.send(click(h, no["custom_id"], question))
            assert (await h.callback(again)).body == {"type": DEFERRED_UPDATE}
            said = await followup_of(h, again)
            assert said["flags"] == EPHEMERAL and "no longer open" in said["content"]
            assert len([a for a in h.runtime.audit_log() if a.action == "flow.answered"]) == 1
    run(scenario())


def test_someone_not_among_the_answerers_is_refused_privately_and_audited(home):
    async def scenario():
        async with channel(home) as h:
            ask = await h.send(h.standin.slash("ask", {"agent": "approve", "input": "enum 3000"}, **h.where()))
            await h.callback(ask)
            # others answer: the question is posted in the channel, not to the asker alone
            [posted] = await h.standin.wait_for(lambda r: r.method == "POST" and r.path == f"/channels/{CHANNEL}/messages")
            assert [b["label"] for b in buttons(posted.body["components"])] == ["prod", "staging", "dev"]
            staging = buttons(posted.body["components"])[1]

            wrong = await h.send(click(h, staging["custom_id"], posted.body, user_id="2000"))
            await h.callback(wrong)
            said = await followup_of(h, wrong)
            assert said["flags"] == EPHEMERAL and "not among those who may answer" in said["content"]
            [denied] = [a for a in h.runtime.audit_log() if a.action == "access.denied"]
            assert denied.actor == "discord:2000"
            assert h.runtime.jobs()[0].status == "waiting"

            right = await h.send(click(h, staging["custom_id"], posted.body, user_id="3000"))
            await h.callback(right)
            assert "staging — by @3000 at" in texts((await h.edit(right)).body["components"])
    run(scenario())


def test_a_question_answered_in_a_modal_shows_the_path_and_rule_of_an_invalid_answer(home):
    async def scenario():
        async with channel(home) as h:
            ask, question = await asked(h, "form")
            [answer] = buttons(question["components"])
            assert answer["label"] == "Answer…"

            opening = await h.send(click(h, answer["custom_id"], question))
            modal = (await h.callback(opening)).body
            assert modal["type"] == MODAL
            labels = modal["data"]["components"]
            assert [(c["label"], c["component"]["type"]) for c in labels] == [("reason", 4), ("count", 4), ("urgent", 3)]
            assert labels[0]["description"] == "Why" and labels[0]["component"]["required"] is True

            def submit(count: str) -> dict[str, Any]:
                return h.standin.interaction(5, {"custom_id": modal["data"]["custom_id"], "components": [
                    {"type": 18, "component": {"type": 4, "custom_id": "oz0_f0", "value": "ok go"}},
                    {"type": 18, "component": {"type": 4, "custom_id": "oz0_f1", "value": count}},
                    {"type": 18, "component": {"type": 3, "custom_id": "oz0_f2", "values": ["0"]}},
                ]}, message=h.standin.message_from(question, channel_id=CHANNEL), **h.where())

            bad = await h.send(submit("zero"))
            assert (await h.callback(bad)).body == {"type": DEFERRED_UPDATE}
            said = await followup_of(h, bad)
            assert said["flags"] == EPHEMERAL
            assert "$.count" in said["content"] and "'type'" in said["content"]
            assert h.runtime.jobs()[0].status == "waiting"

            good = await h.send(submit("3"))
            await h.callback(good)
            assert "by Ana Lima at" in texts((await h.edit(good)).body["components"])
            final = await h.standin.wait_for(lambda r: r.method == "PATCH" and ask["token"] in r.path
                                             and "accept" in texts((r.body or {}).get("components") or []))
            assert '{"count": 3, "reason": "ok go", "urgent": true}' in texts(final[0].body["components"])
    run(scenario())


def test_to_answer_click_reads_only_question_buttons_and_modals():
    from discord_standin import DiscordStandIn

    standin = DiscordStandIn()
    share = standin.interaction(3, {"custom_id": "oz0_share:abc"}, guild_id="1", channel_id="2")
    with pytest.raises(ValueError):
        discord_client.to_answer_click(share)
    yes = standin.interaction(3, {"custom_id": "oz0_answer_yes:job1/0123abcd/yes"}, guild_id="1", channel_id="2")
    picked = discord_client.to_answer_click(yes)
    assert (picked.pick.job_id, picked.pick.choice, picked.form) == ("job1", "yes", None)
    submit = standin.interaction(5, {"custom_id": "oz0_answer_form:job1/0123abcd/form", "components": [
        {"type": 18, "component": {"type": 4, "custom_id": "oz0_f0", "value": "x"}}]}, guild_id="1", channel_id="2")
    assert discord_client.to_answer_click(submit).form == {"oz0_f0": "x"}
