"""Scripted stand-ins of model providers at the wire, real HTTP servers on 127.0.0.1: an OpenAI-compatible
`/v1/chat/completions` and an Anthropic `/v1/messages`. Each answers the turn of its script that the
conversation has reached (the number of assistant messages the request carries), so a loop resumed
after a crash that repeats a request gets the same answer, and a request never asked is never counted.

A turn is `Turn(calls=[("tool", {args}), ...])` (parallel tool calls when more than one) or
`Turn(text="...")`; each reports `usage`. `delay_s` sleeps before each answer (a model's latency).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from loopback import Loopback

__all__ = ["ModelStandin", "Turn"]


@dataclass(frozen=True)
class Turn:
    calls: tuple[tuple[str, Any], ...] = ()
    text: str | None = None
    usage: tuple[int, int] = (11, 7)


@dataclass
class ModelStandin:
    script: list[Turn]
    delay_s: float = 0.0
    hold_turn: int | None = None  # the request of this turn waits for `release()` (a crash test's moment)
    requests: list[dict[str, Any]] = field(default_factory=list)

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
            return 200, self._openai(data)
        if path.endswith("/messages"):
            return 200, self._anthropic(data)
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

    def tool_results(self, n: int) -> list[Any]:
        """The tool results the n-th request (0-based) sent back to the model (OpenAI wire)."""
        return [m.get("content") for m in self.requests[n]["json"].get("messages", []) if m.get("role") == "tool"]
