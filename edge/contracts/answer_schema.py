"""The shape of a person step's answer schema: an object of fields (MCP's requestedSchema shape, its
field kinds read by edge.contracts.answer_fields), so that a form, a modal or an MCP elicitation can draw it. Checked where a question is asked
(edge.runtime.question_book) and where an MCP server asks one (edge.mcp.elicit)."""

from __future__ import annotations

from typing import Any

from oz0.edge.contracts.answer_fields import form_schema
from oz0.edge.contracts.schema import ContractError, load_contract

__all__ = ["MAX_FIELDS", "check_answer_schema"]

MAX_FIELDS = 20                 # fields in one answer schema (a modal of inputs, a form)


def check_answer_schema(schema: Any) -> dict[str, Any]:
    """An answer schema is an object of fields a form or a modal can draw (MCP's requestedSchema shape):
    returned with each field in the shape every channel draws (edge.contracts.answer_fields), a field of
    another shape asked as free text with a note. Raises ValueError naming what is wrong."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError('an answer schema is an object: {"type": "object", "properties": {...}}')
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        raise ValueError("an answer schema has at least one field under properties")
    if len(props) > MAX_FIELDS:
        raise ValueError(f"an answer schema has {len(props)} fields; the limit is {MAX_FIELDS}")
    form = form_schema(schema)
    try:
        load_contract(form, source="the answer schema")
    except ContractError as exc:
        raise ValueError(str(exc)) from None
    return form
