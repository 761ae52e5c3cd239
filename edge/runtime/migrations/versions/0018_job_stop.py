"""A job's stop request (edge.runtime.cancel): who asked to stop it, their display name and when, so
the replica running it stops it where it runs, whichever replica took the request.

Revision ID: 0018
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("stop_request", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("stop_request")
