"""Budgets (edge.runtime.budgets): a row per budget and period with its limits, reserved and spent
amounts (whole numbers: money in micro-units), the holds of calls in flight, the grants people gave a
job tree, and the spend by agent and channel.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_AMOUNTS = ("tokens", "cost", "calls")


def _amounts(prefix: str, *, nullable: bool = False) -> list[sa.Column[int]]:
    return [sa.Column(f"{prefix}{name}", sa.BigInteger(), nullable=nullable) for name in _AMOUNTS]


def upgrade() -> None:
    op.create_table(
        "budgets",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("period", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=300), nullable=False),
        sa.Column("on_exhausted", sa.String(length=8), nullable=False),
        *_amounts("limit_", nullable=True),
        *_amounts("reserved_"),
        *_amounts("spent_"),
        sa.Column("updated", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key", "period", name="uq_budgets_key_period"),
    )
    op.create_table(
        "budget_holds",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("hold", sa.String(length=32), nullable=False),
        sa.Column("budget_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=False),
        *_amounts(""),
        sa.Column("at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["budget_id"], ["budgets.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_budget_holds_hold", "budget_holds", ["hold"])
    op.create_index("ix_budget_holds_job_id", "budget_holds", ["job_id"])
    op.create_table(
        "budget_grants",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("budget_id", sa.Integer(), nullable=False),
        sa.Column("root_id", sa.String(length=32), nullable=False),
        *_amounts(""),
        sa.Column("granted_by", sa.String(length=200), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["budget_id"], ["budgets.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_budget_grants_budget_root", "budget_grants", ["budget_id", "root_id"])
    op.create_table(
        "budget_spend",
        sa.Column("agent", sa.String(length=64), nullable=False),
        sa.Column("channel", sa.String(length=200), nullable=False),
        *_amounts(""),
        sa.PrimaryKeyConstraint("agent", "channel"),
    )


def downgrade() -> None:
    op.drop_table("budget_spend")
    op.drop_index("ix_budget_grants_budget_root", table_name="budget_grants")
    op.drop_table("budget_grants")
    op.drop_index("ix_budget_holds_job_id", table_name="budget_holds")
    op.drop_index("ix_budget_holds_hold", table_name="budget_holds")
    op.drop_table("budget_holds")
    op.drop_table("budgets")
