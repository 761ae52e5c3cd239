"""Streamed answers in Slack: native streaming (chat.startStream / appendStream / stopStream) in the
thread of a mention, against the Slack stand-in and the model stand-in streaming over SSE."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest
from model_standins import ModelStandin, Turn
from slack_harness import assert_valid_blocks, running_channel
from stream_kit import KEY, KEY_ENV, stream_plugin

from oz0.adapters.chat import slack as slack_app
from oz0.adapters.chat.slack_wire import STREAM_EVERY_S
from oz0.edge.model.reply_ref import ReplyRef

ASK_TS = "1700000000.000100"
SPLIT = ("Build 4411 failed. ", "Ping <!chan", "nel> now, ", "read [the do", "cs](https://ev", "il.example/x) ",
         "and rerun.")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    return tmp_path / "home"


@contextlib.contextmanager
def writer_model(home, tmp_path, *, token_s):
    """`writer` installed in `home`, its model streaming SPLIT a token every `token_s`."""
    with ModelStandin([Turn(text="".join(SPLIT), pieces=SPLIT)], token_s=token_s) as model:
        stream_plugin(tmp_path / "plugin", home, model.url).close()
        yield model


def stream_calls(slack, ts):
    return [c for c in slack.calls if c.args.get("ts") == ts and c.method.startswith("chat.")]


async def answered(slack, ts, timeout=20.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if any(c.method == "chat.update" or (c.method == "chat.stopStream" and c.args.get("blocks"))
               for c in stream_calls(slack, ts)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the streamed message was not ended with the card: {slack.methods()}")


def test_a_mention_streams_in_its_thread_safely_and_ends_as_the_card(home, tmp_path):
    with writer_model(home, tmp_path, token_s=0.05):

        async def main():
            async with running_channel(home) as h:
                h.slack.stream_min_gap_s = STREAM_EVERY_S * 0.9   # closer calls on one message are refused
                status, _, _ = await h.mention("writer why did main fail?")
                assert status == 200
                started = (await h.slack.wait_for("chat.startStream", timeout=20))[0]
                ts = started.args.get("ts") or next(iter(h.slack.streams))
                await answered(h.slack, ts)
                return h.slack, ts, started

        slack, ts, started = asyncio.run(main())
    stream = slack.streams[ts]
    assert started.args["thread_ts"] == ASK_TS and started.args["recipient_user_id"] == "U0ASKER"
    assert started.args["recipient_team_id"] == "T0OZ0TEST"
    # every piece passed the safety rules, though the mention and the link were cut across tokens
    assert "<!channel>" not in stream["text"] and "&lt;!channel&gt;" in stream["text"]
    assert "](" not in stream["text"] and "the docs (https://evil.example/x)" in stream["text"]
    assert stream["text"].endswith("and rerun.")
    assert not stream["streaming"]
    # the working message went; the streamed message ended with its whole text, the card's actions under it
    assert [m for m in slack.methods() if m.startswith("chat.")][:3] == ["chat.postMessage", "chat.startStream",
                                                                         "chat.delete"]
    assert len(slack.deleted) == 1 and slack.deleted[0][1] != ts
    assert "chat.update" not in [c.method for c in stream_calls(slack, ts)]
    assert stream["text"].endswith("Ping &lt;!channel&gt; now, read the docs (https://evil.example/x) and rerun.")
    assert stream["text"].count("rerun.") == 1
    assert_valid_blocks(stream["blocks"])
    assert "rerun" not in str(stream["blocks"])   # the text once: the card's body is not repeated under it
    assert any(b["type"] == "context_actions" for b in stream["blocks"])   # its feedback buttons
    # one call per message at most every 0.25 s: none was refused as too fast
    times = [c.at for c in stream_calls(slack, ts)]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps and min(gaps) >= STREAM_EVERY_S * 0.9, gaps
    assert [c.method for c in stream_calls(slack, ts)].count("chat.stopStream") == 1



def test_a_restart_mid_stream_ends_the_streamed_message_interrupted_once(home, tmp_path):
    with ModelStandin([Turn(text="never asked")]) as model:
        runtime = stream_plugin(tmp_path / "plugin", home, model.url)

    async def main():
        async with running_channel(home) as h:
            # the replica that died had begun streaming job's answer into this message
            started = await h.slack._m_chat_startStream({"channel": "C0GENERAL", "thread_ts": ASK_TS,
                                                         "recipient_user_id": "U0ASKER",
                                                         "recipient_team_id": "T0OZ0TEST",
                                                         "markdown_text": "Build 4411 fa"})
            ts = next(iter(h.slack.streams))
            assert started.status == 200
            job, _ = runtime.submit("writer", "why?", requester="slack:U0ASKER", channel="slack:C0GENERAL",
                                    dedupe_key="slack:event:EvCUT", reply_to=ReplyRef("slack", 1, {
                                        "channel": "C0GENERAL", "user": "U0ASKER", "team": "T0OZ0TEST",
                                        "thread_ts": ASK_TS, "ts": ts, "streamed": True}))
            runtime.store.update_job(job.id, status="interrupted", failure_kind="Interrupted",
                                     failure_reason="the bot stopped before this job ended", ended=time.time())
            stopped = runtime.job(job.id)
            slack_app.report_interrupted([stopped])
            slack_app.report_interrupted([stopped])     # two replicas, or `oz0 serve` twice
            await h.slack.wait_for("chat.stopStream")
            await asyncio.sleep(0.5)
            return h.slack, ts

    try:
        slack, ts = asyncio.run(main())
    finally:
        runtime.close()
    assert slack.streams[ts]["text"] == "Build 4411 fa\n\n_(interrupted; ask again)_"
    assert not slack.streams[ts]["streaming"]
    assert len(slack.of("chat.stopStream")) == 1 and not slack.of("chat.update") and not slack.of("chat.postMessage")


def test_a_stream_slack_refuses_to_start_falls_back_to_editing_the_working_message(home, tmp_path):
    with writer_model(home, tmp_path, token_s=0.3):

        async def main():
            async with running_channel(home) as h:
                h.slack.fail_once["chat.startStream"] = "channel_type_not_supported"
                await h.mention("writer why did main fail?")
                working = (await h.slack.wait_for("chat.postMessage"))[0]
                await h.slack.wait_for("chat.update", 2, timeout=20)
                assert "Working on writer" in working.args["text"]
                deadline = asyncio.get_running_loop().time() + 20
                while "rerun." not in str(h.slack.of("chat.update")[-1].args.get("text")):
                    assert asyncio.get_running_loop().time() < deadline, h.slack.methods()
                    await asyncio.sleep(0.05)
                return h.slack

        slack = asyncio.run(main())
    assert slack.of("chat.startStream")[0].args["thread_ts"] == ASK_TS and not slack.streams
    assert not slack.deleted
    edits = slack.of("chat.update")
    assert len(edits) >= 2 and len({e.args["ts"] for e in edits}) == 1   # one message, edited
    assert "Build 4411 failed." in edits[0].args["text"]    # the text so far, in the working message
    assert all("<!channel>" not in e.args["text"] for e in edits)
    times = [e.at for e in edits]
    assert min(b - a for a, b in zip(times, times[1:])) >= 0.9   # an edit a second at most


def test_a_tool_loop_step_during_the_stream_shows_as_a_task_of_its_timeline(home, tmp_path):
    first = ("Let me ", "look up ", "build 4411 ", "first. ")
    script = [Turn(text="".join(first), pieces=first, calls=(("lookup", {"input": "4411"}),)),
              Turn(text="Build 4411 failed in test_login.")]
    with ModelStandin(script, token_s=0.3) as model:
        stream_plugin(tmp_path / "plugin", home, model.url).close()

        async def main():
            async with running_channel(home) as h:
                await h.mention("researcher why did main fail?")
                started = (await h.slack.wait_for("chat.startStream", timeout=20))[0]
                ts = started.args.get("ts") or next(iter(h.slack.streams))
                await answered(h.slack, ts)
                return h.slack, ts

        slack, ts = asyncio.run(main())
    appends = [c for c in slack.of("chat.appendStream") if c.args.get("chunks")]
    assert appends, slack.methods()
    tasks = [t for c in appends for t in c.args["chunks"] if t["type"] == "task_update"]
    started = [t for t in tasks if t["status"] == "in_progress"]
    assert [t["id"] for t in started] == [f"step-{n}" for n in range(1, len(started) + 1)]
    assert started and all(t["title"].startswith("step ") and "▓" not in t["title"] for t in started), tasks
    # each step is complete once the next one shows, the last once the stream ends
    assert slack.streams[ts]["tasks"] == {t["id"]: (t["title"], "complete") for t in started}
    update = next(c for c in stream_calls(slack, ts) if c.method == "chat.update")
    assert "Build 4411 failed in test_login." in update.args["text"]
