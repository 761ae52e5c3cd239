"""The edge: contracts, validation, card choice and the agent runtime. It knows no platform."""

from oz0.edge.cards.choice import MAX_CARD_BYTES, choose_card, compact_json, is_qzx_result
from oz0.edge.cards.model import FORMS, Attachment, Card, DiffBody, DiffLine, KeyChange, Status, cell_text
from oz0.edge.contracts.schema import Contract, ContractError, Violation, compile_count, load_contract, load_json_file
from oz0.edge.mcp.result import is_call_tool_result

__all__ = [
    "FORMS",
    "MAX_CARD_BYTES",
    "Attachment",
    "Card",
    "Contract",
    "ContractError",
    "DiffBody",
    "DiffLine",
    "KeyChange",
    "Status",
    "Violation",
    "cell_text",
    "choose_card",
    "compact_json",
    "compile_count",
    "is_call_tool_result",
    "is_qzx_result",
    "load_contract",
    "load_json_file",
]
