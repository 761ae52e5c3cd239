"""MCP results as cards: a tool's CallToolResult drawn under its outputSchema, and the card form a
tool's outputSchema announces (what `oz0 mcp tools` shows)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oz0.edge.cards.choice import ENVELOPE_FIELDS, choose_card
from oz0.edge.cards.model import Card
from oz0.edge.contracts.schema import ContractError
from oz0.edge.contracts.view import SchemaView
from oz0.edge.mcp.spec import ToolInfo

__all__ = [
    "card_form",
    "result_card",
]


def result_card(result: Mapping[str, Any], tool: ToolInfo, *, title: str | None = None) -> Card:
    """The card for a tool's CallToolResult, checked against the tool's outputSchema by the edge's validator.

    Raises ContractError when the tool's own outputSchema is unusable (e.g. it has a remote $ref).
    """
    return choose_card(dict(result), tool.output_contract(), source="mcp", title=title or tool.name)


def card_form(tool: ToolInfo) -> str:
    """The card the tool's output would be drawn as, read from its outputSchema (what `oz0 mcp tools` shows)."""
    try:
        contract = tool.output_contract()
    except ContractError as exc:
        return f"none: the outputSchema cannot be used ({exc.message})"
    if contract is None:
        return "from its text: JSON drawn as JSON, other text as markdown"
    view = SchemaView(contract, contract.schema, contract.base).deref()
    props = view.properties()
    header = ""
    if "success" in props and "message" in props:
        header = "status header + "
        props = {k: v for k, v in props.items() if k not in ENVELOPE_FIELDS}
        if len(props) == 1:
            view = view.property(next(iter(props))).deref()
            props = view.properties()
        elif not props:
            return "status header"
        else:
            return header + "key-values: " + ", ".join(props)
    diff = view.keyword("x-oz0-diff")
    if isinstance(diff, dict) and diff.get("before") in props and diff.get("after") in props:
        return header + f"diff of {diff['before']} -> {diff['after']}"
    rows = None
    if view.keyword("type") == "array":
        rows = view.items()
    elif len(props) == 1:
        only = view.property(next(iter(props))).deref()
        if only.keyword("type") == "array":
            rows = only.items()
    if rows is not None and (rows.keyword("type") == "object" or any("properties" in n for n in rows.layers())):
        columns = list(rows.properties())
        order = rows.keyword("x-oz0-order") if isinstance(rows.keyword("x-oz0-order"), list) else []
        columns = [c for c in order if c in columns] + [c for c in columns if c not in order]
        return header + ("table: " + ", ".join(columns) if columns else "table (columns from the rows)")
    if props:
        return header + "key-values: " + ", ".join(props)
    return header + "text"
