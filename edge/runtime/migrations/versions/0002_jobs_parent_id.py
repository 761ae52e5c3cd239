"""jobs.parent_id: a flow step's job points at the flow's job (oz0 jobs show draws the tree).

Revision ID: 0002_jobs_parent_id
Revises: 0001_baseline
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_jobs_parent_id"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None


def upgrade() -> None:
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("jobs")}
    if "parent_id" not in columns:
        with op.batch_alter_table("jobs") as batch:
            batch.add_column(sa.Column("parent_id", sa.String(32), nullable=True))
            batch.create_index("ix_jobs_parent_id", ["parent_id"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_parent_id")
        batch.drop_column("parent_id")
