"""people: the display names chat channels learned (edge.runtime.people), one row per person as the
journal records them, so budget grants, `oz0 jobs show` and the console show names, the ids kept.

Revision ID: 0023
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "people",
        sa.Column("who", sa.String(200), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("people")
