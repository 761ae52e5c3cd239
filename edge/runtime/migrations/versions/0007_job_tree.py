"""jobs.root_id, jobs.tree_steps, jobs.limit_reached: the accounting of limits over the job tree
(edge.runtime.tree). `root_id` is the tree's first job (NULL on a root), so a tree's jobs and their
person steps are one indexed query; `tree_steps` counts the steps run below a job, taken by one
conditional UPDATE each (atomic across replicas); `limit_reached` is set once on a root whose tree a
limit ended, with the reason every job of the tree then ends with.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("root_id", sa.String(32), nullable=True))
        batch.add_column(sa.Column("tree_steps", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("limit_reached", sa.Text(), nullable=True))
        batch.create_index("ix_jobs_root_id", ["root_id"])


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_root_id")
        batch.drop_column("limit_reached")
        batch.drop_column("tree_steps")
        batch.drop_column("root_id")
