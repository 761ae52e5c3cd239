"""The OpenAPI 3.1 document of a set of agents: what apps call, and what the upgrade check compares.

One operation per agent, `POST /agents/{name}/runs`. The request body is the input contract
(`text/plain`, or `application/json` with its schema), the 200 response the output contract, and the
failure kinds are error responses: `InvalidInput` (every agent has it) as 400, the runtime's other
kinds and the agent's declared ones as 502, each a schema carrying `x-retryable`, `x-partial` and `x-person`.

Each contract is embedded once under `components/schemas/{agent}.input` (or `.output`) with every
local `$ref` rewritten to a pointer from the document root, and `$id`/`$anchor`/`$schema` dropped, so
that one resolver (a JSON pointer into this document) follows every reference the same way the
contract's own validator did. The document is a function of the agent files only: the same agents give
the same document, byte for byte, which is what lets two versions be compared. A declared budget and
price are shown as `x-budget` and `x-price` (money as decimal strings); the upgrade check ignores them.

The document says where and how it is called: `servers` (the runtime API's `/v1`, where `oz0 serve`
publishes these operations), the Bearer token a console bound beyond loopback needs
(`OZ0_CONSOLE_TOKEN`; on loopback none: the empty alternative of `security`), and a tag per plugin.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from oz0.edge.contracts.embed import embed_contract, escape_token
from oz0.edge.contracts.schema import Contract
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.model.agent import INVALID_INPUT, AgentSpec, FailureKind
from oz0.edge.model.flow import FLOW_FAILURES, FLOW_KIND
from oz0.edge.model.job import BUILTIN_FAILURES

__all__ = [
    "API_PREFIX",
    "FAILURE_STATUS",
    "INVALID_INPUT_STATUS",
    "OPENAPI_VERSION",
    "SECURITY",
    "SECURITY_SCHEMES",
    "agent_path",
    "component_key",
    "failure_kinds",
    "failure_schema",
    "flow_failures",
    "flow_path",
    "openapi_document",
    "person_steps",
    "tools_json",
]

OPENAPI_VERSION = "3.1.0"
API_PREFIX = "/v1"  # where `oz0 serve` publishes the operations (adapters.console.api)
CONSOLE_TOKEN = "consoleToken"
SECURITY_SCHEMES: dict[str, Any] = {
    CONSOLE_TOKEN: {"type": "http", "scheme": "bearer", "description": (
        "`Authorization: Bearer <OZ0_CONSOLE_TOKEN>`: needed when the console listens beyond loopback; on a "
        "loopback address the local user needs none.")},
}
SECURITY: list[dict[str, list[str]]] = [{CONSOLE_TOKEN: []}, {}]  # the token, or none on loopback
DIALECT = "https://json-schema.org/draft/2020-12/schema"
INVALID_INPUT_STATUS = "400"
FAILURE_STATUS = "502"
TEXT = "text/plain"
JSON = "application/json"

_NOT_RUN_FAILURES = frozenset({INVALID_INPUT.name, "UnknownAgent"})


def agent_path(name: str) -> str:
    """The path of an agent's run operation."""
    return f"/agents/{name}/runs"


def flow_path(name: str) -> str:
    """The path of a flow's run operation (a flow is an AgentSpec of kind `flow`)."""
    return f"/flows/{name}/runs"


def person_steps(spec: AgentSpec) -> list[dict[str, Any]]:
    """A flow's person steps, or a python agent's declared `asks:`, as the document shows them: what
    callers' people must answer."""
    declared = [{"step": a.step, "message": a.description, "answer_schema": a.answer_schema.schema, "answerers": {},
                 "timeout_s": None, "on_timeout": None} for a in spec.asks]
    return declared + [{"step": s.id, "message": s.ask, "answer_schema": s.answer_schema.schema if s.answer_schema
                        else {}, "answerers": dict(s.answerers), "timeout_s": s.timeout_s,
                        "on_timeout": dict(s.on_timeout) if s.on_timeout else None}
                       for s in getattr(spec, "steps", ()) if s.is_ask]


def tools_json(spec: AgentSpec) -> list[dict[str, Any]]:
    """A model agent's `tools:` as OpenAPI `x-oz0-tools` and `oz0 plugin list --json` show them: each
    entry as declared, a server's with `tool_annotations`, its tools' annotations as the confirmation
    rule reads them before any job (listed at install, under what the file declares)."""
    known = spec.tool_annotations()
    out = []
    for decl in spec.tools:
        entry = decl.as_json()
        if decl.server is not None and known.get(decl.server):
            entry["tool_annotations"] = known[decl.server]
        out.append(entry)
    return out


def component_key(agent: str, direction: str) -> str:
    """Where an agent's input or output schema lives under `components/schemas`."""
    return f"{agent}.{direction}"


