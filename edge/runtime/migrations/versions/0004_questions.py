"""Person steps: the questions a waiting job asks, and their answers (edge.runtime.questions).

One row per (job, step); the answer columns are written once, by a conditional UPDATE, so the first
answer wins across replicas. `waiter` names the DBOS workflow that waits durably for the answer.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "questions",
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("step", sa.String(length=64), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("answer_schema", sa.JSON(), nullable=False),
        sa.Column("answerers", sa.JSON(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=True),
        sa.Column("source", sa.String(length=200), nullable=True),
        sa.Column("asked_at", sa.Float(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=True),
        sa.Column("content", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("answered_by", sa.String(length=200), nullable=True),
        sa.Column("answered_at", sa.Float(), nullable=True),
        sa.Column("waiter", sa.String(length=300), nullable=True),
        sa.PrimaryKeyConstraint("job_id", "step"),
    )


def downgrade() -> None:
    op.drop_table("questions")
