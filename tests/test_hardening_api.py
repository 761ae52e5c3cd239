"""The runtime API and the console session, as a client on loopback sees them: a body over the limit
is refused while it is read (chunked or not), and a session cookie is random, expires and ends."""

from __future__ import annotations

import socket

import pytest

from oz0.adapters.console.api import MAX_BODY_BYTES
from console_plugin import ConsoleThread, installed_runtime


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    runtime = installed_runtime(tmp_path_factory.mktemp("hard-api") / "home")
    with ConsoleThread(runtime) as server:
        yield server
    runtime.close()


def _raw(console, head: str, chunks, *, chunked: bool) -> str:
    """Send a request by hand, body chunk by chunk, never finishing it; return what the server says."""
    host, port = console.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode())
        try:
            for chunk in chunks:
                sock.sendall((f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n") if chunked else chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server stopped reading: what it said is waiting for us
        answer = b""
        try:
            while b"\r\n\r\n" not in answer or b"}" not in answer:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except ConnectionResetError:
            pass
    return answer.decode("utf-8", "replace")


def _chunks(total: int):
    sent = 0
    while sent < total:
        yield b"x" * 65536
        sent += 65536


def test_a_chunked_body_over_the_limit_is_413_before_it_ends(console):
    head = ("POST /v1/agents/echo/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
            "Transfer-Encoding: chunked\r\n\r\n")
    answer = _raw(console, head, _chunks(MAX_BODY_BYTES + 8 * 65536), chunked=True)
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert f"the limit is {MAX_BODY_BYTES:,}" in answer


def test_a_body_longer_than_its_content_length_claims_is_cut_at_the_limit(console):
    head = ("POST /v1/agents/echo/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n")
    answer = _raw(console, head, _chunks(65536), chunked=False)
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert f"the limit is {MAX_BODY_BYTES:,}" in answer
