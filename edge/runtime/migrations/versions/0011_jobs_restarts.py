"""jobs.restarts: how many times a job was resumed after the process running it stopped (a crash, a
SIGKILL, a stop mid-step), so `limits.max_restarts` ends a job that keeps taking its bot down
(edge.runtime.durable).

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("restarts", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("restarts")
