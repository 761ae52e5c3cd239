"""Slack's HTTP deliveries (Events API, slash commands, interactivity) answered by a thin aiohttp
endpoint: the signature checked, the payload routed, the listener's ack sent as the HTTP response.

Why not bolt's own HTTP handling (it stays for Socket Mode): measured with bench/slack_ack.py, bolt's
runner waits for a listener's ack by polling every 10 ms and runs its middleware chain on every
request; 200 commands at once then queued acks behind each other for hundreds of milliseconds. Here
a request costs the loop one HMAC, one parse and the listener up to its ack; the listener runs on
in the flow's tasks (what it does after the ack never delays the response). The listeners are the
channel's own (`SlackChannel.route`), called with bolt's `AsyncAck`, so an ack means the same
response body under both transports.

What Slack sees: 401 `{"error": "invalid request"}` for a missing, stale (over 5 minutes) or wrong
signature, or a timestamp that is not a number of seconds; `{"challenge": ...}` for url_verification;
200 for ssl_check; the listener's ack (empty 200 for an event, acked before its listener runs); 404
`{"error": "unhandled request"}` for a payload no listener takes; 500 (logged, no details) when the
listener fails before it acks.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from aiohttp import web
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.request.internals import parse_body
from slack_sdk.signature import SignatureVerifier

__all__ = ["ACK_TIMEOUT_S", "MAX_BODY_BYTES", "Listener", "Routes", "SlackHttp", "signature_problem"]

log = logging.getLogger("oz0.slack")

ACK_TIMEOUT_S = 3.0           # Slack's deadline for the first answer; bolt's listener ack_timeout too
MAX_BODY_BYTES = 1 << 20      # Slack's payloads are far smaller; a larger body is refused with 413
QUIET_S = 0.02                # no request for this long: a burst is over (see _Lull)
MAX_DEFER_S = 0.5             # the longest the work after an ack waits for a burst to end
MAX_SKEW_S = 300              # a signed request older (or newer) than this is refused as a replay

_TIMESTAMP = re.compile(r"[0-9]{1,15}")

Listener = Callable[..., Awaitable[None]]    # (ack=, body=) -> None: one of SlackChannel's listeners


class Routes(Protocol):
    def route(self, body: Mapping[str, Any]) -> tuple[Listener, bool] | None:
        """The listener that takes `body`, and whether it is acked before it runs (events)."""
        ...


def signature_problem(verifier: SignatureVerifier, headers: Mapping[str, str], body: str, *,
                      now: float | None = None) -> str | None:
    """Why a request is not Slack's (None when its v0 signature is good and fresh), in words for the
    log: never the signature or the secret."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    if not _TIMESTAMP.fullmatch(timestamp):
        return "its X-Slack-Request-Timestamp is not a number of seconds"
    if abs((time.time() if now is None else now) - int(timestamp)) > MAX_SKEW_S:
        return f"its timestamp is more than {MAX_SKEW_S} s from now"
    expected = verifier.generate_signature(timestamp=timestamp, body=body)
    if not signature or not hmac.compare_digest(expected, signature):
        return "its X-Slack-Signature does not match the body"
    return None


class _Ack(AsyncAck):
    """bolt's ack (the same response bodies), which also wakes the request waiting for it; a
    listener's first ack returns once `after` has (the lull after a burst)."""

    def __init__(self, acked: asyncio.Future[None], after: Callable[[], Awaitable[None]] | None) -> None:
        super().__init__()
        self.acked = acked
        self.after = after

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        response = await super().__call__(*args, **kwargs)
        if not self.acked.done():
            self.acked.set_result(None)
            if self.after is not None:
                await self.after()
        return response


