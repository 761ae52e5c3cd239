"""Conversations on Teams: a channel post's reply chain the bot answered in, and a personal chat, are
conversations with that agent (adapters.chat.conversing, the same as Slack's and Discord's): a reply
without a mention follows up, `@oz0 stop` ends it. Signed activities in, connector calls out."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from teams_harness import run, running_channel
from teams_standin import cards, runs_text
from test_conversations import install

from oz0.edge.runtime.conversations import conversation_id
from oz0.edge.runtime.runner import Runtime

CHANNEL = "19:chan@thread.tacv2"


@pytest.fixture
def home(oz0_home: Path) -> Path:
    install(oz0_home)
    return oz0_home


@contextlib.asynccontextmanager
async def channel(home: Path, **kw: Any) -> AsyncIterator[Any]:
    """The Teams channel over a runtime with the conversation test plugin (recall, echo) alone."""
    runtime = Runtime(home, backoff_s=0.01)
    try:
        async with running_channel(home, runtime=runtime, **kw) as h:
            yield h
    finally:
        runtime.close()


def final_cards(h: Any) -> list[str]:
    """The text of each card that replaced a working message (a PUT), in order."""
    return [runs_text(cards(c)) for c in h.standin.calls if c.method == "PUT"
            and "Working on" not in runs_text(cards(c))]


async def card_with(h: Any, text: str) -> str:
    found = await h.standin.wait_for(lambda calls: [t for t in final_cards(h) if text in t])
    return str(found[-1])


def test_a_reply_in_the_thread_of_the_answer_without_a_mention_is_a_follow_up(home: Path) -> None:
    async def scenario() -> None:
        async with channel(home) as h:
            root = h.standin.message("recall triage the nightly build")
            assert (await h.post(root))[0] == 200
            first = await card_with(h, "triage the nightly build")
            assert '"history": []' in first
            thread = f"{CHANNEL};messageid={root['id']}"
            assert all(c.path.startswith(f"/connector/v3/conversations/{thread}/") for c in h.standin.calls)
            follow = h.standin.message("and yesterday's?", mention=False, thread=root["id"])
            assert (await h.post(follow))[0] == 200
            second = await card_with(h, "and yesterday's?")
            assert "triage the nightly build" in second          # the earlier turn, given to the agent
            reply = [c for c in h.standin.calls if c.method == "POST" and c.path.endswith("/activities/" + follow["id"])]
            assert reply and reply[0].path.startswith(f"/connector/v3/conversations/{thread}/")   # in the thread
            turns = h.runtime.conversations.turns(conversation_id("teams", CHANNEL, root["id"]))
            assert [t["kind"] for t in turns] == ["turn", "turn"]
    run(scenario())


def test_a_message_without_a_mention_outside_an_answered_thread_is_nobodys_ask(home: Path) -> None:
    async def scenario() -> None:
        async with channel(home) as h:
            for activity in (h.standin.message("recall a new post", mention=False),            # a new post
                             h.standin.message("recall chatter", mention=False, thread="1999"),  # someone's thread
                             h.standin.message("recall in a group chat", mention=False, kind="groupChat",
                                               conversation="19:group@thread.v2")):
                assert (await h.post(activity))[0] == 200
            await asyncio.sleep(0.5)
            assert h.standin.calls == [] and h.runtime.jobs() == []
    run(scenario())


def test_at_oz0_stop_ends_the_conversation_in_the_thread(home: Path) -> None:
    async def scenario() -> None:
        async with channel(home) as h:
            root = h.standin.message("recall first")
            await h.post(root)
            await card_with(h, "first")
            stop = h.standin.message("stop", thread=root["id"])
            await h.post(stop)
            said = await h.standin.wait_for(lambda calls: [c for c in calls if c.path.endswith("/activities/" + stop["id"])])
            assert "The conversation in this thread has ended" in runs_text(cards(said[0]))
            await h.post(h.standin.message("and then?", mention=False, thread=root["id"]))
            await asyncio.sleep(0.5)
            assert len(h.runtime.jobs()) == 1
    run(scenario())


def test_in_a_personal_chat_every_message_after_the_answer_continues_it(home: Path) -> None:
    async def scenario() -> None:
        async with channel(home) as h:
            chat = {"conversation": "a:personal-chat", "kind": "personal", "mention": False}
            await h.post(h.standin.message("recall the nightly build", **chat))
            await card_with(h, "the nightly build")
            await h.post(h.standin.message("and yesterday's?", **chat))
            second = await card_with(h, "and yesterday's?")
            assert "the nightly build" in second
            await h.post(h.standin.message("echo switch", **chat))          # another agent by name: an ask of it
            await card_with(h, "echo: switch")
            turns = h.runtime.conversations.turns(conversation_id("teams", "a:personal-chat", "a:personal-chat"))
            assert [t["agent"] for t in turns] == ["recall", "recall", "echo"]
            stop = h.standin.message("stop", **chat)
            await h.post(stop)
            said = await h.standin.wait_for(lambda calls: [c for c in calls if c.path.endswith("/activities/" + stop["id"])])
            assert "has ended" in runs_text(cards(said[0]))
    run(scenario())
