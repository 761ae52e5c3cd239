"""The edge: contracts, validation, card choice and the agent runtime. It knows no platform.

Its sub-packages are floors, each importing only the floors below it (tests/project/test_floors.py pins this,
function-local imports included):

    flows/       a flow's steps run through the runtime (edge.flows.engine is the runtime's FlowEngine)
    runtime/     the journal, jobs, agent kinds, person steps, budgets, the durable engine
    mcp/         MCP tools as agents (runtime imports mcp; mcp never imports runtime: what it needs
                 from the runtime, such as the budget reservation, is passed in)
    documents/   the agent-level contract documents: OpenAPI, the upgrade check, diff, contract hash
    cards/       the card model and the rules that choose a card for a result
    plugins/     plugin, agent and flow files read and linted
    results/     reading results: MCP CallToolResult, the QZX envelope, JSON-RPC, content blocks
    model/       Job, JobFailure, failure kinds, AgentSpec, FlowSpec, budgets, progress (reads contracts/ types)
    contracts/   schemas: load, validate, view, pointer, JSON data, schema diff
    errors.py, lazy.py, tracing.py   the ground: the exception tree's base (Oz0Error), this face's lazy
                 loading, and OpenTelemetry spans (the SDK loaded only when an endpoint is set)

A function-local import only defers a costly third-party import (DBOS, an SDK), with a comment saying so.

The names below are loaded on first use (PEP 562), so that importing any part of the edge (or the
`oz0` command line, which only parses its arguments first) does not load the validator, the JSON
parser and the card rules until something asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oz0.edge.lazy import lazy_face

if TYPE_CHECKING:
    from oz0.edge.cards.choice import MAX_CARD_BYTES, choose_card, compact_json, is_qzx_result
    from oz0.edge.cards.model import FORMS, Attachment, Card, DiffBody, DiffLine, KeyChange, Status, cell_text
    from oz0.edge.contracts.schema import (
        Contract,
        ContractError,
        Violation,
        compile_count,
        load_contract,
        load_json_file,
    )
    from oz0.edge.errors import Oz0Error
    from oz0.edge.model.agent import AgentSpec
    from oz0.edge.model.job import Job, JobFailure, UnknownAgent
    from oz0.edge.plugins.declared import PluginError
    from oz0.edge.results.tool_result import is_call_tool_result
    from oz0.edge.runtime.api import ChatRuntime, ConsoleRuntime, RuntimeFace, ServeRuntime
    from oz0.edge.runtime.questions import AnswerRefused

__all__ = [
    "FORMS",
    "MAX_CARD_BYTES",
    "AgentSpec",
    "AnswerRefused",
    "Attachment",
    "Card",
    "ChatRuntime",
    "ConsoleRuntime",
    "Contract",
    "ContractError",
    "DiffBody",
    "DiffLine",
    "Job",
    "JobFailure",
    "KeyChange",
    "Oz0Error",
    "PluginError",
    "RuntimeFace",
    "ServeRuntime",
    "Status",
    "UnknownAgent",
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

_HOMES: dict[str, str] = {
    **dict.fromkeys(("MAX_CARD_BYTES", "choose_card", "compact_json", "is_qzx_result"), "oz0.edge.cards.choice"),
    "is_call_tool_result": "oz0.edge.results.tool_result",
    **dict.fromkeys(("FORMS", "Attachment", "Card", "DiffBody", "DiffLine", "KeyChange", "Status", "cell_text"),
                    "oz0.edge.cards.model"),
    **dict.fromkeys(("Contract", "ContractError", "Violation", "compile_count", "load_contract", "load_json_file"),
                    "oz0.edge.contracts.schema"),
    "Oz0Error": "oz0.edge.errors",
    "AgentSpec": "oz0.edge.model.agent",
    **dict.fromkeys(("Job", "JobFailure", "UnknownAgent"), "oz0.edge.model.job"),
    "PluginError": "oz0.edge.plugins.declared",
    **dict.fromkeys(("ChatRuntime", "ConsoleRuntime", "RuntimeFace", "ServeRuntime"), "oz0.edge.runtime.api"),
    "AnswerRefused": "oz0.edge.runtime.questions",
}


__getattr__, __dir__ = lazy_face(__name__, globals(), _HOMES, __all__)
