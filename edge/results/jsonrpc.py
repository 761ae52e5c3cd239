"""The one reader of a JSON-RPC 2.0 response, the form MCP traffic is logged in.

A logged `tools/call` answer is `{"jsonrpc": "2.0", "id": ..., "result": CallToolResult}` or, when the
server refused the call, `{"jsonrpc": "2.0", "id": ..., "error": {"code", "message", "data"?}}`. The
card rules read it here once: a result is drawn as the CallToolResult inside it, and an error stays
an MCP protocol error (QZX's MCP profiles: a protocol error is never a completed result).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["RpcResponse", "read_rpc_response"]


@dataclass(frozen=True)
class RpcResponse:
    """A JSON-RPC response as facts: `result` when it carries one, else the `error` parts."""

    id: Any
    has_result: bool
    result: Any = None
    error_code: Any = None
    error_message: str = ""
    error_data: Any = None
    malformed: str = ""  # why the message is no valid response at all (a protocol error of its own)


def read_rpc_response(value: Any) -> RpcResponse | None:
    """`value` read as a JSON-RPC 2.0 response, or None when it is not one (`jsonrpc` "2.0", an `id`,
    and `result` or `error`). Holding both, it is a protocol error: has_result False, `malformed` says why."""
    if not (isinstance(value, dict) and value.get("jsonrpc") == "2.0" and "id" in value):
        return None
    if not set(value) <= {"jsonrpc", "id", "result", "error"}:
        return None
    if "result" in value and "error" in value:
        return RpcResponse(value["id"], False, malformed="the response holds both result and error, "
                                                         "which JSON-RPC 2.0 forbids")
    if "result" not in value and "error" not in value:
        return None
    if "result" in value:
        return RpcResponse(value["id"], True, result=value["result"])
    error = value["error"] if isinstance(value["error"], dict) else {}
    message = error.get("message")
    message = message if isinstance(message, str) else ""
    return RpcResponse(value["id"], False, error_code=error.get("code"), error_message=message,
                       error_data=error.get("data"))
