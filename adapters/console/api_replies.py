"""The runtime API's replies and bodies, shared by every API module: a QZX failure as a response, the
body read within its limit, who is asking.

Kept apart from adapters/console/api.py so the API's other modules (plugins, follow-ups, the OpenAPI
document) share one copy of each rule and one owner of the body limit without importing the routes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from oz0.edge.model.agent import INVALID_INPUT
from oz0.edge.results.qzx import result_envelope

__all__ = [
    "API_PREFIX",
    "ASYNC_HTTP",
    "FAILED_JOB_HTTP",
    "INVALID_INPUT_HTTP",
    "MAX_BODY_BYTES",
    "failure",
    "invalid",
    "read_body",
    "requester",
    "too_large",
]

API_PREFIX = "/v1"
MAX_BODY_BYTES = 1_048_576
INVALID_INPUT_HTTP = 422
FAILED_JOB_HTTP = 502
ASYNC_HTTP = 202


def failure(message: str, error_code: str, *, status_code: int, command: str, error: str | None = None,
            details: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None,
            headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A QZX failure result as an HTTP response."""
    body = result_envelope(command, False, message, data=data, error=error or message, error_code=error_code,
                           details=details)
    return JSONResponse(body, status_code=status_code, headers=dict(headers or {}))


def invalid(command: str, reason: str, path: str) -> JSONResponse:
    """422 `invalid_input`: the body breaks the API's own rules (not UTF-8, not JSON), at `path`."""
    return failure(reason, "invalid_input", status_code=INVALID_INPUT_HTTP, command=command,
                   details={"kind": INVALID_INPUT.name, "reason": reason, "path": path})


async def read_body(request: Request, *, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The request body, or None as soon as more than `limit` bytes have arrived (chunked or not):
    a body over the limit is never held whole."""
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            return None
    return bytes(body)


def too_large(size: int | None, command: str) -> JSONResponse:
    """413 for a body over MAX_BODY_BYTES; the connection is closed, as the body is left unread."""
    said = f"{size:,} bytes" if size is not None else f"over {MAX_BODY_BYTES:,} bytes"
    return failure(f"the body is {said}; the limit is {MAX_BODY_BYTES:,}", "too_large",
                   status_code=413, command=command, headers={"connection": "close"})


def requester(request: Request) -> str:
    """Who asks through the API: a bearer token's holder, or the local operator."""
    return "api-token" if request.headers.get("authorization") else "api-local"
