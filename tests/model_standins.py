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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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
        outer = self
        self.released = threading.Event()
        self.held = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                data = json.loads(body) if body else {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append({"path": self.path, "json": data, "headers": headers})
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                turn = sum(1 for m in data.get("messages") or [] if m.get("role") == "assistant")
                if turn == outer.hold_turn and not outer.released.is_set():
                    outer.held.set()
                    outer.released.wait(timeout=60)
                if self.path.endswith("/chat/completions"):
                    reply = outer._openai(data)
                elif self.path.endswith("/messages"):
                    reply = outer._anthropic(data)
                else:
                    self.send_error(404)
                    return
                raw = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "ModelStandin":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

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
