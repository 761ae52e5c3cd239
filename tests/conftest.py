"""Shared test fixtures: a clean OZ0_HOME, and a real
Postgres (tests/support/postgres_server.py) started once per run for the tests that ask for it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def oz0_home(tmp_path, monkeypatch) -> Path:
    """A fresh OZ0_HOME for the test, so no test touches ~/.oz0."""
    home = tmp_path / "oz0home"
    home.mkdir()
    monkeypatch.setenv("OZ0_HOME", str(home))
    monkeypatch.delenv("OZ0_DATABASE_URL", raising=False)
    return home


def _started_postgres():
    """A Postgres cluster started here (skipped, saying why, where the server binaries are missing)."""
    from postgres_server import PostgresServer, find_binaries

    if find_binaries() is None:
        pytest.skip("the Postgres server binaries (initdb, postgres) are not installed; `make test` installs them")
    pytest.importorskip("psycopg")
    try:
        server = PostgresServer.start()
    except PermissionError as exc:
        pytest.skip(str(exc))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_server():
    """One Postgres cluster for the run."""
    yield from _started_postgres()


@pytest.fixture(scope="module")
def own_postgres():
    """A Postgres cluster of the test module's own, which its tests may stop and start (halt, resume)."""
    yield from _started_postgres()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A fresh, empty Postgres database for one test, as OZ0_DATABASE_URL takes it."""
    return postgres_server.database()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    """An empty journal (edge.runtime.store.Store) on a real SQLite file, then on a real Postgres."""
    from oz0.edge.runtime.store import Store

    url = f"sqlite:///{tmp_path}/oz0.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    s = Store(url)
    yield s
    s.close()
