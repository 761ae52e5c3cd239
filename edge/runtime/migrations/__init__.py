"""The store's schema over time: Alembic revisions in versions/, applied when a Store opens.

A new database gets every table as the store declares it and is stamped at the newest revision; a
database from before a revision is brought up to it (a column added, an index made). When the
database is already at HEAD nothing of Alembic is imported, so a command starts as fast as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, inspect, text
from sqlalchemy.engine import Engine

__all__ = ["HEAD", "VERSION_TABLE", "upgrade"]

HEAD = "0002_jobs_parent_id"  # the newest file in versions/; a test checks Alembic agrees
VERSION_TABLE = "oz0_alembic_version"
_HERE = Path(__file__).parent


def _current(conn: Any) -> str | None:
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def upgrade(engine: Engine, metadata: MetaData) -> None:
    """Bring the database at `engine` to HEAD (see the module's docstring)."""
    with engine.connect() as conn:
        if _current(conn) == HEAD:
            metadata.create_all(conn)  # a table another room added since, without a revision of its own
            conn.commit()
            return
    from alembic import command
    from alembic.config import Config

    with engine.begin() as conn:
        fresh = not inspect(conn).has_table("jobs")
        metadata.create_all(conn)
        config = Config()
        config.set_main_option("script_location", str(_HERE))
        config.attributes["connection"] = conn
        if fresh:
            command.stamp(config, "head")
        else:
            command.upgrade(config, "head")
