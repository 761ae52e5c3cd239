"""The store's schema comes from the Alembic revisions shipped in the package: a new database is made by
them, a database made by `create_all` before migrations keeps its rows, `oz0 db upgrade` says what it did,
and replicas migrating at once do not trip over each other. SQLite here; Postgres at the end."""

from __future__ import annotations

import os
import subprocess
import sys

from sqlalchemy import create_engine, insert, inspect, text

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime import migrate
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.store import Store, metadata


def oz0(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    run_env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **env}
    return subprocess.run([sys.executable, "-m", "oz0.adapters.cli", *args], capture_output=True, text=True,
                          env=run_env, timeout=timeout)


def schema_drift(url: str) -> list:
    """What Alembic's autogenerate would still change: empty when the revisions make `metadata` exactly."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={
                "compare_type": True,  # only oz0's tables: an engine may keep its own in the same database
                "include_name": lambda name, kind, parent: kind != "table" or name in metadata.tables})
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


ADDED_AFTER_BASELINE = ("ix_jobs_agent_status", "ix_jobs_ended", "ix_jobs_parent_id",
                        "ix_jobs_root_id",  # revisions 0002, 0005, 0007
                        "ix_jobs_created_id", "ix_jobs_agent_created_id", "ix_jobs_status_created_id",
                        "ix_jobs_requester_created_id",  # revision 0016
                        "ix_jobs_agent_status_created_id")  # revision 0025
TABLES_AFTER_BASELINE = ("claims", "questions",  # revisions 0003, 0004
                         "budget_holds", "budget_grants", "budget_spend", "budgets",  # revision 0008
                         "job_trace",  # revision 0012
                         "conversation_turns",  # revision 0015
                         "people",  # revision 0023
                         "plugin_archives")  # revision 0024
COLUMNS_AFTER_BASELINE = (("jobs", "parent_id"), ("agents", "contract_hash"), ("agents", "contract_version"),
                          ("jobs", "contract_hash"), ("jobs", "contract_version"), ("jobs", "root_id"),
                          ("jobs", "tree_steps"), ("jobs", "limit_reached"),
                          ("jobs", "progress"), ("jobs", "workspace"), ("jobs", "channel_id"),
                          ("jobs", "question_shown"), ("jobs", "restarts"), ("jobs", "trace_context"),
                          ("agents", "annotations"),
                          ("jobs", "stop_request"))  # revisions 0005, 0006, 0007, 0009, 0010, 0011, 0020, 0013, 0018


def make_pre_migration_database(url: str) -> None:
    """A database as oz0 made it before migrations (`metadata.create_all`), with a job, a plugin and an audit row."""
    from oz0.edge.runtime import store as tables

    engine = create_engine(url)
    metadata.create_all(engine)
    with engine.begin() as conn:
        for index in ADDED_AFTER_BASELINE:  # today's tables less what later revisions added: 0.1.0's create_all
            conn.execute(text(f"DROP INDEX {index}"))
        for table in TABLES_AFTER_BASELINE:
            conn.execute(text(f"DROP TABLE {table}"))
        for table, column in COLUMNS_AFTER_BASELINE:
            conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
        conn.execute(insert(tables.jobs).values(
            id="a" * 32, agent="echo", requester="ana", channel="cli", input="hello", status="succeeded",
            output="hello back", created=1.0, started=1.5, ended=2.0, attempts=1, dedupe_key="evt-old"))
        conn.execute(insert(tables.audit).values(at=3.0, action="plugin.install", actor="ana", detail={"n": 1}))
        conn.execute(insert(tables.plugins).values(name="old-plugin", current_version_id=None, installed_at=4.0))
    engine.dispose()


def test_head_is_the_newest_revision_alembic_finds():
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(migrate.MIGRATIONS))
    script = ScriptDirectory.from_config(config)
    assert script.get_heads() == [migrate.HEAD]
    assert script.get_base() == migrate.BASELINE


def test_a_new_database_is_made_by_the_revisions_and_matches_the_tables(tmp_path):
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    assert runtime.store.schema == migrate.SchemaChange(None, migrate.HEAD)
    runtime.close()
    url = f"sqlite:///{tmp_path / 'home' / 'oz0.db'}"
    assert schema_drift(url) == []
    with create_engine(url).connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == migrate.HEAD


def test_an_open_on_a_current_database_runs_one_query_and_no_alembic(tmp_path):
    Store(f"sqlite:///{tmp_path / 'x.db'}").close()
    probe = ("import sys; from oz0.edge.runtime.store import Store; "
             f"s = Store('sqlite:///{tmp_path / 'x.db'}'); print(s.schema.changed, 'alembic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_a_database_made_by_create_all_before_migrations_is_stamped_and_keeps_its_rows(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    make_pre_migration_database(f"sqlite:///{home / 'oz0.db'}")
    done = oz0("db", "upgrade", env={"OZ0_HOME": str(home), "OZ0_DATABASE_URL": ""})
    assert done.returncode == 0, done.stderr
    assert f"tables made before migrations, stamped at the baseline, now at revision {migrate.HEAD}" in done.stdout
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    job = runtime.job("a" * 32)
    assert (job.agent, job.status, job.output, job.requester) == ("echo", "succeeded", "hello back", "ana")
    assert runtime.submit("echo", "again", dedupe_key="evt-old")[1] is False  # the unique key survived
    assert [(r.action, r.actor, dict(r.detail)) for r in runtime.audit_log()] == [("plugin.install", "ana", {"n": 1})]
    runtime.close()
    assert schema_drift(f"sqlite:///{home / 'oz0.db'}") == []
    listed = oz0("jobs", env={"OZ0_HOME": str(home), "OZ0_DATABASE_URL": ""})
    assert listed.returncode == 0 and "a" * 8 in listed.stdout, listed.stderr


def test_oz0_db_upgrade_says_what_it_did_and_is_idempotent(tmp_path):
    env = {"OZ0_HOME": str(tmp_path / "home"), "OZ0_DATABASE_URL": ""}
    first = oz0("db", "upgrade", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == (f"sqlite:///{tmp_path / 'home' / 'oz0.db'}: schema upgraded from an empty "
                                    f"database to revision {migrate.HEAD}")
    again = oz0("db", "upgrade", env=env)
    assert (again.returncode, again.stdout.strip().split(": ", 1)[1]) == (0, f"schema already at the newest revision, {migrate.HEAD}")


def test_a_database_newer_than_this_oz0_is_left_alone_and_db_upgrade_says_so(tmp_path, caplog):
    url = f"sqlite:///{tmp_path / 'home' / 'oz0.db'}"
    Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE).close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with caplog.at_level("WARNING", logger="oz0.migrate"):
        store = Store(url)
    assert store.schema == migrate.SchemaChange("9999", "9999")
    store.close()
    assert "schema revision 9999, which this oz0 does not know" in caplog.text
    done = oz0("db", "upgrade", env={"OZ0_HOME": str(tmp_path / "home"), "OZ0_DATABASE_URL": ""})
    assert done.returncode == 1
    assert f"is at schema revision 9999, newer than this oz0 knows (its newest is {migrate.HEAD})" in done.stderr


def test_a_bad_database_url_is_one_line_naming_it(tmp_path):
    done = oz0("db", "upgrade", env={"OZ0_HOME": str(tmp_path), "OZ0_DATABASE_URL": "nosuchdb://x/y"})
    assert done.returncode == 1
    assert done.stderr.startswith("oz0: error: cannot open the oz0 database:") and "Traceback" not in done.stderr


def test_replicas_upgrading_one_sqlite_file_at_once_all_succeed(tmp_path):
    env = {**os.environ, "OZ0_HOME": str(tmp_path / "home"), "OZ0_DATABASE_URL": ""}
    procs = [subprocess.Popen([sys.executable, "-m", "oz0.adapters.cli", "db", "upgrade"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    assert [code for code, _, _ in results] == [0, 0, 0, 0], [err for _, _, err in results]
    said = sorted(out.split(": ", 1)[1].strip() for _, out, _ in results)
    assert said == [f"schema already at the newest revision, {migrate.HEAD}"] * 3 + [
        f"schema upgraded from an empty database to revision {migrate.HEAD}"]


# Postgres ------------------------------------------------------------------------------------

try:  # the real Postgres server of test_runtime_postgres, until a shared fixture in conftest.py provides it
    from test_runtime_postgres import postgres_url  # noqa: F401
except ImportError:
    pass


def fresh_database(server_url: str) -> str:
    """Another empty database on the server of `server_url` (any database on it)."""
    import uuid

    import psycopg

    name = f"oz0_{uuid.uuid4().hex[:12]}"
    base = server_url.replace("postgresql://", "")
    userhost, _, _ = base.partition("/")
    user, _, hostport = userhost.partition("@")
    host, _, port = hostport.partition(":")
    with psycopg.connect(host=host, port=port, user=user, dbname="postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql://{userhost}/{name}"


def test_postgres_a_pre_migration_database_is_stamped_and_keeps_its_rows(postgres_url):
    url = fresh_database(postgres_url)
    make_pre_migration_database(url.replace("postgresql://", "postgresql+psycopg://"))
    done = oz0("db", "upgrade", env={"OZ0_DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    assert f"stamped at the baseline, now at revision {migrate.HEAD}" in done.stdout
    assert "oz0@127.0.0.1" in done.stdout
    runtime = Runtime(database_url=url, flow_engine=FLOW_ENGINE)
    assert runtime.job("a" * 32).output == "hello back"
    assert runtime.audit_log()[0].detail == {"n": 1}
    runtime.close()
    assert schema_drift(url.replace("postgresql://", "postgresql+psycopg://")) == []


def test_postgres_replicas_migrating_at_once_take_turns(postgres_url, tmp_path):
    url = fresh_database(postgres_url)
    env = {**os.environ, "OZ0_DATABASE_URL": url, "OZ0_HOME": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-m", "oz0.adapters.cli", "db", "upgrade"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    assert [code for code, _, _ in results] == [0, 0, 0], [err for _, _, err in results]
    assert sum("upgraded from an empty database" in out for _, out, _ in results) == 1
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    assert set(inspect(engine).get_table_names()) == {"alembic_version", *metadata.tables}
    engine.dispose()


def alembic_config(conn):
    """Alembic's configuration over an open connection, to run the revisions one at a time."""
    from alembic.config import Config

    from oz0.edge.runtime.migrate import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config


