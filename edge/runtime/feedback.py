"""Feedback on answers: a person's 👍 / 👎 under a card, audited as `job.feedback` (one per person per
job: a durable claim), counted from the journal so every replica's `/metrics`
(`oz0_feedback_total{agent,value}`) and the console's agent page say the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import select

from oz0.edge.runtime.store import audit

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime
    from oz0.edge.runtime.store import Store

__all__ = ["FEEDBACK_ACTION", "FEEDBACK_VALUES", "FeedbackCollector", "feedback_counts", "give_feedback"]

FEEDBACK_ACTION = "job.feedback"
FEEDBACK_VALUES = ("good", "bad")
MAX_FEEDBACK_ROWS = 100_000     # feedback records a count reads, newest first (memory stays bounded)


def give_feedback(runtime: Runtime, job_id: str, value: str, *, by: str, platform: str) -> str | None:
    """Record `by`'s feedback on a job's answer; None, or why it was not taken (for the clicker)."""
    if value not in FEEDBACK_VALUES:
        return f"Feedback is one of {', '.join(FEEDBACK_VALUES)}, not {value[:20]!r}."
    job = runtime.job(job_id)
    if job is None or not job.finished:
        return "This answer is no longer in the journal."
    if not runtime.claim(f"feedback:{job.id}:{by}"):
        return "You gave feedback on this answer already."
    runtime.audit(FEEDBACK_ACTION, actor=by, detail={"job": job.id, "agent": job.agent, "value": value,
                                                    "platform": platform})
    return None


def feedback_counts(store: Store, *, agent: str | None = None) -> dict[tuple[str, str], int]:
    """(agent, value) -> how many, from the audit log."""
    with store.engine.connect() as conn:
        rows = conn.execute(select(audit.c.detail).where(audit.c.action == FEEDBACK_ACTION)
                            .order_by(audit.c.id.desc()).limit(MAX_FEEDBACK_ROWS)).scalars().all()
    counts: dict[tuple[str, str], int] = {}
    for detail in rows:
        key = (str(detail.get("agent", "")), str(detail.get("value", "")))
        if agent is None or key[0] == agent:
            counts[key] = counts.get(key, 0) + 1
    return counts


class FeedbackCollector(Collector):
    """`oz0_feedback_total{agent,value}` at each scrape, from the journal."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily("oz0_feedback", "Feedback people gave on answers (👍 good, 👎 bad), by "
                                     "agent, from the journal.", labels=["agent", "value"])
        for (agent, value), n in sorted(feedback_counts(self.store).items()):
            family.add_metric([agent, value], n)
        yield family
