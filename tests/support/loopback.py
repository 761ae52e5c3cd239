"""A real HTTP server on loopback for the http and model agents' tests: it records each request and
answers from a script (an OpenAI-compatible chat-completions stand-in, with `usage` when asked)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Loopback", "chat"]


def chat(content: str, *, usage: tuple[int, int] | None = None) -> dict[str, Any]:
    """A chat completion answering `content`, reporting `usage` (prompt, completion tokens) when given."""
    out: dict[str, Any] = {"id": "c1", "object": "chat.completion", "model": "stand-in", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}
    if usage is not None:
        out["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return out


class Loopback:
    """A real HTTP server on 127.0.0.1 answering from a script: each request gets the next answer."""

    def __init__(self, answer: Callable[[dict[str, Any], dict[str, str], str], tuple[int, Any]]) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                data = json.loads(body) if body else None
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append({"path": self.path, "json": data, "headers": headers})
                status, reply = answer(data, headers, self.path)
                if isinstance(reply, Iterator):   # server-sent events, written as they come (HTTP/1.0: to the close)
                    self.send_response(status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.end_headers()
                    for event in reply:
                        self.wfile.write(event.encode())
                        self.wfile.flush()
                    return
                raw = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if isinstance(reply, str) else "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Loopback:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
