"""The runtime API and the console session, as a client on loopback sees them: a body over the limit
is refused while it is read (chunked or not), and a session cookie is random, expires and ends."""

from __future__ import annotations

import socket

import pytest
from console_plugin import ConsoleThread, installed_runtime

from oz0.adapters.console.api_replies import MAX_BODY_BYTES


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


# 13. the console's session cookie ----------------------------------------------------------------

import re  # noqa: E402
import time  # noqa: E402

import httpx  # noqa: E402

from oz0.adapters.console import security  # noqa: E402

TOKEN = "a-console-token-long-enough"


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def _login(url: str) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=url, timeout=20)
    form = client.get("/login")
    ok = client.post("/login", data={"csrf": _csrf(form.text), "token": TOKEN, "next": "/jobs"})
    assert ok.status_code == 303, ok.text
    return client, client.cookies[security.SESSION_COOKIE]


@pytest.fixture
def guarded(tmp_path, monkeypatch):
    monkeypatch.setattr(security, "SESSION_TTL_S", 2.0, raising=False)
    runtime = installed_runtime(tmp_path / "home")
    with ConsoleThread(runtime, host="0.0.0.0", token=TOKEN) as server:
        yield server.url.replace("0.0.0.0", "127.0.0.1")
    runtime.close()


def _jobs_with(url: str, session: str) -> int:
    with httpx.Client(base_url=url, timeout=20, cookies={security.SESSION_COOKIE: session}) as other:
        return other.get("/jobs").status_code


def test_each_login_gets_its_own_random_cookie_with_an_expiry(guarded):
    first, one = _login(guarded)
    second, two = _login(guarded)
    assert one != two and TOKEN not in one
    assert _jobs_with(guarded, one) == 200 and _jobs_with(guarded, two) == 200
    first.close()
    second.close()


def test_the_cookie_stops_working_at_logout_even_when_replayed(guarded):
    client, session = _login(guarded)
    assert _jobs_with(guarded, session) == 200
    out = client.post("/logout", data={"csrf": _csrf(client.get("/").text)})
    assert out.status_code == 303
    assert _jobs_with(guarded, session) == 303  # the copy an attacker kept is dead too
    client.close()


def test_the_cookie_expires(guarded):
    client, session = _login(guarded)
    assert _jobs_with(guarded, session) == 200
    time.sleep(2.5)
    assert _jobs_with(guarded, session) == 303
    client.close()


def test_the_login_cookie_says_when_it_expires(guarded):
    with httpx.Client(base_url=guarded, timeout=20) as client:
        form = client.get("/login")
        ok = client.post("/login", data={"csrf": _csrf(form.text), "token": TOKEN, "next": "/"})
        set_cookie = ok.headers["set-cookie"]
        assert security.SESSION_COOKIE in set_cookie and "Max-Age=2" in set_cookie
