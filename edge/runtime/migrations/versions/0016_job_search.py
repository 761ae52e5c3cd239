"""Indexes for job search (edge.runtime.job_search): newest first by (created, id), alone and after an
equality on agent, status or asker, so each filter's page is one index range scan on a journal of
millions of jobs (bench/jobs_search.py), and the retention prune (edge.runtime.retention) finds old
jobs by `created` and their questions and budget rows by job.

Revision ID: 0016
Revises: 0015
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_INDEXES = {
    "ix_jobs_created_id": ["created", "id"],
    "ix_jobs_agent_created_id": ["agent", "created", "id"],
    "ix_jobs_status_created_id": ["status", "created", "id"],
    "ix_jobs_requester_created_id": ["requester", "created", "id"],
}


def upgrade() -> None:
    for name, columns in _INDEXES.items():
        op.create_index(name, "jobs", columns)


def downgrade() -> None:
    for name in reversed(_INDEXES):
        op.drop_index(name, table_name="jobs")
