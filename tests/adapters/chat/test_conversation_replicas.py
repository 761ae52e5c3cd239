"""Conversations and streamed answers over two real `oz0 serve` replicas sharing one real Postgres, with
the Slack stand-in and a model stand-in streaming over SSE: a follow-up delivered to the other replica
is the next turn of the same conversation (the model is given the earlier turn), and an answer
streamed by the replica holding the chat message while the job runs on the other ends as one
message with the whole text, the card's actions under it, once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import aiohttp
from model_standins import ModelStandin, Turn
from replica_harness import Replica, install_replica_plugin
from slack_standin import SlackStandIn, mention_event_body, signed_headers, thread_message_body
from sqlalchemy import create_engine, text
from stream_kit import KEY, KEY_ENV
from waits import eventually

# limited, so its jobs go through its queue and may run on either replica (an unlimited agent's job
# starts at once on the replica that took the ask)
WRITER = ("description: Writes an answer\nkind: model\nbase_url: {url}\nmodel: writer-1\n"
          f"api_key_env: {KEY_ENV}\ninput: text\n" "limits: {{concurrency: 4}}\n")
ASK_TS = "1700000000.000100"
FIRST = "The nightly build failed in test_login after the schema change."
SECOND = ("Yesterday's build passed; the change landed at 02:10, so rerun with the old schema and compare. "
          "Ping <!channel> only if it fails again.")


def replicas(tmp_path: Path, slack: SlackStandIn, database_url: str, model_url: str) -> list[Replica]:
    made = []
    for name in ("replica-a", "replica-b"):
        home = tmp_path / f"home-{name}"
        install_replica_plugin(home, database_url=database_url,
                               extra={"agents/writer.yaml": WRITER.format(url=model_url)})
        made.append(Replica.make(name, home, api_url=slack.api_url,
                                 runs_file=tmp_path / "runs.txt", database_url=database_url, **{KEY_ENV: KEY}))
    return made


async def post(http: aiohttp.ClientSession, replica: Replica, body: str) -> None:
    async with http.post(replica.events_url, data=body.encode(),
                         headers=signed_headers(body, content_type="application/json")) as resp:
        assert resp.status == 200, await resp.text()


def ended(slack: SlackStandIn) -> list[str]:
    """The streamed messages that were ended (chat.stopStream), by ts."""
    return [ts for ts, s in slack.streams.items() if not s["streaming"]]


def test_a_follow_up_delivered_to_the_other_replica_is_the_next_turn_of_the_conversation(tmp_path, postgres_url):
    with ModelStandin([Turn(text=FIRST), Turn(text=SECOND)], token_s=0.01) as model:
        async def main() -> SlackStandIn:
            async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
                a, b = replicas(tmp_path, slack, postgres_url, model.url)
                try:
                    await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
                    await post(http, a, mention_event_body("writer why did the nightly build fail?",
                                                           event_id="EvAsk", ts=ASK_TS))
                    await eventually(lambda: len(ended(slack)) == 1, within=30)
                    await post(http, b, thread_message_body("and yesterday's?", event_id="EvFollow",
                                                            thread_ts=ASK_TS, ts="1700000000.000200"))
                    await eventually(lambda: len(ended(slack)) == 2, within=30)
                    await asyncio.sleep(1.5)   # room for a second run or answer, which must not come
                finally:
                    a.stop()
                    b.stop()
                return slack

        slack = asyncio.run(asyncio.wait_for(main(), 150))
        requests = [r["json"] for r in model.requests]
    # the model was asked twice: the second time with the first turn, as messages
    assert len(requests) == 2, [r.get("messages") for r in requests]
    turns = [(m["role"], m["content"]) for m in requests[1]["messages"] if m["role"] in ("user", "assistant")]
    assert turns[:2] == [("user", "why did the nightly build fail?"), ("assistant", FIRST)]
    assert turns[-1] == ("user", "and yesterday's?")
    # one answer each, in the thread of the ask, never twice
    assert len(slack.streams) == 2 and all(s["thread_ts"] == ASK_TS for s in slack.streams.values())
    first, second = slack.streams.values()
    assert first["text"].count("test_login") == 1 and "Yesterday" not in first["text"]
    assert second["text"].count("Yesterday's build passed") == 1 and "&lt;!channel&gt;" in second["text"]
    assert len(slack.of("chat.stopStream")) == 2
    assert not [c for c in slack.of("chat.update") if c.args.get("ts") in slack.streams]
    assert "oz0_stop" in json.dumps(second["blocks"])   # the conversation's Stop button under the answer


def _writer_workflows(conn, old: set[str]) -> list[tuple[str, str]]:
    """The writer's queued or running workflows, but those of earlier asks (`old`)."""
    rows = conn.execute(text("select workflow_uuid, status, executor_id from dbos.workflow_status "
                             "where queue_name = 'oz0-agent-writer' and status in ('ENQUEUED', 'PENDING')"))
    conn.rollback()
    return [(r.status, r.executor_id) for r in rows if r.workflow_uuid not in old]


