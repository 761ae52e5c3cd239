"""The job engine's settings (edge.runtime.durable), apart from the engine so that reading them does not
import DBOS: this replica's executor id, the application version DBOS records, a job's workflow id,
the queue of an agent's jobs, the SQLite system database's place (and its write-ahead-log mode), and
the numeric settings.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import make_url

from oz0.edge.errors import Oz0Error

if TYPE_CHECKING:
    from oz0.edge.model.job import Job

__all__ = ["EngineError", "app_version", "positive_setting", "queue_name", "replica_id", "system_database_url", "workflow_id",
           "write_ahead_log"]


class EngineError(Oz0Error, RuntimeError):
    """The engine cannot start as configured: names the setting and what to change."""


def replica_id(env: Mapping[str, str] | None = None) -> str:
    """This replica's stable executor id: OZ0_REPLICA_ID, else the host name (a StatefulSet pod's name)."""
    found: Mapping[str, str] = os.environ if env is None else env
    return (found.get("OZ0_REPLICA_ID") or "").strip() or socket.gethostname()


def app_version() -> str:
    """The application version DBOS records with each workflow: the package version and the workflow's
    shape. Replicas of one release recover each other's workflows; a release that changes the
    workflow's steps must change _WORKFLOW_SHAPE."""
    try:
        package = version("oz0-edge")
    except PackageNotFoundError:
        package = "dev"
    return f"oz0-{package}-{_WORKFLOW_SHAPE}"


# 2: a durable answer wait is checkpointed slices; 3: a tool loop's end is a step; 4: a tool loop's trace
# rows ride in its steps' values (a loop cut short writes the rest in the step oz0.loop.trace)
# 5: the `run` step decides whether a job loops, a flow and a tick read nothing between their steps
# 6: a tool loop's end is written by its `deliver` step (no `oz0.loop.end`), whose value is the job's status
_WORKFLOW_SHAPE = "run+deliver-6"


def workflow_id(job: Job | Mapping[str, Any]) -> str:
    """A job's workflow id: its dedupe key (so a redelivery joins the same run), else its id."""
    if isinstance(job, Mapping):
        return job.get("dedupe_key") or f"job:{job['id']}"
    return job.dedupe_key or f"job:{job.id}"


def positive_setting(env: Mapping[str, str], name: str, default: float) -> float:
    """A setting of seconds or jobs from the environment, above 0; EngineError naming it otherwise."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise EngineError(f"{name} must be a number of seconds or jobs, not {raw!r}") from None
    if value <= 0:
        raise EngineError(f"{name} must be above 0, not {raw!r}")
    return value


def beside_journal(url: str, home: Any) -> str:
    """The SQLite system database: a file beside the SQLite journal (under OZ0_HOME by default)."""
    journal = make_url(url).database
    folder = Path(journal).parent if journal and journal != ":memory:" else Path(home)
    return f"sqlite:///{folder / 'oz0-engine.db'}"


def write_ahead_log(url: str) -> None:
    """The SQLite system database in write-ahead-log mode, as the journal is (edge.runtime.store): a
    commit is one append and one sync instead of a rollback journal made, synced and deleted, and the
    queues' polls read beside a step's write instead of waiting for it. Every job step and every poll
    writes to this file. The mode is kept by the file, so every connection DBOS opens has it."""
    path = make_url(url).database
    if not path or path == ":memory:":
        return
    with closing(sqlite3.connect(path, timeout=30)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")


def system_database_url(url: str, home: Any) -> str | None:
    """The engine's system database for a journal at `url`, for a process that runs no engine (the
    CLI): the journal's Postgres, or the SQLite file beside the journal if `oz0 serve` made one."""
    if url.startswith("postgresql"):
        return url
    beside = beside_journal(url, home)
    return beside if os.path.exists(beside.removeprefix("sqlite:///")) else None


def queue_name(agent: str) -> str:
    """The DBOS queue of an agent's jobs (its concurrency); the shared queue for an unknown agent."""
    return f"oz0-agent-{agent}" if agent else "oz0-jobs"