class _Lull:
    """Whether requests are still arriving. What a listener does after its ack (the journal write,
    the job) waits until none has arrived for QUIET_S, at most MAX_DEFER_S: measured with
    bench/replicas.py, the journal writes and jobs of the first asks of a burst otherwise hold the
    interpreter and the cores the later acks need. Not a queue: the work waits in its own task."""

    def __init__(self) -> None:
        self._quiet: asyncio.Event | None = None
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def arrived(self) -> None:
        self._last = time.monotonic()
        if self._quiet is None:
            self._quiet = asyncio.Event()
        self._quiet.clear()
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(QUIET_S, self._check)

    def _check(self) -> None:
        idle = time.monotonic() - self._last
        if idle >= QUIET_S:
            self._timer = None
            assert self._quiet is not None
            self._quiet.set()
        else:
            self._timer = asyncio.get_running_loop().call_later(QUIET_S - idle, self._check)

    async def wait(self) -> None:
        if self._quiet is not None and not self._quiet.is_set():
            try:
                await asyncio.wait_for(self._quiet.wait(), MAX_DEFER_S)
            except TimeoutError:
                pass   # requests keep coming: the work goes on, each ack still answered first


class SlackHttp:
    """The endpoint: `handle` is the aiohttp handler of EVENTS_PATH."""

    def __init__(self, routes: Routes, *, signing_secret: str, spawn: Callable[..., asyncio.Task[Any]],
                 on_error: Callable[[Exception, Mapping[str, Any]], Awaitable[None]]) -> None:
        self.routes = routes
        self.verifier = SignatureVerifier(signing_secret)
        self.spawn = spawn
        self.on_error = on_error
        self.lull = _Lull()

    def app(self, path: str) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(path, self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        self.lull.arrived()
        raw = await request.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return _refused("its body is not UTF-8")
        if text.startswith("ssl_check=") and "ssl_check=1" in text.split("&"):
            return web.Response(status=200)
        problem = signature_problem(self.verifier, request.headers, text)
        if problem is not None:
            return _refused(problem)
        try:
            body = parse_body(text, request.headers.get("Content-Type"))
        except ValueError:
            log.info("refused a signed Slack request: its body is not JSON or a form")
            return web.json_response({"error": "invalid request"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": "invalid request"}, status=400)
        if body.get("type") == "url_verification":
            return web.json_response({"challenge": body.get("challenge")})
        found = self.routes.route(body)
        if found is None:
            log.info("no listener for a Slack %s payload", body.get("type") or body.get("command") or "unknown")
            return web.json_response({"error": "unhandled request"}, status=404)
        listener, ack_first = found
        acked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ack = _Ack(acked, None if ack_first else self.lull.wait)
        if ack_first:
            await ack()
        task = self.spawn(self._run(listener, ack, body, after_lull=ack_first), name=f"slack-{_name(body)}")
        if not acked.done():
            task.add_done_callback(lambda _t: acked.done() or acked.set_result(None))
            try:
                await asyncio.wait_for(asyncio.shield(acked), ACK_TIMEOUT_S)
            except TimeoutError:
                log.warning("a Slack listener did not ack within %.0f s", ACK_TIMEOUT_S)
        if ack.response is None:   # the listener failed (logged by on_error) or never acked
            return web.json_response({"error": "internal error"}, status=500)
        return _response(ack.response)

    async def _run(self, listener: Listener, ack: _Ack, body: dict[str, Any], *, after_lull: bool) -> None:
        try:
            if after_lull:
                await self.lull.wait()
            await listener(ack=ack, body=body)
        except Exception as exc:
            await self.on_error(exc, body)


def _refused(problem: str) -> web.Response:
    log.info("refused a Slack request: %s", problem)
    return web.json_response({"error": "invalid request"}, status=401)


def _name(body: Mapping[str, Any]) -> str:
    return str(body.get("trigger_id") or body.get("event_id") or body.get("type") or "request")[:80]


def _response(bolt: Any) -> web.Response:
    """bolt's ack response as aiohttp's: JSON when it is an object, else text (an empty 200)."""
    payload = bolt.body or ""
    kind = "application/json" if payload.startswith("{") else "text/plain"
    return web.Response(status=bolt.status, text=payload, content_type=kind)