def test_revision_0011_adds_jobs_restarts_to_a_database_made_by_0010_and_keeps_its_jobs(tmp_path):
    from alembic import command
    from sqlalchemy import inspect, text

    url = f"sqlite:///{tmp_path / 'oz0.db'}"
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            config = alembic_config(conn)
            command.upgrade(config, "0010")
            conn.execute(text("INSERT INTO jobs (id, agent, requester, channel, input, status, created, attempts) "
                              "VALUES ('j1', 'echo', 'cli', 'cli', 'hi', 'running', 1.0, 1)"))
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0011")
        assert "restarts" in {c["name"] for c in inspect(engine).get_columns("jobs")}
        with engine.connect() as conn:
            assert conn.execute(text("SELECT id, status, restarts FROM jobs")).all() == [("j1", "running", None)]
    finally:
        engine.dispose()


def test_revision_0012_adds_the_job_trace_to_a_database_made_by_0009(tmp_path):
    from alembic import command

    url = f"sqlite:///{tmp_path / 'oz0.db'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0009")
        conn.execute(text("INSERT INTO jobs (id, agent, requester, channel, input, status, created, attempts) "
                          "VALUES ('j1', 'triage', 'ana', 'cli', 'hi', 'succeeded', 1.0, 1)"))
    assert not inspect(engine).has_table("job_trace")
    engine.dispose()
    store = Store(url)  # opening it upgrades it to the head
    from oz0.edge.runtime.loop_trace import add_trace, read_trace

    add_trace(store, "j1", 1, "model", "triage-1", {"tokens": {"input": 3, "output": 4}}, 12)
    add_trace(store, "j1", 1, "model", "triage-1", {"tokens": {"input": 9, "output": 9}}, 99)  # a rerun: kept once
    assert [(t["seq"], t["detail"]["tokens"]["input"]) for t in read_trace(store, "j1")] == [(1, 3)]
    assert store.job("j1")["status"] == "succeeded"
    store.close()
    assert schema_drift(url) == []


