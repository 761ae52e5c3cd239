"""One event stream per job (edge.runtime.event_stream): in process, bounded, late readers get the end;
across two runtimes over one real Postgres; a person step answered through the API starts no thread;
the console waits on a job's events, not by polling; revision 0010 converts an old release's rows."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from console_plugin import installed_runtime
from plugin_kit import make_plugin
from sqlalchemy import JSON, column, create_engine, insert, table, text
from waits import bounded, eventually

from oz0.adapters.chat.discord_wire import ReplyTarget as DiscordReply
from oz0.adapters.chat.slack_wire import ReplyTarget as SlackReply
from oz0.adapters.console.app import create_app
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.progress import Progress
from oz0.edge.model.reply_ref import ReplyRef, ReplyRefError
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime import event_stream
from oz0.edge.runtime.event_stream import JobEvents, LocalEvents
from oz0.edge.runtime.events import Answered, JobEnded, Lagged, QuestionAsked, TextDelta, decode, encode
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.questions import Answer, Question
from oz0.edge.runtime.runner import Runtime

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
IMPL = """
    import asyncio

    SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

    async def slow_ask(text, ctx):
        await asyncio.sleep(float(text))
        answer = await ctx.ask_person("Go on?", SCHEMA, step="go")
        return f"{answer.action} {answer.content}"
    """


def asking_runtime(home: Path, where: Path, **kw) -> Runtime:
    runtime = Runtime(home, flow_engine=FLOW_ENGINE, **kw)
    make_plugin(where, name="eventful", files={"impl.py": IMPL, "schemas/go.json": SCHEMA}, agents={"slow-ask": {
        "description": "waits, then asks", "kind": "python", "entry": "impl:slow_ask", "input": "text",
        "output": "text", "asks": {"go": {"answer_schema": "schemas/go.json"}}}})
    install_plugin(runtime, load_plugin(where), actor="test")
    return runtime


# the in-process backend ---------------------------------------------------------------------------

def test_every_event_encodes_and_decodes_to_itself():
    question = Question("j1", "go", "Go on?", SCHEMA, {"users": ["U1"]}, 12.5, source="Budget")
    for event in (Progress.of("reading", 3, 10), QuestionAsked(question),
                  Answered("go", Answer("accept", {"ok": True}, "slack:U1", 3.0), via="slack"),
                  TextDelta("Hel", 0), JobEnded("failed", "Timeout"), Lagged(4)):
        assert decode(json.loads(json.dumps(encode(event)))) == event
    with pytest.raises(ValueError, match="unknown job event type 'nope'"):
        decode({"type": "nope"})
    with pytest.raises(ValueError, match="a answered event lacks or mistypes 'step'"):
        decode({"type": "answered"})


def test_a_reader_gets_the_live_events_in_order_then_the_end_and_a_late_reader_the_end_at_once():
    ended: list[str] = []
    stream = JobEvents(LocalEvents(), state=lambda job_id: (ended and [JobEnded("succeeded")]) or [])

    async def scenario() -> None:
        async def read() -> list:
            return [e async for e in stream.events("j1")]

        reader = asyncio.create_task(read())
        await asyncio.sleep(0)
        published = [Progress.of("one"), TextDelta("Hi ", 0), TextDelta("there", 3), JobEnded("succeeded")]

        def publish() -> None:  # from another thread, as an agent's thread does
            for event in published:
                stream.publish("j1", event)

        await asyncio.to_thread(publish)
        assert await asyncio.wait_for(reader, 5) == published
        ended.append("yes")
        late: list = []
        await bounded(_into(stream.events("j1"), late), late, within=5)
        assert late == [JobEnded("succeeded")]
        assert stream.backend.readers() == 0  # every reader unsubscribed

    asyncio.run(scenario())


def test_a_slow_reader_holds_at_most_max_buffered_events_and_is_told_what_it_missed():
    stream = JobEvents(LocalEvents(), state=lambda job_id: [])

    async def scenario() -> None:
        with stream.reader("j1") as reader:
            for n in range(event_stream.MAX_BUFFERED * 4):
                stream.publish("j1", Progress.of(f"step {n}"))
            assert len(reader._subscription._events) == event_stream.MAX_BUFFERED
            first = await reader.next(0)
            assert first == Lagged(event_stream.MAX_BUFFERED * 3)
            assert await reader.next(0) == Progress.of(f"step {event_stream.MAX_BUFFERED * 3}")
            stream.publish("j1", JobEnded("succeeded"))
            seen = [e async for e in _rest(reader)]
            assert seen[-1] == JobEnded("succeeded") and len(seen) == event_stream.MAX_BUFFERED

    asyncio.run(scenario())


def test_a_reader_that_never_sees_the_end_fails_saying_what_it_saw_instead_of_hanging():
    stream = JobEvents(LocalEvents(), state=lambda job_id: [])

    async def scenario() -> None:
        seen: list = []
        reading = asyncio.create_task(bounded(_into(stream.events("j1"), seen), seen, within=0.5))
        await asyncio.sleep(0.05)
        stream.publish("j1", Progress.of("still going"))
        with pytest.raises(AssertionError, match=r"not finished within 0.5s; seen: \[Progress\(.*still going"):
            await reading
        assert stream.backend.readers() == 0  # the cancelled reader unsubscribed

    asyncio.run(asyncio.wait_for(scenario(), 10))


async def _into(events, seen: list) -> None:
    async for event in events:
        seen.append(event)


async def _rest(reader):
    while (event := await reader.next(1)) is not None:
        yield event


def test_a_reader_of_an_unknown_job_is_refused():
    stream = JobEvents(LocalEvents(), state=lambda job_id: None)
    with pytest.raises(KeyError, match="no job 'nope'"):
        stream.reader("nope")


def test_a_job_waiting_with_its_question_shows_it_first_to_a_new_reader(tmp_path):
    runtime = asking_runtime(tmp_path / "home", tmp_path / "plugin")

    async def scenario() -> None:
        job, _ = runtime.submit("slow-ask", "0", requester="cli:me")
        run = asyncio.create_task(runtime.execute(job.id))
        await eventually(lambda: runtime.job(job.id).status == "waiting", seen=lambda: runtime.job(job.id).status)
        seen: list = []

        async def read() -> None:
            async for event in runtime.events(job.id):
                seen.append(event)
                if isinstance(event, QuestionAsked):
                    runtime.answer(job.id, "go", action="accept", content={"ok": True}, by="cli:me")

        await bounded(read(), seen)
        assert [type(e) for e in seen] == [QuestionAsked, Answered, JobEnded]
        assert seen[0].question.message == "Go on?" and seen[1].answer.content == {"ok": True}
        assert (await run).output == "accept {'ok': True}"

    asyncio.run(scenario())
    runtime.close()


# across replicas ----------------------------------------------------------------------------------

def test_an_event_published_on_one_runtime_is_read_on_another_over_one_postgres(postgres_url, tmp_path):
    one = asking_runtime(tmp_path / "one", tmp_path / "plugin", database_url=postgres_url)
    other = Runtime(tmp_path / "other", database_url=postgres_url)
    try:
        assert one.stream.backend.wait_listening(10) and other.stream.backend.wait_listening(10)
        job, _ = one.submit("slow-ask", "0.5", requester="cli:me")
        seen: list = []

        def read_on_its_own_loop() -> None:  # a reader on the other replica, on a loop of its own
            async def read() -> None:
                async for event in other.events(job.id):
                    seen.append(event)
                    if isinstance(event, QuestionAsked):
                        other.answer(job.id, "go", action="accept", content={"ok": False}, by="cli:me")
            asyncio.run(asyncio.wait_for(read(), 30))

        reader = threading.Thread(target=read_on_its_own_loop)
        reader.start()
        ended = asyncio.run(asyncio.wait_for(one.execute(job.id), 30))  # answered from the other replica
        reader.join(30)
        assert ended.output == "accept {'ok': False}"
        assert [type(e) for e in seen] == [QuestionAsked, Answered, JobEnded]
        assert seen[1] == Answered("go", seen[1].answer) and seen[2] == JobEnded("succeeded")

        big = "x" * 20_000  # over a NOTIFY payload: sent in pieces, read back whole
        async def read_text() -> list:
            async def collect() -> list:
                got = []
                with other.stream.reader(job.id) as late:
                    assert await late.next(1) == JobEnded("succeeded")  # an ended job: its end at once
                with _raw(other, job.id) as raw:
                    one.stream.publish(job.id, TextDelta(big, 0))
                    deadline = time.monotonic() + 10
                    while sum(len(t.text) for t in got) < len(big) and time.monotonic() < deadline:
                        await raw.arrived(0.5)
                        got.extend(e for e in raw.take()[0] if isinstance(e, TextDelta))
                return got
            return await collect()
        pieces = asyncio.run(read_text())
        assert "".join(p.text for p in sorted(pieces, key=lambda p: p.offset)) == big and len(pieces) > 1
    finally:
        one.close()
        other.close()


class _raw:
    """A bare subscription on the other replica (the stream's reader stops at a job's end)."""

    def __init__(self, runtime: Runtime, job_id: str) -> None:
        self.backend = runtime.stream.backend
        self.subscription = self.backend.subscribe(job_id)

    def __enter__(self):
        return self.subscription

    def __exit__(self, *exc) -> None:
        self.backend.unsubscribe(self.subscription)


# a person step answered through the API ------------------------------------------------------------

FLOW = {"description": "ask, then echo", "input": "text", "output": "text", "steps": [
    {"id": "approve", "ask": "Go on?", "answer_schema": "schemas/ok.json"},
    {"id": "echo", "agent": "echo-text", "input": "'after the answer'"}]}


ANSWER_UNDER_THE_ENGINE = """
import asyncio, json, sys, threading
import httpx
from oz0.adapters.console.app import create_app
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

