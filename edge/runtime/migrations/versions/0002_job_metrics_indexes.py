"""Indexes for /metrics: jobs by (agent, status) counted from the index alone, and finished jobs read
by their end time, so a scrape costs little however long the journal grows.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_agent_status", "jobs", ["agent", "status"])
    op.create_index("ix_jobs_ended", "jobs", ["ended"])


def downgrade() -> None:
    op.drop_index("ix_jobs_ended", table_name="jobs")
    op.drop_index("ix_jobs_agent_status", table_name="jobs")
