"""The runtime API served beside the console: run an agent or a flow, read a job, answer it, list agents.

Every answer is a QZX result (`success`, `message`, `meta.command`, and on failure `error` and
`error_code`), built by edge.results.qzx.result_envelope so it is checked before it leaves. A run answers with
the job, its neutral card and the raw output. Input that breaks the contract is 422 `InvalidInput`
with the JSON path and the rule, before any job is journaled; a job that ends with one of the agent's
failure kinds is 502, as the OpenAPI document (adapters/console/api_doc.py) says.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from oz0.adapters.console import answers, cancel_api, follow_ups
from oz0.adapters.console.api_replies import (
    API_PREFIX,
    ASYNC_HTTP,
    FAILED_JOB_HTTP,
    INVALID_INPUT_HTTP,
    MAX_BODY_BYTES,
    failure,
    invalid,
    read_body,
    requester,
    too_large,
)
from oz0.adapters.console.input_refusal import Refusal, check_input
from oz0.edge import ConsoleRuntime
from oz0.edge.contracts.json_data import loads_exact
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.model.agent import INVALID_INPUT, AgentSpec, FailureKind
from oz0.edge.model.job import BUILTIN_FAILURES, failure_code
from oz0.edge.results.qzx import result_envelope
from oz0.edge.runtime.backlog import BUSY_RETRY_S
from oz0.edge.runtime.budget_view import budget_json
from oz0.edge.runtime.confirm import known_annotations
from oz0.edge.runtime.loop_trace import read_trace

__all__ = ["failure_kinds", "plugin_versions", "routes"]

log = logging.getLogger("oz0.console.api")

SEARCH_PARAMS = ("agent", "status", "asker", "since", "until", "limit", "cursor")


def plugin_versions(runtime: ConsoleRuntime) -> dict[str, str]:
    """The installed (current) version of each plugin, by name."""
    return {v.plugin: v.version for v in runtime.installed()}


def failure_kinds(spec: AgentSpec) -> list[FailureKind]:
    """The ways a job of this agent can fail that a caller may see: `InvalidInput`, then the declared kinds."""
    return [INVALID_INPUT, *spec.failures]


def routes(runtime: ConsoleRuntime) -> list[Route]:
    """The API's routes over `runtime`."""
    api = _Api(runtime)
    return [
        Route(f"{API_PREFIX}/agents", api.agents, methods=["GET"]),
        Route(f"{API_PREFIX}/agents/{{name}}/runs", api.run, methods=["POST"]),
        Route(f"{API_PREFIX}/flows/{{name}}/runs", api.run_flow, methods=["POST"]),
        Route(f"{API_PREFIX}/jobs", api.search, methods=["GET"]),
        Route(f"{API_PREFIX}/jobs/{{job_id}}", api.job, methods=["GET"]),
        Route(f"{API_PREFIX}/jobs/{{job_id}}/answer", api.answer, methods=["POST"]),
        Route(f"{API_PREFIX}/jobs/{{job_id}}/follow-ups", api.follow_up, methods=["POST"]),
        Route(f"{API_PREFIX}/jobs/{{job_id}}/cancel", api.cancel, methods=["POST"]),
    ]


