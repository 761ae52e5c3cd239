"""Schedules as an operator reads and steers them: `oz0 schedules`, `GET /v1/schedules`, the console's
Schedules page, pause and resume (audited).

The schedules are the installed plugins' `schedules/*.yaml` (edge.plugins.schedules); the engine runs
them (edge.runtime.schedule_engine: DBOS scheduled workflows, one run a tick across replicas). A
schedule's state lives in the engine's system database (active or paused, when it last fired), its
runs in the journal: each tick is a job asked by `schedule:NAME`, under the dedupe key
`schedule:NAME:TICK`, posted where the schedule says through the same delivery as an ask (a job
with a ReplyRef for the channel). This module reads both without running the engine: from `oz0
serve` through DBOS itself, elsewhere (the CLI) through a DBOS client of the same system database.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sqlalchemy import select

from oz0.edge.errors import Oz0Error
from oz0.edge.model.job import Job
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.schedules import Post, ScheduleSpec, load_schedules
from oz0.edge.runtime.engine_settings import system_database_url
from oz0.edge.runtime.store import jobs

if TYPE_CHECKING:
    from oz0.edge.plugins.manifest import Plugin
    from oz0.edge.runtime.store import Store

__all__ = ["ENGINE_PREFIX", "ScheduleError", "ScheduleState", "Schedules", "SchedulesRuntime", "channel_ref",
           "engine_name", "tick_key"]

log = logging.getLogger("oz0.schedules")

ENGINE_PREFIX = "oz0.schedule:"   # a schedule's name in the engine (DBOS), after this prefix
REF_VERSION = 1                   # the channel reply references a schedule writes (adapters/chat/*_wire.py read it)
NEXT_RUNS = 3


class ScheduleError(Oz0Error):
    """A schedule that is not there, or a pause or resume that cannot be made now."""

    def __init__(self, why: Literal["unknown", "no_engine"], message: str) -> None:
        super().__init__(message)
        self.why = why
        self.message = message


def engine_name(name: str) -> str:
    return f"{ENGINE_PREFIX}{name}"


def tick_key(name: str, tick: str) -> str:
    """The dedupe key of a tick's job: a tick run twice (two replicas, a replay) journals one job."""
    return f"schedule:{name}:{tick}"


def channel_ref(post: Post) -> ReplyRef:
    """Where a schedule's result goes: a new message in the place `post` names (a channel, or a Teams
    conversation at its service URL), as each channel's wire reads a reference that names a place alone
    (no message, thread or interaction)."""
    return ReplyRef.written(post.platform, REF_VERSION, dict(post.place))


class SchedulesRuntime(Protocol):
    """What the schedules need of the Runtime."""

    home: Path
    store: Store
    engine: Any  # edge.runtime.durable.Engine once launched, else None

    def plugins(self) -> list[Plugin]: ...

    def audit(self, action: str, *, actor: str, detail: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class ScheduleState:
    """A schedule as `oz0 schedules` shows it."""

    spec: ScheduleSpec
    status: str                  # active, paused, or "not started" (no `oz0 serve` has applied it yet)
    next_runs: tuple[datetime, ...]
    last_fired: str | None
    last_job: Job | None

    def to_dict(self) -> dict[str, Any]:
        spec, last = self.spec, self.last_job
        return {"name": spec.name, "plugin": spec.plugin, "file": spec.file, "cron": spec.cron,
                "timezone": spec.timezone, "agent": spec.agent, "catch_up": spec.catch_up,
                "post_to": [p.to_dict() for p in spec.post_to],
                "description": spec.description, "status": self.status,
                "next_runs": [t.isoformat() for t in self.next_runs] if self.status != "paused" else [],
                "last_fired": self.last_fired,
                "last_result": None if last is None else {
                    "job": last.id, "status": last.status, "failure_kind": last.failure_kind,
                    "failure_reason": last.failure_reason, "created": last.created, "ended": last.ended}}


class Schedules:
    """The installed schedules, their state in the engine, their last runs in the journal."""

    def __init__(self, runtime: SchedulesRuntime, read_job: Callable[[str], Job | None]) -> None:
        self.runtime = runtime
        self._read_job = read_job

    def installed(self) -> list[ScheduleSpec]:
        """Every installed plugin's schedules, by name; a name two plugins use is the first plugin's
        (the other is logged, not run)."""
        found: dict[str, ScheduleSpec] = {}
        for plugin in self.runtime.plugins():
            try:
                specs = load_schedules(Path(plugin.path), plugin.name)
            except PluginError as exc:
                log.error("the schedules of plugin %s cannot be read: %s", plugin.name, exc)
                continue
            for spec in specs:
                if spec.name in found:
                    log.error("schedule %s of plugin %s is ignored: plugin %s has one of that name", spec.name,
                              plugin.name, found[spec.name].plugin)
                    continue
                found[spec.name] = spec
        return sorted(found.values(), key=lambda s: s.name)

    def spec(self, name: str) -> ScheduleSpec:
        for spec in self.installed():
            if spec.name == name:
                return spec
        raise ScheduleError("unknown", f"no installed schedule is named {name!r} (oz0 schedules lists them)")

    def states(self) -> list[ScheduleState]:
        with self._engine() as engine:
            applied = {} if engine is None else {
                s["schedule_name"]: s for s in engine.list_schedules(schedule_name_prefix=ENGINE_PREFIX)}
        out = []
        for spec in self.installed():
            row = applied.get(engine_name(spec.name))
            status = "not started" if row is None else str(row.get("status", "ACTIVE")).lower()
            out.append(ScheduleState(spec, status, tuple(spec.next_runs(NEXT_RUNS)),
                                     row.get("last_fired_at") if row else None, self._last_job(spec.name)))
        return out

    def _last_job(self, name: str) -> Job | None:
        query = (select(jobs.c.id).where(jobs.c.requester == f"schedule:{name}")
                 .order_by(jobs.c.created.desc(), jobs.c.id.desc()).limit(1))
        with self.runtime.store.engine.connect() as conn:
            job_id = conn.execute(query).scalar()
        return self._read_job(job_id) if job_id is not None else None

    def set_paused(self, name: str, paused: bool, *, by: str) -> ScheduleState:
        """Pause (no tick fires, on any replica) or resume a schedule; audited."""
        spec = self.spec(name)
        with self._engine() as engine:
            if engine is None or engine.get_schedule(engine_name(name)) is None:
                raise ScheduleError("no_engine", f"schedule {name!r} has not been started by oz0 serve yet; "
                                                 "start the server once, then pause it")
            (engine.pause_schedule if paused else engine.resume_schedule)(engine_name(name))
        self.runtime.audit("schedule.pause" if paused else "schedule.resume", actor=by,
                           detail={"schedule": name, "plugin": spec.plugin})
        return next(s for s in self.states() if s.spec.name == name)

    @contextmanager
    def _engine(self) -> Iterator[Any]:
        """DBOS itself where the engine runs here, else a DBOS client of its system database (None
        when no `oz0 serve` has made one)."""
        if self.runtime.engine is not None:
            from dbos import DBOS  # dbos only where schedules are read (about a second)

            yield DBOS
            return

        url = system_database_url(self.runtime.store.url, self.runtime.home)
        if url is None:
            yield None
            return
        from dbos import DBOSClient, DBOSPortableJSONSerializer

        client = DBOSClient(system_database_url=url, serializer=DBOSPortableJSONSerializer(), application_name="oz0")
        try:
            yield client
        finally:
            client.destroy()
