"""agents.contract_hash/contract_version and jobs.contract_hash/contract_version: the contract an agent
version declares (edge.documents.contract_hash) and the one each job ran under.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_TABLES = ("agents", "jobs")


def upgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("contract_hash", sa.String(64), nullable=True))
            batch.add_column(sa.Column("contract_version", sa.String(64), nullable=True))


def downgrade() -> None:
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("contract_version")
            batch.drop_column("contract_hash")
