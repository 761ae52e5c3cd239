"""Choosing a card for a result: the rules of ARCHITECTURE.md section 2, in their order.

size (64 KiB of compact JSON) -> contract -> envelope (QZX status header, MCP CallToolResult)
-> form (diff, table, key_values, text) -> order (`x-oz0-order`, then schema order, then the
result's own order). The result is only read: the card is derived from it and it is never changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from itertools import chain
from operator import itemgetter
from typing import Any, Literal

import orjson

from oz0.edge.cards.model import Attachment, Card, DiffBody, DiffLine, KeyChange, Status
from oz0.edge.cards.qzx_status import disagreement_status, qzx_status
from oz0.edge.cards.text_kind import text_format_of
from oz0.edge.contracts.schema import Contract, load_contract, violation_sentence
from oz0.edge.contracts.view import SchemaView
from oz0.edge.results.blocks import BlockSummary, read_blocks
from oz0.edge.results.jsonrpc import RpcResponse, read_rpc_response
from oz0.edge.results.tool_result import ToolResult, is_call_tool_result, read_tool_result

__all__ = [
    "ENVELOPE_FIELDS",
    "MAX_CARD_BYTES",
    "choose_card",
    "compact_json",
    "is_qzx_result",
]

MAX_CARD_BYTES = 65_536
ENVELOPE_FIELDS = ("success", "message", "error", "error_code", "warnings", "meta")

Source = Literal["auto", "plain", "mcp"]


def compact_json(value: Any) -> bytes:
    """The result as compact UTF-8 JSON: what the size rule measures and the attachment carries.

    Copied out of orjson's output, which keeps the room it reserved (2 to 9 times the JSON's size),
    as a card holds these bytes for as long as it lives.
    """
    try:
        return bytes(memoryview(orjson.dumps(value)))
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode()


def is_qzx_result(value: Any) -> bool:
    """An object with a boolean `success` and a non-blank string `message` gets a status header."""
    return (isinstance(value, dict) and isinstance(value.get("success"), bool)
            and isinstance(value.get("message"), str) and bool(value["message"].strip()))


def choose_card(result: Any, contract: Contract | dict[str, Any] | bool | None = None, *,
                source: Source = "auto", title: str | None = None, checked: bool = False) -> Card:
    """The card for `result` under its declared schema (a Contract, a schema, or None).

    `source="mcp"` reads the result as an MCP CallToolResult whose `structuredContent` the contract
    (the tool's outputSchema) describes; "auto" does so when the result has that shape.
    `checked=True` says the caller has just validated `result` itself against this same contract and
    it conforms (as the runtime does with every answer), so the contract step is not run twice; an
    MCP CallToolResult's structuredContent is still checked, as the caller checked another value.
    """
    if contract is not None and not isinstance(contract, Contract):
        contract = load_contract(contract)
    rpc = read_rpc_response(result) if source == "mcp" or (source == "auto" and not checked) else None
    if rpc is not None and not rpc.has_result:
        return _protocol_error_card(rpc, result, title)
    if rpc is not None and (source == "mcp" or is_call_tool_result(rpc.result)):
        result = rpc.result
    if source == "mcp" or (source == "auto" and is_call_tool_result(result)):
        return _mcp_card(result, contract, title)
    return _card(result, contract, title, checked=checked)


def _card(value: Any, contract: Contract | None, title: str | None, *, status: Status | None = None,
          checked: bool = False) -> Card:
    data = compact_json(value)
    if len(data) > MAX_CARD_BYTES:
        return Card(form="text", title=title, status=status, drawn=False,
                    reason=(f"The result is {len(data):,} bytes of JSON, over the {MAX_CARD_BYTES:,}-byte "
                            "limit for a card; the full result is attached."),
                    attachment=Attachment("result.json", "application/json", data), full_result=data)
    if contract is not None and not checked:
        violations = contract.validate(value)
        if violations:
            return Card(form="text", title=title, status=status, drawn=False, violations=violations,
                        reason=(f"The result does not match its contract: {violation_sentence(violations)}; "
                                "the raw result is attached."),
                        attachment=Attachment("result.json", "application/json", data), full_result=data)
    view = SchemaView(contract, contract.schema, contract.base) if contract else SchemaView(None, None)
    if is_qzx_result(value):
        return _envelope_card(value, view, title, data)
    return _form(value, view, title=title, status=status, full_result=data)


def _envelope_card(value: dict[str, Any], view: SchemaView, title: str | None, data: bytes) -> Card:
    status = qzx_status(value)
    evidence = [k for k in value if k not in ENVELOPE_FIELDS]
    if not evidence:
        return Card(form="text", title=title, status=status, text="", text_format="plain", full_result=data)
    if len(evidence) == 1:
        key = evidence[0]
        return _form(value[key], view.property(key), title=title or key, status=status, full_result=data)
    keys = _ordered(evidence, view)
    return Card(form="key_values", title=title, status=status, keys=tuple(keys),
                values=tuple(value[k] for k in keys), full_result=data)


def _protocol_error_card(rpc: RpcResponse, response: Any, title: str | None) -> Card:
    """A JSON-RPC error response: the server refused the request, so there is no result to draw."""
    if rpc.malformed:
        return Card(form="text", title=title, text="", text_format="plain",
                    status=Status(success=False, message=f"MCP protocol error: {rpc.malformed}",
                                  error="JSON-RPC: not a valid response; this is not a completed tool result"),
                    full_result=compact_json(response))
    said = rpc.error_message.strip() or "no message"
    code = f" {rpc.error_code}" if isinstance(rpc.error_code, int) and not isinstance(rpc.error_code, bool) else ""
    data = "" if rpc.error_data is None else json.dumps(rpc.error_data, indent=2, ensure_ascii=False, default=str)
    return Card(form="text", title=title, text=data, text_format="json" if data else "plain",
                status=Status(success=False, message=f"MCP protocol error: {said[:500]}",
                              error=f"JSON-RPC error{code}: the server refused the request; this is not a "
                                    "completed tool result"),
                full_result=compact_json(response))


def _mcp_card(result: Any, contract: Contract | None, title: str | None) -> Card:
    if not isinstance(result, dict):
        return _card(result, contract, title)
    if contract is not None and contract.schema in ({}, True):
        contract = None  # the schema of a tool without an outputSchema (edge.mcp.kind): no structure to check
    read = read_tool_result(result)
    blocks = read_blocks(read.content)
    if not read.complete or not blocks.lines:
        return _mcp_text_card(read, result, contract, title)
    if read.text or read.has_structured or read.is_error or contract is not None:
        return _with_blocks(_mcp_text_card(read, result, contract, title), blocks)
    body = "\n\n".join(["\n".join(blocks.lines), *(t.text for t in blocks.texts)])  # only non-text blocks
    return Card(form="text", title=title, text=body, text_format="plain", files=blocks.files,
                full_result=compact_json(result))


def _with_blocks(card: Card, blocks: BlockSummary) -> Card:
    """The card of a result's text or structured content, with its other blocks named in its notes and
    their binary data (and embedded texts, as text files) in its files."""
    return replace(card, notes=card.notes + blocks.noted, files=card.files + blocks.files + blocks.text_files())


def _mcp_text_card(read: ToolResult, result: dict[str, Any], contract: Contract | None, title: str | None) -> Card:
    if not read.complete:
        return Card(form="text", title=title, drawn=False, text_format="plain",
                    reason=(f"The tool answered with resultType {read.result_type!r}, not 'complete': it has no "
                            "final result to draw yet."), full_result=compact_json(result))
    if read.has_structured and is_qzx_result(read.structured):
        success = read.structured["success"]
        effective = read.is_error_value if read.is_error_given else False
        if effective is not (not success):
            card = _card(read.structured, None if read.is_error else contract, title)
            return replace(card, status=disagreement_status(card.status, is_error=read.is_error_value,
                                                            is_error_given=read.is_error_given, success=success))
    if read.is_error:
        if is_qzx_result(read.structured):
            return _card(read.structured, None, title)
        message = read.text.strip() or "The tool reported an error without saying what it was."
        first_line = message.splitlines()[0]
        return Card(form="text", title=title, status=Status(success=False, message=first_line[:500]),
                    text=message if message != first_line else "", text_format=text_format_of(message),
                    full_result=compact_json(result))
    if read.has_structured:
        return _card(read.structured, contract, title)
    if contract is not None:
        data = compact_json(result)
        return Card(form="text", title=title, drawn=False, text_format="plain",
                    reason=("The tool declares an outputSchema but its result has no structuredContent, "
                            "which MCP requires; the raw result is attached."),
                    attachment=Attachment("result.json", "application/json", data), full_result=data)
    if read.text:
        return _card(read.text_value(), None, title)
    return _card(read.content, None, title)


def _form(value: Any, view: SchemaView, *, title: str | None, status: Status | None, full_result: bytes) -> Card:
    diff = view.keyword("x-oz0-diff") if isinstance(value, dict) else None
    if (isinstance(diff, dict) and isinstance(diff.get("before"), str)
            and isinstance(diff.get("after"), str) and diff["before"] in value and diff["after"] in value):
        card = _diff_card(value, view, diff["before"], diff["after"], title=title, status=status,
                          full_result=full_result)
        if card is not None:
            return card
    rows_value, rows_view, wrapper = _table_rows(value, view)
    if rows_value is not None:
        return _table_card(rows_value, rows_view, view, title=title or wrapper, status=status,
                           full_result=full_result)
    if isinstance(value, dict):
        keys = _ordered(list(value), view)
        return Card(form="key_values", title=title, status=status, keys=tuple(keys),
                    values=tuple(value[k] for k in keys), full_result=full_result)
    if isinstance(value, str):
        return Card(form="text", title=title, status=status, text=value, text_format=text_format_of(value),
                    full_result=full_result)
    return Card(form="text", title=title, status=status, text_format="json",
                text=json.dumps(value, indent=2, ensure_ascii=False, default=str), full_result=full_result)


def _all_objects(items: list[Any]) -> bool:
    """Every item is a dict (checked once per type, not once per item: a table has thousands of rows)."""
    return all(issubclass(kind, dict) for kind in set(map(type, items)))


def _table_rows(value: Any, view: SchemaView) -> tuple[list[Any] | None, SchemaView, str | None]:
    if isinstance(value, list) and _all_objects(value):
        return value, view.items(), None
    if isinstance(value, dict) and len(value) == 1:
        (key, inner), = value.items()
        if isinstance(inner, list) and inner and _all_objects(inner):
            return inner, view.property(key).items(), key
        if isinstance(inner, list) and not inner and view.property(key).items().properties():
            return inner, view.property(key).items(), key
    return None, view, None


def _table_card(rows: list[dict[str, Any]], row_view: SchemaView, outer: SchemaView, *,
                title: str | None, status: Status | None, full_result: bytes) -> Card:
    same = _same_keys_cells(rows, row_view, outer) if rows and len(rows[0]) > 1 else None
    if same is not None:
        columns, cells = same
    else:
        seen = dict.fromkeys(chain.from_iterable(rows)) if rows else dict.fromkeys(row_view.properties())
        columns = _ordered(list(seen), row_view, outer)
        cells = tuple(tuple(map(row.get, columns)) for row in rows)
    return Card(form="table", title=title, status=status, columns=tuple(columns), rows=cells,
                full_result=full_result)


def _same_keys_cells(rows: list[dict[str, Any]], row_view: SchemaView,
                     outer: SchemaView) -> tuple[list[str], tuple[tuple[Any, ...], ...]] | None:
    """The columns and cells of a table whose rows are plain dicts of the first row's keys (the usual
    table), read at C speed with the columns found in the first row alone; None for any other table.

    Every row has as many keys as the first and `itemgetter` finds all of the first's in it, so it has
    no other: no set of every row's keys is needed to know it."""
    if set(map(len, rows)) != {len(rows[0])} or set(map(type, rows)) != {dict}:  # a subclass may have __missing__
        return None
    columns = _ordered(list(rows[0]), row_view, outer)
    try:
        return columns, tuple(map(itemgetter(*columns), rows))
    except KeyError:  # a row of as many keys, not all of them the first row's
        return None


