"""Streamed answers in Discord: the private response is posted then edited with the text so far, at
most one edit a second, a 429 pausing edits for its Retry-After, then edited into the card; against
the Discord stand-in and the model stand-in streaming over SSE."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from discord_harness import running_channel, texts
from model_standins import ModelStandin, Turn
from stream_kit import KEY, KEY_ENV, stream_plugin

from oz0.adapters.chat.streaming import EDIT_EVERY_S
from oz0.edge.runtime.runner import Runtime

SPLIT = ("The nightly ", "build failed. ", "Tell @every", "one now: ", "read [the do", "cs](https://ev",
         "il.example/x) ", "first, ", "then ", "rerun ", "it ", "with ", "the ", "flag ", "set.")


@pytest.fixture
def home(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KEY_ENV, KEY)
    return oz0_home


def edits(h: Any, ask: dict[str, Any]) -> list[Any]:
    return [r for r in h.to(ask) if r.method == "PATCH"]


async def ended(h: Any, ask: dict[str, Any], timeout: float = 30.0) -> list[Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = edits(h, ask)
        if shown and "Share in channel" in str(shown[-1].body):
            return shown
        await asyncio.sleep(0.05)
    raise AssertionError(f"no card after the streamed edits: {[texts(e.body['components']) for e in edits(h, ask)]}")


def test_an_ask_streams_into_its_private_response_an_edit_a_second_and_ends_as_the_card(home, tmp_path):
    text = "".join(SPLIT)
    with ModelStandin([Turn(text=text, pieces=SPLIT)], token_s=0.2) as model:
        runtime = stream_plugin(tmp_path / "plugin", None, model.url, runtime=Runtime(home, backoff_s=0.01))

        async def main():
            async with running_channel(home, runtime=runtime) as h:
                ask = await h.send(h.standin.slash("ask", {"agent": "writer", "input": "why?"}, **h.where()))
                first = (await h.standin.wait_for(lambda r: r.method == "PATCH" and ask["token"] in r.path,
                                                  timeout=20))[0]
                # Discord says to wait: the next edit waits its Retry-After out
                h.standin.fail_next[("PATCH", "webhooks")] = (
                    429, {"message": "You are being rate limited.", "retry_after": 1.5, "global": False})
                limited_at = time.monotonic()
                shown = await ended(h, ask)
                return first, shown, limited_at

        try:
            _, shown, limited_at = asyncio.run(asyncio.wait_for(main(), 60))
        finally:
            runtime.close()
    bodies = [texts(e.body["components"]) for e in shown]
    streamed, card = bodies[:-1], bodies[-1]
    assert len(streamed) >= 3, bodies
    assert any("writing" in b or "⏳" in b for b in streamed)
    # what each edit showed passed the safety rules: no live @everyone, no masked link
    for body in bodies:
        assert "@everyone" not in body and "](https" not in body, body
    assert any("@\u200beveryone" in b for b in bodies)
    assert "rerun it with the flag set" in card.replace("\\", "")
    # at most one edit a second per message; the limited one waited for its Retry-After
    times = [e.at for e in shown]
    assert min(b - a for a, b in zip(times, times[1:])) >= EDIT_EVERY_S * 0.9, times
    retried = [e for e in shown if e.at > limited_at]
    assert len(retried) >= 2 and retried[1].at - retried[0].at >= 1.4, [e.at - limited_at for e in retried]
