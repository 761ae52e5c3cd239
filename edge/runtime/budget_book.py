"""The store side of budgets (edge.runtime.budgets): rows made once, reservations taken atomically,
settled, released, granted, and read back for people and /metrics.

Why one conditional UPDATE per budget row: two replicas racing for the last of a shared budget each
run `UPDATE budgets SET reserved = reserved + :n WHERE id = :id AND spent + reserved + :n <= limit +
grants`; the database serialises the two updates of the row (Postgres re-checks the condition on the
row the first one committed; SQLite lets one writer in at a time), so exactly one of them matches.
All the budgets of one call are reserved in one transaction, in the order of their ids (no deadlock
between two calls sharing several), and a refusal by any rolls back all.

Why a call may reserve more than it asks: a model endpoint may ignore `max_tokens` (and so its
price bound), so the reported usage can be far above what was reserved. So each call reserves, in
each dimension it spends, at least what the budget's settled calls spent on average; and under a
budget that limits tokens or cost, a model call waits while the first call has not yet reported
what it used. An endpoint that overruns its bound then overspends by its first call only: its
usage is settled as reported, and the next reservation (at least that much) does not fit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from oz0.edge.model.budget import BUDGET_DIMENSIONS, Budget
from oz0.edge.runtime.budget_tables import budget_grants, budget_holds, budget_spend, budgets
from oz0.edge.runtime.people import people

if TYPE_CHECKING:
    from oz0.edge.runtime.store import Store

__all__ = ["Amounts", "BudgetBook", "BudgetRef", "BudgetState", "Refusal"]


@dataclass(frozen=True)
class Amounts:
    """Tokens, cost (micro-units) and calls: what a call needs, holds, used, or a person granted."""

    tokens: int = 0
    cost: int = 0
    calls: int = 0

    def get(self, dimension: str) -> int:
        return int(getattr(self, dimension))

    @property
    def empty(self) -> bool:
        return not (self.tokens or self.cost or self.calls)

    @classmethod
    def of(cls, row: RowMapping, prefix: str = "") -> Amounts:
        return cls(*(int(row[f"{prefix}{d}"] or 0) for d in BUDGET_DIMENSIONS))


@dataclass(frozen=True)
class BudgetRef:
    """One budget in one period as it covers a job: `agent:NAME` for `job:<id>`, `access:NAME` for
    `day:2026-12-01`; `label` says whose it is, for people."""

    key: str
    period: str
    label: str
    budget: Budget


@dataclass(frozen=True)
class BudgetState:
    """A budget as the store holds it: its limits (None: not limited), what is reserved by calls in
    flight, spent, and granted to one job tree."""

    ref: BudgetRef
    id: int | None
    reserved: Amounts = Amounts()
    spent: Amounts = Amounts()
    granted: Amounts = Amounts()
    grants: tuple[Mapping[str, Any], ...] = field(default=())  # who granted what, for people

    def limit(self, dimension: str) -> int | None:
        return self.ref.budget.limit(dimension)

    def left(self, dimension: str) -> int | None:
        """What is left of a limited dimension (never below 0), None when it is not limited."""
        limit = self.limit(dimension)
        if limit is None:
            return None
        return max(0, limit + self.granted.get(dimension) - self.spent.get(dimension) - self.reserved.get(dimension))

    def short(self, need: Amounts) -> Amounts:
        """How much more each limited dimension would need for `need` to fit (0 where it fits)."""
        out = {}
        for d in BUDGET_DIMENSIONS:
            limit = self.limit(d)
            over = (self.spent.get(d) + self.reserved.get(d) + need.get(d) - limit - self.granted.get(d)
                    if limit is not None and need.get(d) else 0)
            out[d] = max(0, over)
        return Amounts(**out)


@dataclass(frozen=True)
class Refusal:
    """A reservation that did not fit: the budget that refused it, as it stood, and what was needed."""

    state: BudgetState
    need: Amounts
    waiting: bool = False  # no room yet only because the budget's first call has not reported its usage

    @property
    def short(self) -> Amounts:
        return self.state.short(self.need)


class _Refused(Exception):
    def __init__(self, index: int, need: Amounts, *, waiting: bool) -> None:
        self.index = index
        self.need = need
        self.waiting = waiting


def _at_least_the_average(need: Amounts, row: RowMapping) -> Amounts:
    """`need`, raised in each dimension it spends to the average of the budget's settled calls."""
    calls = int(row["spent_calls"] or 0)
    if not calls:
        return need
    return Amounts(**{d: max(need.get(d), -(-int(row[f"spent_{d}"] or 0) // calls)) if need.get(d) else 0
                      for d in BUDGET_DIMENSIONS})


def _add_spend(conn: Connection, agent: str, channel: str, used: Amounts) -> None:
    """`used` added to the spend of `agent` in `channel` (its row made first: `_ensure_spend`)."""
    conn.execute(update(budget_spend).where(budget_spend.c.agent == agent, budget_spend.c.channel == channel)
                 .values(**{d: budget_spend.c[d] + used.get(d) for d in BUDGET_DIMENSIONS}))


class BudgetBook:
    """Budgets in the store of one runtime."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._spend_rows: set[tuple[str, str]] = set()  # (agent, channel) rows known to exist
        # the spend of calls no budget covers, per running job, written at its end (`release_job`)
        self._uncounted: dict[str, dict[tuple[str, str], Amounts]] = {}
        self._lock = threading.Lock()

    # rows -------------------------------------------------------------------------------------

    def ensure(self, refs: Iterable[BudgetRef]) -> dict[tuple[str, str], int]:
        """The row id of each budget in its period, made (limits as declared now) where missing."""
        refs = list(refs)
        ids = self._ids(refs)
        for ref in refs:
            if (ref.key, ref.period) in ids:
                continue
            row = {"key": ref.key, "period": ref.period, "label": ref.label[:300],
                   "on_exhausted": ref.budget.on_exhausted, "updated": time.time()}
            for d in BUDGET_DIMENSIONS:
                row.update({f"limit_{d}": ref.budget.limit(d), f"reserved_{d}": 0, f"spent_{d}": 0})
            try:
                with self.store.engine.begin() as conn:
                    conn.execute(insert(budgets).values(**row))
            except IntegrityError:
                pass  # another call made it first
        return {**ids, **self._ids([r for r in refs if (r.key, r.period) not in ids])}

    def _ids(self, refs: list[BudgetRef]) -> dict[tuple[str, str], int]:
        if not refs:
            return {}
        wanted = sorted({(r.key, r.period) for r in refs})
        pairs = or_(*(and_(budgets.c.key == k, budgets.c.period == p) for k, p in wanted))  # by the unique index
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(budgets.c.id, budgets.c.key, budgets.c.period).where(pairs)).all()
        return {(k, p): i for i, k, p in rows}

    # reserving and settling --------------------------------------------------------------------

    def reserve(self, refs: list[BudgetRef], need: Amounts, *, hold: str, job_id: str,
                root_id: str) -> Refusal | None:
        """Reserve `need` against every budget in `refs` for this tree, all or none: None when it was
        reserved (under `hold`), else the Refusal of the first budget that had no room."""
        if not refs:
            return None
        ids = self.ensure(refs)
        ordered = sorted(range(len(refs)), key=lambda i: ids[(refs[i].key, refs[i].period)])
        now = time.time()
        try:
            with self.store.engine.begin() as conn:
                for i in ordered:
                    ref, budget_id = refs[i], ids[(refs[i].key, refs[i].period)]
                    row = conn.execute(select(budgets).where(budgets.c.id == budget_id)).mappings().one()
                    amounts = _at_least_the_average(need, row)
                    conditions = [budgets.c.id == budget_id]
                    values: dict[str, Any] = {"updated": now, "on_exhausted": ref.budget.on_exhausted}
                    for d in BUDGET_DIMENSIONS:
                        n, limit = amounts.get(d), ref.budget.limit(d)
                        values[f"limit_{d}"] = limit  # as declared now
                        values[f"reserved_{d}"] = budgets.c[f"reserved_{d}"] + n
                        if limit is not None and n:
                            conditions.append(budgets.c[f"spent_{d}"] + budgets.c[f"reserved_{d}"] + n
                                              <= limit + _granted(d, root_id))
                    unproven = need.tokens > 0 and (ref.budget.limit("tokens") is not None
                                                    or ref.budget.limit("cost") is not None)
                    if unproven:  # the first call settles before the next starts
                        conditions.append(or_(budgets.c.spent_calls > 0, budgets.c.reserved_calls == 0))
                    if conn.execute(update(budgets).where(and_(*conditions)).values(**values)).rowcount != 1:
                        raise _Refused(i, amounts, waiting=unproven and not row["spent_calls"]
                                       and bool(row["reserved_calls"]))
                    conn.execute(insert(budget_holds).values(
                        hold=hold, budget_id=budget_id, job_id=job_id, at=now,
                        **{d: amounts.get(d) for d in BUDGET_DIMENSIONS}))
        except _Refused as refused:
            state = self.states([refs[refused.index]], root_id=root_id)[0]
            if refused.waiting and state.short(refused.need).empty and state.spent.calls == 0:
                return Refusal(state, refused.need, waiting=True)
            return Refusal(state, refused.need)
        return None

    def settle(self, hold: str, used: Amounts | None, *, agent: str, channel: str, job_id: str | None = None) -> None:
        """End a hold: what it held is released, `used` (None: nothing) is spent instead, and added to
        the spend of `agent` in `channel`.

        A call no budget covered (an empty `hold`) of a job (`job_id`) holds nothing: its spend, which
        only /metrics reads, is added up here and written once, when the job ends (`release_job`),
        instead of one write transaction a call (most of a tool loop's journal writes)."""
        used = used or Amounts()
        if not hold and job_id is not None:
            if not used.empty:
                key = (agent[:64], channel[:200])
                with self._lock:
                    spent = self._uncounted.setdefault(job_id, {})
                    was = spent.get(key, Amounts())
                    spent[key] = Amounts(*(was.get(d) + used.get(d) for d in BUDGET_DIMENSIONS))
            return
        if not used.empty:
            self._ensure_spend(agent, channel)
        with self.store.engine.begin() as conn:
            held = conn.execute(select(budget_holds).where(budget_holds.c.hold == hold)).mappings().all()
            for row in held:
                conn.execute(update(budgets).where(budgets.c.id == row["budget_id"]).values(
                    updated=time.time(),
                    **{f"reserved_{d}": budgets.c[f"reserved_{d}"] - int(row[d]) for d in BUDGET_DIMENSIONS},
                    **{f"spent_{d}": budgets.c[f"spent_{d}"] + used.get(d) for d in BUDGET_DIMENSIONS}))
            if held:
                conn.execute(delete(budget_holds).where(budget_holds.c.hold == hold))
            if not used.empty:
                _add_spend(conn, agent[:64], channel[:200], used)

    def release_job(self, job_id: str) -> int:
        """At a job's end: write the spend of its calls no budget covered, and release every hold it still
        has (it ended mid-call: a crash, a stop); how many holds there were."""
        with self._lock:
            spent = self._uncounted.pop(job_id, {})
        if spent:
            for agent, channel in spent:
                self._ensure_spend(agent, channel)
            try:
                with self.store.engine.begin() as conn:
                    for (agent, channel), used in spent.items():
                        _add_spend(conn, agent, channel, used)
            except BaseException:
                with self._lock:  # kept for the end written again (a database fault holds the job's end)
                    self._uncounted.setdefault(job_id, {}).update(spent)
                raise
        with self.store.engine.connect() as conn:
            holds = sorted({r[0] for r in conn.execute(select(budget_holds.c.hold)
                                                       .where(budget_holds.c.job_id == job_id))})
        for hold in holds:
            self.settle(hold, None, agent="", channel="")
        return len(holds)

    def _ensure_spend(self, agent: str, channel: str) -> None:
        key = (agent[:64], channel[:200])
        if key in self._spend_rows:
            return
        try:
            with self.store.engine.begin() as conn:
                conn.execute(insert(budget_spend).values(agent=key[0], channel=key[1], tokens=0, cost=0, calls=0))
        except IntegrityError:
            pass
        self._spend_rows.add(key)

    # grants ------------------------------------------------------------------------------------

    def grant(self, budget_id: int, root_id: str, amounts: Amounts, *, by: str, detail: Mapping[str, Any]) -> None:
        """More room in one budget for one job tree, with an audit record, in one transaction."""
        with self.store.engine.begin() as conn:
            conn.execute(insert(budget_grants).values(
                budget_id=budget_id, root_id=root_id, granted_by=by[:200], at=time.time(),
                **{d: amounts.get(d) for d in BUDGET_DIMENSIONS}))
            self.store.add_audit("budget.granted", actor=by, detail=dict(detail), conn=conn)

    # reading -----------------------------------------------------------------------------------

    def states(self, refs: list[BudgetRef], *, root_id: str) -> list[BudgetState]:
        """Each budget as it stands, with what was granted to this tree (a budget never used: zeros)."""
        ids = self._ids(refs)
        found: dict[int, RowMapping] = {}
        grants: dict[int, list[Mapping[str, Any]]] = {}
        if ids:
            with self.store.engine.connect() as conn:
                found = {r["id"]: r for r in conn.execute(select(budgets).where(
                    budgets.c.id.in_(list(ids.values())))).mappings()}
                for g in conn.execute(select(budget_grants, people.c.name.label("granted_by_name"))
                                      .outerjoin(people, people.c.who == budget_grants.c.granted_by).where(
                        budget_grants.c.budget_id.in_(list(ids.values())), budget_grants.c.root_id == root_id)
                        .order_by(budget_grants.c.at)).mappings():
                    grants.setdefault(g["budget_id"], []).append(dict(g))   # the grantor's name, if known
        out = []
        for ref in refs:
            budget_id = ids.get((ref.key, ref.period))
            row = found.get(budget_id) if budget_id is not None else None
            given = grants.get(budget_id, []) if budget_id is not None else []
            granted = Amounts(*(sum(int(g[d]) for g in given) for d in BUDGET_DIMENSIONS))
            out.append(BudgetState(ref, budget_id, Amounts.of(row, "reserved_") if row else Amounts(),
                                   Amounts.of(row, "spent_") if row else Amounts(), granted, tuple(given)))
        return out

    def spend(self) -> list[tuple[str, str, Amounts]]:
        """What was spent, by agent and channel (for /metrics)."""
        with self.store.engine.connect() as conn:
            return [(r["agent"], r["channel"], Amounts.of(r)) for r in conn.execute(
                select(budget_spend).order_by(budget_spend.c.agent, budget_spend.c.channel)).mappings()]


def _granted(dimension: str, root_id: str) -> Any:
    """What people granted this budget row for this tree, as a subquery of the reserving UPDATE."""
    return (select(func.coalesce(func.sum(budget_grants.c[dimension]), 0))
            .where(budget_grants.c.budget_id == budgets.c.id, budget_grants.c.root_id == root_id)
            .scalar_subquery())
