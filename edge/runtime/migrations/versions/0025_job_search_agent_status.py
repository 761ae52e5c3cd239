"""An index for job search by agent and status together (edge.runtime.job_search): newest first by
(created, id) after both equalities, so that page's ids come from the index alone like every other
filter's. Without it the search walked the `created` index filtering each row, reading most of a
1,000,000-job journal for an agent whose jobs are old (270 ms, bench/jobs_search.py). `(agent, status)`
(revision 0002, /metrics) stays: it is this index's prefix, but dropping it is not this revision's business.

Revision ID: 0025
Revises: 0024
"""

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_agent_status_created_id", "jobs", ["agent", "status", "created", "id"])


def downgrade() -> None:
    op.drop_index("ix_jobs_agent_status_created_id", table_name="jobs")