def openapi_document(agents: Iterable[AgentSpec], *, title: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `agents`, one `POST /agents/{name}/runs` operation each; a flow among
    them (kind `flow`) is `POST /flows/{name}/runs`, with its person steps as `x-oz0-person-steps`."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    agents = sorted(agents, key=lambda a: a.name)
    for agent in agents:
        request = _body(agent, "input", agent.input, schemas)
        response = _body(agent, "output", agent.output, schemas)
        responses: dict[str, Any] = {
            "200": {"description": f"The answer of {agent.name}, as its output contract says.", **response},
            INVALID_INPUT_STATUS: _failure_response(
                "The input does not match the agent's input contract; the agent did not start.",
                [INVALID_INPUT]),
        }
        responses[FAILURE_STATUS] = _failure_response(
            "The agent ended the job with one of its failure kinds: those it declares, and the "
            "runtime's own (a kind it declares itself takes the place of the runtime's).",
            failure_kinds(agent))
        flow = agent.kind == FLOW_KIND
        operation: dict[str, Any] = {
            "operationId": f"{'flow' if flow else 'run'}.{agent.name}",
            "summary": f"Run {'the flow ' if flow else ''}{agent.name}",
            "description": agent.description or f"Run {agent.name} of plugin {agent.plugin} once.",
            "tags": [agent.plugin],
            "requestBody": {"required": True, **request},
            "responses": responses,
            "x-oz0-flow" if flow else "x-oz0-agent": agent.name,
            "x-oz0-plugin": agent.plugin,
            "x-oz0-kind": agent.kind,
            "x-contract-hash": contract_hash(agent),
        }
        if agent.budget is not None:
            operation["x-budget"] = agent.budget.as_json()
        if agent.price is not None:
            operation["x-price"] = agent.price.as_json()
        if flow or agent.asks:
            operation["x-oz0-person-steps"] = person_steps(agent)
        if getattr(agent, "tools", ()):
            operation["x-oz0-tools"] = tools_json(agent)
        paths[flow_path(agent.name) if flow else agent_path(agent.name)] = {"post": operation}
    plugins = sorted({agent.plugin for agent in agents if agent.plugin})
    document: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {"title": title, "version": version, "description": (
            f"The agents of {title}: each is run with POST and answers its output contract, or one of its "
            "failure kinds.")},
        "jsonSchemaDialect": DIALECT,
        "servers": [{"url": API_PREFIX, "description": "The oz0 runtime API that serves these agents (oz0 serve)."}],
        "security": SECURITY,
        "tags": [{"name": p, "description": f"The agents and flows of plugin {p}."} for p in plugins],
        "paths": paths,
        "components": {"securitySchemes": SECURITY_SCHEMES, **({"schemas": schemas} if schemas else {})},
    }
    return document


def _body(agent: AgentSpec, direction: str, contract: Contract | None, schemas: dict[str, Any]) -> dict[str, Any]:
    if contract is None:
        return {"content": {TEXT: {"schema": {"type": "string"}}}}
    key = component_key(agent.name, direction)
    schemas[key] = embed_contract(contract, f"#/components/schemas/{escape_token(key)}")
    return {"content": {JSON: {"schema": {"$ref": f"#/components/schemas/{escape_token(key)}"}}}}


def failure_kinds(agent: AgentSpec) -> list[FailureKind]:
    """Every kind a run of `agent` may end with other than InvalidInput: the runtime's, overridden
    by the agent's own declarations, as the runtime looks them up."""
    kinds = {name: kind for name, kind in BUILTIN_FAILURES.items() if name not in _NOT_RUN_FAILURES}
    if agent.kind == FLOW_KIND:
        kinds.update(flow_failures(agent))
    kinds.update((kind.name, kind) for kind in agent.failures if kind.name != INVALID_INPUT.name)
    return [kinds[name] for name in sorted(kinds)]


def flow_failures(flow: AgentSpec) -> dict[str, FailureKind]:
    """The kinds a flow itself may end with: a step failed with a kind it does not declare, and for a
    flow with person steps, nobody answered or the person declined."""
    asks = any(s.is_ask for s in getattr(flow, "steps", ()))
    return {name: kind for name, kind in FLOW_FAILURES.items() if asks or name == "StepFailed"}


def failure_schema(kind: FailureKind) -> dict[str, Any]:
    """The body of a job that ended with `kind`: its name, the reason, and what it asks of callers."""
    schema: dict[str, Any] = {
        "title": kind.name,
        "type": "object",
        "required": ["kind", "reason"],
        "properties": {
            "kind": {"const": kind.name},
            "reason": {"type": "string"},
            "partial_output": {"description": "What the agent had produced when it stopped, if anything."},
        },
        "x-retryable": kind.retryable,
        "x-partial": kind.partial,
        "x-person": kind.person,
    }
    if kind.description:
        schema["description"] = kind.description
    return schema


def _failure_response(description: str, kinds: Iterable[FailureKind]) -> dict[str, Any]:
    branches = [failure_schema(k) for k in sorted(kinds, key=lambda k: k.name)]
    schema = branches[0] if len(branches) == 1 else {"oneOf": branches}
    return {"description": description, "content": {JSON: {"schema": schema}}}