def _upgrade_with_a_job(engine, *, made_by: str, to: str) -> None:
    """A database made by revision `made_by` holding one failed job, then upgraded to `to`."""
    from alembic import command
    from sqlalchemy import text

    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), made_by)
        conn.execute(text("INSERT INTO jobs (id, agent, requester, channel, input, status, created, attempts) "
                          "VALUES ('j1', 'echo', 'cli', 'cli', 'hi', 'failed', 1.0, 1)"))
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), to)


def test_revision_0016_indexes_job_search_on_a_database_made_by_0013_and_keeps_its_jobs(tmp_path):
    from sqlalchemy import inspect, text

    engine = create_engine(f"sqlite:///{tmp_path / 'oz0.db'}")
    try:
        _upgrade_with_a_job(engine, made_by="0013", to="0016")
        indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("jobs")}
        assert indexes["ix_jobs_agent_created_id"] == ["agent", "created", "id"]
        assert {"ix_jobs_created_id", "ix_jobs_status_created_id", "ix_jobs_requester_created_id"} <= set(indexes)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT id, status FROM jobs")).all() == [("j1", "failed")]
    finally:
        engine.dispose()


def test_revision_0020_adds_the_trace_context_to_a_database_made_by_0016_and_keeps_its_jobs(tmp_path):
    from alembic import command

    from oz0.edge.runtime.job_rows import job_from_row

    url = f"sqlite:///{tmp_path / 'oz0.db'}"
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0016")
            conn.execute(text("INSERT INTO jobs (id, agent, requester, channel, input, status, created, attempts) "
                              "VALUES ('j1', 'echo', 'cli', 'cli', 'hi', 'succeeded', 1.0, 1)"))
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0020")
        assert "trace_context" in {c["name"] for c in inspect(engine).get_columns("jobs")}
    finally:
        engine.dispose()
    store = Store(url)
    try:
        old = store.job("j1")
        assert old is not None and old["trace_context"] is None and job_from_row(old).trace_id is None
        traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        store.update_job("j1", trace_context={"traceparent": traced})
        assert job_from_row(store.job("j1")).trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    finally:
        store.close()
    assert schema_drift(url) == []


