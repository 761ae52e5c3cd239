"""jobs.trace_context: the W3C trace context of the ask that made the job (`{"traceparent": ...}`), so
the replica that runs the job, or delivers its card, continues the ask's trace (edge/tracing.py). Null
where tracing is off.

Revision ID: 0020
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("trace_context", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("trace_context")
