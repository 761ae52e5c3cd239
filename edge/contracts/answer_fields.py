"""The fields of an answer schema as every channel draws them: MCP elicitation's field kinds of the
current spec (2025-11-25), read once into one plain shape the forms and modals share.

A field is a string (with `format`, `minLength`/`maxLength`), a number or integer (`minimum`,
`maximum`), a boolean, a single-select or a multi-select. Selects arrive in three spellings: `enum`
(untitled), `oneOf`/`anyOf` of `{const, title}` (titled) and the legacy `enum` + `enumNames`. All three
become `enum` (the values) + `enumNames` (their labels), and a multi-select is an array whose
`items` are that, with `minItems`/`maxItems`; a `default` is kept when it is one of the values. A
field of any other shape becomes free text, with a note in its description saying what was not
understood: one odd field never makes the whole question fail.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["FREE_TEXT_NOTE", "form_field", "form_schema", "labels_of"]

FREE_TEXT_NOTE = "asked as free text: "
_SCALARS = ("string", "number", "integer", "boolean")
_KEPT = ("title", "description", "default", "format", "minLength", "maxLength", "minimum", "maximum")


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def labels_of(prop: Mapping[str, Any]) -> list[str]:
    """The labels of a select's values: its `enumNames` when there is one per value, else the values."""
    declared = prop.get("enum")
    values: list[Any] = declared if isinstance(declared, list) else []
    names = prop.get("enumNames")
    if isinstance(names, list) and len(names) == len(values) and all(isinstance(n, str) and n for n in names):
        return list(names)
    return [_shown(v) for v in values]


def _choices(prop: Mapping[str, Any]) -> tuple[list[Any], list[str]] | None:
    """(values, labels) of a select in any of its spellings; None when it is not one."""
    for key in ("oneOf", "anyOf"):
        options = prop.get(key)
        if isinstance(options, list) and options:
            if not all(isinstance(o, Mapping) and "const" in o for o in options):
                return None
            return ([o["const"] for o in options],
                    [str(o.get("title") or o["const"]) for o in options])
    values = prop.get("enum")
    if isinstance(values, list) and values:
        return list(values), labels_of(prop)
    return None


def _select(values: list[Any], labels: list[str], kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "enum": values}
    if labels != [_shown(v) for v in values]:
        out["enumNames"] = labels
    return out


def form_field(prop: Any) -> tuple[dict[str, Any], str | None]:
    """One field in the shared shape, and why it is asked as free text (None when it is understood)."""
    if not isinstance(prop, Mapping):
        return {"type": "string"}, "its schema is not an object"
    kind = prop.get("type")
    kept = {k: prop[k] for k in _KEPT if k in prop}
    if kind == "array":
        items = prop.get("items")
        found = _choices(items) if isinstance(items, Mapping) else None
        if found is None or not isinstance(items, Mapping):
            return _free(kept, "a list whose items are not a set of choices")
        out = {"type": "array", "items": _select(*found, str(items.get("type") or "string")),
               **{k: prop[k] for k in ("title", "description", "minItems", "maxItems") if k in prop}}
        default = prop.get("default")
        if isinstance(default, list) and all(d in found[0] for d in default):
            out["default"] = default
        return out, None
    if kind not in _SCALARS:
        return _free(kept, f"type {kind!r} is not one of {', '.join(_SCALARS)} or a list of choices")
    found = _choices(prop) if kind != "boolean" else None
    if found is None and any(k in prop for k in ("oneOf", "anyOf")):
        return _free(kept, "its oneOf/anyOf options are not {const, title} choices")
    if found is None:
        return {"type": kind, **kept}, None
    out = {**{k: v for k, v in kept.items() if k != "default"}, **_select(*found, kind)}
    if prop.get("default") in found[0]:
        out["default"] = prop["default"]
    return out, None


def _free(kept: dict[str, Any], why: str) -> tuple[dict[str, Any], str]:
    said = str(kept.get("description") or "").strip()
    note = f"({FREE_TEXT_NOTE}{why})"
    out = {k: v for k, v in kept.items() if k in ("title",)}
    return {"type": "string", **out, "description": f"{said} {note}".strip()}, why


def form_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` (an object of fields) with every field in the shared shape; other keys kept as they are."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return dict(schema)
    return {**schema, "properties": {str(name): form_field(prop)[0] for name, prop in props.items()}}
