"""Plugins stored in the database (edge.runtime.plugin_store): the archive of every installed version's
folder, by content hash, so every replica runs the installed version from its own cache
(edge.runtime.plugin_cache), a replica with an empty OZ0_HOME too. The versions, who installed them
and when, and the installed-version pointer were stored already (plugins, plugin_versions).

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plugin_archives",
        sa.Column("content_hash", sa.String(64), primary_key=True),
        sa.Column("archive", sa.LargeBinary, nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("stored_at", sa.Float, nullable=False),
        sa.Column("stored_by", sa.String(200), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("plugin_archives")
