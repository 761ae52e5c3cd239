"""The web console's guards: where it may listen, who may use it, forged forms, and what a page may load.

- Bound to a loopback address the console is the local user's; bound anywhere else it needs
  `OZ0_CONSOLE_TOKEN` (sent as a bearer token, or typed once into the login form) and refuses to
  start without one. A login's cookie is random, lives SESSION_TTL_S at most and ends at logout. On loopback only loopback host names are answered (no DNS rebinding).
- Forms carry a signed double-submit CSRF token: a random nonce with an HMAC under a per-process
  key, in an HttpOnly SameSite=Strict cookie and in a hidden field; both must match and verify.
  The JSON API only takes `application/json`, which a cross-site page cannot send without CORS.
- Every response carries a strict Content-Security-Policy: no inline script or style, nothing
  remote, so a hostile result stays inert even if a bug let markup through.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CSP",
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "SESSION_COOKIE",
    "SESSION_TTL_S",
    "ConsoleConfigError",
    "Guard",
    "GuardMiddleware",
    "SecurityHeaders",
    "is_loopback",
    "same_origin",
]

CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'; connect-src 'self'")
SECURITY_HEADERS: dict[str, str] = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
CSRF_COOKIE = "oz0_csrf"
CSRF_FIELD = "csrf"
SESSION_COOKIE = "oz0_session"
MIN_TOKEN_CHARS = 16
SESSION_TTL_S = 12 * 3600.0
MAX_SESSIONS = 1_000
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


class ConsoleConfigError(ValueError):
    """A console setting that would make it unsafe or unable to start: names the variable and the fix."""


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or `localhost`) only accepts connections from this machine."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass
class Guard:
    """Auth and CSRF for one console: built from the bind address and the token."""

    host: str
    token: str | None = None
    admin_token: str | None = None
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    session_ttl_s: float = field(default_factory=lambda: SESSION_TTL_S)
    _sessions: dict[str, float] = field(default_factory=dict, repr=False)
    _names: dict[str, str] = field(default_factory=dict, repr=False)   # a session's login name, if one was typed

    def __post_init__(self) -> None:
        if self.token is not None and not self.token.strip():
            self.token = None
        if self.admin_token is not None and not self.admin_token.strip():
            self.admin_token = None
        if self.admin_token is not None and len(self.admin_token) < MIN_TOKEN_CHARS:
            raise ConsoleConfigError(
                f"OZ0_ADMIN_TOKEN is {len(self.admin_token)} characters; use at least {MIN_TOKEN_CHARS}")
        if self.admin_token is not None and self.admin_token == self.token:
            raise ConsoleConfigError("OZ0_ADMIN_TOKEN equals OZ0_CONSOLE_TOKEN; give the admin token its own "
                                     "value, or every console user could install plugins")
        if self.token is not None and len(self.token) < MIN_TOKEN_CHARS:
            raise ConsoleConfigError(
                f"OZ0_CONSOLE_TOKEN is {len(self.token)} characters; use at least {MIN_TOKEN_CHARS} "
                "(for example the output of `python -c 'import secrets; print(secrets.token_urlsafe())'`)")
        if self.token is None and not is_loopback(self.host):
            raise ConsoleConfigError(
                f"OZ0_CONSOLE_HOST={self.host} is not a loopback address, so the console needs "
                "OZ0_CONSOLE_TOKEN (at least 16 characters) before it will start; or bind it to 127.0.0.1")

    @property
    def needs_login(self) -> bool:
        return self.token is not None

    @property
    def allowed_hosts(self) -> list[str]:
        """Host header names answered: loopback names on loopback (no DNS rebinding), any behind a token."""
        if is_loopback(self.host) and self.token is None:
            return ["localhost", "127.0.0.1", "::1", "[::1]"]
        return ["*"]

    def new_session(self, name: str | None = None) -> str:
        """A login's cookie value: random, known to this process only (as its hash), valid for
        session_ttl_s seconds or until logout. The oldest sessions go first past MAX_SESSIONS. `name`:
        the login's name, how the console and chat show what this session asks and answers."""
        assert self.token is not None
        value = secrets.token_urlsafe(32)
        now = time.monotonic()
        self._sessions = {k: t for k, t in self._sessions.items() if t > now}
        while len(self._sessions) >= MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        self._names = {k: n for k, n in self._names.items() if k in self._sessions}
        self._sessions[_digest(value)] = now + self.session_ttl_s
        if name:
            self._names[_digest(value)] = name
        return value

    def session_name(self, cookies: Mapping[str, str]) -> str | None:
        """The name typed at this request's login, while its session lasts."""
        value = cookies.get(SESSION_COOKIE, "")
        return self._names.get(_digest(value)) if value and self._session_ok(value) else None

    def end_session(self, value: str | None) -> None:
        """Logout: the cookie stops working at once, even if a copy of it is replayed."""
        if value:
            self._sessions.pop(_digest(value), None)
            self._names.pop(_digest(value), None)

    def _session_ok(self, value: str) -> bool:
        expires = self._sessions.get(_digest(value))
        if expires is None:
            return False
        if expires <= time.monotonic():
            self._sessions.pop(_digest(value), None)
            return False
        return True

    def authorized(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
        """Whether a request may use the console and read the API: the console's token (or a login's
        cookie) when one is set; the admin token is accepted wherever the console's is."""
        if self.token is None:
            return True
        value = _bearer(headers)
        if value:
            return (hmac.compare_digest(value.encode(), self.token.encode())
                    or self.is_admin(headers))
        session = cookies.get(SESSION_COOKIE, "")
        return bool(session) and self._session_ok(session)

    def is_admin(self, headers: Mapping[str, str]) -> bool:
        """Whether the request carries `Authorization: Bearer <OZ0_ADMIN_TOKEN>` (never true without one set):
        what installing a plugin over the management API takes."""
        value = _bearer(headers)
        return (self.admin_token is not None and bool(value)
                and hmac.compare_digest(value.encode(), self.admin_token.encode()))

    def token_matches(self, typed: str) -> bool:
        return self.token is not None and hmac.compare_digest(typed.strip().encode(), self.token.encode())

    def new_csrf(self) -> str:
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._sign(nonce)}"

    def csrf_ok(self, cookie: str | None, submitted: str | None) -> bool:
        """The form's token equals the cookie's and was signed by this process."""
        if not cookie or not submitted or not hmac.compare_digest(cookie.encode(), submitted.encode()):
            return False
        nonce, _, signature = cookie.partition(".")
        return bool(nonce) and hmac.compare_digest(signature.encode(), self._sign(nonce).encode())

    def _sign(self, nonce: str) -> str:
        return hmac.new(self.key, b"csrf:" + nonce.encode(), hashlib.sha256).hexdigest()


