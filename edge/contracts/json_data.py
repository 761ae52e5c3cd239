"""What counts as JSON data here, and reading it exactly: one depth rule, no NaN, no lone surrogate.

An agent's answer, a result given to `oz0 render` and a schema all pass these rules before anything
serializes them, so a hostile value ends as a clear error (InvalidOutput, exit 2) and never as a
RecursionError, a silently rounded integer or a string that cannot be written out as UTF-8.
orjson reads integers beyond 64 bits as floats; `loads_exact` rereads such documents with the
standard library so a 30-digit integer stays 30 digits.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from oz0.edge.contracts.pointer import json_path
from oz0.edge.errors import Oz0Error

__all__ = ["MAX_JSON_DEPTH", "JsonDataError", "check_json_data", "dumps_exact", "loads_data", "loads_exact"]

MAX_JSON_DEPTH = 128

_LONG_DIGITS = re.compile(rb"\d{19}")  # orjson is exact below 19 digits (i64 and u64 range)
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonDataError(Oz0Error, ValueError):
    """A value that is not JSON data as this project takes it: what is wrong, and the JSON path."""

    def __init__(self, message: str, *, path: str = "$", too_deep: bool = False) -> None:
        self.message = message
        self.path = path
        self.too_deep = too_deep  # JSON data, only nested past the limit: say so, not "not JSON"
        super().__init__(f"{message} at {path}" if path != "$" else message)


def _path(trail: Any) -> str:
    parts: list[Any] = []
    while trail is not None:
        trail, key = trail
        parts.append(key)
    return json_path(list(reversed(parts)))


def check_json_data(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise JsonDataError unless `value` is strict JSON data: dicts with string keys, lists, strings
    without lone surrogates, finite numbers, booleans and null, nested at most `max_depth` levels."""
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth, trail = pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                raise JsonDataError("a string holds a lone surrogate (such as \\ud800), which is not "
                                    "text in any Unicode encoding", path=_path(trail))
        elif isinstance(item, (bool, int)) or item is None:
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JsonDataError(f"{item!r} is not a JSON number (NaN and Infinity are not JSON)",
                                    path=_path(trail))
        elif isinstance(item, (dict, list, tuple)):
            if depth >= max_depth:
                raise JsonDataError(f"the data nests deeper than {max_depth} levels (the limit for JSON data)",
                                    path=_path(trail), too_deep=True)
            if isinstance(item, dict):
                for key, sub in item.items():
                    if not isinstance(key, str):
                        raise JsonDataError(f"an object key is a {type(key).__name__}; JSON keys are strings",
                                            path=_path(trail))
                    if not key.isascii() and _SURROGATE.search(key):
                        raise JsonDataError("an object key holds a lone surrogate (such as \\ud800)",
                                            path=_path(trail))
                    push((sub, depth + 1, (trail, key)))
            else:
                for i, sub in enumerate(item):
                    push((sub, depth + 1, (trail, i)))
        else:
            raise JsonDataError(f"Type is not JSON serializable: {type(item).__name__}", path=_path(trail))


def loads_exact(data: bytes | str) -> Any:
    """JSON text parsed with every integer exact. Raises orjson.JSONDecodeError (a ValueError)."""
    value = orjson.loads(data)
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if not _LONG_DIGITS.search(raw):
        return value

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(raw, parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise orjson.JSONDecodeError(exc.msg, exc.doc, exc.pos) from None
    except (ValueError, RecursionError) as exc:
        raise orjson.JSONDecodeError(str(exc), raw.decode("utf-8", "replace"), 0) from None


def loads_data(data: bytes | str) -> Any:
    """JSON text from outside (a request body, a form field) as JSON data: `loads_exact`, then
    `check_json_data`. Raises JsonDataError (nested past MAX_JSON_DEPTH, however deep: past orjson's
    own depth limit too) or orjson.JSONDecodeError (not JSON); both are ValueErrors."""
    try:
        value = loads_exact(data)
    except orjson.JSONDecodeError as exc:
        if "depth limit exceeded" in str(exc) or "recursion" in str(exc).lower():
            raise JsonDataError(f"the data nests deeper than {MAX_JSON_DEPTH} levels "
                                "(the limit for JSON data)") from None
        raise
    check_json_data(value)
    return value


def dumps_exact(value: Any) -> bytes:
    """Compact UTF-8 JSON of data that passed check_json_data, integers beyond 64 bits included."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