HELD_ROWS_S = 5  # B looks at the queue every 0.05 s: not taken by then, A was paused holding its rows


def _held_off(a: Replica, database_url: str, old: set[str]) -> bool:
    """Pause replica A (SIGSTOP) as soon as it has queued the job, so that B runs it; True once B
    does, False when A had taken it first (then A goes on and the ask is made again).

    Also False when B cannot take it: the pause can catch A inside its own claim, whose transaction
    holds the queued rows (a queue with a concurrency limit claims them `FOR UPDATE NOWAIT`), and B's
    claims then fail until A goes on (or Postgres ends A's idle transaction, after DBOS's 60 s)."""
    assert a.process is not None
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            deadline = time.monotonic() + 30
            while not _writer_workflows(conn, old):
                assert time.monotonic() < deadline, "the job was never queued"
                time.sleep(0.005)
            os.kill(a.process.pid, signal.SIGSTOP)
            try:
                held = time.monotonic() + HELD_ROWS_S
                while not (running := [w for w in _writer_workflows(conn, old) if w[0] == "PENDING"]):
                    if time.monotonic() > held:
                        return False
                    time.sleep(0.02)
                return running == [("PENDING", "replica-b")]
            finally:
                os.kill(a.process.pid, signal.SIGCONT)
                old.update(r.workflow_uuid for r in conn.execute(text("select workflow_uuid from dbos.workflow_status")))
                conn.rollback()
    finally:
        engine.dispose()


def test_an_answer_streamed_by_one_replica_and_finished_by_the_other_ends_as_one_message(tmp_path, postgres_url):
    words = " ".join(f"word{i}" for i in range(40))
    answer = f"Build 4411 failed. {words} and rerun."
    with ModelStandin([Turn(text=answer)], token_s=0.06) as model:
        async def main() -> tuple[SlackStandIn, str]:
            async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
                slack.stream_min_gap_s = 0.2   # calls on one message closer than this are refused
                a, b = replicas(tmp_path, slack, postgres_url, model.url)
                try:
                    await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
                    old: set[str] = set()
                    for attempt in range(5):
                        ts = f"1700000000.00{attempt}100"
                        model.token_times.clear()
                        await post(http, a, mention_event_body("writer why did main fail?", event_id=f"Ev{attempt}",
                                                               ts=ts))
                        crossed = await asyncio.to_thread(_held_off, a, postgres_url, old)
                        await eventually(lambda: any(s["thread_ts"] == ts and not s["streaming"]  # noqa: B023
                                                for s in slack.streams.values()), within=30)
                        if crossed:
                            break
                        slack.calls.clear()
                        slack.streams.clear()
                        slack.deleted.clear()
                    else:
                        raise AssertionError("replica A ran the job each time: B never did")
                    await asyncio.sleep(1.5)   # room for a second card or stop, which must not come
                finally:
                    a.stop()
                    b.stop()
                return slack, ts

        slack, ask_ts = asyncio.run(asyncio.wait_for(main(), 240))
    [(ts, stream)] = slack.streams.items()
    assert stream["thread_ts"] == ask_ts
    # the whole text once, streamed in pieces as the model wrote it on the other replica
    assert stream["text"].count("Build 4411 failed.") == 1 and stream["text"].endswith("and rerun.")
    assert words in stream["text"]
    assert len(slack.of("chat.appendStream")) >= 2
    # then the card's actions under it, once: the stream was ended, never replaced by the card
    [stop] = slack.of("chat.stopStream")
    assert stop.args["ts"] == ts and "word1 " not in json.dumps(stop.args["blocks"])
    assert any(b["type"] == "context_actions" for b in stream["blocks"])   # the feedback buttons
    assert not [c for c in slack.of("chat.update") if c.args.get("ts") == ts]
    assert len(slack.of("chat.postMessage")) == 1 and len(slack.deleted) == 1   # the working message, gone
