"""The runtime API served beside the console: run an agent, read a job, list agents, the OpenAPI document.

Every answer is a QZX result (`success`, `message`, `meta.command`, and on failure `error` and
`error_code`), built by edge.qzx.result_envelope so it is checked before it leaves. A run answers with
the job, its neutral card and the raw output. Input that breaks the contract is 422 `InvalidInput`
with the JSON path and the rule, before any job is journaled; a job that ends with one of the agent's
failure kinds is 502, as the OpenAPI document says.

`/openapi.json` is the upgrade check's document (edge.openapi, a function of the installed contracts
only) with what this server adds around it: the `/v1` prefix, the QZX envelope around the output
contract, 422 for `InvalidInput`, and the read-only endpoints.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Mapping

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from oz0.adapters.console import answers
from oz0.edge.runtime.access import AccessError, AccessPolicy, Asker
from oz0.edge.runtime.confirm import known_annotations
from oz0.edge.contracts.schema import Violation
from oz0.edge.runtime.jobs import BUILTIN_FAILURES, JobFailure, snake_case
from oz0.edge.contracts.openapi import INVALID_INPUT_STATUS, openapi_document
from oz0.edge.plugins.manifest import INVALID_INPUT, FailureKind
from oz0.edge.qzx.core import result_envelope

__all__ = [
    "API_PREFIX",
    "MAX_BODY_BYTES",
    "Refusal",
    "api_document",
    "check_input",
    "failure",
    "failure_kinds",
    "plugin_versions",
    "read_body",
    "routes",
]

log = logging.getLogger("oz0.console.api")

API_PREFIX = "/v1"
MAX_BODY_BYTES = 1_048_576
INVALID_INPUT_HTTP = 422
FAILED_JOB_HTTP = 502
ASYNC_HTTP = 202


@dataclass(frozen=True)
class Refusal:
    """Why a run did not start: the HTTP status, a title and message for people, the contract's findings."""

    status: int
    title: str
    message: str
    error_code: str
    kind: str | None = None
    violations: tuple[Violation, ...] = field(default=())


def plugin_versions(runtime: Any) -> dict[str, str]:
    """The installed (current) version of each plugin, by name."""
    return {v.plugin: v.version for v in runtime.installed()}


def failure_kinds(spec: Any) -> list[FailureKind]:
    """The ways a job of this agent can fail that a caller may see: `InvalidInput`, then the declared kinds."""
    return [INVALID_INPUT, *spec.failures]


def check_input(runtime: Any, spec: Any, text: str, *, asker_user: str) -> Refusal | None:
    """None when `text` may run on this agent from the console; otherwise why not (access, then contract)."""
    asker = Asker(platform="console", user=asker_user)
    try:
        policy = AccessPolicy.load(runtime.home)
    except AccessError as exc:
        log.error("access.yaml cannot be read: %s", exc)
        return Refusal(500, "Access rules are broken", str(exc), "access_rules_broken")
    if not policy.allows(spec.name, asker):
        return Refusal(403, "Not allowed", policy.explain_denial(spec.name, asker), "forbidden")
    try:
        runtime.parse_input(spec, text)
    except JobFailure as exc:
        violations: tuple[Violation, ...] = ()
        if spec.input is not None:
            try:
                violations = spec.input.validate(json.loads(text))
            except json.JSONDecodeError as bad:
                violations = (Violation("$", "", "json", f"not JSON: {bad.msg} at line {bad.lineno} "
                                                          f"column {bad.colno}"),)
        return Refusal(INVALID_INPUT_HTTP, "The input does not match the contract", exc.reason,
                       snake_case(exc.kind), kind=exc.kind, violations=violations)
    return None


