"""Retention: finished jobs older than `jobs_days` go, with their questions, model/tool trace (job_trace),
conversation turns and per-job budget rows; audit records older than `audit_days` go. Nothing else deletes from the journal (a plugin has no way to).

The settings are the server's (`OZ0_RETENTION_JOBS_DAYS`, default 90; `OZ0_RETENTION_AUDIT_DAYS`,
default 365, never shorter than the jobs'). A prune deletes in batches of at most BATCH jobs (or audit
records), one short transaction each, so a request waiting on a row waits for one batch at most: batches
start at FIRST_BATCH jobs and grow while quick, a batch that took longer than BATCH_MS makes the next one
smaller (a loaded database gets smaller bites), and on
Postgres each batch gives up on a lock after LOCK_TIMEOUT_MS and on a statement after STATEMENT_TIMEOUT_MS
(its range is then retried in halves, down to MIN_BATCH jobs, then left for the next prune). It pauses
`OZ0_RETENTION_PAUSE_MS` (default 100) between two, so the requests served beside it keep their pace;
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

from sqlalchemy import ColumnElement, String, Table, delete, func, literal, select, text, tuple_
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError

from oz0.edge.errors import Oz0Error
from oz0.edge.runtime.budget_tables import budget_grants, budget_holds, budgets
from oz0.edge.runtime.conversations import conversation_turns
from oz0.edge.runtime.loop_trace import job_trace
from oz0.edge.runtime.store import ACTIVE_STATUSES, audit, jobs, questions

__all__ = ["BATCH", "PRUNE_CRON", "Retention", "RetentionError", "count", "prune", "prune_by_settings"]

log = logging.getLogger("oz0.retention")

BATCH = 1_000
MIN_BATCH = 50
FIRST_BATCH = 100  # a prune starts small and grows while its batches stay quick
BATCH_MS = 50.0  # a batch's transaction should take no longer; a slower one makes the next smaller
LOCK_TIMEOUT_MS = 200  # Postgres: a batch waits no longer on a row another transaction holds
STATEMENT_TIMEOUT_MS = 5_000  # Postgres: nor on one of its statements
_GAVE_UP = ("55P03", "57014")  # Postgres: lock_not_available (lock_timeout), query_canceled (statement_timeout)
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
    size = min(batch, FIRST_BATCH)
    while True:
        began = time.perf_counter()
        since = old if after is None else old & (tuple_(jobs.c.created, jobs.c.id) > tuple_(*after))
        try:
            with engine.begin() as conn:
                _bounded(conn)
                upto = _batch_end(conn, since, size)
                in_batch = since if upto is None else since & (tuple_(jobs.c.created, jobs.c.id) <= tuple_(*upto))
                gone = {table.name: conn.execute(delete(table).where(where)).rowcount
                        for table, where in _per_job(in_batch).items()}
        except OperationalError as exc:
            if _code(exc) not in _GAVE_UP:
                raise
            if size > min(MIN_BATCH, batch):
                size = max(min(MIN_BATCH, batch), size // 2)
                log.info("retention: a batch gave up waiting (%s); retrying its jobs %d at a time", _code(exc), size)
                _pause(policy)
                continue
            with engine.connect() as conn:
                upto = _batch_end(conn, since, size)
            log.warning("retention: %d jobs after %s left for the next prune: their batch gave up waiting (%s)",
                        size, after, _code(exc))
            gone = {}
        for name, n in gone.items():
            removed[name] += n
        took_ms = (time.perf_counter() - began) * 1000
        log.debug("retention: a batch of %d jobs (at most %d) in %.1f ms", gone.get("jobs", 0), size, took_ms)
        if upto is None:
            break
        after = upto
        size = _next_size(size, took_ms, batch)
        _pause(policy)
    audit_cutoff = now - policy.audit_days * DAY_S
    while True:
        with engine.begin() as conn:
            _bounded(conn)
            gone_audit = conn.execute(delete(audit).where(audit.c.id.in_(
                select(audit.c.id).where(audit.c.at < audit_cutoff).order_by(audit.c.id).limit(batch)))).rowcount
        removed["audit"] += gone_audit
        if gone_audit < batch:
            return removed
        _pause(policy)


def _next_size(size: int, took_ms: float, batch: int) -> int:
    """The next batch's size: scaled down to BATCH_MS by the last one's time, grown back by half when it
    was quick; from min(MIN_BATCH, batch) to `batch` jobs."""
    if took_ms > BATCH_MS:
        wanted = int(size * BATCH_MS / took_ms)
    elif took_ms < BATCH_MS / 2:
        wanted = size + size // 2 + 1
    else:
        wanted = size
    return max(min(MIN_BATCH, batch), min(batch, wanted))


def _bounded(conn: Connection) -> None:
    """On Postgres, this batch's transaction waits on a lock or a statement no longer than the limits."""
    if conn.dialect.name == "postgresql":
        conn.execute(text(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}"))
        conn.execute(text(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}"))


def _batch_end(conn: Connection, since: ColumnElement[bool], size: int) -> tuple[float, str] | None:
    """The (created, id) of the `size`-th job `since` matches (one row read); None when fewer match."""
    found = conn.execute(select(jobs.c.created, jobs.c.id).where(since).order_by(jobs.c.created, jobs.c.id)
                         .offset(size - 1).limit(1)).first()
    return None if found is None else (float(found[0]), str(found[1]))


def _code(exc: OperationalError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)


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
