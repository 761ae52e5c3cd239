"""`POST /v1/jobs/{id}/follow-ups`: continue a job's conversation through the API, and the conversation
as the API and the console's job page show it.

A follow-up is text (text/plain, or a JSON string) to the conversation's agent, refused as a chat
follow-up is: a conversation that ended (stopped, or idle past its bound) is 409, an agent whose input is
JSON is 422. A job the API ran starts a conversation of its own (`api:JOB`) at its first follow-up.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from oz0.adapters.console.api_replies import (
    API_PREFIX,
    MAX_BODY_BYTES,
    failure,
    invalid,
    read_body,
    requester,
    too_large,
)
from oz0.adapters.console.input_refusal import Refusal, check_input
from oz0.edge import ChatRuntime, ConsoleRuntime
from oz0.edge.model.job import Job

__all__ = ["conversation_json", "follow_up_json", "follow_up_text"]


async def follow_up_json(runtime: ConsoleRuntime, request: Request, *,
                         job_response: Callable[[Job, str], Response]) -> Response:
    """Continue the conversation of a job (a chat thread's, or one the API started with that job)
    with a text follow-up to the conversation's agent: the job of the new turn, as a run's answer."""
    command = "jobs.follow_up"
    job = runtime.job(request.path_params["job_id"])
    if job is None:
        return failure(f"no job has the id {request.path_params['job_id']!r}", "unknown_job", status_code=404,
                       command=command)
    size = int(request.headers.get("content-length") or 0)
    body = None if size > MAX_BODY_BYTES else await read_body(request)
    if body is None:
        return too_large(size or None, command)
    text = follow_up_text(body, request.headers.get("content-type", ""))
    if not isinstance(text, str):
        return invalid(command, text[0], "$")
    book = runtime.conversations
    cid = book.of_job(job.id) or f"api:{job.id}"
    current = book.get(cid)
    agent = current.agent if current is not None and current.agent else job.agent
    try:
        spec = runtime.agent(agent)
    except ValueError as exc:
        return failure(str(exc), "unknown_agent", status_code=404, command=command)
    if current is not None and not current.open(spec.conversation):
        return failure(f"the conversation of job {job.id} has ended (stopped, or idle more than "
                       f"{spec.conversation.idle_hours:g} hours); start a new one with POST "
                       f"{API_PREFIX}/agents/{agent}/runs", "conversation_ended", status_code=409, command=command)
    if spec.input is not None:
        return failure(f"{agent} takes JSON that matches {spec.input_schema_file}, not a follow-up in words",
                       "follow_up_not_text", status_code=422, command=command)
    checked = check_input(spec, text, home=runtime.home, asker_user=requester(request))
    if isinstance(checked, Refusal):
        return failure(checked.message, checked.error_code, status_code=checked.status, command=command)
    asker = requester(request)
    if current is None:   # the API's own conversation starts with the job it follows up
        book.add_turn(cid, job.id, job.agent, by=job.requester)
    turn, _ = runtime.submit(agent, text, requester=asker, channel="api", checked=checked)
    book.add_turn(cid, turn.id, agent, by=asker)
    return job_response(await runtime.execute(turn.id), command)


def follow_up_text(body: bytes, content_type: str) -> str | tuple[str]:
    """A follow-up's text: text/plain, or a JSON string; (why not) for anything else."""
    media = content_type.split(";")[0].strip().lower()
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError:
        return ("the request body is not UTF-8",)
    if media == "text/plain":
        return decoded
    try:
        value = json.loads(decoded)
    except json.JSONDecodeError as exc:
        return (f"the body is not JSON: {exc.msg} (send text/plain, or a JSON string)",)
    return value if isinstance(value, str) else (f"a follow-up is text: send a JSON string or text/plain, "
                                                 f"not a JSON {type(value).__name__}",)


def conversation_json(runtime: ChatRuntime, cid: str) -> dict[str, Any]:
    """A conversation as the API and the console's job page show it: each turn's job, agent and input."""
    turns = []
    for row in runtime.conversations.turns(cid):
        turn: dict[str, Any] = {"seq": row["seq"], "kind": row["kind"], "agent": row["agent"], "by": row["by"],
                                "at": row["at"], "job_id": row["job_id"], "previous_job_id": row["previous_job_id"]}
        job = runtime.job(row["job_id"]) if row["job_id"] else None
        if job is not None:
            turn.update(status=job.status, input=job.input[:500])
        turns.append(turn)
    return {"id": cid, "turns": turns}
