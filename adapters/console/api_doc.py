"""The OpenAPI 3.1 document of the runtime API, served at `/openapi.json`.

It is the upgrade check's document (edge.documents.openapi, a function of the installed contracts
only) with what this server adds around it: the `/v1` prefix, the QZX envelope around the output
contract, 422 for `InvalidInput`, and the read-only endpoints.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from oz0.adapters.console.api import plugin_versions
from oz0.adapters.console.api_replies import API_PREFIX, FAILED_JOB_HTTP, INVALID_INPUT_HTTP, MAX_BODY_BYTES
from oz0.edge import RuntimeFace
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.documents.openapi import INVALID_INPUT_STATUS, SECURITY_SCHEMES, openapi_document
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.budget import ON_EXHAUSTED, PERIODS
from oz0.edge.runtime.confirm import known_annotations

__all__ = ["api_document", "routes"]


def routes(runtime: RuntimeFace) -> list[Route]:
    """`GET /openapi.json`: the document of the agents and flows installed now."""

    async def openapi(request: Request) -> Response:
        return JSONResponse(api_document((*runtime.agents(), *runtime.flows()), versions=plugin_versions(runtime)))

    return [Route("/openapi.json", openapi, methods=["GET"])]


def api_document(agents: Any, *, versions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of this server: the upgrade check's document of the installed
    contracts, placed under `/v1` and wrapped the way this server answers."""
    agents = list(agents)
    doc = openapi_document(agents, title="oz0-edge runtime API", version=_package_version())
    doc["servers"] = [{"url": API_PREFIX, "description": "this console"}]
    doc["info"]["description"] = ("The runtime API of oz0-edge: run the installed agents and flows, read jobs and "
                                  "answer their questions, and manage plugins.")
    license_id = _package_license()
    if license_id:
        doc["info"]["license"] = {"name": license_id, "identifier": license_id}
    doc["components"]["securitySchemes"] = {**SECURITY_SCHEMES, ADMIN_TOKEN: _ADMIN_SCHEME}
    doc["tags"] = [*doc.get("tags", ()), *_TAGS]
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
            op["x-contract-hash"], op["x-contract-version"] = contract_hash(spec), spec.contract_version
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
                           ("413", f"The body is over {MAX_BODY_BYTES:,} bytes."),
                           ("429", "Busy: too many jobs wait their turn (limits.max_queued, OZ0_MAX_QUEUED); "
                                   "nothing was queued. Try again after Retry-After seconds."),
                           ("503", "`unavailable`: the bot's database cannot be written right now (it is down, "
                                   "its disk is full); nothing was run. Try again after Retry-After seconds.")):
            responses[code] = {"description": text, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Failure"}}}}
    doc["paths"]["/agents"] = {"get": {
        "operationId": "agents.list", "summary": "The installed agents and their contracts", "tags": ["agents"],
        "description": "Every installed agent and flow: its contracts, failure kinds, annotations, budget, price "
                       "and examples.",
        "responses": {"200": {"description": "The agents", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/AgentList"}}}}}}}
    doc["paths"]["/jobs"] = {"get": {
        "operationId": "jobs.list", "summary": "Search the journal's jobs, newest first, a page at a time",
        "tags": ["jobs"],
        "description": "Filters: agent, status, asker; since and until take a duration back from now (90s, 30m, "
                       "2h, 7d, 1w) or an ISO 8601 time (UTC unless it says). Pass next_cursor as cursor for the "
                       "next page; a page never repeats or skips a job while new ones arrive.",
        "parameters": [{"name": name, "in": "query", "required": False,
                        "schema": {"type": "integer", "minimum": 1, "maximum": 500} if name == "limit"
                        else {"type": "string"}}
                       for name in ("agent", "status", "asker", "since", "until", "limit", "cursor")],
        "responses": {
            "200": {"description": "A page of jobs and next_cursor (null on the last page)"},
            "400": {"description": "A parameter cannot be read (details.parameter names it)",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Failure"}}}}}}}
    doc["paths"]["/jobs/{job_id}"] = {"get": {
        "operationId": "jobs.get", "summary": "One job from the journal, with its card and output", "tags": ["jobs"],
        "description": "The job's facts, its card and output once it ended, and its question while it waits.",
        "parameters": [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": {
            "200": {"description": "The job", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/JobResult"}}}},
            "404": {"description": "No job has this id", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Failure"}}}}}}}
    from oz0.adapters.console.plugin_admin_api import operations as admin_operations
    from oz0.adapters.console.plugins_api import operations

    doc["paths"].update(operations())
    for path, item in admin_operations().items():
        doc["paths"].setdefault(path, {}).update(item)
    doc["paths"]["/jobs/{job_id}/answer"] = _ANSWER_PATH
    doc["paths"]["/jobs/{job_id}/follow-ups"] = _FOLLOW_UP_PATH
    doc["paths"]["/jobs/{job_id}/cancel"] = _CANCEL_PATH
    doc["paths"]["/schedules"] = _SCHEDULES_PATH
    doc["paths"]["/schedules/{name}/pause"] = _schedule_switch("pause")
    doc["paths"]["/schedules/{name}/resume"] = _schedule_switch("resume")
    for path, item in doc["paths"].items():
        for op in item.values():
            op["responses"].setdefault("401", _failure_response(
                "A token is required (the console listens beyond loopback): send Authorization: Bearer "
                "<OZ0_CONSOLE_TOKEN>."))
            if path.startswith("/plugins"):
                op.setdefault("tags", ["plugins"])
    doc["paths"]["/plugins"]["post"]["security"] = [{ADMIN_TOKEN: []}]
    if versions:
        doc["info"]["x-oz0-plugins"] = dict(sorted(versions.items()))
    return doc


ADMIN_TOKEN = "adminToken"
_ADMIN_SCHEME = {"type": "http", "scheme": "bearer",
                 "description": "`Authorization: Bearer <OZ0_ADMIN_TOKEN>`: what installing a plugin takes."}
_TAGS = [{"name": "agents", "description": "The installed agents and flows."},
         {"name": "jobs", "description": "Jobs in the journal, and the questions of those that wait."},
         {"name": "plugins", "description": "The management API: installed plugins, upgrade checks, installs, uninstalls, rollbacks."},
         {"name": "schedules", "description": "The plugins' schedules: their next runs, pause and resume."}]
_FIGURES = {"type": "object", "description": "One limited dimension: limit, granted, reserved, spent, left.",
            "properties": {k: {"type": ["integer", "string"]} for k in ("limit", "granted", "reserved", "spent",
                                                                        "left")}}
_BUDGET = {"type": "object", "required": ["budget", "per", "on_exhausted"], "properties": {
    "budget": {"type": "string", "description": "Which budget: the agent's, the flow's or an access rule's."},
    "key": {"type": "string"}, "period": {"type": "string", "description": "The day, or job:ID for a per-job one."},
    "per": {"enum": list(PERIODS)}, "on_exhausted": {"enum": list(ON_EXHAUSTED), "description": "What an "
                                                     "exhausted budget does: fail the job, or ask for more."},
    "tokens": _FIGURES, "calls": _FIGURES, "cost": {**_FIGURES, "description": "As for tokens, each a decimal string."},
    "grants": {"type": "array", "items": {"type": "object", "properties": {
        "by": {"type": "string", "description": "Who granted it, as the journal records them (slack:U123)."},
        "by_name": {"type": "string", "description": "Who granted it, as people read them: their display "
                                                     "name where a chat channel learned it, else the id."},
        "at": {"type": "number"}}}}}}
_META = {"type": "object", "required": ["schema_version", "command"],
         "properties": {"schema_version": {"const": 1}, "command": {"type": "string"},
                        "duration_ms": {"type": "number"}}}
_COMMON_SCHEMAS: dict[str, Any] = {
    "Job": {"type": "object", "required": ["id", "agent", "status", "created"], "properties": {
        "id": {"type": "string"}, "agent": {"type": "string"}, "plugin": {"type": ["string", "null"]},
        "plugin_version": {"type": ["string", "null"]}, "requester": {"type": "string"},
        "channel": {"type": "string"}, "input": {"type": "string"},
        "status": {"enum": ["queued", "running", "waiting", "succeeded", "failed", "interrupted", "skipped", "cancelled"]},
        "parent_id": {"type": ["string", "null"], "description": "A flow step's job: the flow's job."},
        "contract_hash": {"type": ["string", "null"], "description": "The contract the job ran under."},
        "contract_version": {"type": ["string", "null"]},
        "trace_id": {"type": ["string", "null"], "description": "The OpenTelemetry trace of the ask that made the "
                     "job (32 hex digits), where the server exports traces (OTEL_EXPORTER_OTLP_ENDPOINT)."},
        "question": {"$ref": "#/components/schemas/Question"},
        "budgets": {"type": "array", "description": "Each budget covering the job: for each limited dimension "
                    "(tokens, cost, calls) its limit, granted, reserved, spent and left (cost as a decimal "
                    "string).", "items": _BUDGET},
        "failure_kind": {"type": ["string", "null"]}, "failure_reason": {"type": ["string", "null"]},
        "created": {"type": "number"}, "started": {"type": ["number", "null"]},
        "ended": {"type": ["number", "null"]}, "attempts": {"type": "integer"},
        "reply_to": {"type": ["object", "null"], "description": "Where a chat channel answers: its platform "
                     "and the asker's workspace and channel; the channel's own reference (its credentials) is "
                     "never shown."}}},
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
            "budget": {"type": ["object", "null"], "description": "The declared budget: tokens, cost (a decimal "
                       "string), calls (those limited), per, on_exhausted; null: none."},
            "price": {"type": ["object", "null"], "description": "The declared price: input_per_1k, output_per_1k, "
                      "per_call, each a decimal string; null: none."},
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
    "tags": ["jobs"], "description": "Accept with the answer as the body, or decline or cancel without one.",
    "parameters": [
        {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "step", "in": "query", "required": False, "schema": {"type": "string"},
         "description": "The step answered; default: the job's open question."},
        {"name": "action", "in": "query", "required": False,
         "schema": {"enum": ["accept", "decline", "cancel"], "default": "accept"},
         "description": "decline or cancel: no body."},
        {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"},
         "description": 'Pin the contract: `"<contract_hash>"` of the job; another contract answers 412.'}],
    "requestBody": {"required": False, "content": {"application/json": {"schema": {
        "type": "object", "description": "The answer: an object that matches the question's answer_schema."}}}},
    "responses": {
        "202": {"description": "Answered; the job goes on.", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/JobResult"}}}},
        "403": _failure_response("You are not among the question's answerers."),
        "404": _failure_response("No job has this id."),
        "409": _failure_response("The step was already answered (the first answer wins), or the job waits no more."),
        "412": _failure_response("If-Match names a contract that is not the job's (details.installed)."),
        "415": _failure_response("A body (or a Content-Type) that is not application/json."),
        "422": _failure_response("The answer does not match the answer schema, or is not JSON data (nested "
                                 "deeper than the limit): details.path and the rule."),
    }}}


_CANCEL_PATH = {"post": {
    "operationId": "jobs.cancel", "summary": "Stop a job wherever it runs (its asker, or an admin)",
    "tags": ["jobs"],
    "description": "The running step is stopped where it runs, on any replica, its children too; the job "
                   "ends `cancelled` (failure_reason: \"stopped by NAME\"). Answers once it has ended.",
    "parameters": [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}],
    "responses": {
        "200": {"description": "The job, ended.", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/JobResult"}}}},
        "403": _failure_response("Neither the job's asker nor an admin (Bearer OZ0_ADMIN_TOKEN)."),
        "404": _failure_response("No job has this id."),
        "409": _failure_response("The job has already ended: there is nothing to stop."),
        "415": _failure_response("A Content-Type that is not application/json."),
    }}}

_SCHEDULES_PATH = {"get": {
    "operationId": "schedules.list", "summary": "The plugins' schedules: next runs, status, last result",
    "tags": ["schedules"],
    "description": "Each installed plugin's schedules/NAME.yaml, with its state in the engine (shared by every "
                   "replica) and its last run's job.",
    "responses": {
        "200": {"description": "`schedules`: each with name, cron, timezone, agent, status (active, paused, not "
                               "started), next_runs, last_result and post_to.",
                "content": {"application/json": {"schema": {"type": "object"}}}},
        "401": _failure_response("The console's token is missing or wrong."),
    }}}


def _schedule_switch(verb: str) -> dict[str, Any]:
    return {"post": {
        "operationId": f"schedules.{verb}", "summary": f"{verb.capitalize()} a schedule on every replica (audited)",
        "tags": ["schedules"],
        "description": f"{verb.capitalize()} the schedule on every replica at once (audited as schedule.{verb}); "
                       "it lasts across restarts.",
        "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": {
            "200": {"description": "The schedule, as GET /schedules shows it.",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
            "403": _failure_response("Without the admin token (Bearer OZ0_ADMIN_TOKEN)."),
            "404": _failure_response("No installed schedule has this name."),
            "409": _failure_response("No `oz0 serve` has started the schedule yet."),
        }}}


_FOLLOW_UP_PATH = {"post": {
    "operationId": "jobs.follow_up", "summary": "Continue a job's conversation with a follow-up in words",
    "tags": ["jobs"],
    "description": "The conversation's agent is asked the text, given the earlier turns; the new turn's job "
                   "answers as a run does, `job.conversation` listing every turn.",
    "parameters": [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}],
    "requestBody": {"required": True, "content": {"text/plain": {"schema": {"type": "string"}},
                                                  "application/json": {"schema": {"type": "string"}}}},
    "responses": {
        "200": {"description": "The new turn's job", "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/JobResult"}}}},
        "404": _failure_response("No job has this id."),
        "409": _failure_response("The conversation was stopped, or idle past the agent's conversation.idle_hours."),
        "422": _failure_response("The body is not text, or the agent takes JSON (follow_up_not_text)."),
    }}}


def _run_result(output_schema: Any) -> dict[str, Any]:
    return {"allOf": [{"$ref": "#/components/schemas/JobResult"}],
            "properties": {"success": {"const": True}, "output": output_schema or {}},
            "required": ["card", "output"]}


def _failure_result(kinds_schema: Any) -> dict[str, Any]:
    return {"allOf": [{"$ref": "#/components/schemas/Failure"}],
            "properties": {"details": kinds_schema or {"type": "object"}}}


def _package_license() -> str | None:
    try:
        return metadata.metadata("oz0-edge").get("License-Expression")
    except metadata.PackageNotFoundError:
        return None


def _package_version() -> str:
    try:
        return metadata.version("oz0-edge")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _with_examples(op: dict[str, Any], spec: AgentSpec) -> None:
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