def _diff_card(value: dict[str, Any], view: SchemaView, before: str, after: str, *,
               title: str | None, status: Status | None, full_result: bytes) -> Card | None:
    old, new = value[before], value[after]
    if isinstance(old, str) and isinstance(new, str):
        body = DiffBody("lines", before, after, lines=tuple(_line_diff(old, new, before, after)))
    elif isinstance(old, dict) and isinstance(new, dict):
        body = DiffBody("keys", before, after, changes=tuple(_key_diff(old, new)))
    else:
        return None
    others = _ordered([k for k in value if k not in (before, after)], view)
    return Card(form="diff", title=title, status=status, diff=body, keys=tuple(others),
                values=tuple(value[k] for k in others), full_result=full_result)


def _line_diff(old: str, new: str, before: str, after: str) -> Iterable[DiffLine]:
    import difflib  # with heapq (~1.5 ms): only for a diff card

    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), before, after, lineterm="", n=3)
    for line in list(lines)[2:]:
        if line.startswith("@@"):
            yield DiffLine("@", line)
        else:
            yield DiffLine(line[:1] or " ", line[1:])


def _key_diff(old: dict[str, Any], new: dict[str, Any]) -> Iterable[KeyChange]:
    for key in old:
        if key not in new:
            yield KeyChange(key, "removed", before=old[key])
        elif old[key] != new[key]:
            yield KeyChange(key, "changed", before=old[key], after=new[key])
    for key in new:
        if key not in old:
            yield KeyChange(key, "added", after=new[key])


def _ordered(present: list[str], *views: SchemaView) -> list[str]:
    """`x-oz0-order` names first (rows' schema, then enclosing), then schema order, then the rest."""
    refs = views[0].refs
    if isinstance(refs, Contract) and all(v.node is None or refs.memo_for(v.node) for v in views):
        # the schema's part of the order, read once per contract (its own nodes, held, so their ids stay theirs)
        key = ("order", *((id(v.node), v.base) for v in views))
        order, named = refs.derived(key, lambda: _schema_order(views))
    else:
        order, named = _schema_order(views)
    wanted = set(present).__contains__
    return list(dict.fromkeys(chain(filter(wanted, order), filter(wanted, named), present)))  # first places kept


def _schema_order(views: tuple[SchemaView, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The `x-oz0-order` names (of the nearest view that has them) and the properties of the first, in
    schema order: what a schema says of the order of columns and fields."""
    order: tuple[str, ...] = ()
    for view in views:
        names = view.keyword("x-oz0-order")
        if isinstance(names, list):
            order = tuple(n for n in names if isinstance(n, str))
            break
    return order, tuple(views[0].properties())
