"""The store as it was before revisions: jobs, plugins, plugin_versions, agents, audit, claims.

Revision ID: 0001_baseline
"""

revision = "0001_baseline"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing: those tables are created as the store declares them when they are missing."""


def downgrade() -> None:
    """Nothing to undo."""