class SecurityHeaders:
    """ASGI middleware: the CSP and its companions on every HTTP response, errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                headers.setdefault("cache-control", "no-store")
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _bearer(headers: Mapping[str, str]) -> str:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()


def cookie_options(**extra: Any) -> dict[str, Any]:
    """Attributes of every console cookie: unreadable from script, never sent cross-site."""
    return {"httponly": True, "samesite": "strict", "path": "/", **extra}


class GuardMiddleware:
    """Token check (when one is set) and the same-origin rule for every unsafe request."""

    def __init__(self, app: ASGIApp, *, guard: Guard, open_paths: tuple[str, ...]) -> None:
        self.app = app
        self.guard = guard
        self.open_paths = open_paths   # served to anyone: the login form, static files, the probes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = scope["path"]
        if request.method not in ("GET", "HEAD", "OPTIONS") and not same_origin(request):
            response: Response = JSONResponse(
                {"success": False, "message": "cross-site request refused", "error_code": "forbidden"},
                status_code=403)
            await response(scope, receive, send)
            return
        if not path.startswith(self.open_paths) and not self.guard.authorized(request.headers, request.cookies):
            if path.startswith("/v1/") or path in ("/openapi.json", "/metrics") or "application/json" in request.headers.get("accept", ""):
                response = JSONResponse(
                    {"success": False, "message": "a token is required: send Authorization: Bearer <OZ0_CONSOLE_TOKEN>",
                     "error_code": "unauthorized"},
                    status_code=401, headers={"www-authenticate": 'Bearer realm="oz0"'})
            else:
                response = RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["guard"] = self.guard
        await self.app(scope, receive, send)


def same_origin(request: Request) -> bool:
    """False when the browser says the request comes from another site: Sec-Fetch-Site where the
    browser sends it (every current one does), else the Origin header against the Host."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return False
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()
