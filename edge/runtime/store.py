"""The store under OZ0_HOME: the job journal, the installed plugins and the audit log, in one database.

SQLite (a file under OZ0_HOME) by default; `OZ0_DATABASE_URL=postgresql://...` moves all three to
Postgres so several replicas share them (driver: psycopg 3, `pip install 'oz0-edge[postgres]'`).
SQLAlchemy Core keeps the SQL the same on both. The tables are made and changed by the Alembic
revisions in migrations/ (oz0.edge.runtime.migrate), never by `create_all`: a change to a table here
needs a revision there (a test compares them). Every write
that must not half-happen (a job journaled under its dedupe key, a plugin version with its agents)
is one transaction.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    Update,
    bindparam,
    create_engine,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Engine, RowMapping
from sqlalchemy.exc import IntegrityError

from oz0.edge.model.installed import InstalledAgent, InstalledVersion
from oz0.edge.runtime.migrate import SchemaChange, upgrade_schema

__all__ = [
    "ACTIVE_STATUSES",
    "AuditRecord",
    "Store",
    "metadata",
]

ACTIVE_STATUSES = ("queued", "running", "waiting")  # waiting: a person step is open (edge.runtime.questions)

metadata = MetaData()

plugins = Table(
    "plugins", metadata,
    Column("name", String(64), primary_key=True),
    Column("current_version_id", Integer, nullable=True),
    Column("installed_at", Float, nullable=False),
)

plugin_versions = Table(
    "plugin_versions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("plugin", String(64), ForeignKey("plugins.name"), nullable=False),
    Column("version", String(64), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("path", Text, nullable=False),
    Column("description", Text, nullable=False, default=""),
    Column("installed_at", Float, nullable=False),
    Column("installed_by", String(200), nullable=False, default=""),
    UniqueConstraint("plugin", "version", "content_hash", name="uq_plugin_version_hash"),
)

agents = Table(
    "agents", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("version_id", Integer, ForeignKey("plugin_versions.id"), nullable=False),
    Column("name", String(64), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("description", Text, nullable=False, default=""),
    Column("input_schema_file", Text, nullable=True),
    Column("input_schema", JSON(none_as_null=True), nullable=True),
    Column("input_hash", String(64), nullable=True),
    Column("output_schema_file", Text, nullable=True),
    Column("output_schema", JSON(none_as_null=True), nullable=True),
    Column("output_hash", String(64), nullable=True),
    Column("failures", JSON, nullable=False),
    Column("limits", JSON, nullable=False),
    Column("contract_hash", String(64), nullable=True),     # revision 0006: edge.documents.contract_hash
    Column("contract_version", String(64), nullable=True),  # revision 0006: the version that introduced it
    Column("annotations", JSON(none_as_null=True), nullable=True),  # revision 0013: an mcp tool's, as listed
    UniqueConstraint("version_id", "name", name="uq_agent_per_version"),
)

jobs = Table(
    "jobs", metadata,
    Column("id", String(32), primary_key=True),
    Column("agent", String(64), nullable=False, index=True),
    Column("plugin", String(64), nullable=True),
    Column("plugin_version", String(64), nullable=True),
    Column("requester", String(200), nullable=False),
    Column("channel", String(200), nullable=False),
    Column("input", Text, nullable=False),
    Column("status", String(16), nullable=False, index=True),
    Column("output", JSON(none_as_null=True), nullable=True),
    Column("failure_kind", String(64), nullable=True),
    Column("failure_reason", Text, nullable=True),
    Column("created", Float, nullable=False, index=True),
    Column("started", Float, nullable=True),
    Column("ended", Float, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("dedupe_key", String(300), nullable=True, unique=True),
    Column("reply_to", JSON(none_as_null=True), nullable=True),  # revision 0010: a ReplyRef (edge.model.reply_ref)
    Column("runner", String(200), nullable=True),
    Column("parent_id", String(32), nullable=True, index=True),  # revision 0005: a flow step's job -> the flow's job
    Column("contract_hash", String(64), nullable=True),     # revision 0006: the contract the job ran under
    Column("contract_version", String(64), nullable=True),  # revision 0006
    Column("root_id", String(32), nullable=True, index=True),  # revision 0007: the tree's first job (edge.runtime.tree)
    Column("tree_steps", Integer, nullable=True),   # revision 0007: steps run below this job
    Column("limit_reached", Text, nullable=True),   # revision 0007: on a root, the limit that ended its tree
    Column("progress", JSON(none_as_null=True), nullable=True),  # revision 0009: the latest, edge.runtime.progress
    Column("workspace", String(200), nullable=True),   # revision 0010: the asker's workspace (Slack team, guild)
    Column("channel_id", String(200), nullable=True),  # revision 0010: the asker's channel on its platform
    Column("question_shown", JSON(none_as_null=True), nullable=True),  # revision 0010: where its question is
    Column("restarts", Integer, nullable=True),  # revision 0011: resumed after its process stopped, edge.runtime.durable
    Column("stop_request", JSON(none_as_null=True), nullable=True),  # revision 0018: edge.runtime.cancel
    Column("trace_context", JSON(none_as_null=True), nullable=True),  # revision 0020: its ask's W3C trace context
    Index("ix_jobs_agent_status", "agent", "status"),  # revision 0002: /metrics counts from the index
    Index("ix_jobs_ended", "ended"),  # revision 0002: /metrics reads finished jobs by end time
    Index("ix_jobs_created_id", "created", "id"),  # revision 0016: job search (edge.runtime.job_search)
    Index("ix_jobs_agent_created_id", "agent", "created", "id"),  # revision 0016
    Index("ix_jobs_status_created_id", "status", "created", "id"),  # revision 0016
    Index("ix_jobs_requester_created_id", "requester", "created", "id"),  # revision 0016
    Index("ix_jobs_agent_status_created_id", "agent", "status", "created", "id"),  # revision 0025: job search
)

audit = Table(
    "audit", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False, index=True),
    Column("action", String(100), nullable=False),
    Column("actor", String(200), nullable=False),
    Column("detail", JSON, nullable=False),
)


# Things that happen once, whoever asks and however often: a chat delivery answered, a result shared,
# an interrupted job reported. A key is claimed by inserting it; the unique key makes a second claim
# fail, across restarts and replicas.
claims = Table(
    "claims", metadata,
    Column("key", String(300), primary_key=True),
    Column("at", Float, nullable=False),
)

# Person steps (edge.runtime.questions): one row per question a job asks, (job, step) once. The answer
# columns are filled once, by a conditional UPDATE ... WHERE action IS NULL, so the first answer wins
# across replicas. Revision 0004 (migrations/versions/0004_questions.py) makes this table.
questions = Table(
    "questions", metadata,
    Column("job_id", String(32), primary_key=True),
    Column("step", String(64), primary_key=True),
    Column("message", Text, nullable=False),
    Column("answer_schema", JSON, nullable=False),
    Column("answerers", JSON, nullable=False),
    Column("expires_at", Float, nullable=True),
    Column("source", String(200), nullable=True),
    Column("asked_at", Float, nullable=False),
    Column("action", String(16), nullable=True),
    Column("content", JSON(none_as_null=True), nullable=True),
    Column("answered_by", String(200), nullable=True),
    Column("answered_at", Float, nullable=True),
    Column("waiter", String(300), nullable=True),  # the DBOS workflow waiting durably, which an answer wakes
)


@dataclass(frozen=True)
class AuditRecord:
    id: int
    at: float
    action: str
    actor: str
    detail: Mapping[str, Any]


# The statements of the journal's hottest paths (a tool loop reads and changes its job at every step),
# built once: building a statement costs more than running it on SQLite.
_JOB_BY_ID = select(jobs).where(jobs.c.id == bindparam("job_id"))


@functools.lru_cache(maxsize=64)
def _job_update(columns: tuple[str, ...], conditional: bool) -> Update:
    """`UPDATE jobs SET <columns> WHERE id = :job_id [AND status IN :statuses]`, one per set of columns."""
    query = update(jobs).where(jobs.c.id == bindparam("job_id")).values(
        {jobs.c[name]: bindparam(f"new_{name}", type_=jobs.c[name].type) for name in columns})
    if conditional:
        query = query.where(jobs.c.status.in_(bindparam("statuses", expanding=True)))
    return query


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Store:
    """The database behind a Runtime. Plain rows in, plain dicts out; the Runtime makes Jobs of them."""

    def __init__(self, url: str) -> None:
        for plain in ("postgres://", "postgresql://"):
            if url.startswith(plain):  # psycopg 3 (the `postgres` extra) unless the URL names a driver
                url = "postgresql+psycopg://" + url[len(plain):]
        self.url = url
        # pre-ping: after a database restart a pooled connection is found dead at checkout, not mid-write
        self.engine: Engine = create_engine(url, future=True, pool_pre_ping=not url.startswith("sqlite"))
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self.schema: SchemaChange = upgrade_schema(self.engine)  # Alembic migrations; one query when already current

    def close(self) -> None:
        self.engine.dispose()

    # jobs -------------------------------------------------------------------------------------

    def insert_job(self, row: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        """Journal a job; with a dedupe key already seen, the existing job and False (no new row)."""
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(jobs).values(**row))
        except IntegrityError:
            key = row.get("dedupe_key")
            if key is None:
                raise
            existing = self.job_by_dedupe_key(key)
            if existing is None:
                raise
            return existing, False
        return dict(row), True

    def job(self, job_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            found = conn.execute(_JOB_BY_ID, {"job_id": job_id}).mappings().first()
            if found is None and 4 <= len(job_id) < 32:
                matches = conn.execute(
                    select(jobs).where(jobs.c.id.startswith(job_id, autoescape=True)).limit(2)
                ).mappings().all()
                found = matches[0] if len(matches) == 1 else None
        return dict(found) if found else None

    def job_by_dedupe_key(self, key: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            found = conn.execute(select(jobs).where(jobs.c.dedupe_key == key)).mappings().first()
        return dict(found) if found else None

    def jobs(self, *, limit: int = 50, statuses: Iterable[str] | None = None) -> list[dict[str, Any]]:
        query = select(jobs).order_by(jobs.c.created.desc(), jobs.c.id).limit(limit)
        if statuses is not None:
            query = query.where(jobs.c.status.in_(list(statuses)))
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    def children(self, parent_id: str) -> list[dict[str, Any]]:
        """The jobs of a flow's steps, in the order they were journaled."""
        query = select(jobs).where(jobs.c.parent_id == parent_id).order_by(jobs.c.created, jobs.c.id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    def update_job(self, job_id: str, *, only_if_status: Iterable[str] | None = None, **values: Any) -> bool:
        """Change a job; with `only_if_status`, only while it still has one of those (a claim)."""
        params = {f"new_{name}": value for name, value in values.items()}
        params["job_id"] = job_id
        if only_if_status is not None:
            params["statuses"] = list(only_if_status)
        with self.engine.begin() as conn:
            return conn.execute(_job_update(tuple(values), only_if_status is not None), params).rowcount == 1

    def count_queued(self, agent: str | None = None) -> int:
        """Jobs waiting their turn (status `queued`), of one agent or of all (edge.runtime.backlog)."""
        query = select(func.count()).select_from(jobs).where(jobs.c.status == "queued")
        if agent is not None:
            query = query.where(jobs.c.agent == agent)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar() or 0)

    def count_restart(self, job_id: str) -> int:
        """One more restart of the job (resumed after the process running it stopped): the count now."""
        with self.engine.begin() as conn:
            conn.execute(update(jobs).where(jobs.c.id == job_id).values(
                restarts=func.coalesce(jobs.c.restarts, 0) + 1))
            return int(conn.execute(select(jobs.c.restarts).where(jobs.c.id == job_id)).scalar() or 0)

    # audit ------------------------------------------------------------------------------------

    def add_audit(self, action: str, *, actor: str, detail: Mapping[str, Any], conn: Any = None) -> None:
        values = {"at": time.time(), "action": action, "actor": actor, "detail": dict(detail)}
        if conn is not None:
            conn.execute(insert(audit).values(**values))
            return
        with self.engine.begin() as own:
            own.execute(insert(audit).values(**values))

    def audit_log(self, *, limit: int = 100) -> list[AuditRecord]:
        query = select(audit).order_by(audit.c.at.desc(), audit.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            return [AuditRecord(r["id"], r["at"], r["action"], r["actor"], r["detail"] or {})
                    for r in conn.execute(query).mappings()]

    # claims -----------------------------------------------------------------------------------

    def claim(self, key: str) -> bool:
        """True the first time `key` is claimed, False ever after (see `claims`)."""
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(claims).values(key=key, at=time.time()))
        except IntegrityError:
            return False
        return True

    # plugins ----------------------------------------------------------------------------------

    def find_version(self, plugin: str, version: str, content_hash: str) -> InstalledVersion | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(plugin_versions).where(
                plugin_versions.c.plugin == plugin, plugin_versions.c.version == version,
                plugin_versions.c.content_hash == content_hash)).mappings().first()
            return self._version(conn, row) if row else None

    def current_versions(self) -> list[InstalledVersion]:
        """The version in use of every installed plugin, by plugin name."""
        query = (select(plugin_versions)
                 .join(plugins, plugins.c.current_version_id == plugin_versions.c.id)
                 .order_by(plugins.c.name))
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
            return self._versions(conn, rows, current=lambda row: True)

    def current_version(self, plugin: str) -> InstalledVersion | None:
        return next((v for v in self.current_versions() if v.plugin == plugin), None)

    def versions(self, plugin: str) -> list[InstalledVersion]:
        with self.engine.connect() as conn:
            current = conn.execute(select(plugins.c.current_version_id)
                                   .where(plugins.c.name == plugin)).scalar()
            rows = conn.execute(select(plugin_versions).where(plugin_versions.c.plugin == plugin)
                                .order_by(plugin_versions.c.installed_at)).mappings().all()
            return self._versions(conn, rows, current=lambda row: row["id"] == current)

    def _version(self, conn: Any, row: RowMapping, *, current: bool = False) -> InstalledVersion:
        return self._versions(conn, [row], current=lambda _: current)[0]

    def _versions(self, conn: Any, rows: Sequence[RowMapping],
                  *, current: Callable[[RowMapping], bool]) -> list[InstalledVersion]:
        """Versions with their agents, read in one query however many versions (a run reads them all)."""
        by_version: dict[int, list[Mapping[str, Any]]] = {row["id"]: [] for row in rows}
        if by_version:
            for a in conn.execute(select(agents).where(agents.c.version_id.in_(list(by_version)))
                                  .order_by(agents.c.name)).mappings():
                by_version[a["version_id"]].append(a)
        return [self._make_version(row, by_version[row["id"]], current=current(row)) for row in rows]

    @staticmethod
    def _make_version(row: RowMapping, agent_rows: Sequence[Mapping[str, Any]], *,
                      current: bool) -> InstalledVersion:
        return InstalledVersion(
            id=row["id"], plugin=row["plugin"], version=row["version"], content_hash=row["content_hash"],
            path=row["path"], description=row["description"] or "", installed_at=row["installed_at"],
            installed_by=row["installed_by"] or "", current=current,
            agents=tuple(InstalledAgent(
                name=a["name"], kind=a["kind"], description=a["description"] or "",
                input_schema_file=a["input_schema_file"], input_schema=a["input_schema"],
                input_hash=a["input_hash"], output_schema_file=a["output_schema_file"],
                output_schema=a["output_schema"], output_hash=a["output_hash"],
                failures=a["failures"] or {}, limits=a["limits"] or {},
                contract_hash=a["contract_hash"], contract_version=a["contract_version"],
                annotations=a["annotations"],
            ) for a in agent_rows),
        )

    def update_agent_contracts(self, version_id: int, name: str, *, contracts: Mapping[str, Any]) -> None:
        """Replace one stored agent's contracts (`contracts`: its `input_schema*`/`output_schema*`/`*_hash`
        columns): an `mcp` agent's tool changed compatibly (edge.runtime.tool_refresh)."""
        with self.engine.begin() as conn:
            conn.execute(update(agents).where(agents.c.version_id == version_id, agents.c.name == name)
                         .values(**contracts))

    def record_version(self, *, plugin: str, version: str, content_hash: str, path: str, description: str,
                       installed_by: str, agent_rows: Iterable[Mapping[str, Any]],
                       audit_detail: Mapping[str, Any], action: str = "plugin.install") -> InstalledVersion:
        """Install a plugin version and make it current, with its agents and an audit record (`action`):
        one transaction."""
        now = time.time()
        with self.engine.begin() as conn:
            exists = conn.execute(select(plugins.c.name).where(plugins.c.name == plugin)).first()
            if exists is None:
                conn.execute(insert(plugins).values(name=plugin, current_version_id=None, installed_at=now))
            row = conn.execute(select(plugin_versions.c.id).where(
                plugin_versions.c.plugin == plugin, plugin_versions.c.version == version,
                plugin_versions.c.content_hash == content_hash)).first()
            if row is None:
                key = conn.execute(insert(plugin_versions).values(
                    plugin=plugin, version=version, content_hash=content_hash, path=path,
                    description=description, installed_at=now, installed_by=installed_by,
                )).inserted_primary_key
                assert key is not None  # an INSERT returns the key it made
                version_id = key[0]
                for agent in agent_rows:
                    conn.execute(insert(agents).values(version_id=version_id, **agent))
            else:
                version_id = row[0]
            conn.execute(update(plugins).where(plugins.c.name == plugin)
                         .values(current_version_id=version_id, installed_at=now))
            self.add_audit(action, actor=installed_by, detail=audit_detail, conn=conn)
            stored = conn.execute(select(plugin_versions).where(plugin_versions.c.id == version_id)).mappings().one()
            return self._version(conn, stored, current=True)


from oz0.edge.runtime import (  # noqa: E402  after `metadata` is made, which these tables join
    budget_tables,  # noqa: F401  its tables join `metadata` (revision 0008)
    conversations,  # noqa: F401  its table joins `metadata` (revision 0015)
    loop_trace,  # noqa: F401  its table joins `metadata` (revision 0012)
    people,  # noqa: F401  its table joins `metadata` (revision 0023)
    plugin_store,  # noqa: F401  its table joins `metadata` (revision 0024)
)