class _Api:
    def __init__(self, runtime: ConsoleRuntime) -> None:
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
            return too_large(size, command)
        body = await read_body(request)
        if body is None:
            return too_large(None, command)
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            decoded = body.decode("utf-8")
        except UnicodeDecodeError:
            return invalid(command, "the request body is not UTF-8", "$")
        if media == "application/json":
            text = decoded
            if spec.input is None:
                try:
                    value = loads_exact(decoded)
                except json.JSONDecodeError as exc:
                    return invalid(command, f"the body is not JSON: {exc.msg}", "$")
                if not isinstance(value, str):
                    return invalid(command, f"{spec.name} takes text: send a JSON string or text/plain, "
                                             f"not a JSON {type(value).__name__}", "$")
                text = value
        elif media == "text/plain" and spec.input is None:
            text = decoded
        else:
            wanted = "application/json" if spec.input is not None else "application/json (a string) or text/plain"
            return failure(f"{spec.name} takes {wanted}, not {media or 'a body without Content-Type'}",
                           "unsupported_media_type", status_code=415, command=command)
        refusal = check_input(spec, text, home=self.runtime.home, asker_user=requester(request))
        if isinstance(refusal, Refusal):
            details: dict[str, Any] = {"agent": spec.name}
            if refusal.kind:
                details.update(kind=refusal.kind, reason=refusal.message)
            if refusal.violations:
                details["path"] = refusal.violations[0].json_path
                details["violations"] = [v.to_dict() for v in refusal.violations]
            return failure(refusal.message, refusal.error_code, status_code=refusal.status, command=command,
                           details=details)
        busy = self.runtime.backlog.busy(spec)
        if busy is not None:   # turned away at once, not queued (edge.runtime.backlog)
            return failure(busy.message, "busy", status_code=429, command=command,
                           details={"agent": spec.name, "ahead": busy.ahead, "limit": busy.limit},
                           headers={"Retry-After": str(BUSY_RETRY_S)})
        asker = requester(request)
        if request.query_params.get("wait", "true").lower() in ("false", "0", "no"):
            job, created = self.runtime.submit(spec.name, text, requester=asker, channel="api", checked=refusal)
            if created:
                task = asyncio.create_task(self.runtime.execute(job.id), name=f"oz0-job-{job.id}")
                self.background.add(task)
                task.add_done_callback(self._finished)
            body_json = result_envelope(command, True, f"job {job.id} is {job.status}",
                                        data={"job": _job_json(job)})
            return JSONResponse(body_json, status_code=ASYNC_HTTP,
                                headers={"location": f"{API_PREFIX}/jobs/{job.id}"})
        job = await self.starter.run(spec.name, text, requester=asker, channel="api", checked=refusal)
        if job.status == "waiting":  # it asks a person: answer at POST /v1/jobs/{id}/answer
            return JSONResponse(result_envelope(command, True, f"job {job.id} is waiting for an answer",
                                                data={"job": self._job_data(job)}), status_code=ASYNC_HTTP,
                                headers={"location": f"{API_PREFIX}/jobs/{job.id}"})
        return self._job_response(job, command)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self.background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background job task %s raised", task.get_name(), exc_info=task.exception())

    async def search(self, request: Request) -> Response:
        """GET /v1/jobs?agent=&status=&asker=&since=&until=&limit=&cursor=: a page of jobs, newest first."""
        from oz0.edge.runtime.job_search import SearchError, parse_query

        params = request.query_params
        try:
            query = parse_query(**{name: params.get(name) for name in SEARCH_PARAMS})
        except SearchError as exc:
            return failure(str(exc), "invalid_parameter", status_code=400, command="jobs.list",
                           details={"parameter": exc.param})
        jobs, cursor = await asyncio.to_thread(self.runtime.search_jobs, query)
        return JSONResponse(result_envelope("jobs.list", True, f"{len(jobs)} job(s)",
                                            data={"jobs": [_job_json(j) for j in jobs], "next_cursor": cursor}))

    async def job(self, request: Request) -> Response:
        job_id = request.path_params["job_id"]
        job = self.runtime.job(job_id)
        if job is None:
            return failure(f"no job has the id {job_id!r}", "unknown_job", status_code=404, command="jobs.get")
        return self._job_response(job, "jobs.get", read_only=True)

    async def cancel(self, request: Request) -> Response:
        return await cancel_api.cancel_json(self.runtime, request, job_json=self._job_data)

    async def answer(self, request: Request) -> Response:
        job = self.runtime.job(request.path_params["job_id"])
        stale = None if job is None else _stale_job_pin(job, request.headers.get("if-match"))
        if stale is not None:
            return stale
        size = int(request.headers.get("content-length") or 0)
        body = None if size > MAX_BODY_BYTES else await read_body(request)
        return await answers.answer_json(self.runtime, request, body=body, job_json=self._job_data)

    async def follow_up(self, request: Request) -> Response:
        return await follow_ups.follow_up_json(self.runtime, request, job_response=self._job_response)

    def _job_data(self, job: Any) -> dict[str, Any]:
        out = _job_json(job)
        cid = self.runtime.conversations.of_job(job.id)
        if cid is not None:  # the conversation the job is a turn of, oldest turn first
            out["conversation"] = follow_ups.conversation_json(self.runtime, cid)
        question = answers.question_json(self.runtime, job)
        if question is not None:
            out["question"] = question
        budgets = self.runtime.budgets.report(job)
        if budgets:  # each budget covering the job: limit, granted, reserved, spent, left
            out["budgets"] = [budget_json(b) for b in budgets]
        trace = read_trace(self.runtime.store, job.id)
        if trace:  # a tool loop's calls (edge.runtime.tool_loop)
            out["trace"] = trace
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
        return failure(f"{job.agent} failed: {kind}", failure_code(job), status_code=status, command=command,
                       error=reason, details=details, data=data)


