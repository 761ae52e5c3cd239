"""jobs.reply_to becomes a versioned ReplyRef (edge.model.reply_ref); the asker's workspace and
channel (`jobs.workspace`, `jobs.channel_id`) and where a question is shown (`jobs.question_shown`)
become columns of their own.

The rows already journaled are converted: an old `reply_to` was the channel's flat dict (Slack:
channel, user, team, thread_ts, response_url, ts, in_thread; Discord: application_id, token, channel,
user, guild, created) with its platform, and where the open question was shown under "question".
It becomes {platform, version: 1, data: the rest}: version 1 of both wires is that very dict, so a
job asked before the upgrade is answered, and its question updated, after it. A reply_to without a
platform (written by tests or tools, never by a channel) is kept as data of the platform "unknown".

Revision ID: 0010
Revises: 0009
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_jobs = sa.table("jobs", sa.column("id", sa.String), sa.column("reply_to", sa.JSON(none_as_null=True)),
                 sa.column("workspace", sa.String), sa.column("channel_id", sa.String),
                 sa.column("question_shown", sa.JSON(none_as_null=True)))
_BATCH = 500


def _upgraded(old: dict[str, Any]) -> dict[str, Any]:
    data = dict(old)
    platform = str(data.pop("platform", None) or "unknown")
    shown = data.pop("question", None)
    workspace = data.get("team") or data.get("guild")
    return {"reply_to": {"platform": platform, "version": 1, "data": data},
            "workspace": str(workspace) if workspace else None,
            "channel_id": str(data["channel"]) if data.get("channel") else None,
            "question_shown": shown if isinstance(shown, dict) else None}


def _rows(conn: sa.Connection) -> Any:
    last = ""
    while True:
        batch = conn.execute(sa.select(_jobs.c.id, _jobs.c.reply_to, _jobs.c.question_shown)
                             .where(_jobs.c.reply_to.isnot(None), _jobs.c.id > last)
                             .order_by(_jobs.c.id).limit(_BATCH)).all()
        if not batch:
            return
        yield from batch
        last = batch[-1][0]


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("workspace", sa.String(200), nullable=True))
        batch.add_column(sa.Column("channel_id", sa.String(200), nullable=True))
        batch.add_column(sa.Column("question_shown", sa.JSON(none_as_null=True), nullable=True))
    conn = op.get_bind()
    for job_id, reply_to, _ in list(_rows(conn)):
        if isinstance(reply_to, dict) and not {"version", "data"} <= reply_to.keys():
            conn.execute(sa.update(_jobs).where(_jobs.c.id == job_id).values(**_upgraded(reply_to)))


def downgrade() -> None:
    conn = op.get_bind()
    for job_id, reply_to, shown in list(_rows(conn)):
        if isinstance(reply_to, dict) and isinstance(reply_to.get("data"), dict):
            old = {"platform": reply_to.get("platform"), **reply_to["data"]}
            if shown:
                old["question"] = shown
            conn.execute(sa.update(_jobs).where(_jobs.c.id == job_id).values(reply_to=old))
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("question_shown")
        batch.drop_column("channel_id")
        batch.drop_column("workspace")
