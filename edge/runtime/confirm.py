"""Confirmations: a destructive tool asks its asker before it runs.

A tool's MCP annotations (`title`, `readOnlyHint`, `destructiveHint`, `idempotentHint`,
`openWorldHint`) come from `tools/list` for an `mcp` agent, and may be declared in any agent file
under `annotations:` (what the file declares wins: the plugin's author knows the deployment). An
agent whose annotations say `destructiveHint: true`, and not `readOnlyHint: true`, asks the asker
to Confirm or Cancel, naming the tool and its arguments, before the job runs (step `confirm`, once
per job, not per attempt), unless its agent file says `confirm: false`. A job whose channel cannot
ask is not run: it fails `Cancelled`, saying how to run it (`oz0 run` asks on its terminal, or leaves
the job waiting for `oz0 jobs answer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from oz0.edge.mcp.kind import job_tool, server_for_agent
from oz0.edge.mcp.pool import servers
from oz0.edge.mcp.spec import McpFailure
from oz0.edge.model.agent import ANNOTATION_KEYS
from oz0.edge.model.job import JobFailure
from oz0.edge.runtime.questions import Question

if TYPE_CHECKING:
    from oz0.edge.model.agent import AgentSpec
    from oz0.edge.runtime.question_book import Questions

__all__ = [
    "CONFIRM",
    "CONFIRM_SCHEMA",
    "CONFIRM_STEP",
    "CONFIRM_TIMEOUT_S",
    "agent_annotations",
    "confirm_before_run",
    "is_destructive",
    "known_annotations",
    "needs_confirmation",
]

CONFIRM_STEP = "confirm"
CONFIRM = "Confirm"
CONFIRM_TIMEOUT_S = 900.0   # how long a confirmation waits for its asker; then the job is cancelled
MAX_ARGUMENTS_SHOWN = 1_500  # characters of the arguments in the question
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["choice"],
    "properties": {"choice": {"type": "string", "enum": [CONFIRM, "Cancel"], "title": "Run it?"}}}


def _merged(listed: Mapping[str, Any] | None, spec: AgentSpec) -> dict[str, Any]:
    declared = spec.config.get("annotations") or {}
    out = {k: v for k, v in dict(listed or {}).items() if k in ANNOTATION_KEYS}
    out.update({k: v for k, v in dict(declared).items() if k in ANNOTATION_KEYS})
    return out


def known_annotations(spec: AgentSpec) -> dict[str, Any]:
    """The agent's annotations without reaching a server: declared, over the tool's listing (this
    process's latest, else the one stored at install)."""
    listed = spec.listed_annotations
    if spec.kind == "mcp":
        try:
            tool = (servers().listed(server_for_agent(spec)) or {}).get(str(spec.config.get("tool")))
        except McpFailure:
            tool = None
        listed = tool.annotations if tool is not None else listed
    return _merged(listed, spec)


async def agent_annotations(spec: AgentSpec, *, eliciting: bool = False) -> dict[str, Any]:
    """The agent's annotations; an `mcp` agent's tool is listed (once per session) to read its own,
    with the capabilities of the job's channel (`eliciting`: it can ask a person)."""
    if spec.kind != "mcp":
        return _merged(None, spec)
    tool = await job_tool(spec, eliciting=eliciting)
    return _merged(tool.annotations, spec)


def is_destructive(annotations: Mapping[str, Any]) -> bool:
    """A tool that asks before it runs: `destructiveHint: true`, and not `readOnlyHint: true`."""
    return annotations.get("destructiveHint") is True and annotations.get("readOnlyHint") is not True


def needs_confirmation(spec: AgentSpec, annotations: Mapping[str, Any]) -> bool:
    return is_destructive(annotations) and spec.config.get("confirm") is not False


async def confirm_before_run(questions: Questions, spec: AgentSpec, value: Any, job_id: str) -> None:
    """Ask the asker to confirm a destructive run; returns when confirmed, else raises JobFailure
    ("Cancelled") naming what was not run and why."""
    if spec.config.get("confirm") is False:
        return
    annotations = await agent_annotations(spec, eliciting=questions.can_ask_job(job_id))
    if not needs_confirmation(spec, annotations):
        return
    tool = str(spec.config.get("tool") or spec.name)
    name = annotations.get("title") or tool
    found = questions.asked(job_id, CONFIRM_STEP)
    if found is None or found[1] is None:
        if not questions.can_ask_job(job_id):
            raise JobFailure("Cancelled", f"{name} is marked destructive, so it asks its asker to confirm, and "
                                          "this channel cannot ask; run it from the console or chat, or set "
                                          f"`confirm: false` in the agent file of {spec.name}")
        arguments = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        if len(arguments) > MAX_ARGUMENTS_SHOWN:
            arguments = arguments[: MAX_ARGUMENTS_SHOWN - 1] + "…"
        import time

        questions.ask(Question(job_id, CONFIRM_STEP, f"Run {name} (tool {tool} of agent {spec.name}) with "
                             f"{arguments}? It is marked destructive.", CONFIRM_SCHEMA, {},
                             time.time() + CONFIRM_TIMEOUT_S, source=spec.name))
    answer = await questions.wait_async(job_id, CONFIRM_STEP, timeout_s=CONFIRM_TIMEOUT_S)
    if answer.action == "accept" and (answer.content or {}).get("choice") == CONFIRM:
        return
    how = {"accept": "cancelled", "decline": "declined", "cancel": "cancelled",
           "timeout": f"not confirmed within {CONFIRM_TIMEOUT_S:g} s"}[answer.action]
    raise JobFailure("Cancelled", f"{name} was not run: {answer.by} {how} it" if answer.action != "timeout"
                     else f"{name} was not run: {how}")
