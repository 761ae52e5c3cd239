"""Conversations in chat (edge.runtime.conversations, adapters.chat.conversing): a thread the bot
answered in is a conversation with that agent; replies in it are follow-ups that carry the earlier
turns; `@oz0 other-agent` switches; `@oz0 stop` and the Stop button end it; bounded per agent."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from chat_plugin import install_chat_plugin
from slack_harness import running_channel
from slack_standin import BOT_USER, TEAM, signed_headers, thread_message_body
from sqlalchemy import create_engine, inspect, text
from test_migrations import schema_drift

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.agent import ConversationLimits
from oz0.edge.runtime import migrate
from oz0.edge.runtime.conversations import ConversationBusy, conversation_id
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.store import Store

IMPL = """\
import json

def echo(text):
    return "echo: " + text

def recall(text, ctx):
    return json.dumps({"heard": text, "history": list(ctx.history)})

def deploys(value):
    return [{"service": value["service"], "n": 0, "status": "ok"}]

def boom(text):
    raise RuntimeError("no")
"""

EXTRA = {
    "agents/recall.yaml": """\
        description: Says what it heard and the earlier turns it was given
        kind: python
        entry: impl:recall
        input: text
        output: text
        conversation: {max_turns: 2, max_tokens: 8000, idle_hours: 1}
        """,
    "agents/shell.yaml": """\
        description: Prints the history a command agent is given
        kind: command
        command: ["sh", "-c", "printf '%s' \\"${OZ0_HISTORY:-none}\\""]
        input: text
        output: text
        history: true
        """,
    "agents/noshell.yaml": """\
        description: A command agent that did not ask for the history
        kind: command
        command: ["sh", "-c", "printf '%s' \\"${OZ0_HISTORY:-none}\\""]
        input: text
        output: text
        """,
}


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def install(home: Path, runtime: Runtime | None = None) -> None:
    own = runtime is None
    runtime = runtime or Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        install_chat_plugin(runtime, home.parent / "convo-plugin", name="convo", impl=IMPL,
                            extra={k: textwrap.dedent(v) for k, v in EXTRA.items()})
    finally:
        if own:
            runtime.close()


thread_message = thread_message_body


async def reply(h: Any, text_: str, **kw: Any) -> int:
    body = thread_message(text_, **kw)
    status, _, _ = await h.post(body, signed_headers(body, content_type="application/json"))
    return status


async def card_texts(h: Any, count: int) -> list[str]:
    """The cards that replaced the working messages (chat.update), as JSON text."""
    updates = await h.slack.wait_for("chat.update", count)
    return [json.dumps(u.args.get("blocks"), ensure_ascii=False) for u in updates]


@pytest.fixture
def home(oz0_home: Path) -> Path:
    install(oz0_home)
    return oz0_home


def test_a_reply_in_the_thread_is_a_follow_up_with_the_earlier_turns(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home) as h:
            await h.mention("recall triage the nightly build", event_id="Ev1", ts="1700000000.000100")
            [first] = await card_texts(h, 1)
            assert '\\"history\\": []' in first
            assert await reply(h, "and yesterday's?", event_id="Ev2", thread_ts="1700000000.000100",
                               ts="1700000000.000200") == 200
            second = (await card_texts(h, 2))[1]
            assert "and yesterday's?" in second and "triage the nightly build" in second
            posted = h.slack.of("chat.postMessage")
            assert all(p.args.get("thread_ts") == "1700000000.000100" for p in posted)
            [job2, job1] = h.runtime.jobs(limit=2)
            cid = conversation_id("slack", "C0GENERAL", "1700000000.000100")
            turns = h.runtime.conversations.turns(cid)
            assert [(t["seq"], t["job_id"], t["previous_job_id"]) for t in turns] == [
                (1, job1.id, None), (2, job2.id, job1.id)]
            assert "oz0_stop" in second   # the Stop button under an answer in a conversation
    run(main())


def test_a_follow_up_whose_turn_cannot_be_journaled_is_still_answered(home: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """The ask is journaled and acknowledged before its turn is: a turn that finds no number (a burst in
    the thread) must not leave its job queued forever, with no card."""
    async def main() -> None:
        async with running_channel(home) as h:
            await h.mention("recall triage the nightly build", event_id="Ev1", ts="1700000000.000100")
            await card_texts(h, 1)

            def busy(cid: str, *args: Any, **kw: Any) -> int:
                raise ConversationBusy(cid)

            h.runtime.conversations.add_turn = busy
            assert await reply(h, "and yesterday's?", event_id="Ev2", thread_ts="1700000000.000100",
                               ts="1700000000.000200") == 200
            second = (await card_texts(h, 2))[1]
            assert "and yesterday's?" in second and '\\"history\\": []' in second   # run, without the turns
            [job2, _] = h.runtime.jobs(limit=2)
            assert job2.status == "succeeded"
    run(main())
    assert any("not journaled as its thread's next turn (ConversationBusy)" in r.getMessage() for r in caplog.records)


def test_a_reply_outside_a_conversation_and_the_bots_own_messages_are_not_asks(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home) as h:
            await reply(h, "just chatting", event_id="Ev1", thread_ts="1700000000.000900", ts="1700000000.001000")
            await h.mention("echo hi", event_id="Ev2", ts="1700000000.000100")
            await card_texts(h, 1)
            await reply(h, "a bot says", event_id="Ev3", thread_ts="1700000000.000100", ts="1700000000.000300",
                        bot_id="B0OTHER")
            await reply(h, "edited", event_id="Ev4", thread_ts="1700000000.000100", ts="1700000000.000400",
                        subtype="message_changed")
            await reply(h, f"<@{BOT_USER}> echo again", event_id="Ev5", thread_ts="1700000000.000100",
                        ts="1700000000.000500")   # its app_mention asks
            await asyncio.sleep(0.5)
            assert len(h.runtime.jobs()) == 1
    run(main())


def test_a_mention_in_the_thread_switches_agent_and_stop_ends_the_conversation(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home) as h:
            thread = "1700000000.000100"
            await h.mention("echo first", event_id="Ev1", ts=thread)
            await card_texts(h, 1)
            await h.mention("recall second", event_id="Ev2", ts="1700000000.000200", thread_ts=thread)
            switched = (await card_texts(h, 2))[1]
            assert "echo: first" in switched   # the new agent is given the thread's earlier turns
            await reply(h, "third", event_id="Ev3", thread_ts=thread, ts="1700000000.000300")
            third = (await card_texts(h, 3))[2]
            assert "third" in third and "echo: first" in third
            stop = h.runtime.conversations.stop

            def busy(cid: str, *, by: str) -> bool:   # a burst of asks holds the thread's next number
                raise ConversationBusy(cid)

            h.runtime.conversations.stop = busy
            await h.mention("stop", event_id="Ev4b", ts="1700000000.000350", thread_ts=thread)
            [told] = await h.slack.wait_for("chat.postEphemeral")
            assert "was not stopped; stop it again in a few seconds" in json.dumps(told.args)
            h.runtime.conversations.stop = stop
            await h.mention("stop", event_id="Ev4", ts="1700000000.000400", thread_ts=thread)
            ended = (await h.slack.wait_for("chat.postEphemeral", 2))[1]
            assert "conversation in this thread has ended" in json.dumps(ended.args)
            await reply(h, "fourth", event_id="Ev5", thread_ts=thread, ts="1700000000.000500")
            await asyncio.sleep(0.5)
            assert len(h.runtime.jobs()) == 3
            cid = conversation_id("slack", "C0GENERAL", thread)
            assert h.runtime.conversations.get(cid).stopped
    run(main())


def test_a_follow_up_to_an_agent_that_takes_json_is_refused_naming_its_input(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home) as h:
            thread = "1700000000.000100"
            await h.mention('deploys {"service": "api"}', event_id="Ev1", ts=thread)
            await card_texts(h, 1)
            await reply(h, "and the web one?", event_id="Ev2", thread_ts=thread, ts="1700000000.000200")
            [refused] = await h.slack.wait_for("chat.postEphemeral")
            said = json.dumps(refused.args)
            assert "deploys takes JSON that matches schemas/deploys.in.json" in said
            assert len(h.runtime.jobs()) == 1
    run(main())


def test_the_stop_button_ends_the_conversation(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home) as h:
            thread = "1700000000.000100"
            await h.mention("echo hi", event_id="Ev1", ts=thread)
            await card_texts(h, 1)
            cid = conversation_id("slack", "C0GENERAL", thread)
            from slack_standin import block_action_body
            body = block_action_body(action_id="oz0_stop", value=cid, response_url=h.slack.response_url("stop1"))
            status, _, _ = await h.post(body, signed_headers(body))
            assert status == 200
            [notice] = await h.slack.wait_for("response")
            assert "conversation has ended" in notice.args["text"]
            assert h.runtime.conversations.get(cid).stopped
    run(main())


# ---- the edge: history bounds, kinds, replicas, the revision --------------------------------------

def _turns(runtime: Runtime, cid: str, agent: str, texts: list[str]) -> list[str]:
    ids = []
    for t in texts:
        job, _ = runtime.submit(agent, t, requester="slack:U1", channel="slack:C1")
        runtime.conversations.add_turn(cid, job.id, agent, by="slack:U1")
        asyncio.run(runtime.execute(job.id))
        ids.append(job.id)
    return ids


def test_past_max_turns_the_oldest_are_dropped_and_the_card_says_so(home: Path) -> None:
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        ids = _turns(runtime, "slack:C1:1.0", "recall", ["one", "two", "three", "four"])
        last = runtime.job(ids[-1])
        seen = json.loads(last.output)["history"]
        assert [m["content"] for m in seen if m["role"] == "user"] == ["two", "three"]   # max_turns: 2
        assert any("1 earlier turn of this conversation was left out" in n and "last 2 turns" in n
                   for n in runtime.card(last).notes)
        history = runtime.conversations.history(ids[-1], ConversationLimits(max_turns=20, max_tokens=100))
        assert history.dropped >= 1 and sum(len(m["content"]) for m in history.messages) <= 400
    finally:
        runtime.close()


def test_command_agents_get_oz0_history_only_with_history_true(home: Path) -> None:
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        _turns(runtime, "slack:C1:2.0", "echo", ["hello"])
        [shell] = _turns(runtime, "slack:C1:2.0", "shell", ["again"])
        assert json.loads(runtime.job(shell).output) == [{"role": "user", "content": "hello"},
                                                          {"role": "assistant", "content": "echo: hello"}]
        [plain] = _turns(runtime, "slack:C1:2.0", "noshell", ["once more"])
        assert runtime.job(plain).output == "none"
    finally:
        runtime.close()


def test_plugin_list_shows_each_agents_conversation_bounds(home: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "oz0.adapters.cli", "plugin", "list", "--json"], capture_output=True,
                          text=True, env={**os.environ, "OZ0_HOME": str(home)}, timeout=60)
    agents = {a["name"]: a for p in json.loads(done.stdout)["plugins"] for a in p["agents"]}
    assert agents["recall"]["conversation"] == {"max_turns": 2, "max_tokens": 8000, "idle_hours": 1}
    assert agents["echo"]["conversation"] == {"max_turns": 20, "max_tokens": 8000, "idle_hours": 24.0}
    assert agents["shell"]["history"] is True and agents["echo"]["history"] is False


def test_two_runtimes_over_one_postgres_share_a_conversation(postgres_url: str, tmp_path: Path) -> None:
    from test_migrations import fresh_database

    url = fresh_database(postgres_url)
    a = Runtime(tmp_path / "a", database_url=url, flow_engine=FLOW_ENGINE)
    b = Runtime(tmp_path / "b", database_url=url, flow_engine=FLOW_ENGINE)
    try:
        install(tmp_path / "a", a)
        cid = "slack:C1:9.0"
        [first] = _turns(a, cid, "echo", ["on a"])
        job, _ = b.submit("recall", "on b", requester="slack:U2", channel="slack:C1")
        assert b.conversations.add_turn(cid, job.id, "recall", by="slack:U2") == 2
        done = asyncio.run(b.execute(job.id))
        assert json.loads(done.output)["history"][1]["content"] == "echo: on a"
        assert a.conversations.get(cid).agent == "recall" and a.conversations.get(cid).last_job_id == job.id
        assert a.conversations.turns(cid)[1]["previous_job_id"] == first
    finally:
        a.close()
        b.close()


def test_a_burst_of_asks_in_one_thread_on_two_replicas_takes_every_turn_in_order(postgres_url: str,
                                                                                 tmp_path: Path) -> None:
    """Fifty replies at once in one thread, from two replicas: each gets a turn, numbered 1 to 50, each
    linked to the turn before it (five tries used to give up, and the acknowledged ask was never run)."""
    import threading

    from test_migrations import fresh_database

    from oz0.edge.runtime.conversations import Conversations

    url = fresh_database(postgres_url)
    stores = [Store(url), Store(url)]
    try:
        books = [Conversations(store) for store in stores]
        cid, count = "slack:C1:7.0", 50
        start = threading.Barrier(count)
        taken: dict[str, int] = {}
        failed: list[BaseException] = []

        def add(i: int) -> None:
            start.wait()
            try:
                taken[f"j{i}"] = books[i % 2].add_turn(cid, f"j{i}", "echo", by="slack:U1")
            except BaseException as exc:
                failed.append(exc)

        threads = [threading.Thread(target=add, args=(i,)) for i in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert failed == [], failed[:3]
        assert sorted(taken.values()) == list(range(1, count + 1))
        rows = books[0].turns(cid)
        assert [r["seq"] for r in rows] == list(range(1, count + 1))
        assert [r["previous_job_id"] for r in rows] == [None] + [r["job_id"] for r in rows[:-1]]
    finally:
        for store in stores:
            store.close()


def test_a_turn_that_finds_no_number_in_time_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oz0.edge.runtime import conversations
    from oz0.edge.runtime.conversations import Conversations

    store = Store(f"sqlite:///{tmp_path / 'oz0.db'}")
    try:
        book = Conversations(store)
        assert book.add_turn("slack:C:1", "j1", "echo", by="ana") == 1
        monkeypatch.setattr(conversations, "ADD_WITHIN_S", 0.2)
        monkeypatch.setattr(book, "get", lambda cid: None)   # every try reads a thread with no turn yet
        with pytest.raises(ConversationBusy) as raised:
            book.add_turn("slack:C:1", "j2", "echo", by="ana")
        assert str(raised.value) == ("conversation slack:C:1: so many asks in this thread at once that this one "
                                     "found no place in it within 0.2 s")
        assert [r["job_id"] for r in book.turns("slack:C:1")] == ["j1"]
    finally:
        store.close()


def test_revision_0015_adds_conversation_turns_to_a_database_made_by_0009(tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config

    url = f"sqlite:///{tmp_path / 'oz0.db'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(migrate.MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, "0009")
        conn.execute(text("INSERT INTO jobs (id, agent, requester, channel, input, status, created, attempts) "
                          "VALUES ('j1', 'echo', 'ana', 'cli', 'hi', 'succeeded', 1.0, 1)"))
    assert not inspect(engine).has_table("conversation_turns")
    engine.dispose()
    store = Store(url)
    from oz0.edge.runtime.conversations import Conversations

    book = Conversations(store)
    assert book.add_turn("slack:C:1", "j1", "echo", by="ana") == 1
    assert book.get("slack:C:1").last_job_id == "j1" and store.job("j1")["status"] == "succeeded"
    store.close()
    assert schema_drift(url) == []


def test_the_api_continues_a_conversation_and_the_job_page_shows_it(home: Path) -> None:
    import httpx
    from console_plugin import ConsoleThread

    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        with ConsoleThread(runtime) as console, httpx.Client(base_url=console.url, timeout=20) as http:
            first = http.post("/v1/agents/recall/runs", content="the nightly build",
                              headers={"content-type": "text/plain"}).json()["job"]["id"]
            r = http.post(f"/v1/jobs/{first}/follow-ups", json="and yesterday's?")
            assert r.status_code == 200, r.text
            body = r.json()
            assert json.loads(body["output"])["history"][0] == {"role": "user", "content": "the nightly build"}
            second = body["job"]["id"]
            turns = body["job"]["conversation"]["turns"]
            assert [(t["job_id"], t["previous_job_id"]) for t in turns] == [(first, None), (second, first)]
            page = http.get(f"/jobs/{second}").text
            assert 'id="conversation"' in page and f'href="/jobs/{first}"' in page and "the nightly build" in page
            deploys = http.post("/v1/agents/deploys/runs", json={"service": "api"}).json()["job"]["id"]
            refused = http.post(f"/v1/jobs/{deploys}/follow-ups", json="and web?")
            assert refused.status_code == 422 and refused.json()["error_code"] == "follow_up_not_text"
            assert "schemas/deploys.in.json" in refused.json()["message"]
            runtime.conversations.stop(f"api:{first}", by="test")
            ended = http.post(f"/v1/jobs/{second}/follow-ups", json="more")
            assert ended.status_code == 409 and ended.json()["error_code"] == "conversation_ended"
            assert http.post("/v1/jobs/nope/follow-ups", json="x").status_code == 404
    finally:
        runtime.close()


def test_a_mention_in_the_thread_that_names_no_agent_is_a_follow_up(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home) as h:
            thread = "1700000000.000100"
            await h.mention("recall the nightly build", event_id="Ev1", ts=thread)
            await card_texts(h, 1)
            await h.mention("and yesterday's?", event_id="Ev2", ts="1700000000.000200", thread_ts=thread)
            second = (await card_texts(h, 2))[1]
            assert "and yesterday's?" in second and "the nightly build" in second
            await h.mention("nosuchagent hi", event_id="Ev3", ts="1700000000.000300")   # no conversation there
            [refused] = await h.slack.wait_for("chat.postEphemeral")
            assert "There is no agent 'nosuchagent'" in json.dumps(refused.args)
    run(main())


# ---- Discord: a conversation in a thread ----------------------------------------------------------

@contextlib.asynccontextmanager
async def discord_running(home: Path, **kw: Any) -> AsyncIterator[Any]:
    """The Discord channel on a runtime of `home` (the conversations plugin, not the harness's own)."""
    from discord_harness import running_channel as discord_channel

    runtime = Runtime(home, backoff_s=0.01, flow_engine=FLOW_ENGINE)
    try:
        async with discord_channel(home, runtime=runtime, **kw) as h:
            yield h
    finally:
        runtime.close()


def _discord(home: Path, standin_kw: dict[str, Any] | None = None) -> tuple[Any, str, str]:
    from discord_harness import CHANNEL, GUILD
    from discord_standin import DiscordStandIn, snowflake

    thread = snowflake()
    standin = DiscordStandIn(guilds=[DiscordStandIn.guild(GUILD, channel_ids=(CHANNEL,), thread_ids=(thread,))],
                             **(standin_kw or {}))
    return standin, GUILD, thread


async def _posted(h: Any, thread: str, count: int) -> list[Any]:
    return await h.standin.wait_for(lambda r: r.method == "POST" and r.path == f"/channels/{thread}/messages",
                                    count=count)


def test_discord_replies_in_the_thread_are_follow_ups_with_the_message_content_intent(home: Path) -> None:
    standin, guild, thread = _discord(home)

    async def main() -> None:
        async with discord_running(home, env={"DISCORD_MESSAGE_CONTENT": "true"}, standin=standin) as h:
            assert h.standin.identifies[0]["intents"] & (1 << 15)
            ask = await h.send(h.standin.slash("ask", {"agent": "recall", "input": "the nightly build"},
                                               guild_id=guild, channel_id=thread, channel_type=11))
            await h.edit(ask)
            said = await h.standin.post_message("and yesterday's?", guild_id=guild, channel_id=thread)
            [answer] = await _posted(h, thread, 1)
            body = json.dumps(answer.body, ensure_ascii=False)
            assert "and yesterday's?" in body and "the nightly build" in body
            assert answer.body["message_reference"]["message_id"] == said["id"]
            assert not answer.body.get("flags", 0) & 64
            assert h.standin.calls("POST", f"/channels/{thread}/typing")
            assert "oz0_stop:" in body   # its Stop button
            cid = conversation_id("discord", thread, thread)
            assert [t["kind"] for t in h.runtime.conversations.turns(cid)] == ["turn", "turn"]
    run(main())


def test_discord_without_the_intent_reads_only_mentions_in_the_thread(home: Path) -> None:
    standin, guild, thread = _discord(home, {"message_content_allowed": False})

    async def main() -> None:
        async with discord_running(home, standin=standin) as h:
            assert not h.standin.identifies[0]["intents"] & (1 << 15)
            ask = await h.send(h.standin.slash("ask", {"agent": "recall", "input": "first"},
                                               guild_id=guild, channel_id=thread, channel_type=11))
            await h.edit(ask)
            await h.standin.post_message("not read", guild_id=guild, channel_id=thread)   # content arrives empty
            await asyncio.sleep(0.5)
            assert len(h.runtime.jobs()) == 1
            await h.standin.post_message("and then?", guild_id=guild, channel_id=thread, mentions_bot=True)
            [answer] = await _posted(h, thread, 1)
            body = json.dumps(answer.body, ensure_ascii=False)
            assert "and then?" in body and "first" in body
            await h.standin.post_message("stop", guild_id=guild, channel_id=thread, mentions_bot=True)
            ended = await _posted(h, thread, 2)
            assert "conversation in this thread has ended" in json.dumps(ended[1].body)
    run(main())


def test_discord_says_which_switch_to_turn_on_when_the_intent_is_refused(home: Path) -> None:
    from oz0.adapters.chat.discord_settings import DiscordConfigError

    standin, _, _ = _discord(home, {"message_content_allowed": False})

    async def main() -> None:
        with pytest.raises(DiscordConfigError, match="Privileged Gateway Intents"):
            async with discord_running(home, env={"DISCORD_MESSAGE_CONTENT": "1"}, standin=standin):
                pass
    run(main())


def test_a_slack_direct_message_is_an_ask_without_a_mention_and_help_lists_agents(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home) as h:
            dm = json.loads(thread_message("recall what broke", event_id="Ev1", thread_ts="", ts="1700000000.000100",
                                           channel="D0ASKER", channel_type="im"))
            del dm["event"]["thread_ts"]
            body = json.dumps(dm)
            assert (await h.post(body, signed_headers(body, content_type="application/json")))[0] == 200
            [card] = await card_texts(h, 1)
            assert "what broke" in card
            [posted] = h.slack.of("chat.postMessage")
            assert posted.args["channel"] == "D0ASKER" and posted.args["thread_ts"] == "1700000000.000100"
            await reply(h, "and now?", event_id="Ev2", thread_ts="1700000000.000100", ts="1700000000.000200",
                        channel="D0ASKER", channel_type="im")
            second = (await card_texts(h, 2))[1]
            assert "and now?" in second and "what broke" in second
            dm["event"].update(text="help", ts="1700000000.000300")
            dm["event_id"] = "Ev3"
            body = json.dumps(dm)
            await h.post(body, signed_headers(body, content_type="application/json"))
            [helped] = await h.slack.wait_for("chat.postEphemeral")
            assert "recall" in json.dumps(helped.args) and helped.args["channel"] == "D0ASKER"
    run(main())


def test_discord_direct_messages_are_asks_only_with_dms_true(home: Path) -> None:
    from discord_standin import snowflake

    async def main(dms: bool) -> None:
        dm = snowflake()
        async with discord_running(home, access=f"dms: {'true' if dms else 'false'}\n") as h:
            assert bool(h.standin.identifies[0]["intents"] & (1 << 12)) is dms
            before = len(h.runtime.jobs())
            await h.standin.post_message("recall hello there", guild_id=None, channel_id=dm)
            if not dms:
                await asyncio.sleep(0.5)
                assert len(h.runtime.jobs()) == before
                return
            [answer] = await _posted(h, dm, 1)
            assert "hello there" in json.dumps(answer.body, ensure_ascii=False)
            await h.standin.post_message("and more?", guild_id=None, channel_id=dm)
            second = (await _posted(h, dm, 2))[1]
            body = json.dumps(second.body, ensure_ascii=False)
            assert "and more?" in body and "hello there" in body
    run(main(False))
    run(main(True))


def test_the_assistant_pane_suggests_prompts_shows_thinking_and_titles_the_thread(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home) as h:
            h.slack.assistant_threads.add(("D0ASKER", "1700000000.000500"))
            started = json.dumps({"token": "x", "team_id": TEAM, "api_app_id": "A0OZ0", "type": "event_callback",
                                  "event_id": "EvA", "event_time": 1700000000,
                                  "event": {"type": "assistant_thread_started", "event_ts": "1700000000.000600",
                                            "assistant_thread": {"user_id": "U0ASKER", "channel_id": "D0ASKER",
                                                                 "thread_ts": "1700000000.000500", "context": {}}}})
            assert (await h.post(started, signed_headers(started, content_type="application/json")))[0] == 200
            [suggested] = await h.slack.wait_for("assistant.threads.setSuggestedPrompts")
            prompts = suggested.args["prompts"]
            prompts = json.loads(prompts) if isinstance(prompts, str) else prompts
            assert {"title": "Says back what it was given", "message": "echo hello there"} in prompts
            assert 1 <= len(prompts) <= 4
            await reply(h, "echo hello there", event_id="Ev1", thread_ts="1700000000.000500", ts="1700000000.000700",
                        channel="D0ASKER", channel_type="im")
            await card_texts(h, 1)
            [status] = h.slack.of("assistant.threads.setStatus")
            assert status.args["status"] == "is thinking..." and status.args["thread_ts"] == "1700000000.000500"
            [title] = h.slack.of("assistant.threads.setTitle")
            assert title.args["title"] == "echo hello there"
    run(main())
