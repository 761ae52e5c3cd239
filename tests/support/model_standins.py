"""Scripted stand-ins of model providers at the wire, real HTTP servers on 127.0.0.1: an OpenAI-compatible
`/v1/chat/completions` and an Anthropic `/v1/messages`. Each answers the turn of its script that the
conversation has reached (the number of assistant messages the request carries), so a loop resumed
after a crash that repeats a request gets the same answer, and a request never asked is never counted.

A turn is `Turn(calls=[("tool", {args}), ...])` (parallel tool calls when more than one) or
`Turn(text="...")`; each reports `usage`. `delay_s` sleeps before each answer (a model's latency).

A request with `"stream": true` is answered as the provider streams: server-sent events in the
OpenAI chat-completions chunk format (`choices[0].delta`, `usage` last when `stream_options` asks,
`data: [DONE]`) or Anthropic's message events, the text one token (a word and its space) every
`token_s` seconds; `token_times` records when each token was written (time.monotonic()).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from loopback import Loopback

__all__ = ["ModelStandin", "Turn"]


@dataclass(frozen=True)
class Turn:
    calls: tuple[tuple[str, Any], ...] = ()
    text: str | None = None
    usage: tuple[int, int] = (11, 7)
    pieces: tuple[str, ...] = ()   # the streamed tokens of `text`, when a test chooses where it is cut


@dataclass
class ModelStandin:
    script: list[Turn]
    delay_s: float = 0.0
    hold_turn: int | None = None  # the request of this turn waits for `release()` (a crash test's moment)
    requests: list[dict[str, Any]] = field(default_factory=list)
    token_s: float = 0.0
    token_times: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.released = threading.Event()
        self.held = threading.Event()
        self.server = Loopback(self._answer)
        self.requests = self.server.requests
        self.url = f"{self.server.url}/v1"

    def __enter__(self) -> ModelStandin:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.__exit__(*exc)

    def _answer(self, data: Any, headers: dict[str, str], path: str) -> tuple[int, Any]:
        data = data or {}
        if self.delay_s:
            time.sleep(self.delay_s)
        turn = sum(1 for m in data.get("messages") or [] if m.get("role") == "assistant")
        if turn == self.hold_turn and not self.released.is_set():
            self.held.set()
            self.released.wait(timeout=60)
        if path.endswith("/chat/completions"):
            whole = self._openai(data)
            return 200, (self._openai_events(data, whole) if data.get("stream") else whole)
        if path.endswith("/messages"):
            whole = self._anthropic(data)
            return 200, (self._anthropic_events(whole) if data.get("stream") else whole)
        return 404, {"error": f"no such path {path}"}

    def release(self) -> None:
        self.released.set()

    def _turn(self, messages: list[dict[str, Any]]) -> tuple[int, Turn]:
        n = sum(1 for m in messages if m.get("role") == "assistant")
        return n, self.script[min(n, len(self.script) - 1)]

    def _openai(self, data: dict[str, Any]) -> dict[str, Any]:
        n, turn = self._turn(data.get("messages") or [])
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.calls:
            message["tool_calls"] = [{"id": f"call_{n}_{i}", "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(args)}}
                                     for i, (name, args) in enumerate(turn.calls)]
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1, "model": data.get("model", "m"),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if turn.calls else "stop"}],
                "usage": {"prompt_tokens": turn.usage[0], "completion_tokens": turn.usage[1],
                          "total_tokens": sum(turn.usage)}}

    def _anthropic(self, data: dict[str, Any]) -> dict[str, Any]:
        n, turn = self._turn(data.get("messages") or [])
        content: list[dict[str, Any]] = []
        if turn.text is not None:
            content.append({"type": "text", "text": turn.text})
        content += [{"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": args}
                    for i, (name, args) in enumerate(turn.calls)]
        return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": data.get("model", "m"),
                "content": content, "stop_reason": "tool_use" if turn.calls else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": turn.usage[0], "output_tokens": turn.usage[1]}}

    def _tokens(self, text: str | None) -> Iterator[str]:
        turn = next((t for t in self.script if t.text == text and t.pieces), None)
        for token in turn.pieces if turn is not None else re.findall(r"\s*\S+\s*|\s+", text or ""):
            if self.token_times and self.token_s:
                time.sleep(self.token_s)
            self.token_times.append(time.monotonic())
            yield token

    def _openai_events(self, data: dict[str, Any], whole: dict[str, Any]) -> Iterator[str]:
        head = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        message = whole["choices"][0]["message"]

        def event(delta: dict[str, Any], finish: str | None = None) -> str:
            return "data: " + json.dumps({**head, "choices": [
                {"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

        yield event({"role": "assistant", "content": ""})
        for token in self._tokens(message.get("content")):
            yield event({"content": token})
        for i, call in enumerate(message.get("tool_calls") or []):
            yield event({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                         "function": {"name": call["function"]["name"],
                                                      "arguments": call["function"]["arguments"]}}]})
        yield event({}, whole["choices"][0]["finish_reason"])
        if (data.get("stream_options") or {}).get("include_usage"):
            yield "data: " + json.dumps({**head, "choices": [], "usage": whole["usage"]}) + "\n\n"
        yield "data: [DONE]\n\n"

    def _anthropic_events(self, whole: dict[str, Any]) -> Iterator[str]:
        def event(kind: str, body: dict[str, Any]) -> str:
            return f"event: {kind}\ndata: " + json.dumps({"type": kind, **body}) + "\n\n"

        start = {**whole, "content": [], "stop_reason": None,
                 "usage": {"input_tokens": whole["usage"]["input_tokens"], "output_tokens": 0}}
        yield event("message_start", {"message": start})
        for i, block in enumerate(whole["content"]):
            if block["type"] == "text":
                yield event("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}})
                for token in self._tokens(block["text"]):
                    yield event("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": token}})
            else:
                yield event("content_block_start", {"index": i, "content_block": {**block, "input": {}}})
                yield event("content_block_delta", {"index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
            yield event("content_block_stop", {"index": i})
        yield event("message_delta", {"delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                                      "usage": {"output_tokens": whole["usage"]["output_tokens"]}})
        yield event("message_stop", {})

    def tool_results(self, n: int) -> list[Any]:
        """The tool results the n-th request (0-based) sent back to the model (OpenAI wire)."""
        return [m.get("content") for m in self.requests[n]["json"].get("messages", []) if m.get("role") == "tool"]
