"""agents.annotations: the MCP annotations (title, readOnlyHint, destructiveHint, ...) an `mcp` agent's
tool listed at install, stored beside its schemas so they are shown before any job reaches the server.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("annotations", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("annotations")
