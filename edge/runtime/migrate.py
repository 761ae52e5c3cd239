"""The store's schema, brought to the newest Alembic revision shipped in edge/runtime/migrations/.

Every Store does this when it opens its database, so `make run`, `oz0 serve` and `oz0 db upgrade` all
find the tables they expect; the check costs one query when the database is already current (Alembic is
imported only when there is something to do). A database made by `create_all` before migrations
existed has the baseline tables and no version table: it is stamped at the baseline, then upgraded,
and keeps its rows. Replicas starting together take a lock first (a Postgres advisory lock; for a
SQLite file, a lock file beside it), so one of them migrates and the others find the work done.
"""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

__all__ = ["BASELINE", "HEAD", "MIGRATIONS", "SchemaChange", "current_revision", "upgrade_schema"]

log = logging.getLogger("oz0.migrate")

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
BASELINE = "0001"  # the schema `create_all` made before migrations: jobs, plugins, versions, agents, audit
HEAD = "0025"  # the newest revision in migrations/versions (a test checks it is Alembic's head)
VERSION_TABLE = "alembic_version"
PG_LOCK_KEY = 0x6F7A30_6D6967  # "oz0" "mig": one advisory lock id for every oz0 database


@dataclass(frozen=True)
class SchemaChange:
    """What opening a database did to its schema: the revision before (None: no version table) and after."""

    before: str | None
    after: str
    stamped: bool = False  # the baseline tables existed without a version table (made by create_all)

    @property
    def changed(self) -> bool:
        return self.before != self.after


def current_revision(conn: Connection) -> str | None:
    """The revision stamped in the database, or None when it has no version table."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return None
    return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()


def upgrade_schema(engine: Engine) -> SchemaChange:
    """Bring the database to HEAD (nothing to do: one query); a revision newer than HEAD is left alone."""
    with engine.connect() as conn:
        before = current_revision(conn)
        conn.rollback()
    if before == HEAD:
        return SchemaChange(before, HEAD)
    with _migration_lock(engine) as conn:
        before = current_revision(conn)
        if conn.in_transaction():
            conn.commit()
        if before == HEAD:  # another process migrated while this one waited for the lock
            return SchemaChange(before, HEAD)
        return _run_alembic(conn, before)


def _run_alembic(conn: Connection, before: str | None) -> SchemaChange:
    from alembic import command
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    known = {script.revision for script in ScriptDirectory.from_config(config).walk_revisions()}
    if before is not None and before not in known:
        log.warning("the database is at schema revision %s, which this oz0 does not know (newest here: %s): "
                    "a newer oz0 migrated it; running on it unchanged (revisions only add)", before, HEAD)
        return SchemaChange(before, before)
    stamped = before is None and inspect(conn).has_table("jobs")
    if stamped:
        log.info("stamping a database made before migrations at revision %s", BASELINE)
        command.stamp(config, BASELINE)
        _commit(conn)
    command.upgrade(config, "head")
    _commit(conn)
    after = current_revision(conn)
    _commit(conn)
    assert after is not None
    log.info("database schema upgraded from %s to %s", before or "nothing", after)
    return SchemaChange(before, after, stamped=stamped)


def _commit(conn: Connection) -> None:
    if conn.in_transaction():
        conn.commit()


@contextmanager
def _migration_lock(engine: Engine) -> Iterator[Connection]:
    """A connection held while no other process migrates the same database."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": PG_LOCK_KEY})
            conn.commit()
            try:
                yield conn
            finally:
                _commit(conn)
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": PG_LOCK_KEY})
                conn.commit()
        return
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        with engine.connect() as conn:
            yield conn
        return
    lock_path = Path(database).with_name(Path(database).name + ".migrate-lock")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with engine.connect() as conn:
                yield conn
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
