"""Where a job meets its trace: the trace context journaled with it when it is asked, and the span its
run makes on whichever replica runs it (a flow's step job is a child of its flow's job)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from oz0.edge import tracing
from oz0.edge.model.job import Job
from oz0.edge.runtime.recovery import runner_id

__all__ = ["ask_trace", "job_span"]


def ask_trace() -> dict[str, str] | None:
    """The trace context a new job carries: the current span's (a chat event, a flow's job), or a new
    trace's for an ask with none (the CLI, the API); None when tracing is off."""
    if not tracing.enabled():
        return None
    found = tracing.carrier()
    if found:
        return found
    with tracing.span("oz0.ask"):
        return tracing.carrier()


@contextlib.contextmanager
def job_span(job: Job) -> Iterator[tracing.SpanNote]:
    """The span of one run of `job`, in its ask's trace, with the job known to every log line inside."""
    name = "oz0.step" if job.parent_id else "oz0.job"
    with tracing.job_known(job.id, job.agent), tracing.span(
            name, parent=job.trace_context, job_id=job.id, agent=job.agent, plugin=job.plugin,
            parent_job=job.parent_id, replica=runner_id().split(":")[0]) as note:
        yield note
