"""The tables of budgets (edge.runtime.budgets), made by revision 0008 (migrations/versions/0008_budgets.py).

Every amount is a whole number: tokens, calls, and money in micro-units (edge.model.budget.MICRO),
so sums never drift. A budget row is one budget in one period (`job:<job id>` or `day:<UTC date>`);
its `reserved_*` and `spent_*` change only by conditional UPDATEs (edge.runtime.budget_book).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Float, ForeignKey, Index, Integer, String, Table, UniqueConstraint

from oz0.edge.runtime.store import metadata

__all__ = ["AMOUNT_COLUMNS", "budget_grants", "budget_holds", "budget_spend", "budgets"]

AMOUNT_COLUMNS = ("tokens", "cost", "calls")


def _amounts(prefix: str, *, nullable: bool = False) -> list[Column[int]]:
    return [Column(f"{prefix}{name}", BigInteger, nullable=nullable) for name in AMOUNT_COLUMNS]


budgets = Table(
    "budgets", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("key", String(300), nullable=False),       # agent:NAME, flow:NAME, access:NAME
    Column("period", String(64), nullable=False),     # job:<job id> or day:<YYYY-MM-DD, UTC>
    Column("label", String(300), nullable=False),     # for people: "agent summarize, per job"
    Column("on_exhausted", String(8), nullable=False),
    *_amounts("limit_", nullable=True),               # None: that dimension is not limited
    *_amounts("reserved_"),
    *_amounts("spent_"),
    Column("updated", Float, nullable=False),
    UniqueConstraint("key", "period", name="uq_budgets_key_period"),
)

# What one call holds of each budget between its reservation and its settlement; a job that ends
# with holds left (a crash mid-call) has them released.
budget_holds = Table(
    "budget_holds", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("hold", String(32), nullable=False, index=True),
    Column("budget_id", Integer, ForeignKey("budgets.id"), nullable=False),
    Column("job_id", String(32), nullable=False, index=True),
    *_amounts(""),
    Column("at", Float, nullable=False),
)

# More room in a budget for one job tree (its root job), given by a person (on_exhausted: ask).
budget_grants = Table(
    "budget_grants", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("budget_id", Integer, ForeignKey("budgets.id"), nullable=False),
    Column("root_id", String(32), nullable=False),
    *_amounts(""),
    Column("granted_by", String(200), nullable=False),
    Column("at", Float, nullable=False),
    Index("ix_budget_grants_budget_root", "budget_id", "root_id"),
)

# What was spent, by agent and channel, whether or not a budget covered it (/metrics reads it).
budget_spend = Table(
    "budget_spend", metadata,
    Column("agent", String(64), primary_key=True),
    Column("channel", String(200), primary_key=True),
    *_amounts(""),
)
