"""An answer schema's fields, and which field a refusal names: the one rule every platform's form uses."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["fields", "named_field"]


def fields(schema: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """(name, property schema, required) of an answer schema's fields, in the schema's order."""
    found = schema.get("properties")
    props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    required = set(schema.get("required") or ())
    return [(str(k), dict(v) if isinstance(v, Mapping) else {}, k in required) for k, v in props.items()]


def named_field(found: list[tuple[str, dict[str, Any], bool]], message: str) -> int:
    """The index of the field a refusal names: by its JSONPath (`$.name`, `$["odd name"]`, as the
    validator writes it), else by the quoted name (a missing required field), else the first."""
    for i, (name, _, _) in enumerate(found):
        path = f"$.{name}" if name.isidentifier() else f"$[{json.dumps(name, ensure_ascii=False)}]"
        if f" {path} " in f" {message} " or f" {path}:" in message:
            return i
    for i, (name, _, _) in enumerate(found):
        if repr(name) in message or json.dumps(name) in message:
            return i
    return 0
