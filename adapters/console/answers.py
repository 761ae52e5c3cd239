"""Person steps in the console and the runtime API: a waiting job's question shown, and answered.

- `GET /v1/jobs/{id}` shows `job.question` while the job waits (api.py calls `question_json`).
- `POST /v1/jobs/{id}/answer` takes the answer as a JSON object (the answer schema's fields), or with
  `?action=decline|cancel` no body; `?step=` names the step (default: the open one). 202 with the job
  and the answer; 422 with the JSON path and the rule; 403 for someone not among the answerers; 409
  once the step is answered (the first answer wins, across replicas: the store decides). A body, or
  any Content-Type, must be application/json (415): a cross-site form cannot send that without a
  preflight. `If-Match` pins the job's contract hash as for runs (412, api.py).
- The job page shows a form generated from the answer schema by the run-form generator (forms.py),
  posted to `POST /jobs/{id}/answer`.
- A run started from the console or the API waits for its job to end *or to ask* (reading the job's
  event stream, not polling), so the asker is sent to the page (or the 202) that shows the question
  instead of a request that hangs.

The console and the API are one operator: the holder of the console token, or the local user. So a
job asked from the console may be answered through the API by the same holder, and the other way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from oz0.adapters.console.forms import Field, fields_for, form_input
from oz0.edge import ConsoleRuntime
from oz0.edge.contracts.json_data import JsonDataError, loads_data
from oz0.edge.contracts.schema import load_contract
from oz0.edge.results.qzx import result_envelope
from oz0.edge.runtime.events import JobEnded, QuestionAsked
from oz0.edge.runtime.questions import AnswerRefused, Question, RefusedWhy

__all__ = [
    "ANSWER_HTTP",
    "CONSOLE_PLATFORMS",
    "JobStarter",
    "answer_fields",
    "answer_from_form",
    "answer_json",
    "as_asker",
    "operator",
    "question_json",
    "register",
]

log = logging.getLogger("oz0.console.answers")

ANSWER_HTTP = 202
CONSOLE_PLATFORMS = ("console", "api")  # job_platform() of jobs asked here
# The API's answer to each way an answer is refused: the HTTP status and error code (edge errors carry none).
REFUSED_STATUS: dict[RefusedWhy, tuple[int, str]] = {
    "not_answerer": (403, "forbidden"),
    "not_waiting": (409, "already_answered"),
    "invalid": (422, "invalid_answer"),
}


def register(runtime: ConsoleRuntime) -> None:
    """Say that this console draws the questions of console and API jobs (the job page and GET
    /v1/jobs show them), so `runtime.can_ask` is true for them (MCP elicitation checks it)."""
    for platform in CONSOLE_PLATFORMS:
        runtime.shows_questions(platform)


def operator(request: Request, *, prefix: str) -> str:
    """Who answers from this console or API: `console-token` / `api-local` and so on; a console login
    that gave its name is `console:NAME` (shown as the name, here and in chat)."""
    guard = request.scope.get("state", {}).get("guard")
    by_token = bool(request.headers.get("authorization")) or bool(getattr(guard, "needs_login", False))
    name = guard.session_name(request.cookies) if guard is not None and prefix == "console" and not \
        request.headers.get("authorization") else None
    return f"console:{name}" if name else f"{prefix}-{'token' if by_token else 'local'}"


def as_asker(job: Any, by: str) -> str:
    """The console and the API are one operator: answer as the job's asker when it was that operator."""
    mine = {f"{p}-{by.rsplit('-', 1)[-1]}" for p in CONSOLE_PLATFORMS}
    return job.requester if by in mine and job.requester in mine else by


def question_json(runtime: ConsoleRuntime, job: Any) -> dict[str, Any] | None:
    """The open question of a waiting job, as GET /v1/jobs/{id} shows it."""
    if job.status != "waiting":
        return None
    question = runtime.question(job.id)
    return question.to_dict() if question is not None else None


def answer_fields(question: Question) -> tuple[Field, ...]:
    """The answer form's fields: the run-form generator over the answer schema."""
    return fields_for(load_contract(question.answer_schema, source="the answer schema"))


