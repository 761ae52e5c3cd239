"""QZX Result Contract v1: the core rules of a result, and building one that keeps them.

The MCP profiles (edge.results.qzx_profiles), tool definitions (edge.results.qzx_tools) and conformance receipts
(edge.results.qzx_receipts) build on these rules. Every check is a pure function that returns findings (a JSON path and a sentence) instead of raising,
so the same code serves `oz0 qzx validate`, the pair receipt and the runtime that validates its own
envelope before printing it (`result_envelope`). Hand-written rules rather than a schema engine,
because the contract asks for things a schema cannot say (a finite `duration_ms`, a present-but-null
failure field named as such) and users need a sentence per rule.

Input is read with Python's json, which accepts the non-standard NaN/Infinity tokens; they are not
JSON numbers, so every non-finite number is then reported as a violation where it stands.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from oz0.edge.errors import Oz0Error

__all__ = [
    "MAX_INPUT_BYTES",
    "Finding",
    "InputError",
    "at_key",
    "check_core",
    "is_number",
    "kind_of",
    "non_finite",
    "parse_document",
    "result_envelope",
    "same_json",
    "unique",
]

MAX_INPUT_BYTES = 16 * 1024 * 1024

_ERROR_CODE = re.compile(r"[a-z][a-z0-9_]*")
_NON_BLANK = re.compile(r"\S")
_OPTIONAL_CORE = ("error", "error_code", "details", "warnings", "meta")
_OPTIONAL_META = ("schema_version", "command", "duration_ms", "command_maturity")


@dataclass(frozen=True)
class Finding:
    """One violation or warning: where in the document (a JSONPath) and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InputError(Oz0Error, ValueError):
    """Input that is not a JSON document at all (unreadable bytes, bad syntax, too large)."""


