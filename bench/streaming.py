"""Streamed answers in Slack: how soon the model's text shows, and how many API calls it costs.

Runs the real Slack channel (`oz0.adapters.chat.slack.serve`, HTTP mode, a Runtime on a SQLite file)
against the tests' Slack stand-in and the model stand-in streaming a chat completion over SSE at
50 tokens a second, asks `writer` by mention, one ask after another, and prints for each streamed
message, from the stand-ins' own clocks (time.monotonic() in this process):

- first-text latency: the model's first token written -> the chat.startStream call carrying text;
- last-text latency: the model's last token written -> the call after which the message holds the
  whole text (an appendStream, or the card's chat.update);
- API calls on the message in any 0.25 s window (Slack streaming's budget here: 1).

The floor is one chat.postMessage round trip to the stand-in, measured in the same run.

    .venv/bin/python bench/streaming.py [--asks 5] [--tokens 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

from model_standins import ModelStandin, Turn
from slack_harness import running_channel
from slack_standin import BOT_TOKEN
from stream_kit import KEY, KEY_ENV, stream_plugin

FIRST_TARGET_MS = 300.0
LAST_TARGET_MS = 300.0
WINDOW_S = 0.25
TOKEN_S = 1 / 50


def answer_of(tokens: int) -> str:
    words = ["the", "nightly", "build", "failed", "in", "test_login", "because", "a", "timeout", "hit"]
    return " ".join(words[i % len(words)] for i in range(tokens)) + "."


def max_in_window(times: list[float], window: float) -> int:
    best, start = 0, 0
    for end, t in enumerate(times):
        while t - times[start] >= window:
            start += 1
        best = max(best, end - start + 1)
    return best


async def measure(home: Path, model: ModelStandin, asks: int, tokens: int) -> list[tuple[float, float, int]]:
    out: list[tuple[float, float, int]] = []
    async with running_channel(home) as h:
        floor_start = time.monotonic()
        async with h.http.post(h.slack.api_url + "chat.postMessage", json={"channel": "C0FLOOR", "text": "floor"},
                               headers={"Authorization": f"Bearer {BOT_TOKEN}"}) as resp:
            assert (await resp.json())["ok"]
        floor_ms = (time.monotonic() - floor_start) * 1000
        for i in range(asks):
            before = len(model.token_times)
            ask_ts = f"1700000{i:03d}.000100"
            await h.mention(f"writer question {i}", event_id=f"EvBench{i}", ts=ask_ts)
            started = (await h.slack.wait_for("chat.startStream", i + 1, timeout=60))[i]
            ts = next(t for t, s in h.slack.streams.items() if s["thread_ts"] == ask_ts)
            deadline = time.monotonic() + 60
            while not any(c.method == "chat.update" and c.args.get("ts") == ts for c in h.slack.calls):
                if time.monotonic() > deadline:
                    raise SystemExit(f"ask {i}: the streamed message never became the card")
                await asyncio.sleep(0.01)
            token_times = model.token_times[before:before + tokens + 1]
            calls = [c for c in h.slack.calls if c.args.get("ts") == ts or c is started]
            whole = h.slack.streams[ts]["text"]
            shown, last_at = "", None
            for c in calls:
                if c.method in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
                    shown += str(c.args.get("markdown_text") or "")
                if (shown == whole and c.method != "chat.update") or c.method == "chat.update":
                    last_at = c.at
                    break
            assert last_at is not None
            out.append(((started.at - token_times[0]) * 1000, (last_at - token_times[-1]) * 1000,
                        max_in_window([c.at for c in calls], WINDOW_S)))
        print(f"floor: one chat.postMessage to the stand-in {floor_ms:.1f} ms")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=50)
    args = parser.parse_args(argv)
    os.environ[KEY_ENV] = KEY
    with tempfile.TemporaryDirectory() as tmp, \
            ModelStandin([Turn(text=answer_of(args.tokens))], token_s=TOKEN_S) as model:
        home = Path(tmp) / "home"
        stream_plugin(Path(tmp) / "plugin", home, model.url).close()
        results = asyncio.run(measure(home, model, args.asks, args.tokens))
    first = [r[0] for r in results]
    last = [r[1] for r in results]
    calls = max(r[2] for r in results)
    print(f"{args.asks} mentions of writer, {args.tokens} tokens each at 50 tokens/s, Slack native streaming")
    print(f"  first text after the model's first token  p50 {statistics.median(first):6.1f} ms  "
          f"max {max(first):6.1f} ms  (target <= {FIRST_TARGET_MS:.0f} ms p50)")
    print(f"  whole text after the model's last token   p50 {statistics.median(last):6.1f} ms  "
          f"max {max(last):6.1f} ms  (target <= {LAST_TARGET_MS:.0f} ms)")
    print(f"  API calls on one message in any {WINDOW_S:g} s: at most {calls}  (target <= 1)")
    ok = statistics.median(first) <= FIRST_TARGET_MS and max(last) <= LAST_TARGET_MS and calls <= 1
    print("  within targets" if ok else "  OUTSIDE the targets")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
