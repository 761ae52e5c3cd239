"""Retention: finished jobs older than `jobs_days` go, with their questions, model/tool trace (job_trace),
conversation turns and per-job budget rows; audit records older than `audit_days` go. Nothing else deletes from the journal (a plugin has no way to).

The settings are the server's (`OZ0_RETENTION_JOBS_DAYS`, default 90; `OZ0_RETENTION_AUDIT_DAYS`,
default 365, never shorter than the jobs'). A prune deletes in batches of BATCH jobs (or audit
records), one short transaction each, so a request waiting on a row waits for one batch at most;
a job still queued, running or waiting is never pruned however old. `oz0 db prune --dry-run` counts
what a prune would remove; `oz0 serve` prunes daily (PRUNE_CRON, a DBOS schedule in edge.runtime.durable: one run a tick
across replicas).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import Select, String, Subquery, Table, delete, func, literal, select
from sqlalchemy.engine import Connection, Engine

from oz0.edge.errors import Oz0Error
from oz0.edge.runtime.budget_tables import budget_grants, budget_holds, budgets
from oz0.edge.runtime.conversations import conversation_turns
from oz0.edge.runtime.loop_trace import job_trace
from oz0.edge.runtime.store import ACTIVE_STATUSES, audit, jobs, questions

__all__ = ["BATCH", "PRUNE_CRON", "Retention", "RetentionError", "count", "prune", "prune_by_settings"]

log = logging.getLogger("oz0.retention")

BATCH = 1_000
DAY_S = 86_400.0
DEFAULT_JOBS_DAYS = 90
DEFAULT_AUDIT_DAYS = 365
PRUNE_CRON = "0 17 3 * * *"  # every day at 03:17:00 UTC (DBOS's cron: seconds first)
TABLES = ("jobs", "questions", "job_trace", "conversation_turns", "budget_holds", "budget_grants", "budgets", "audit")


class RetentionError(ValueError, Oz0Error):
    """A retention setting that cannot be used; the message names the variable."""


@dataclass(frozen=True)
class Retention:
    jobs_days: float = DEFAULT_JOBS_DAYS
    audit_days: float = DEFAULT_AUDIT_DAYS

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Retention:
        jobs_days = _days(env, "OZ0_RETENTION_JOBS_DAYS", DEFAULT_JOBS_DAYS)
        audit_days = _days(env, "OZ0_RETENTION_AUDIT_DAYS", DEFAULT_AUDIT_DAYS)
        if audit_days < jobs_days:
            raise RetentionError(f"OZ0_RETENTION_AUDIT_DAYS={audit_days:g} is shorter than OZ0_RETENTION_JOBS_DAYS="
                                 f"{jobs_days:g}: the audit log is kept at least as long as the jobs it speaks of")
        return cls(jobs_days, audit_days)


def _days(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise RetentionError(f"{name}={text[:50]!r} is not a number of days") from None
    if not value >= 1:
        raise RetentionError(f"{name}={text[:50]!r}: keep at least 1 day")
    return value


def _old_jobs(cutoff: float, limit: int | None = None) -> Select[str]:
    query = select(jobs.c.id).where(jobs.c.created < cutoff, jobs.c.status.notin_(ACTIVE_STATUSES))
    return query.limit(limit) if limit is not None else query


def _job_budgets(ids: Subquery) -> Select[int]:
    return select(budgets.c.id).where(budgets.c.period.in_(select(literal("job:", String) + ids.c.id)))


def count(engine: Engine, policy: Retention, *, now: float | None = None) -> dict[str, int]:
    """How many rows of each table a prune would remove now."""
    now = time.time() if now is None else now
    old = _old_jobs(now - policy.jobs_days * DAY_S).subquery()
    per_job = _job_budgets(old).subquery()
    queries: dict[str, object] = {
        "jobs": select(func.count()).select_from(old),
        "questions": select(func.count()).where(questions.c.job_id.in_(select(old.c.id))),
        "job_trace": select(func.count()).where(job_trace.c.job_id.in_(select(old.c.id))),
        "conversation_turns": select(func.count()).where(conversation_turns.c.job_id.in_(select(old.c.id))),
        "budget_holds": select(func.count()).where(
            budget_holds.c.job_id.in_(select(old.c.id)) | budget_holds.c.budget_id.in_(select(per_job.c.id))),
        "budget_grants": select(func.count()).where(
            budget_grants.c.root_id.in_(select(old.c.id)) | budget_grants.c.budget_id.in_(select(per_job.c.id))),
        "budgets": select(func.count()).select_from(per_job),
        "audit": select(func.count()).where(audit.c.at < now - policy.audit_days * DAY_S),
    }
    with engine.connect() as conn:
        return {name: int(conn.execute(q).scalar() or 0) for name, q in queries.items()}  # type: ignore[call-overload]


def prune(engine: Engine, policy: Retention, *, now: float | None = None, batch: int = BATCH) -> dict[str, int]:
    """Delete what retention no longer keeps, `batch` jobs (or audit records) per transaction; the rows
    removed per table."""
    now = time.time() if now is None else now
    removed = dict.fromkeys(TABLES, 0)
    cutoff = now - policy.jobs_days * DAY_S
    while True:
        with engine.begin() as conn:
            ids = list(conn.execute(_old_jobs(cutoff, batch)).scalars())
            if ids:
                _prune_jobs(conn, ids, removed)
        if len(ids) < batch:
            break
    audit_cutoff = now - policy.audit_days * DAY_S
    while True:
        with engine.begin() as conn:
            ids = list(conn.execute(select(audit.c.id).where(audit.c.at < audit_cutoff).limit(batch)).scalars())
            if ids:
                removed["audit"] += conn.execute(delete(audit).where(audit.c.id.in_(ids))).rowcount
        if len(ids) < batch:
            return removed


def _prune_jobs(conn: Connection, ids: list[str], removed: dict[str, int]) -> None:
    per_job = list(conn.execute(select(budgets.c.id).where(budgets.c.period.in_([f"job:{i}" for i in ids])))
                   .scalars())

    def gone(table: Table, *conditions: object) -> None:
        removed[table.name] += conn.execute(delete(table).where(*conditions)).rowcount  # type: ignore[arg-type]

    gone(questions, questions.c.job_id.in_(ids))
    gone(job_trace, job_trace.c.job_id.in_(ids))
    gone(conversation_turns, conversation_turns.c.job_id.in_(ids))
    gone(budget_holds, budget_holds.c.job_id.in_(ids) | budget_holds.c.budget_id.in_(per_job))
    gone(budget_grants, budget_grants.c.root_id.in_(ids) | budget_grants.c.budget_id.in_(per_job))
    gone(budgets, budgets.c.id.in_(per_job))
    gone(jobs, jobs.c.id.in_(ids))


def prune_by_settings(engine: Engine) -> dict[str, int]:
    """The scheduled prune: the server's settings read now (so a changed setting applies at the next tick)."""
    policy = Retention.from_env(os.environ)
    removed = prune(engine, policy)
    log.info("retention (jobs %g days, audit %g days) removed %s", policy.jobs_days, policy.audit_days,
             ", ".join(f"{n} {table}" for table, n in removed.items()))
    return removed
