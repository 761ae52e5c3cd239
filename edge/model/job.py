"""What a job is and how it fails: Job, JobFailure and the built-in failure kinds.

At the ground floor so that every floor above (documents, agent kinds, the runtime, flows) can read them;
what an agent kind gets beside its input is edge.runtime.context.RunContext.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oz0.edge.errors import Oz0Error
from oz0.edge.model.agent import BUDGET_EXHAUSTED, INVALID_INPUT, FailureKind
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.tracing import trace_id_of

__all__ = [
    "BUILTIN_FAILURES",
    "FAILED_STATUSES",
    "INVALID_RESULT_CONTRACT",
    "Job",
    "JobFailure",
    "JobStatus",
    "UnknownAgent",
    "failure_code",
    "snake_case",
]

JobStatus = Literal["queued", "running", "waiting", "succeeded", "failed", "interrupted", "skipped", "cancelled"]
FAILED_STATUSES: tuple[str, ...] = ("failed", "interrupted", "cancelled")  # cancelled: stopped by a person

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
    FailureKind("Cancelled", description="A person stopped the job (oz0 jobs cancel, the API, a Stop button), "
                                         "or its run needed its asker's confirmation (a destructive tool) and "
                                         "did not get it.", person=True),
    FailureKind("LimitExceeded", description="The job's tree reached one of its limits (max_steps, max_depth, "
                                             "max_children, tree_timeout_s); what finished is kept.", partial=True),
    BUDGET_EXHAUSTED,
)}


class JobFailure(Oz0Error):
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
    reply_to: ReplyRef | None            # where the answer goes, opaque to the edge (edge.model.reply_ref)
    plugin: str | None = None
    plugin_version: str | None = None
    parent_id: str | None = None  # a flow step's job: the flow's job
    contract_hash: str | None = None     # the contract the job ran under (edge.documents.contract_hash)
    contract_version: str | None = None
    root_id: str | None = None           # the first job of its tree (edge.runtime.tree); None: it is one
    limit_reached: str | None = None     # on a root: the limit that ended its tree
    progress: Mapping[str, Any] | None = None  # the latest progress journaled ({message, done, total})
    workspace: str | None = None         # the asker's workspace (a Slack team, a Discord guild)
    channel_id: str | None = None        # the asker's channel on its platform
    question_shown: Mapping[str, Any] | None = None  # where its open question is shown (its channel's words)
    trace_context: Mapping[str, str] | None = None  # its ask's W3C trace context (edge/tracing.py), when traced

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed", "interrupted", "skipped", "cancelled")

    @property
    def duration_s(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return self.ended - self.started

    @property
    def trace_id(self) -> str | None:
        """The trace of the ask that made this job (32 hex digits), when tracing was on."""
        return trace_id_of(self.trace_context)

    @property
    def platform(self) -> str:
        """Where the job was asked: its reply reference's platform (slack, discord), else its channel
        (api, console, cli)."""
        return self.reply_to.platform if self.reply_to is not None else self.channel

    def to_dict(self) -> dict[str, Any]:
        """The job as JSON-ready data for people and APIs: `reply_to` only where the answer went (the
        platform, the asker's workspace and channel), never the reference's data (a channel's
        credential to answer: a Discord interaction token, a response_url)."""
        out = {name: getattr(self, name) for name in (
            "id", "agent", "plugin", "plugin_version", "requester", "channel", "input", "status", "output",
            "failure_kind", "failure_reason", "created", "started", "ended", "attempts", "dedupe_key",
            "parent_id", "contract_hash", "contract_version", "progress", "trace_id")}
        shown = {"platform": self.platform, "workspace": self.workspace, "channel": self.channel_id}
        out["reply_to"] = {k: v for k, v in shown.items() if v is not None} if self.reply_to is not None else None
        return out


def snake_case(name: str) -> str:
    """`InvalidInput` -> `invalid_input`: a failure kind as a QZX error_code."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


_ERROR_CODE = re.compile(r"[a-z][a-z0-9_]*")


def failure_code(job: Job) -> str:
    """The error_code a failed job shows (card header, `oz0 run --json`, the API): the agent's own QZX
    `error_code` for a failure it reported without declaring its kind (AgentError), else its kind's."""
    kind = job.failure_kind or "Failed"
    own = job.output.get("error_code") if kind == "AgentError" and isinstance(job.output, dict) else None
    return own if isinstance(own, str) and _ERROR_CODE.fullmatch(own) else snake_case(kind)


class UnknownAgent(Oz0Error, ValueError):
    """No installed agent has this name; the message lists the ones there are."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        listing = ", ".join(known) if known else "none installed; try `oz0 plugin install DIR`"
        super().__init__(f"no agent named {name!r}; installed agents: {listing}")
