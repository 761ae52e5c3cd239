"""The trace of a tool loop (edge.runtime.tool_loop): one row per model request, tool call and person
step, in the order they happened, made by revision 0012 (migrations/versions/0012_job_trace.py).

A row is made by the checkpointed step that made its call and carried in the step's value (so the
engine's record of the step holds it), then written with the rows of the same turn in one
transaction (`TraceRows`) inside the loop's next model request step (so a database fault is retried
with the step), when it asks a person, or when it ends. Rows are keyed
by (job, seq): a loop resumed after a crash replays the finished steps, gets their rows back from
their records and writes those not written yet (an INSERT that finds the key is a no-op), so a row
is never lost nor doubled, and a call costs no commit of its own for its trace. Arguments and results
are stored redacted and clipped (MAX_DETAIL_CHARS), so the trace never carries a secret and stays
small whatever a tool answers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, Column, Float, ForeignKey, Integer, String, Table, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from oz0.edge.contracts.json_data import dumps_exact
from oz0.edge.runtime.store import metadata

if TYPE_CHECKING:
    from oz0.edge.runtime.store import Store

__all__ = ["MAX_DETAIL_CHARS", "MAX_SUMMARY_CALLS", "TRACE_KINDS", "TraceRows", "add_trace", "job_trace", "read_trace",
           "tool_summaries", "trace_lines", "trace_row"]

MAX_DETAIL_CHARS = 2_000  # of one argument list, result or error as the trace keeps it
MAX_SUMMARY_CALLS = 8     # tool calls a conversation's later turn is told of, per earlier turn
TRACE_KINDS = ("model", "tool", "person")

job_trace = Table(
    "job_trace", metadata,
    Column("job_id", String(32), ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("kind", String(16), nullable=False),    # model | tool | person
    Column("name", String(200), nullable=False),   # the model, the tool, the person step
    Column("detail", JSON(none_as_null=True), nullable=True),
    Column("ms", Integer, nullable=False),
    Column("at", Float, nullable=False),
)


def clip(value: Any) -> Any:
    """A value as the trace keeps it: as it is when small, else its JSON text cut at MAX_DETAIL_CHARS."""
    text = value if isinstance(value, str) else dumps_exact(value).decode()
    if len(text) <= MAX_DETAIL_CHARS:
        return value
    return text[: MAX_DETAIL_CHARS - 1] + "…"


def trace_row(job_id: str, seq: int, kind: str, name: str, detail: Mapping[str, Any], ms: float) -> dict[str, Any]:
    """One call of the loop as its trace row (JSON data, so a step's value can carry it)."""
    return {"job_id": job_id, "seq": seq, "kind": kind, "name": name[:200], "detail": dict(detail),
            "ms": int(ms), "at": time.time()}


class TraceRows:
    """The rows of a loop's calls not written yet, written together by `flush` (one transaction)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pending: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self.pending.append(row)

    def written(self) -> None:
        """The pending rows are in the table already: the step that wrote them was read back from its
        record (a replay), not run again."""
        self.pending.clear()

    def flush(self) -> None:
        """Write the pending rows; a row already there (written before a crash) is kept as it is. The
        rows stay pending until their transaction commits, so a step retried through a database fault
        writes them again."""
        if not self.pending:
            return
        rows = list(self.pending)
        engine = self.store.engine
        dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
        with engine.begin() as conn:
            conn.execute(dialect.insert(job_trace).on_conflict_do_nothing(), rows)
        del self.pending[:len(rows)]


def add_trace(store: Store, job_id: str, seq: int, kind: str, name: str, detail: Mapping[str, Any],
              ms: float) -> None:
    """Record one call of the loop now; a row already there (a step rerun) is kept as it is."""
    row = trace_row(job_id, seq, kind, name, detail, ms)
    try:
        with store.engine.begin() as conn:
            conn.execute(insert(job_trace).values(**row))
    except IntegrityError:
        pass  # written by an earlier run of the same step: the first write is the record


def read_trace(store: Store, job_id: str) -> list[dict[str, Any]]:
    """The job's trace, in order: [{seq, kind, name, detail, ms, at}]."""
    with store.engine.connect() as conn:
        rows = conn.execute(select(job_trace).where(job_trace.c.job_id == job_id)
                            .order_by(job_trace.c.seq)).mappings().all()
    return [{k: r[k] for k in ("seq", "kind", "name", "detail", "ms", "at")} for r in rows]


def tool_summaries(store: Store, job_ids: list[str]) -> dict[str, str]:
    """Each loop job's tool calls in one line, for the later turns of its conversation: which tools it
    called with what, and whether each answered (`ci_log({"run_id":4411}) ok`), not their results;
    at most MAX_SUMMARY_CALLS calls, the rest counted. Jobs that called no tool are left out."""
    if not job_ids:
        return {}
    with store.engine.connect() as conn:
        rows = conn.execute(select(job_trace.c.job_id, job_trace.c.name, job_trace.c.detail).where(
            job_trace.c.job_id.in_(job_ids), job_trace.c.kind == "tool").order_by(
            job_trace.c.job_id, job_trace.c.seq)).all()
    calls: dict[str, list[str]] = {}
    for job_id, name, detail in rows:
        d = detail or {}
        calls.setdefault(job_id, []).append(f"{name}({_short(d.get('arguments'), 80)}) "
                                            + ("failed" if d.get("error") else "ok"))
    out = {}
    for job_id, made in calls.items():
        shown = "; ".join(made[:MAX_SUMMARY_CALLS])
        more = len(made) - MAX_SUMMARY_CALLS
        out[job_id] = f"[tools called: {shown}" + (f"; and {more} more" if more > 0 else "") + "]"
    return out


def trace_lines(trace: list[dict[str, Any]]) -> list[str]:
    """The trace as `oz0 jobs show` prints it, one line a call."""
    out = []
    for entry in trace:
        d = entry.get("detail") or {}
        head = f"{entry['seq']:>3}. {entry['kind']:<6} {entry['name']}"
        if entry["kind"] == "model":
            tokens = d.get("tokens")
            text = f"{head}: {tokens['input']} in / {tokens['output']} out tokens" if tokens else f"{head}"
            if d.get("tool_calls"):
                text += f", asked for {', '.join(d['tool_calls'])}"
        elif entry["kind"] == "tool":
            args = d.get("arguments")
            text = f"{head}({_short(args)})"
            text += f" -> error: {_short(d['error'])}" if d.get("error") else f" -> {_short(d.get('result'))}"
        else:
            text = f"{head}: {_short(d.get('question'))} -> {d.get('action')} {_short(d.get('answer'))}"
        out.append(f"{text} ({entry['ms']} ms)")
    return out


def _short(value: Any, limit: int = 120) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else dumps_exact(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"
