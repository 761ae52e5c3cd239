"""What a job is and how it fails: Job, JobFailure, RunContext and the built-in failure kinds.

Kept apart from edge.runtime so that agent kinds (edge.runtime.kinds, edge.mcp.kind) can import
these without importing the runtime that imports them.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping

from oz0.edge.plugins.asks import declared_ask
from oz0.edge.plugins.manifest import BUDGET_EXHAUSTED, INVALID_INPUT, AgentSpec, FailureKind
from oz0.edge.runtime.progress import Progress

if TYPE_CHECKING:
    from oz0.edge.runtime.budgets import Budgets
    from oz0.edge.runtime.delegation import Delegation
    from oz0.edge.runtime.questions import Answer, Questions

__all__ = [
    "BUILTIN_FAILURES",
    "FAILED_STATUSES",
    "INVALID_RESULT_CONTRACT",
    "Job",
    "JobFailure",
    "JobStatus",
    "REPLY_TO_SHOWN",
    "RunContext",
    "UnknownAgent",
    "failure_code",
    "snake_case",
]

log = logging.getLogger(__name__)

JobStatus = Literal["queued", "running", "waiting", "succeeded", "failed", "interrupted", "skipped"]
FAILED_STATUSES: tuple[str, ...] = ("failed", "interrupted")

INVALID_RESULT_CONTRACT = "InvalidResultContract"
BUILTIN_FAILURES: dict[str, FailureKind] = {f.name: f for f in (
    INVALID_INPUT,
    FailureKind("InvalidOutput", description="The agent's answer does not match its output contract."),
    FailureKind("Timeout", description="The agent did not answer within limits.timeout_s."),
    FailureKind("OutputTooLarge", description="The agent's answer is over limits.max_output_bytes."),
    FailureKind("Crashed", description="The agent raised an error or its process exited abnormally."),
    FailureKind("AgentError", description="The agent reported a failure whose kind it did not declare."),
    FailureKind(INVALID_RESULT_CONTRACT, description="The agent's answer is shaped as a QZX result but breaks "
                                                     "the QZX Result Contract v1."),
    FailureKind("Unavailable", description="The agent's service could not be reached or was overloaded."),
    FailureKind("Rejected", description="The agent's service refused the request."),
    FailureKind("Misconfigured", description="The agent cannot run as configured (a missing key or file).",
                person=True),
    FailureKind("UnknownAgent", description="No installed agent has this name."),
    FailureKind("Interrupted", description="The process running the job stopped before it ended.",
                partial=True),
    FailureKind("Cancelled", description="The run needed its asker's confirmation (a destructive tool) and "
                                         "did not get it; nothing ran.", person=True),
    FailureKind("LimitExceeded", description="The job's tree reached one of its limits (max_steps, max_depth, "
                                             "max_children, tree_timeout_s); what finished is kept.", partial=True),
    BUDGET_EXHAUSTED,
)}


class JobFailure(Exception):
    """How an agent ends a job without an answer: a failure kind (declared, or built in) and a reason
    a person can act on. Raise it from any agent kind; the runtime decides about retries."""

    def __init__(self, kind: str, reason: str, *, partial_output: Any = None) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason
        self.partial_output = partial_output


@dataclass(frozen=True)
class Job:
    """One ask of one agent, as journaled."""

    id: str
    agent: str
    requester: str
    channel: str
    input: str
    status: JobStatus
    output: Any | None
    failure_kind: str | None
    failure_reason: str | None
    created: float
    started: float | None
    ended: float | None
    attempts: int
    dedupe_key: str | None
    reply_to: Mapping[str, Any] | None
    plugin: str | None = None
    plugin_version: str | None = None
    parent_id: str | None = None  # a flow step's job: the flow's job
    contract_hash: str | None = None     # the contract the job ran under (edge.contracts.contract_hash)
    contract_version: str | None = None
    root_id: str | None = None           # the first job of its tree (edge.runtime.tree); None: it is one
    limit_reached: str | None = None     # on a root: the limit that ended its tree
    progress: Mapping[str, Any] | None = None  # the latest progress journaled ({message, done, total})

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed", "interrupted", "skipped")

    @property
    def duration_s(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started

    def to_dict(self) -> dict[str, Any]:
        """The job as JSON-ready data for people and APIs: `reply_to` only where the answer went,
        never the credential a channel keeps to answer (a Discord interaction token, a response_url)."""
        out = {name: getattr(self, name) for name in (
            "id", "agent", "plugin", "plugin_version", "requester", "channel", "input", "status", "output",
            "failure_kind", "failure_reason", "created", "started", "ended", "attempts", "dedupe_key",
            "parent_id", "contract_hash", "contract_version", "progress")}
        out["reply_to"] = ({k: v for k, v in self.reply_to.items() if k in REPLY_TO_SHOWN}
                           if self.reply_to else self.reply_to)
        return out


# What of a job's `reply_to` may be shown: where the answer went. The rest is a credential a chat
# channel keeps to answer, and it stays in the journal.
REPLY_TO_SHOWN = ("platform", "team", "guild", "channel", "user", "thread_ts", "ts")


@dataclass(frozen=True)
class RunContext:
    """What an agent kind gets beside its input: the job, the attempt, and where progress goes."""

    job_id: str
    agent: AgentSpec
    attempt: int
    plugin_path: Path
    on_progress: Callable[[Progress], Any] | None = field(default=None, repr=False)
    questions: "Questions | None" = field(default=None, repr=False)
    delegate: "Delegation | None" = field(default=None, repr=False)
    budgets: "Budgets | None" = field(default=None, repr=False)  # reserves each call (edge.runtime.budgets)
    started: float = field(default_factory=time.monotonic, repr=False)  # the attempt's start (its time limit)

    def progress(self, message: str, done: float | None = None, total: float | None = None) -> None:
        """Report what the job does now (a command's stderr line, a model's step, `done` of `total`
        items); never fails the job. Every sink gets one `Progress` (edge.runtime.progress)."""
        if self.on_progress is None:
            return
        try:
            self.on_progress(Progress.of(message, done, total))
        except Exception:  # a broken progress sink must not end the agent's work
            log.exception("progress callback failed for job %s", self.job_id)


    async def ask(self, agent: str, input: Any) -> Any:
        """Delegate: run `agent` on `input` (text, or JSON data) as a child job of this one, under this
        tree's limits, and return its output; raises JobFailure with the child's kind and reason."""
        if self.delegate is None:
            raise RuntimeError("this run has no runtime to delegate through")
        return await self.delegate.ask(agent, input)

    def ask_sync(self, agent: str, input: Any) -> Any:
        """`ask` for a sync agent (a python agent running in its own thread): blocks that thread."""
        if self.delegate is None:
            raise RuntimeError("this run has no runtime to delegate through")
        return self.delegate.ask_sync(agent, input)

    def can_ask_person(self) -> bool:
        """Whether a channel here draws this job's questions (MCP declares elicitation only then)."""
        return self.questions is not None and self.questions.can_ask_job(self.job_id)

    async def ask_person(self, message: str, answer_schema: Mapping[str, Any] | None = None, *,
                         step: str | None = None, answerers: Mapping[str, Any] | None = None,
                         timeout_s: float | None = None, source: str | None = None) -> "Answer":
        """Pause the job to ask someone (a person step) and wait for the answer, in the job's own call:
        not durable, a restart ends the job interrupted. `answerers` default to the asker; `timeout_s`
        to the agent's limits.timeout_s (then the answer's action is "timeout"). A python agent asks
        only what its file declares under `asks:` (the step, and its answer schema when none is given)."""
        schema, step = self._declared(answer_schema, step)
        return await self.runtime_ask(message, schema, step=step, answerers=answerers, timeout_s=timeout_s,
                                      source=source)

    def ask_person_sync(self, message: str, answer_schema: Mapping[str, Any] | None = None, *,
                        step: str | None = None, answerers: Mapping[str, Any] | None = None,
                        timeout_s: float | None = None, source: str | None = None) -> "Answer":
        """`ask_person` for a sync agent (a python agent running in its own thread): blocks that thread."""
        schema, step = self._declared(answer_schema, step)
        question, wait = self._question(message, schema, step, answerers, timeout_s, source)
        self._book().ask(question)
        return self._book().wait(self.job_id, question.step, timeout_s=wait)

    async def runtime_ask(self, message: str, answer_schema: Mapping[str, Any], *, step: str | None = None,
                          answerers: Mapping[str, Any] | None = None, timeout_s: float | None = None,
                          source: str | None = None) -> "Answer":
        """A person step the runtime itself takes for the job (a budget's allowance, an MCP elicitation),
        which no agent file declares."""
        question, wait = self._question(message, answer_schema, step, answerers, timeout_s, source)
        self._book().ask(question)
        return await self._book().wait_async(self.job_id, question.step, timeout_s=wait)

    def _declared(self, answer_schema: Mapping[str, Any] | None,
                  step: str | None) -> tuple[Mapping[str, Any], str | None]:
        """The answer schema and step of an agent's ask: for a python agent, as its `asks:` declares
        (JobFailure Misconfigured naming the key to add otherwise)."""
        if self.agent.kind != "python":
            if answer_schema is None:
                raise JobFailure("Misconfigured", "ctx.ask_person needs an answer schema")
            return answer_schema, step
        ask = declared_ask(self.agent.name, self.agent.file, self.agent.asks, step, answer_schema)
        if isinstance(ask, str):
            raise JobFailure("Misconfigured", ask)
        return ask.answer_schema.schema, ask.step

    def _book(self) -> "Questions":
        if self.questions is None:
            raise RuntimeError("this run has no runtime to ask a person through")
        return self.questions

    def _question(self, message: str, answer_schema: dict[str, Any], step: str | None,
                  answerers: Mapping[str, Any] | None, timeout_s: float | None,
                  source: str | None) -> tuple[Any, float]:
        import time

        from oz0.edge.runtime.questions import Question

        wait = float(timeout_s if timeout_s is not None else self.agent.limits.timeout_s)
        step = step or f"ask-{self._book().count(self.job_id) + 1}"
        return Question(job_id=self.job_id, step=step, message=message, answer_schema=dict(answer_schema),
                        answerers=dict(answerers or {}), expires_at=time.time() + wait, source=source), wait


def snake_case(name: str) -> str:
    """`InvalidInput` -> `invalid_input`: a failure kind as a QZX error_code."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


_ERROR_CODE = re.compile(r"[a-z][a-z0-9_]*")


def failure_code(job: "Job") -> str:
    """The error_code a failed job shows (card header, `oz0 run --json`, the API): the agent's own QZX
    `error_code` for a failure it reported without declaring its kind (AgentError), else its kind's."""
    kind = job.failure_kind or "Failed"
    own = job.output.get("error_code") if kind == "AgentError" and isinstance(job.output, dict) else None
    return own if isinstance(own, str) and _ERROR_CODE.fullmatch(own) else snake_case(kind)


class UnknownAgent(ValueError):
    """No installed agent has this name; the message lists the ones there are."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        listing = ", ".join(known) if known else "none installed; try `oz0 plugin install DIR`"
        super().__init__(f"no agent named {name!r}; installed agents: {listing}")
