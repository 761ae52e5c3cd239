"""Baseline: the job journal, the plugin store and the audit log as `create_all` made them before migrations.

A database that already has these tables (and no version table) is stamped at this revision rather
than created again, so it keeps its rows. Written out in full, not from `metadata`: a revision must
stay what it was when later ones change the tables.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("action", sa.String(length=100), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_at", "audit", ["at"])
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("agent", sa.String(length=64), nullable=False),
        sa.Column("plugin", sa.String(length=64), nullable=True),
        sa.Column("plugin_version", sa.String(length=64), nullable=True),
        sa.Column("requester", sa.String(length=200), nullable=False),
        sa.Column("channel", sa.String(length=200), nullable=False),
        sa.Column("input", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("output", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("failure_kind", sa.String(length=64), nullable=True),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("started", sa.Float(), nullable=True),
        sa.Column("ended", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("dedupe_key", sa.String(length=300), nullable=True),
        sa.Column("reply_to", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("runner", sa.String(length=200), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dedupe_key"),
    )
    op.create_index("ix_jobs_agent", "jobs", ["agent"])
    op.create_index("ix_jobs_created", "jobs", ["created"])
    op.create_index("ix_jobs_status", "jobs", ["status"])
    op.create_table(
        "plugins",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("current_version_id", sa.Integer(), nullable=True),
        sa.Column("installed_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "plugin_versions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("plugin", sa.String(length=64), nullable=False),
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("installed_at", sa.Float(), nullable=False),
        sa.Column("installed_by", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(["plugin"], ["plugins.name"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("plugin", "version", "content_hash", name="uq_plugin_version_hash"),
    )
    op.create_table(
        "agents",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("input_schema_file", sa.Text(), nullable=True),
        sa.Column("input_schema", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("input_hash", sa.String(length=64), nullable=True),
        sa.Column("output_schema_file", sa.Text(), nullable=True),
        sa.Column("output_schema", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("output_hash", sa.String(length=64), nullable=True),
        sa.Column("failures", sa.JSON(), nullable=False),
        sa.Column("limits", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["version_id"], ["plugin_versions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("version_id", "name", name="uq_agent_per_version"),
    )


def downgrade() -> None:
    op.drop_table("agents")
    op.drop_table("plugin_versions")
    op.drop_table("plugins")
    op.drop_index("ix_jobs_status", table_name="jobs")
    op.drop_index("ix_jobs_created", table_name="jobs")
    op.drop_index("ix_jobs_agent", table_name="jobs")
    op.drop_table("jobs")
    op.drop_index("ix_audit_at", table_name="audit")
    op.drop_table("audit")