runtime = Runtime(sys.argv[1], flow_engine=FLOW_ENGINE)
runtime.launch_engine()  # as `oz0 serve` does: the flow is a durable workflow
started_threads = []
_start = threading.Thread.start

def start(self):  # every thread started from here on, however short its life
    started_threads.append(self.name)
    _start(self)

threading.Thread.start = start

async def scenario():
    transport = httpx.ASGITransport(app=create_app(runtime))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        started = await http.post("/v1/flows/ask-echo/runs", json="go")
        job_id = started.json()["job"]["id"]
        await asyncio.sleep(0.2)  # the workflow is in its durable wait
        started_threads.clear()
        answered = await http.post(f"/v1/jobs/{job_id}/answer", json={"ok": True})
        for _ in range(1000):
            if runtime.job(job_id).finished:
                break
            await asyncio.sleep(0.01)
        return {"statuses": [started.status_code, answered.status_code], "output": runtime.job(job_id).output,
                "threads": sorted(started_threads)}

print(json.dumps(asyncio.run(scenario())), flush=True)
runtime.close()
"""


def test_a_person_step_answered_through_the_api_starts_no_thread(tmp_path):
    import os
    import subprocess
    import sys

    import yaml

    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    folder = make_plugin(tmp_path / "flowy", name="flowy", files={
        "impl.py": "def echo(text):\n    return 'echo: ' + text\n", "schemas/ok.json": SCHEMA}, agents={
        "echo-text": {"description": "echo", "kind": "python", "entry": "impl:echo", "input": "text",
                      "output": "text"}})
    (folder / "flows").mkdir()
    (folder / "flows" / "ask-echo.yaml").write_text(yaml.safe_dump(FLOW))
    install_plugin(runtime, load_plugin(folder), actor="test")
    runtime.close()
    env = {**os.environ, "OZ0_REPLICA_ID": "threads", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    env.pop("OZ0_DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", ANSWER_UNDER_THE_ENGINE, str(home)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["statuses"] == [202, 202] and seen["output"] == "echo: after the answer"
    # the echo step's own thread (a sync python agent runs in one, by design) is the only one oz0 starts:
    # before, an answer started oz0-answer-send to wake the workflow, and listeners oz0-question-listener
    assert [name for name in seen["threads"] if name.startswith("oz0")] == ["oz0-agent"], seen["threads"]


# the console waits on events ------------------------------------------------------------------------

def test_the_console_waits_for_a_job_to_ask_on_its_events_without_polling_the_journal(tmp_path):
    runtime = asking_runtime(tmp_path / "home", tmp_path / "plugin")
    reads: list[str] = []
    job_of = runtime.store.job

    def counted(job_id: str):
        reads.append(job_id)
        return job_of(job_id)

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=create_app(runtime))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            runtime.store.job = counted
            started = time.monotonic()
            asked = await http.post("/v1/agents/slow-ask/runs", content="1.0", headers={"content-type": "text/plain"})
            took = time.monotonic() - started
            runtime.store.job = job_of
            assert asked.status_code == 202 and asked.json()["job"]["question"]["message"] == "Go on?"
            assert 1.0 <= took < 5
            assert len(reads) < 12, f"{len(reads)} journal reads while waiting a second: it polls"  # polling: 25+
            job_id = asked.json()["job"]["id"]
            answered = await http.post(f"/v1/jobs/{job_id}/answer", json={"ok": True})
            assert answered.status_code == 202
            await eventually(lambda: runtime.job(job_id).finished, seen=lambda: runtime.job(job_id).status)

    asyncio.run(scenario())
    runtime.close()


# typed journal records -----------------------------------------------------------------------------

def test_a_reply_ref_is_versioned_and_each_wire_reads_only_its_own():
    slack = SlackReply(channel="C1", user="U1", team="T1", thread_ts="1.2", response_url="https://hooks/x")
    ref = slack.to_ref()
    assert (ref.platform, ref.version) == ("slack", 1) and "platform" not in ref.data
    assert SlackReply.from_ref(ReplyRef.from_json(json.loads(json.dumps(ref.to_json())))) == slack
    with pytest.raises(ReplyRefError, match="a slack reply reference of version 2; this release reads version 1"):
        SlackReply.from_ref(ReplyRef("slack", 2, ref.data))
    with pytest.raises(ReplyRefError, match="a slack reply reference handed to the discord channel"):
        DiscordReply.from_ref(ref)
    with pytest.raises(ReplyRefError, match="has no version"):
        ReplyRef.from_json({"platform": "slack", "channel": "C1"})


def make_0009_database(url: str) -> None:
    """A database as the previous release (schema revision 0009) left it, with old-style reply_to rows."""
    from alembic import command
    from alembic.config import Config

    from oz0.edge.runtime import migrate

    engine = create_engine(url)
    with engine.connect() as conn:
        config = Config()
        config.set_main_option("script_location", str(migrate.MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, "0009")
        conn.commit()
    base = {"agent": "echo", "requester": "slack:U1", "input": "x", "status": "waiting", "created": 1.0,
            "attempts": 1}
    old = [("s1", "slack:C1", {"platform": "slack", "channel": "C1", "user": "U1", "team": "T1",
                               "thread_ts": "1.2", "response_url": "https://hooks.slack.com/x", "ts": "1.3",
                               "question": {"step": "approve", "channel": "C1", "ts": "1.4"}}),
           ("d1", "discord:7", {"platform": "discord", "application_id": "99", "token": "tok", "channel": "7",
                                "user": "42", "guild": "G1", "created": 5.0}),
           ("c1", "cli", None)]
    jobs_0009 = table("jobs", *(column(name, JSON() if name == "reply_to" else None) for name in
                                (*base, "id", "channel", "reply_to")))
    with engine.begin() as conn:
        for job_id, channel, reply_to in old:
            conn.execute(insert(jobs_0009).values(**base, id=job_id, channel=channel, reply_to=reply_to))
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0009"
    engine.dispose()


def test_revision_0010_converts_the_reply_targets_an_old_release_journaled(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    make_0009_database(f"sqlite:///{home / 'oz0.db'}")
    runtime = Runtime(home)  # opening it upgrades it
    try:
        slack, discord, cli = runtime.job("s1"), runtime.job("d1"), runtime.job("c1")
        assert slack.reply_to == ReplyRef("slack", 1, {"channel": "C1", "user": "U1", "team": "T1", "thread_ts": "1.2",
                                                       "response_url": "https://hooks.slack.com/x", "ts": "1.3"})
        assert (slack.workspace, slack.channel_id) == ("T1", "C1")
        assert slack.question_shown == {"step": "approve", "channel": "C1", "ts": "1.4"}
        assert SlackReply.from_ref(slack.reply_to).response_url == "https://hooks.slack.com/x"
        assert (discord.platform, discord.workspace, discord.channel_id) == ("discord", "G1", "7")
        assert DiscordReply.from_ref(discord.reply_to).token == "tok"
        assert cli.reply_to is None and cli.platform == "cli"
        assert runtime.budgets.report(slack) == []  # budgets read the columns: nothing declared here
    finally:
        runtime.close()


# the console on the shared ask path -----------------------------------------------------------------

def test_a_run_from_the_api_or_the_console_checks_its_input_once(tmp_path, monkeypatch):
    from oz0.edge.runtime import input_check

    runtime = installed_runtime(tmp_path / "home")
    calls: list[str] = []
    real = input_check.check_input

    def counted(spec, text):
        calls.append(spec.name)
        return real(spec, text)

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=create_app(runtime))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            ran = await http.post("/v1/agents/deploys/runs", json={"service": "api", "environment": "staging"})
            assert ran.status_code == 200 and ran.json()["job"]["status"] == "succeeded"
            assert calls == ["deploys"]
            bad = await http.post("/v1/agents/deploys/runs", json={"service": "api", "environment": "moon"})
            assert bad.status_code == 422 and bad.json()["details"]["path"] == "$.environment"
            assert calls == ["deploys", "deploys"] and len(runtime.jobs()) == 1  # refused before it is journaled

    monkeypatch.setattr("oz0.adapters.console.input_refusal.edge_check_input", counted)
    monkeypatch.setattr("oz0.edge.runtime.jobs.check_input", counted)
    asyncio.run(scenario())
    runtime.close()