def _agent_json(spec: AgentSpec, versions: Mapping[str, str]) -> dict[str, Any]:
    return {
        "name": spec.name, "plugin": spec.plugin, "version": versions.get(spec.plugin, ""), "kind": spec.kind,
        "description": spec.description,
        "input": spec.input.schema if spec.input is not None else "text",
        "output": spec.output.schema if spec.output is not None else "text",
        "failures": [{"name": f.name, "retryable": f.retryable, "partial": f.partial, "person": f.person,
                      "description": f.description} for f in failure_kinds(spec)],
        "annotations": known_annotations(spec),
        "contract_hash": contract_hash(spec), "contract_version": spec.contract_version,
        "budget": spec.budget.as_json() if getattr(spec, "budget", None) is not None else None,
        "price": spec.price.as_json() if getattr(spec, "price", None) is not None else None,
        "examples": [{"description": e.description, "input": e.input,
                      **({"output": e.output} if e.has_output else {})} for e in spec.examples],
        **({"steps": [{"id": s.id, **({"ask": s.ask} if s.is_ask else {"agent": s.agent}),
                       **({"if": s.condition} if s.condition else {})} for s in spec.steps]}
           if spec.kind == "flow" else {}),
    }


def _stale(header: str | None, current: str | None) -> list[str] | None:
    """The pinned hashes of `If-Match: "<contract_hash>"` when none of them is `current`, else None."""
    if header is None:
        return None
    pins = [tag.strip().removeprefix("W/").strip('"') for tag in header.split(",")]
    return None if "*" in pins or current in pins else pins


def _stale_job_pin(job: Any, header: str | None) -> JSONResponse | None:
    """412 when an answer pins a contract that is not the one the job runs under (the rule of runs)."""
    pins = _stale(header, job.contract_hash)
    if pins is None:
        return None
    return failure(f"job {job.id} runs under {job.agent}'s contract {job.contract_hash} (version "
                   f"{job.contract_version or 'unknown'}), not the pinned {', '.join(pins)}; read it at "
                   f"GET {API_PREFIX}/jobs/{job.id}", "contract_changed", status_code=412, command="jobs.answer",
                   details={"agent": job.agent, "pinned": pins, "installed": job.contract_hash,
                            "contract_version": job.contract_version})


def _stale_pin(spec: AgentSpec, header: str | None, command: str) -> JSONResponse | None:
    """412 when the caller pinned a contract (`If-Match: "<contract_hash>"`) that is not the installed one."""
    pins = _stale(header, contract_hash(spec))
    if pins is None:
        return None
    return failure(f"{spec.name}'s installed contract is {contract_hash(spec)} (since version "
                   f"{spec.contract_version or 'unknown'}), not the pinned {', '.join(pins)}; read its contract "
                   f"at GET {API_PREFIX}/agents and pin the new hash", "contract_changed", status_code=412,
                   command=command, details={"agent": spec.name, "pinned": pins, "installed": contract_hash(spec),
                                             "contract_version": spec.contract_version})


def _job_json(job: Any) -> dict[str, Any]:
    out = job.to_dict()
    out.pop("output", None)
    return out


def _kind(runtime: ConsoleRuntime, agent: str, kind: str) -> FailureKind | None:
    try:
        found = runtime.agent(agent).failure(kind)
    except ValueError:
        found = None
    return found or BUILTIN_FAILURES.get(kind)


