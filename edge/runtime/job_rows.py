"""A journal row as a `Job`: one reading of the jobs table, shared by the journal (edge.runtime.jobs)
and the event stream (edge.runtime.event_stream), which reads a job's state without the journal
service so that neither has to be built before the other."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from oz0.edge.model.job import Job
from oz0.edge.model.reply_ref import ReplyRef, ReplyRefError

__all__ = ["job_from_row"]

log = logging.getLogger(__name__)


def job_from_row(row: Mapping[str, Any]) -> Job:
    """The job a journal row holds."""
    return Job(
        id=row["id"], agent=row["agent"], requester=row["requester"], channel=row["channel"],
        input=row["input"], status=row["status"], output=row.get("output"), failure_kind=row.get("failure_kind"),
        failure_reason=row.get("failure_reason"), created=row["created"], started=row.get("started"),
        ended=row.get("ended"), attempts=row.get("attempts") or 0, dedupe_key=row.get("dedupe_key"),
        reply_to=_reply_ref(row), plugin=row.get("plugin"), plugin_version=row.get("plugin_version"),
        parent_id=row.get("parent_id"), contract_hash=row.get("contract_hash"),
        contract_version=row.get("contract_version"), root_id=row.get("root_id"),
        limit_reached=row.get("limit_reached"), progress=row.get("progress"), workspace=row.get("workspace"),
        channel_id=row.get("channel_id"), question_shown=row.get("question_shown"),
        trace_context=row.get("trace_context"),
    )


def _reply_ref(row: Mapping[str, Any]) -> ReplyRef | None:
    """The job's reply reference; one that cannot be read is logged and left out (its card then has
    nowhere to go, which the delivery says), never guessed at."""
    raw = row.get("reply_to")
    if raw is None:
        return None
    try:
        return ReplyRef.from_json(raw)
    except ReplyRefError as exc:
        log.error("job %s has a reply reference that cannot be read: %s", row.get("id"), exc)
        return None
