"""Claims: things that happen once whoever asks and however often (a chat delivery answered, a result
shared, an interrupted job reported), across restarts and replicas: the primary key refuses a second.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "claims",
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("claims")
