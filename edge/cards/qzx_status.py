"""The status header of a QZX-shaped result, under the QZX Result Contract's own core rules.

A result with a boolean `success` and a message gets a status header; when it breaks the contract
(`success: true` with an `error`, `details: null`, `meta.schema_version: 2`...) the header says so and
names the rule, as QZX's runtime does with an invalid producer result (an `invalid_result_contract`
failure), while the card still draws the result's evidence. The rules are edge.results.qzx's, checked on
the envelope fields only, so the cost does not grow with the evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from oz0.edge.cards.model import Status
from oz0.edge.results.qzx import check_core

__all__ = ["BREACH_CODE", "CORE_FIELDS", "disagreement_status", "qzx_status"]

BREACH_CODE = "invalid_result_contract"
CORE_FIELDS = ("success", "message", "error", "error_code", "details", "warnings", "meta")


def qzx_status(value: Mapping[str, Any]) -> Status:
    """The header of a QZX-shaped result: its own fields, or a failure naming the first broken rule."""
    meta = value.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    warnings = value.get("warnings")
    duration = meta.get("duration_ms")
    status = Status(
        success=value["success"],
        message=value["message"],
        error=value["error"] if isinstance(value.get("error"), str) else None,
        error_code=value["error_code"] if isinstance(value.get("error_code"), str) else None,
        warnings=tuple(w for w in warnings if isinstance(w, str)) if isinstance(warnings, list) else (),
        command=meta["command"] if isinstance(meta.get("command"), str) else None,
        duration_ms=duration if isinstance(duration, (int, float)) and not isinstance(duration, bool) else None,
    )
    findings = check_core({k: value[k] for k in CORE_FIELDS if k in value})
    if not findings:
        return status
    said = "success: true" if status.success else "success: false"
    return replace(
        status, success=False, error_code=BREACH_CODE,
        message=f"The result breaks the QZX Result Contract v1 ({findings[0]}); it says {said}: {status.message}",
        warnings=tuple(f"also breaks the QZX Result Contract v1: {f}" for f in findings[1:]) + status.warnings,
    )


def disagreement_status(status: Status | None, *, is_error: Any, is_error_given: bool, success: bool) -> Status:
    """The header of a CallToolResult whose `isError` is not `!structuredContent.success`: a failure
    that names the two fields (MCP treats an absent isError as false)."""
    shown = ("absent, so false" if not is_error_given else
             str(is_error).lower() if isinstance(is_error, bool) else f"{is_error!r}, not a boolean")
    message = (f"isError disagrees with structuredContent.success: isError is {shown} but success is "
               f"{str(success).lower()}; MCP requires isError to equal !success")
    if status is None:
        return Status(success=False, message=message)
    return replace(status, success=False, message=f"{message}; the result says: {status.message}")
