"""conversation_turns: the turns of a chat thread's conversation with an agent (edge.runtime.conversations),
one row per turn (a job, linked to the previous turn's job) or stop.

Revision ID: 0015
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversation_turns",
        sa.Column("conversation_id", sa.String(300), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("job_id", sa.String(32), nullable=True),
        sa.Column("previous_job_id", sa.String(32), nullable=True),
        sa.Column("agent", sa.String(64), nullable=True),
        sa.Column("by", sa.String(200), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_conversation_turns_job", "conversation_turns", ["job_id"])


def downgrade() -> None:
    op.drop_index("ix_conversation_turns_job", table_name="conversation_turns")
    op.drop_table("conversation_turns")