def answer_from_form(runtime: ConsoleRuntime, job: Any, question: Question, form: Mapping[str, str], *,
                     by: str) -> Any:
    """Answer from the job page's form (`action` is accept, decline or cancel): the Answer, else raises
    AnswerRefused or FormError."""
    action = form.get("action", "accept")
    content = form_input(answer_fields(question), form) if action == "accept" else None
    return runtime.answer(job.id, question.step, action=action, content=content, by=as_asker(job, by))


async def answer_json(runtime: ConsoleRuntime, request: Request, *, body: bytes | None, job_json: Any) -> Response:
    """POST /v1/jobs/{id}/answer."""
    command = "jobs.answer"
    job = runtime.job(request.path_params["job_id"])
    if job is None:
        return _failure(f"no job has the id {request.path_params['job_id']!r}", "unknown_job", 404, command)
    if body is None:
        return _failure("the body is over the limit", "too_large", 413, command)
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if (media or body.strip()) and media != "application/json":
        return _failure(f"send the answer as application/json, not {media or 'a body without Content-Type'}",
                        "unsupported_media_type", 415, command)
    action = request.query_params.get("action", "accept")
    step = request.query_params.get("step") or getattr(runtime.question(job.id), "step", None)
    if step is None:
        return _failure(f"job {job.id} is {job.status} and asks nothing", "already_answered", 409, command)
    content: Any = None
    if body.strip():
        try:
            content = loads_data(body)
        except JsonDataError as exc:
            return _failure(f"the answer is not JSON data: {exc.message}", "invalid_answer", 422, command,
                            details={"path": exc.path if len(exc.path) <= 80 else "$"})
        except ValueError as exc:
            return _failure(f"the answer is not JSON: {exc}", "invalid_answer", 422, command,
                            details={"path": "$"})
    by = as_asker(job, operator(request, prefix="api"))
    try:
        answer = await asyncio.to_thread(runtime.answer, job.id, step, action=action, content=content, by=by)
    except AnswerRefused as refused:
        details: dict[str, Any] = {"step": step}
        if refused.violations:
            details["path"] = refused.violations[0].json_path
            details["violations"] = [v.to_dict() for v in refused.violations]
        status, code = REFUSED_STATUS[refused.why]
        return _failure(refused.message, code, status, command, details=details)
    job = runtime.job(job.id)
    body_json = result_envelope(command, True, f"{step} of job {job.id} answered ({answer.action})",
                                data={"job": job_json(job), "answer": answer.to_dict()})
    return JSONResponse(body_json, status_code=ANSWER_HTTP, headers={"location": f"/v1/jobs/{job.id}"})


def _failure(message: str, code: str, status: int, command: str, *,
             details: Mapping[str, Any] | None = None) -> JSONResponse:
    body = result_envelope(command, False, message, error=message, error_code=code, details=details)
    return JSONResponse(body, status_code=status)


class JobStarter:
    """Runs console and API jobs in the background and waits for each to end or to ask."""

    def __init__(self, runtime: ConsoleRuntime) -> None:
        self.runtime = runtime
        self.background: set[asyncio.Task[Any]] = set()

    async def run(self, agent: str, text: str, **submit: Any) -> Any:
        """Submit and run; return the job once it ended or waits for an answer (it runs on meanwhile)."""
        job, created = self.runtime.submit(agent, text, **submit)
        if not created:
            return job
        task = asyncio.create_task(self.runtime.execute(job.id), name=f"oz0-job-{job.id}")
        self.background.add(task)
        task.add_done_callback(self._finished)
        with self.runtime.stream.reader(job.id) as reader:
            while not task.done():
                event = asyncio.ensure_future(reader.next())  # safe to cancel: the reader keeps what came
                await asyncio.wait({task, event}, return_when=asyncio.FIRST_COMPLETED)
                if not event.done():
                    event.cancel()
                elif isinstance(event.result(), (QuestionAsked, JobEnded)) or event.result() is None:
                    break
        settled = self.runtime.job(job.id)
        assert settled is not None
        return settled

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self.background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("job task %s raised", task.get_name(), exc_info=task.exception())
