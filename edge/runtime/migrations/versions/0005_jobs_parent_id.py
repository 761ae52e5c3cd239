"""jobs.parent_id: the job of a flow's step points at the flow's job, so `oz0 jobs show` draws the tree.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("parent_id", sa.String(32), nullable=True))
        batch.create_index("ix_jobs_parent_id", ["parent_id"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_parent_id")
        batch.drop_column("parent_id")
