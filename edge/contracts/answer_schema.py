"""The shape of a person step's answer schema: an object of primitive fields (MCP's requestedSchema shape),
so that a form, a modal or an MCP elicitation can draw it. Checked where a question is asked
(edge.runtime.question_book) and where an MCP server asks one (edge.mcp.elicit)."""

from __future__ import annotations

from typing import Any

from oz0.edge.contracts.schema import ContractError, load_contract

__all__ = ["MAX_FIELDS", "PRIMITIVE_TYPES", "check_answer_schema"]

MAX_FIELDS = 20                 # fields in one answer schema (a modal of inputs, a form)
PRIMITIVE_TYPES = ("string", "number", "integer", "boolean")


def check_answer_schema(schema: Any) -> dict[str, Any]:
    """An answer schema is an object of primitive fields (MCP's requestedSchema shape): a form or a
    modal can draw it. Raises ValueError naming the field and what is wrong."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError('an answer schema is an object: {"type": "object", "properties": {...}}')
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        raise ValueError("an answer schema has at least one field under properties")
    if len(props) > MAX_FIELDS:
        raise ValueError(f"an answer schema has {len(props)} fields; the limit is {MAX_FIELDS}")
    for name, field in props.items():
        kind = field.get("type") if isinstance(field, dict) else None
        if kind not in PRIMITIVE_TYPES:
            raise ValueError(f"answer field {name!r} must have a type of {', '.join(PRIMITIVE_TYPES)}, "
                             f"not {kind!r} (an answer is an object of primitive fields)")
    try:
        load_contract(schema, source="the answer schema")
    except ContractError as exc:
        raise ValueError(str(exc)) from None
    return schema
