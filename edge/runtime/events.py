"""What happens to a job, as values: the events of its stream (edge.runtime.event_stream).

A job's stream carries, in the order they happened: `Progress` (edge.runtime.progress), `QuestionAsked`
and `Answered` (a person step), `TextDelta` (a piece of a streamed text answer) and, last, `JobEnded`.
`StopAsked` says someone asked to stop the job (edge.runtime.cancel): the replica running it stops it.
`Lagged` is not something the job did: it tells a reader that fell behind how many events it missed
(the stream is bounded per reader); the reader then gets the job's current state again.

Each event is a frozen dataclass; `encode` and `decode` turn one into JSON data and back, for the
backends that carry events between processes (Postgres NOTIFY).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oz0.edge.model.progress import Progress
from oz0.edge.runtime.questions import Answer, Question

__all__ = ["Answered", "JobEnded", "JobEvent", "Lagged", "QuestionAsked", "StopAsked", "TextDelta", "decode",
           "encode"]


@dataclass(frozen=True)
class QuestionAsked:
    """The job paused to ask someone (a flow's person step, an elicitation, a confirmation)."""

    question: Question


@dataclass(frozen=True)
class Answered:
    """A question of the job was answered (by a person, or closed by a timeout or a stop); `via` is
    the channel whose own control took it (a chat platform's button: it updated its card itself)."""

    step: str
    answer: Answer
    via: str | None = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of a text answer while it is written (a model's stream): `offset` is where `text`
    starts in the whole answer, so a reader that missed a piece knows it did; `final` says the model's
    request ended there (what came is whole: nothing is held back for the next piece)."""

    text: str
    offset: int = 0
    final: bool = False


@dataclass(frozen=True)
class JobEnded:
    """The job ended: the last event of its stream."""

    status: str
    failure_kind: str | None = None


@dataclass(frozen=True)
class StopAsked:
    """Someone asked to stop the job (`by` as journaled, `name` as people read it): wherever it runs,
    its run is cancelled and it ends `cancelled`."""

    by: str
    name: str


@dataclass(frozen=True)
class Lagged:
    """The reader fell behind and `dropped` events were dropped for it (oldest first)."""

    dropped: int


JobEvent = Progress | QuestionAsked | Answered | TextDelta | JobEnded | StopAsked | Lagged


def encode(event: JobEvent) -> dict[str, Any]:
    """The event as JSON data, `type` first."""
    if isinstance(event, Progress):
        return {"type": "progress", **event.to_dict()}
    if isinstance(event, QuestionAsked):
        q = event.question
        return {"type": "question", "job_id": q.job_id, "step": q.step, "message": q.message,
                "answer_schema": q.answer_schema, "answerers": q.answerers, "expires_at": q.expires_at,
                "source": q.source}
    if isinstance(event, Answered):
        return {"type": "answered", "step": event.step, "via": event.via, **event.answer.to_dict()}
    if isinstance(event, TextDelta):
        return {"type": "text", "text": event.text, "offset": event.offset, **({"final": True} if event.final else {})}
    if isinstance(event, JobEnded):
        return {"type": "ended", "status": event.status, "failure_kind": event.failure_kind}
    if isinstance(event, StopAsked):
        return {"type": "stop", "by": event.by, "name": event.name}
    if isinstance(event, Lagged):
        return {"type": "lagged", "dropped": event.dropped}
    raise TypeError(f"not a job event: {type(event).__name__}")


def decode(data: Mapping[str, Any]) -> JobEvent:
    """An event from `encode`'s data; ValueError naming the type or field that is wrong."""
    kind = data.get("type")
    try:
        if kind == "progress":
            return Progress.of(data.get("message"), data.get("done"), data.get("total"))
        if kind == "question":
            return QuestionAsked(Question(job_id=str(data["job_id"]), step=str(data["step"]),
                                          message=str(data["message"]), answer_schema=dict(data["answer_schema"]),
                                          answerers=dict(data.get("answerers") or {}),
                                          expires_at=data.get("expires_at"), source=data.get("source")))
        if kind == "answered":
            return Answered(str(data["step"]), Answer(action=data["action"], content=data.get("content"),
                                                      by=str(data.get("by") or ""), at=float(data.get("at") or 0.0)),
                            data.get("via"))
        if kind == "text":
            return TextDelta(str(data["text"]), int(data.get("offset") or 0), bool(data.get("final")))
        if kind == "ended":
            return JobEnded(str(data["status"]), data.get("failure_kind"))
        if kind == "stop":
            return StopAsked(str(data["by"]), str(data["name"]))
        if kind == "lagged":
            return Lagged(int(data["dropped"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"a {kind} event lacks or mistypes {exc}") from None
    raise ValueError(f"unknown job event type {kind!r}")