def at_key(base: str, key: str | int) -> str:
    """The JSONPath of `key` inside the value at `base` (`$.a`, `$[0]`, `$["odd key"]`)."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if key.isidentifier():
        return f"{base}.{key}"
    return f"{base}[{json.dumps(key, ensure_ascii=False)}]"


def kind_of(value: Any) -> str:
    """The JSON type name of a value, as findings say it ("got null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_number(value: Any) -> TypeGuard[int | float]:
    """A JSON number: an int or float, never a bool (which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _non_blank(value: Any) -> bool:
    return isinstance(value, str) and _NON_BLANK.search(value) is not None


def _text_findings(value: Any, path: str) -> list[Finding]:
    """What is wrong with a field that must be a string with a non-blank character (nothing when it is)."""
    if not isinstance(value, str):
        return [Finding(path, f"must be a string, got {kind_of(value)}")]
    if not _non_blank(value):
        return [Finding(path, "must contain a non-blank character")]
    return []


def parse_document(data: bytes, *, source: str = "<input>") -> Any:
    """Parse UTF-8 JSON bytes; InputError names the source and the problem (line and column)."""
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{source}: {len(data):,} bytes; the limit is {MAX_INPUT_BYTES:,}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{source}: not usable JSON: nested too deeply") from None


def non_finite(document: Any, base: str) -> list[Finding]:
    """A finding for each NaN or Infinity in `document`: Python reads them, JSON has no such numbers."""
    found: list[Finding] = []
    stack: list[tuple[Any, str]] = [(document, base)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found.append(Finding(where, f"{json.dumps(value)} is not a JSON number (NaN and Infinity are not JSON)"))
        elif isinstance(value, dict):
            stack.extend((v, at_key(where, k)) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, at_key(where, i)) for i, v in reversed(list(enumerate(value))))
    return found


def check_core(document: Any, *, base: str = "$") -> list[Finding]:
    """Every way `document` breaks the core contract; empty when it conforms. Paths start at `base`."""
    if not isinstance(document, dict):
        return [Finding(base, f"a QZX result must be a JSON object, got {kind_of(document)}")]
    found: list[Finding] = []
    at = functools.partial(at_key, base)
    for key in _OPTIONAL_CORE:
        if key in document and document[key] is None:
            found.append(Finding(at(key), "must be omitted when unavailable, never null"))

    success = document.get("success")
    if "success" not in document:
        found.append(Finding(at("success"), "is required: true or false"))
    elif not isinstance(success, bool):
        found.append(Finding(at("success"), f"must be a boolean, got {kind_of(success)}"))

    if "message" not in document:
        found.append(Finding(at("message"), "is required: a non-blank string summarising the outcome"))
    else:
        found.extend(_text_findings(document["message"], at("message")))

    if success is False and "error" not in document and "error_code" not in document:
        found.append(Finding(base, "a failure (success: false) must carry `error` or `error_code`"))
    if success is True:
        for key in ("error", "error_code"):
            if key in document:
                found.append(Finding(at(key), "a success (success: true) must not carry this failure field, "
                                              "not even as null"))

    if document.get("error") is not None:
        found.extend(_text_findings(document["error"], at("error")))
    if document.get("error_code") is not None:
        code = document["error_code"]
        if not isinstance(code, str):
            found.append(Finding(at("error_code"), f"must be a string, got {kind_of(code)}"))
        elif not _ERROR_CODE.fullmatch(code):
            found.append(Finding(at("error_code"), f"{code!r} must match ^[a-z][a-z0-9_]*$ "
                                                   "(lower case letter, then lower case letters, digits, _)"))
    if document.get("details") is not None and not isinstance(document["details"], dict):
        found.append(Finding(at("details"), f"must be an object, got {kind_of(document['details'])}"))
    if document.get("warnings") is not None:
        warnings = document["warnings"]
        if not isinstance(warnings, list):
            found.append(Finding(at("warnings"), f"must be an array of strings, got {kind_of(warnings)}"))
        else:
            for i, item in enumerate(warnings):
                found.extend(_text_findings(item, at_key(at("warnings"), i)))
    if document.get("meta") is not None:
        found.extend(_check_meta(document["meta"], at("meta")))
    reported = {f.path for f in found}
    found.extend(f for f in non_finite(document, base) if f.path not in reported)
    return unique(found)


def _check_meta(meta: Any, base: str) -> list[Finding]:
    if not isinstance(meta, dict):
        return [Finding(base, f"must be an object, got {kind_of(meta)}")]
    found: list[Finding] = []
    at = functools.partial(at_key, base)
    for key in _OPTIONAL_META:
        if key in meta and meta[key] is None:
            found.append(Finding(at(key), "must be omitted when unavailable, never null"))
    version = meta.get("schema_version")
    if version is not None and (not is_number(version) or version != 1):
        found.append(Finding(at("schema_version"), f"must be 1, got {json.dumps(version)}"))
    command = meta.get("command")
    if command is not None:
        found.extend(_text_findings(command, at("command")))
    duration = meta.get("duration_ms")
    if duration is not None:
        if not is_number(duration):
            found.append(Finding(at("duration_ms"), f"must be a number of milliseconds, got {kind_of(duration)}"))
        elif not math.isfinite(duration):
            found.append(Finding(at("duration_ms"), f"must be a finite number >= 0, got {json.dumps(duration)}"))
        elif duration < 0:
            found.append(Finding(at("duration_ms"), f"must be >= 0, got {duration!r}"))
    maturity = meta.get("command_maturity")
    if maturity is not None and not isinstance(maturity, dict):
        found.append(Finding(at("command_maturity"), f"must be an object, got {kind_of(maturity)}"))
    return found


def unique(findings: Iterable[Finding]) -> list[Finding]:
    """The findings in order without repeats (two rules may report the same place the same way)."""
    seen: dict[Finding, None] = {}
    for f in findings:
        seen.setdefault(f, None)
    return list(seen)


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: unlike Python's ==, true is not 1 and key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


_RESERVED = ("success", "message", "error", "error_code", "details", "warnings", "meta")


def result_envelope(command: str, success: bool, message: str, *, data: Mapping[str, Any] | None = None,
                    error: str | None = None, error_code: str | None = None,
                    details: Mapping[str, Any] | None = None, warnings: Sequence[str] = (),
                    duration_ms: float | None = None) -> dict[str, Any]:
    """Build one QZX result and validate it before anyone sees it.

    `data` holds command-specific fields, placed at the top level beside the core fields; a key that
    collides with a core field is a producer bug. Unavailable optional fields are omitted, never null.
    When the envelope breaks the contract (or cannot be written as JSON) the producer's result is
    replaced by an `invalid_result_contract` failure that keeps `command` in meta.command and lists
    what was wrong in details.violations, so a caller always gets a conforming document.
    """
    envelope: dict[str, Any] = {"success": success, "message": message}
    problems: list[str] = []
    for key, value in (data or {}).items():
        if key in _RESERVED:
            problems.append(f"$.{key}: command data must not replace the core field {key!r}")
        else:
            envelope[key] = value
    if error is not None:
        envelope["error"] = error
    if error_code is not None:
        envelope["error_code"] = error_code
    if details is not None:
        envelope["details"] = dict(details)
    if warnings:
        envelope["warnings"] = list(warnings)
    meta: dict[str, Any] = {"schema_version": 1, "command": command}
    if duration_ms is not None:
        meta["duration_ms"] = duration_ms
    envelope["meta"] = meta
    problems.extend(str(f) for f in check_core(envelope))
    if not problems:
        try:
            json.dumps(envelope, allow_nan=False)
        except (TypeError, ValueError) as exc:
            problems.append(f"$: cannot be written as JSON: {exc}")
    if not problems:
        return envelope
    name = command if _non_blank(command) else "oz0"
    fallback_meta: dict[str, Any] = {"schema_version": 1, "command": name}
    if is_number(duration_ms) and math.isfinite(duration_ms) and duration_ms >= 0:
        fallback_meta["duration_ms"] = duration_ms
    return {
        "success": False,
        "message": f"The command {name!r} produced a result that breaks QZX Result Contract v1; "
                   "it was withheld.",
        "error": f"invalid result contract: {problems[0]}",
        "error_code": "invalid_result_contract",
        "details": {"violations": problems},
        "meta": fallback_meta,
    }