def test_revision_0023_adds_people_to_a_database_made_by_0020_and_keeps_its_jobs(tmp_path):
    from alembic import command

    from oz0.edge.runtime.people import People

    url = f"sqlite:///{tmp_path / 'oz0.db'}"
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0020")
            conn.execute(text("INSERT INTO jobs (id, agent, requester, channel, input, status, created, attempts) "
                              "VALUES ('j1', 'echo', 'slack:U1', 'slack:C1', 'hi', 'succeeded', 1.0, 1)"))
        assert "people" not in inspect(engine).get_table_names()
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0023")
        assert [c["name"] for c in inspect(engine).get_columns("people")] == ["who", "name", "at"]
    finally:
        engine.dispose()
    store = Store(url)
    try:
        people = People(store)
        people.remember("slack:U1", "Ana  Lima")
        people.remember("slack:U1", "Ana Lima")
        assert people.names(["slack:U1", "slack:U2"]) == {"slack:U1": "Ana Lima"}
        assert people.shown("slack:U2") == "slack:U2" and people.shown("console:Bo") == "Bo"
        assert store.job("j1")["requester"] == "slack:U1"
    finally:
        store.close()
    assert schema_drift(url) == []


def test_revision_0024_adds_plugin_archives_to_a_database_made_by_0023_and_keeps_its_plugins(tmp_path):
    from alembic import command
    from sqlalchemy import inspect, text

    engine = create_engine(f"sqlite:///{tmp_path / 'oz0.db'}")
    try:
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0023")
            conn.execute(text("INSERT INTO plugins (name, current_version_id, installed_at) VALUES ('team', 1, 1.0)"))
            conn.execute(text("INSERT INTO plugin_versions (id, plugin, version, content_hash, path, description, "
                              "installed_at, installed_by) VALUES (1, 'team', '1.0.0', 'abc', '/old/plugins/team', "
                              "'', 1.0, 'ana')"))
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0024")
        columns = [c["name"] for c in inspect(engine).get_columns("plugin_archives")]
        assert columns == ["content_hash", "archive", "size", "stored_at", "stored_by"]
        with engine.connect() as conn:
            assert conn.execute(text("SELECT plugin, version, path FROM plugin_versions")).all() == [
                ("team", "1.0.0", "/old/plugins/team")]
    finally:
        engine.dispose()


def test_revision_0025_indexes_search_by_agent_and_status_on_a_database_made_by_0024_and_keeps_its_jobs(tmp_path):
    from alembic import command
    from sqlalchemy import inspect, text

    engine = create_engine(f"sqlite:///{tmp_path / 'oz0.db'}")
    try:
        _upgrade_with_a_job(engine, made_by="0024", to="0025")
        indexes = {i["name"]: i["column_names"] for i in inspect(engine).get_indexes("jobs")}
        assert indexes["ix_jobs_agent_status_created_id"] == ["agent", "status", "created", "id"]
        with engine.connect() as conn:
            assert conn.execute(text("SELECT id, agent, status FROM jobs")).all() == [("j1", "echo", "failed")]
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), "0024")
        assert "ix_jobs_agent_status_created_id" not in {i["name"] for i in inspect(engine).get_indexes("jobs")}
    finally:
        engine.dispose()
