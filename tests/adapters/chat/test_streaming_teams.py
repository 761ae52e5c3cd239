"""Streamed answers in Teams: Teams' streaming protocol in a personal chat (typing activities with a
streaminfo entity, then the final message with the card), post then edit in a channel; against the
Teams stand-in (which checks the protocol as Teams documents it) and the model stand-in streaming SSE."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from model_standins import ModelStandin, Turn
from stream_kit import KEY, KEY_ENV, stream_plugin
from teams_harness import running_channel
from teams_standin import cards, runs_text

from oz0.adapters.chat.teams_stream import STREAM_EVERY_S
from oz0.edge.runtime.runner import Runtime

SPLIT = ("Build 4411 failed. ", "Tell <at>ever", "yone</at> now, ", "read [the do", "cs](https://ev",
         "il.example/x) ", "first, ", "then ", "rerun.")
CHAT = {"conversation": "a:personal-chat", "kind": "personal", "mention": False}


@pytest.fixture
def home(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KEY_ENV, KEY)
    return oz0_home


def streamed(standin: Any) -> list[Any]:
    return [c for c in standin.calls if any(e.get("type") == "streaminfo" for e in c.body.get("entities") or ())]


async def until(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("not seen in time")


def scenario(home: Path, tmp_path: Path, body: Any, *, token_s: float = 0.35) -> Any:
    with ModelStandin([Turn(text="".join(SPLIT), pieces=SPLIT)], token_s=token_s) as model:
        runtime = stream_plugin(tmp_path / "plugin", None, model.url, runtime=Runtime(home, backoff_s=0.01))

        async def main() -> Any:
            async with running_channel(home, runtime=runtime) as h:
                return await body(h)

        try:
            return asyncio.run(asyncio.wait_for(main(), 60))
        finally:
            runtime.close()


def test_a_personal_chat_answer_streams_as_teams_streams_and_ends_with_the_safe_text_and_the_card(home, tmp_path):
    async def body(h: Any) -> Any:
        status, _ = await h.post(h.standin.message("writer why did main fail?", **CHAT))
        assert status == 200
        stream = await until(lambda: next((s for s in h.standin.streams.values() if s["final"]), None))
        return h.standin, stream

    standin, stream = scenario(home, tmp_path, body)
    assert not standin.stream_refusals, standin.stream_refusals    # every activity as Teams takes it
    texts, final = stream["texts"], stream["final"]
    assert len(texts) >= 3, texts
    assert all(b.startswith(a) and b != a for a, b in zip(texts, texts[1:]))   # each the whole text so far
    # the working message went: the streamed message is the answer
    assert any(c.method == "POST" and "Working on writer" in runs_text(cards(c)) for c in standin.calls)
    assert len(standin.deleted) == 1 and standin.deleted[0] not in standin.streams
    # every text shown passed the safety rules, though the mention and the link were cut across tokens
    for text in [*texts, final["text"]]:
        assert "<at>" not in text and "](" not in text, text
    assert "&lt;at&gt;everyone&lt;/at&gt;" in final["text"]
    assert final["text"].endswith("the docs (https://evil.example/x) first, then rerun.")
    assert final["text"].startswith(texts[-1])
    # the final message: streamType final, no sequence; the text once, the card's buttons under it
    [info] = final["entities"]
    assert info["streamType"] == "final" and "streamSequence" not in info and info["streamId"] in standin.streams
    [attached] = final["attachments"]
    assert "rerun." not in runs_text(attached["content"]) and "msteams" not in str(final)   # inert, not repeated
    assert final["text"].count("rerun.") == 1
    assert [a["title"] for a in attached["content"]["actions"]] == ["Stop", "👍", "👎"]   # the card's actions
    assert final["summary"] != "(empty result)" and "(empty result)" not in str(attached)
    # one request a second at most: sequences 1, 2, 3 ... as sent
    sent = [c for c in standin.calls if c.body.get("type") == "typing"]
    assert [c.body["entities"][0]["streamSequence"] for c in sent] == list(range(1, len(sent) + 1))
    gaps = [b.at - a.at for a, b in zip(sent, sent[1:])]
    assert min(gaps) >= STREAM_EVERY_S * 0.9, gaps


def test_a_channel_ask_is_still_posted_then_edited(home, tmp_path):
    async def body(h: Any) -> Any:
        await h.post(h.standin.message("writer why did main fail?"))
        await until(lambda: [c for c in h.standin.calls if c.method == "PUT" and "Share" not in str(c.body)
                             and "rerun." in runs_text(cards(c))])
        return h.standin

    standin = scenario(home, tmp_path, body)
    assert not standin.streams and not streamed(standin) and not standin.deleted
    edits = [c for c in standin.calls if c.method == "PUT"]
    assert len(edits) >= 2 and len({c.path for c in edits}) == 1      # one message, edited
    assert "Build 4411" in runs_text(cards(edits[0])) and "rerun." not in runs_text(cards(edits[0]))
    assert all(not c.body.get("entities") and "msteams" not in str(c.body) for c in edits)   # inert TextRuns


def test_stop_pressed_mid_stream_ends_the_updates_and_the_card_comes_as_its_own_message(home, tmp_path):
    async def body(h: Any) -> Any:
        await h.post(h.standin.message("writer why did main fail?", **CHAT))
        stream_id = await until(lambda: next(iter(h.standin.streams), None))
        h.standin.stop_stream(stream_id)
        card = await until(lambda: [c for c in h.standin.calls if c.method == "POST" and c.body.get("attachments")
                                    and "rerun." in runs_text(cards(c))])
        await asyncio.sleep(STREAM_EVERY_S)
        return h.standin, stream_id, card

    standin, stream_id, [card] = scenario(home, tmp_path, body, token_s=0.5)
    stream = standin.streams[stream_id]
    assert stream["final"] is None
    assert [r for r in standin.stream_refusals if r[0] != 429] == [(403, "Content stream was cancelled by user.")]
    assert not card.body.get("entities")     # a message of its own, not a stream's
    after = [c for c in standin.calls if c.at > card.at and c.method in ("POST", "PUT")]
    assert not after, after