def failure(message: str, error_code: str, *, status_code: int, command: str, error: str | None = None,
            details: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None,
            headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A QZX failure result as an HTTP response."""
    body = result_envelope(command, False, message, data=data, error=error or message, error_code=error_code,
                           details=details)
    return JSONResponse(body, status_code=status_code, headers=dict(headers or {}))


def routes(runtime: Any) -> list[Route]:
    """The API's routes over `runtime`."""
    api = _Api(runtime)
    return [
        Route(f"{API_PREFIX}/agents", api.agents, methods=["GET"]),
        Route(f"{API_PREFIX}/agents/{{name}}/runs", api.run, methods=["POST"]),
        Route(f"{API_PREFIX}/flows/{{name}}/runs", api.run_flow, methods=["POST"]),
        Route(f"{API_PREFIX}/jobs/{{job_id}}", api.job, methods=["GET"]),
        Route(f"{API_PREFIX}/jobs/{{job_id}}/answer", api.answer, methods=["POST"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
    ]


class _Api:
    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.background: set[asyncio.Task[Any]] = set()
        self.starter = answers.JobStarter(runtime)

    async def agents(self, request: Request) -> Response:
        versions = plugin_versions(self.runtime)
        agents = [_agent_json(spec, versions) for spec in (*self.runtime.agents(), *self.runtime.flows())]
        body = result_envelope("agents.list", True, f"{len(agents)} agent(s) installed", data={"agents": agents})
        return JSONResponse(body)

    async def run_flow(self, request: Request) -> Response:
        return await self.run(request, flow=True)

    async def run(self, request: Request, *, flow: bool = False) -> Response:
        command = "flows.run" if flow else "agents.run"
        name = request.path_params["name"]
        try:
            spec = self.runtime.agent(name)
        except ValueError as exc:
            return failure(str(exc), "unknown_agent", status_code=404, command=command)
        if (spec.kind == "flow") != flow:
            there = f"{API_PREFIX}/{'flows' if spec.kind == 'flow' else 'agents'}/{name}/runs"
            return failure(f"{name} is {'a flow' if spec.kind == 'flow' else 'an agent, not a flow'}: POST {there}",
                           "unknown_agent", status_code=404, command=command)
        stale = _stale_pin(spec, request.headers.get("if-match"), command)
        if stale is not None:
            return stale
        size = int(request.headers.get("content-length") or 0)
        if size > MAX_BODY_BYTES:
            return _too_large(size, command)
        body = await read_body(request)
        if body is None:
            return _too_large(None, command)
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            decoded = body.decode("utf-8")
        except UnicodeDecodeError:
            return _invalid(command, "the request body is not UTF-8", "$")
        if media == "application/json":
            text = decoded
            if spec.input is None:
                try:
                    value = json.loads(decoded)
                except json.JSONDecodeError as exc:
                    return _invalid(command, f"the body is not JSON: {exc.msg}", "$")
                if not isinstance(value, str):
                    return _invalid(command, f"{spec.name} takes text: send a JSON string or text/plain, "
                                             f"not a JSON {type(value).__name__}", "$")
                text = value
        elif media == "text/plain" and spec.input is None:
            text = decoded
        else:
            wanted = "application/json" if spec.input is not None else "application/json (a string) or text/plain"
            return failure(f"{spec.name} takes {wanted}, not {media or 'a body without Content-Type'}",
                           "unsupported_media_type", status_code=415, command=command)
        refusal = check_input(self.runtime, spec, text, asker_user=_requester(request))
        if refusal is not None:
            details: dict[str, Any] = {"agent": spec.name}
            if refusal.kind:
                details.update(kind=refusal.kind, reason=refusal.message)
            if refusal.violations:
                details["path"] = refusal.violations[0].json_path
                details["violations"] = [v.to_dict() for v in refusal.violations]
            return failure(refusal.message, refusal.error_code, status_code=refusal.status, command=command,
                           details=details)
        requester = _requester(request)
        if request.query_params.get("wait", "true").lower() in ("false", "0", "no"):
            job, created = self.runtime.submit(spec.name, text, requester=requester, channel="api")
            if created:
                task = asyncio.create_task(self.runtime.execute(job.id), name=f"oz0-job-{job.id}")
                self.background.add(task)
                task.add_done_callback(self._finished)
            body_json = result_envelope(command, True, f"job {job.id} is {job.status}",
                                        data={"job": _job_json(job)})
            return JSONResponse(body_json, status_code=ASYNC_HTTP,
                                headers={"location": f"{API_PREFIX}/jobs/{job.id}"})
        job = await self.starter.run(spec.name, text, requester=requester, channel="api")
        if job.status == "waiting":  # it asks a person: answer at POST /v1/jobs/{id}/answer
            return JSONResponse(result_envelope(command, True, f"job {job.id} is waiting for an answer",
                                                data={"job": self._job_data(job)}), status_code=ASYNC_HTTP,
                                headers={"location": f"{API_PREFIX}/jobs/{job.id}"})
        return self._job_response(job, command)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self.background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background job task %s raised", task.get_name(), exc_info=task.exception())

    async def job(self, request: Request) -> Response:
        job_id = request.path_params["job_id"]
        job = self.runtime.job(job_id)
        if job is None:
            return failure(f"no job has the id {job_id!r}", "unknown_job", status_code=404, command="jobs.get")
        return self._job_response(job, "jobs.get", read_only=True)

    async def answer(self, request: Request) -> Response:
        size = int(request.headers.get("content-length") or 0)
        body = None if size > MAX_BODY_BYTES else await read_body(request)
        return await answers.answer_json(self.runtime, request, body=body, job_json=self._job_data)

    def _job_data(self, job: Any) -> dict[str, Any]:
        out = _job_json(job)
        question = answers.question_json(self.runtime, job)
        if question is not None:
            out["question"] = question
        children = self.runtime.children(job.id)
        if children:  # a flow's steps, each a child job
            out["steps"] = [{"step": (c.dedupe_key or "").rsplit(":", 1)[-1], **_job_json(c)} for c in children]
        return out

    def _job_response(self, job: Any, command: str, *, read_only: bool = False) -> JSONResponse:
        data: dict[str, Any] = {"job": self._job_data(job)}
        if job.finished:
            data["card"] = self.runtime.card(job).to_dict()
        data["output"] = job.output
        if job.status == "succeeded" or not job.finished:
            message = f"{job.agent} answered" if job.finished else f"job {job.id} is {job.status}"
            return JSONResponse(result_envelope(command, True, message, data=data))
        kind = job.failure_kind or "Failed"
        reason = job.failure_reason or "the job failed"
        details = {"kind": kind, "reason": reason}
        spec_kind = _kind(self.runtime, job.agent, kind)
        if spec_kind is not None:
            details.update(retryable=spec_kind.retryable, partial=spec_kind.partial, person=spec_kind.person)
        status = 200 if read_only else (INVALID_INPUT_HTTP if kind == INVALID_INPUT.name else FAILED_JOB_HTTP)
        return failure(f"{job.agent} failed: {kind}", snake_case(kind), status_code=status, command=command,
                       error=reason, details=details, data=data)

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(api_document((*self.runtime.agents(), *self.runtime.flows()),
                                         versions=plugin_versions(self.runtime)))


def api_document(agents: Any, *, versions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of this server: the upgrade check's document of the installed
    contracts, placed under `/v1` and wrapped the way this server answers."""
    agents = list(agents)
    doc = openapi_document(agents, title="oz0-edge runtime API", version=_package_version())
    doc["servers"] = [{"url": API_PREFIX, "description": "this console"}]
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(_COMMON_SCHEMAS)
    hints = {spec.name: known_annotations(spec) for spec in agents}
    by_name = {spec.name: spec for spec in agents}
    for path_item in doc.get("paths", {}).values():
        op = path_item.get("post")
        if not op:
            continue
        spec = by_name.get(op.get("x-oz0-agent") or op.get("x-oz0-flow"))
        if spec is not None:
            op["x-contract-hash"], op["x-contract-version"] = spec.contract_hash, spec.contract_version
        if hints.get(op.get("x-oz0-agent")):
            op["x-annotations"] = hints[op["x-oz0-agent"]]
        responses = op["responses"]
        output = responses["200"].get("content", {})
        output_schema = next(iter(output.values()))["schema"] if output else {}
        responses["200"] = {
            "description": responses["200"].get("description", "The answer"),
            "content": {"application/json": {"schema": _run_result(output_schema)}},
        }
        invalid = responses.pop(INVALID_INPUT_STATUS, None)
        responses[str(INVALID_INPUT_HTTP)] = {
            "description": (invalid or {}).get("description", "The input does not match the contract."),
            "content": {"application/json": {"schema": _failure_result(
                (invalid or {}).get("content", {}).get("application/json", {}).get("schema", {}))}},
        }
        failed = responses.get(str(FAILED_JOB_HTTP))
        if failed:
            failed["content"] = {"application/json": {"schema": _failure_result(
                failed["content"]["application/json"]["schema"])}}
        responses["202"] = {"description": "Queued with `?wait=false`; follow Location to the job.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JobResult"}}}}
        op.setdefault("parameters", []).append(
            {"name": "wait", "in": "query", "required": False, "schema": {"type": "boolean", "default": True},
             "description": "false: journal the job, answer 202 at once and run it in the background."})
        body = op.get("requestBody", {}).get("content", {})
        if "text/plain" in body and "application/json" not in body:
            body["application/json"] = {"schema": {"type": "string"}}
        op["parameters"].append(
            {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"},
             "description": 'Pin the contract: `"<x-contract-hash>"`; another installed contract answers 412.'})
        if spec is not None:
            _with_examples(op, spec)
        for code, text in (("412", "The pinned contract (If-Match) is not the installed one: details has both hashes."),
                           ("404", "No installed agent has this name."),
                           ("415", "The body is not of a media type this agent takes."),
                           ("413", f"The body is over {MAX_BODY_BYTES:,} bytes.")):
            responses[code] = {"description": text, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Failure"}}}}
    doc["paths"]["/agents"] = {"get": {
        "operationId": "agents.list", "summary": "The installed agents and their contracts",
        "responses": {"200": {"description": "The agents", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/AgentList"}}}}}}}
    doc["paths"]["/jobs/{job_id}"] = {"get": {
        "operationId": "jobs.get", "summary": "One job from the journal, with its card and output",
        "parameters": [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": {
            "200": {"description": "The job", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/JobResult"}}}},
            "404": {"description": "No job has this id", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Failure"}}}}}}}
    from oz0.adapters.console.plugins_api import operations

    doc["paths"].update(operations())
    doc["paths"]["/jobs/{job_id}/answer"] = _ANSWER_PATH
    if versions:
        doc["info"]["x-oz0-plugins"] = dict(sorted(versions.items()))
    return doc


_META = {"type": "object", "required": ["schema_version", "command"],
         "properties": {"schema_version": {"const": 1}, "command": {"type": "string"},
                        "duration_ms": {"type": "number"}}}
_COMMON_SCHEMAS: dict[str, Any] = {
    "Job": {"type": "object", "required": ["id", "agent", "status", "created"], "properties": {
        "id": {"type": "string"}, "agent": {"type": "string"}, "plugin": {"type": ["string", "null"]},
        "plugin_version": {"type": ["string", "null"]}, "requester": {"type": "string"},
        "channel": {"type": "string"}, "input": {"type": "string"},
        "status": {"enum": ["queued", "running", "waiting", "succeeded", "failed", "interrupted", "skipped"]},
        "parent_id": {"type": ["string", "null"], "description": "A flow step's job: the flow's job."},
        "contract_hash": {"type": ["string", "null"], "description": "The contract the job ran under."},
        "contract_version": {"type": ["string", "null"]},
        "question": {"$ref": "#/components/schemas/Question"},
        "failure_kind": {"type": ["string", "null"]}, "failure_reason": {"type": ["string", "null"]},
        "created": {"type": "number"}, "started": {"type": ["number", "null"]},
        "ended": {"type": ["number", "null"]}, "attempts": {"type": "integer"},
        "reply_to": {"type": ["object", "null"], "description": "Where a chat channel answers (platform, "
                     "channel, user, thread); its credentials are never shown."}}},
    "Card": {"type": "object", "required": ["form", "drawn"], "description": "The neutral card (oz0 render --to card).",
             "properties": {"form": {"enum": ["table", "key_values", "diff", "text"]}, "drawn": {"type": "boolean"}}},
    "Failure": {"type": "object", "required": ["success", "message", "error", "error_code", "meta"], "properties": {
        "success": {"const": False}, "message": {"type": "string"}, "error": {"type": "string"},
        "error_code": {"type": "string"}, "details": {"type": "object"}, "meta": _META}},
    "JobResult": {"type": "object", "required": ["success", "message", "job", "meta"], "properties": {
        "success": {"type": "boolean"}, "message": {"type": "string"}, "job": {"$ref": "#/components/schemas/Job"},
        "card": {"$ref": "#/components/schemas/Card"}, "output": {}, "error": {"type": "string"},
        "error_code": {"type": "string"}, "details": {"type": "object"}, "meta": _META}},
    "PluginResult": {"type": "object", "required": ["success", "message", "meta"], "properties": {
        "success": {"const": True}, "message": {"type": "string"}, "meta": _META},
        "description": "A management API answer: `plugins`, `plugin`, or the install's or diff's `changes`."},
    "AgentList": {"type": "object", "required": ["success", "message", "agents", "meta"], "properties": {
        "success": {"const": True}, "message": {"type": "string"}, "meta": _META,
        "agents": {"type": "array", "items": {"type": "object", "required": ["name", "plugin"], "properties": {
            "name": {"type": "string"}, "plugin": {"type": "string"}, "version": {"type": "string"},
            "kind": {"type": "string"}, "description": {"type": "string"},
            "input": {"description": "The input JSON Schema, or \"text\"."},
            "output": {"description": "The output JSON Schema, or \"text\"."},
            "failures": {"type": "array", "items": {"type": "object"}},
            "annotations": {"type": "object", "description": "MCP tool annotations: title, readOnlyHint, "
                            "destructiveHint, idempotentHint, openWorldHint (declared, or from tools/list)."},
            "contract_hash": {"type": "string", "description": "SHA-256 of the contract parts; pin it with If-Match."},
            "contract_version": {"type": ["string", "null"], "description": "The plugin version that introduced it."},
            "examples": {"type": "array", "items": {"type": "object", "required": ["input"], "properties": {
                "description": {"type": "string"}, "input": {}, "output": {}}}}}}}}},
}


_COMMON_SCHEMAS["Question"] = {
    "type": "object", "required": ["step", "message", "answer_schema", "answerers", "expires"],
    "description": "What a waiting job asks (a person step); answer it at POST /jobs/{job_id}/answer.",
    "properties": {"step": {"type": "string"}, "message": {"type": "string"},
                   "answer_schema": {"type": "object", "description": "An object of primitive fields."},
                   "answerers": {"type": "object", "description": "users, groups, roles; {} = the asker."},
                   "expires": {"type": ["number", "null"]}, "source": {"type": ["string", "null"]}}}


def _failure_response(text: str) -> dict[str, Any]:
    return {"description": text, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Failure"}}}}


_ANSWER_PATH = {"post": {
    "operationId": "jobs.answer", "summary": "Answer a waiting job's question (the first answer wins)",
    "parameters": [
        {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "step", "in": "query", "required": False, "schema": {"type": "string"},
         "description": "The step answered; default: the job's open question."},
        {"name": "action", "in": "query", "required": False,
         "schema": {"enum": ["accept", "decline", "cancel"], "default": "accept"},
         "description": "decline or cancel: no body."}],
    "requestBody": {"required": False, "content": {"application/json": {"schema": {
        "type": "object", "description": "The answer: an object that matches the question's answer_schema."}}}},
    "responses": {
        "202": {"description": "Answered; the job goes on.", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/JobResult"}}}},
        "403": _failure_response("You are not among the question's answerers."),
        "404": _failure_response("No job has this id."),
        "409": _failure_response("The step was already answered (the first answer wins), or the job waits no more."),
        "422": _failure_response("The answer does not match the answer schema: details.path and the rule."),
    }}}


def _run_result(output_schema: Any) -> dict[str, Any]:
    return {"allOf": [{"$ref": "#/components/schemas/JobResult"}],
            "properties": {"success": {"const": True}, "output": output_schema or {}},
            "required": ["card", "output"]}


def _failure_result(kinds_schema: Any) -> dict[str, Any]:
    return {"allOf": [{"$ref": "#/components/schemas/Failure"}],
            "properties": {"details": kinds_schema or {"type": "object"}}}


def _agent_json(spec: Any, versions: Mapping[str, str]) -> dict[str, Any]:
    return {
        "name": spec.name, "plugin": spec.plugin, "version": versions.get(spec.plugin, ""), "kind": spec.kind,
        "description": spec.description,
        "input": spec.input.schema if spec.input is not None else "text",
        "output": spec.output.schema if spec.output is not None else "text",
        "failures": [{"name": f.name, "retryable": f.retryable, "partial": f.partial, "person": f.person,
                      "description": f.description} for f in failure_kinds(spec)],
        "annotations": known_annotations(spec),
        "contract_hash": spec.contract_hash, "contract_version": spec.contract_version,
        "examples": [{"description": e.description, "input": e.input,
                      **({"output": e.output} if e.has_output else {})} for e in spec.examples],
        **({"steps": [{"id": s.id, **({"ask": s.ask} if s.is_ask else {"agent": s.agent}),
                       **({"if": s.condition} if s.condition else {})} for s in spec.steps]}
           if spec.kind == "flow" else {}),
    }


def _stale_pin(spec: Any, header: str | None, command: str) -> JSONResponse | None:
    """412 when the caller pinned a contract (`If-Match: "<contract_hash>"`) that is not the installed one."""
    if header is None:
        return None
    pins = [tag.strip().removeprefix("W/").strip('"') for tag in header.split(",")]
    if "*" in pins or spec.contract_hash in pins:
        return None
    return failure(f"{spec.name}'s installed contract is {spec.contract_hash} (since version "
                   f"{spec.contract_version or 'unknown'}), not the pinned {', '.join(pins)}; read its contract "
                   f"at GET {API_PREFIX}/agents and pin the new hash", "contract_changed", status_code=412,
                   command=command, details={"agent": spec.name, "pinned": pins, "installed": spec.contract_hash,
                                             "contract_version": spec.contract_version})


def _with_examples(op: dict[str, Any], spec: Any) -> None:
    """The agent's declared examples as the operation's request and 200 response `examples`."""
    if not spec.examples:
        return
    def value(example: Any) -> Any:
        if spec.input is None or not isinstance(example.input, str):
            return example.input
        try:
            return json.loads(example.input)
        except json.JSONDecodeError:  # lint reports it; the document still shows what was written
            return example.input

    for media in op.get("requestBody", {}).get("content", {}).values():
        media["examples"] = {f"example-{i}": {"summary": e.description or f"example {i}", "value": value(e)}
                             for i, e in enumerate(spec.examples)}
    answered = {f"example-{i}": {"summary": e.description or f"example {i}",
                                 "value": {"success": True, "output": e.output}}
                for i, e in enumerate(spec.examples) if e.has_output}
    if answered:
        op["responses"]["200"]["content"]["application/json"]["examples"] = answered


def _job_json(job: Any) -> dict[str, Any]:
    out = job.to_dict()
    out.pop("output", None)
    return out


def _kind(runtime: Any, agent: str, kind: str) -> FailureKind | None:
    try:
        found = runtime.agent(agent).failure(kind)
    except ValueError:
        found = None
    return found or BUILTIN_FAILURES.get(kind)


def _invalid(command: str, reason: str, path: str) -> JSONResponse:
    return failure(reason, "invalid_input", status_code=INVALID_INPUT_HTTP, command=command,
                   details={"kind": INVALID_INPUT.name, "reason": reason, "path": path})


async def read_body(request: Request, *, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The request body, or None as soon as more than `limit` bytes have arrived (chunked or not):
    a body over the limit is never held whole."""
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            return None
    return bytes(body)


def _too_large(size: int | None, command: str) -> JSONResponse:
    said = f"{size:,} bytes" if size is not None else f"over {MAX_BODY_BYTES:,} bytes"
    return failure(f"the body is {said}; the limit is {MAX_BODY_BYTES:,}", "too_large",
                   status_code=413, command=command, headers={"connection": "close"})


def _requester(request: Request) -> str:
    return "api-token" if request.headers.get("authorization") else "api-local"


def _package_version() -> str:
    try:
        return metadata.version("oz0-edge")
    except metadata.PackageNotFoundError:
        return "0.0.0"
