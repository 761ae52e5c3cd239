"""Retention: finished jobs older than `jobs_days` go, with their questions, model/tool trace (job_trace),
conversation turns and per-job budget rows; audit records older than `audit_days` go. Nothing else deletes from the journal (a plugin has no way to).

The settings are the server's (`OZ0_RETENTION_JOBS_DAYS`, default 90; `OZ0_RETENTION_AUDIT_DAYS`,
default 365, never shorter than the jobs'). A prune deletes in batches of BATCH jobs (or audit
records), one short transaction each, so a request waiting on a row waits for one batch at most, and
pauses `OZ0_RETENTION_PAUSE_MS` (default 100) between two, so the requests served beside it keep their pace;
a job still queued, running or waiting is never pruned however old. `oz0 db prune --dry-run` counts
what a prune would remove; `oz0 serve` prunes daily (PRUNE_CRON, a DBOS schedule in edge.runtime.durable: one run a tick
across replicas).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import ColumnElement, String, Table, delete, func, literal, select, tuple_
from sqlalchemy.engine import Engine

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
DEFAULT_PAUSE_MS = 100.0
MAX_PAUSE_MS = 10_000.0
PRUNE_CRON = "0 17 3 * * *"  # every day at 03:17:00 UTC (DBOS's cron: seconds first)
TABLES = ("jobs", "questions", "job_trace", "conversation_turns", "budget_holds", "budget_grants", "budgets", "audit")


class RetentionError(ValueError, Oz0Error):
    """A retention setting that cannot be used; the message names the variable."""


@dataclass(frozen=True)
class Retention:
    jobs_days: float = DEFAULT_JOBS_DAYS
    audit_days: float = DEFAULT_AUDIT_DAYS
    pause_ms: float = DEFAULT_PAUSE_MS

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Retention:
        jobs_days = _days(env, "OZ0_RETENTION_JOBS_DAYS", DEFAULT_JOBS_DAYS)
        audit_days = _days(env, "OZ0_RETENTION_AUDIT_DAYS", DEFAULT_AUDIT_DAYS)
        if audit_days < jobs_days:
            raise RetentionError(f"OZ0_RETENTION_AUDIT_DAYS={audit_days:g} is shorter than OZ0_RETENTION_JOBS_DAYS="
                                 f"{jobs_days:g}: the audit log is kept at least as long as the jobs it speaks of")
        return cls(jobs_days, audit_days, _pause_ms(env, "OZ0_RETENTION_PAUSE_MS"))


def _number(env: Mapping[str, str], name: str, default: float, unit: str, low: float, high: float, rule: str) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise RetentionError(f"{name}={text[:50]!r} is not a number of {unit}") from None
    if not low <= value <= high:
        raise RetentionError(f"{name}={text[:50]!r}: {rule}")
    return value


def _days(env: Mapping[str, str], name: str, default: float) -> float:
    return _number(env, name, default, "days", 1, math.inf, "keep at least 1 day")


def _pause_ms(env: Mapping[str, str], name: str) -> float:
    return _number(env, name, DEFAULT_PAUSE_MS, "milliseconds", 0, MAX_PAUSE_MS,
                   f"a pause between batches is 0 to {MAX_PAUSE_MS:,.0f} ms")


def _old_jobs(cutoff: float) -> ColumnElement[bool]:
    return (jobs.c.created < cutoff) & jobs.c.status.notin_(ACTIVE_STATUSES)


def _per_job(old: ColumnElement[bool]) -> dict[Table, ColumnElement[bool]]:
    """Each table's rows that go with the jobs `old` matches, in an order they can be deleted in (a hold or
    grant before its budget, the jobs last: the others' subqueries read them)."""
    ids = select(jobs.c.id).where(old)
    per_job = select(budgets.c.id).where(budgets.c.period.in_(select(literal("job:", String) + jobs.c.id).where(old)))
    return {
        questions: questions.c.job_id.in_(ids),
        job_trace: job_trace.c.job_id.in_(ids),
        conversation_turns: conversation_turns.c.job_id.in_(ids),
        budget_holds: budget_holds.c.job_id.in_(ids) | budget_holds.c.budget_id.in_(per_job),
        budget_grants: budget_grants.c.root_id.in_(ids) | budget_grants.c.budget_id.in_(per_job),
        budgets: budgets.c.id.in_(per_job),
        jobs: old,
    }


def count(engine: Engine, policy: Retention, *, now: float | None = None) -> dict[str, int]:
    """How many rows of each table a prune would remove now."""
    now = time.time() if now is None else now
    where = {**_per_job(_old_jobs(now - policy.jobs_days * DAY_S)), audit: audit.c.at < now - policy.audit_days * DAY_S}
    with engine.connect() as conn:
        counted = {t.name: int(conn.execute(select(func.count()).select_from(t).where(w)).scalar() or 0)
                   for t, w in where.items()}
    return {name: counted[name] for name in TABLES}


def prune(engine: Engine, policy: Retention, *, now: float | None = None, batch: int = BATCH) -> dict[str, int]:
    """Delete what retention no longer keeps, `batch` jobs (or audit records) per transaction, `policy.pause_ms`
    apart; the rows removed per table.

    Every delete runs inside the database (`DELETE ... WHERE job_id IN (SELECT ...)`): no row id comes back
    to Python, so a batch costs this process a few statements whatever its size and the GIL stays free for
    the requests served beside it. A batch is a range of the (created, id) index, from the end of the last
    one to its `batch`-th old job (one row read), so each of its statements sees the same jobs and none
    scans again what the batches before it deleted."""
    now = time.time() if now is None else now
    removed = dict.fromkeys(TABLES, 0)
    old = _old_jobs(now - policy.jobs_days * DAY_S)
    after: tuple[float, str] | None = None
    while True:
        with engine.begin() as conn:
            since = old if after is None else old & (tuple_(jobs.c.created, jobs.c.id) > tuple_(*after))
            upto = conn.execute(select(jobs.c.created, jobs.c.id).where(since).order_by(jobs.c.created, jobs.c.id)
                                .offset(batch - 1).limit(1)).first()
            in_batch = since if upto is None else since & (tuple_(jobs.c.created, jobs.c.id) <= tuple_(*upto))
            for table, where in _per_job(in_batch).items():
                removed[table.name] += conn.execute(delete(table).where(where)).rowcount
        if upto is None:
            break
        after = (upto.created, upto.id)
        _pause(policy)
    audit_cutoff = now - policy.audit_days * DAY_S
    while True:
        with engine.begin() as conn:
            gone = conn.execute(delete(audit).where(audit.c.id.in_(
                select(audit.c.id).where(audit.c.at < audit_cutoff).order_by(audit.c.id).limit(batch)))).rowcount
        removed["audit"] += gone
        if gone < batch:
            return removed
        _pause(policy)


def _pause(policy: Retention) -> None:
    """Between two batches: the requests served beside the prune get the database (and the GIL) to themselves."""
    time.sleep(policy.pause_ms / 1000)


def prune_by_settings(engine: Engine) -> dict[str, int]:
    """The scheduled prune: the server's settings read now (so a changed setting applies at the next tick)."""
    policy = Retention.from_env(os.environ)
    removed = prune(engine, policy)
    log.info("retention (jobs %g days, audit %g days) removed %s", policy.jobs_days, policy.audit_days,
             ", ".join(f"{n} {table}" for table, n in removed.items()))
    return removed
