"""The schedules run by the engine: one DBOS schedule per installed `schedules/NAME.yaml`, applied by
every replica at start and again when the installed plugins change (follow_installs: an install,
uninstall or rollback on any replica applies without a restart). The engine's scheduler fires each
tick once across replicas: its workflow id is the schedule and the tick, so a second replica's
enqueue of the same tick joins the first.

A tick is the workflow `oz0.schedule.tick`: a step journals the tick's job (`schedule:NAME` asks, the
dedupe key names the tick, the ReplyRef its first channel), the job runs as its own workflow (on its
agent's queue, posted by its own delivery step, as an ask is), and a step per further channel posts
the same card there. Its steps take the one retry rule of a job's steps (edge.runtime.step_retries):
a database fault delays the tick, never loses it. A replica killed during a tick leaves the tick's workflow pending: a peer
resumes it (edge.runtime.leases), its checkpointed steps are not run again, so the tick posts once.

`catch_up: true`: the engine's own backfill would run every missed tick; a schedule means "the latest
report", so at start the latest tick before the engine launched runs once unless a replica ran it (its
workflow id is the one the scheduler would have used, so replicas starting together run it once),
older missed ticks not at all; the scheduler fires every tick after the launch. A paused schedule stays paused across restarts (applying keeps its status).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter  # type: ignore[import-untyped]  # ships no stubs
from dbos import DBOS, SetWorkflowID

from oz0.edge.plugins.schedules import Post, ScheduleSpec
from oz0.edge.runtime.durable import Engine, _current, workflow_id
from oz0.edge.runtime.plugin_store import InstalledState
from oz0.edge.runtime.plugin_watch import PluginWatch
from oz0.edge.runtime.schedules import ENGINE_PREFIX, channel_ref, engine_name, tick_key
from oz0.edge.runtime.step_retries import retried, step_options

__all__ = ["apply_schedules", "follow_installs"]

log = logging.getLogger("oz0.schedules")


@DBOS.workflow(name="oz0.schedule.tick")
async def _tick_workflow(scheduled_at: datetime, context: Any) -> str:
    engine = _current()
    name = str((context or {}).get("name", ""))
    made = await DBOS.run_step_async(step_options("oz0.schedule.submit"), _submit, engine, name, scheduled_at.isoformat())
    if made is None:
        return "gone"
    queue = await engine.places.queue_at(made["placement"])
    with SetWorkflowID(made["workflow"]):
        handle = await DBOS.enqueue_workflow_async(queue, engine.places.workflow_at(made["placement"]), made["id"])
    status: str = await handle.get_result()
    for platform, channel in made["also"]:
        await DBOS.run_step_async(step_options("oz0.schedule.post"), _post_copy, engine, made["id"], platform,
                                  channel)
    return status


def _submit(engine: Engine, name: str, tick: str) -> dict[str, Any] | None:
    """Journal the tick's job (once: its dedupe key names the tick); its id, workflow id and where it
    runs (Engine.placement) are the step's value, so the tick reads neither the journal nor the
    catalog between its steps (where a database fault would end it ERROR, its job never run)."""
    runtime = engine.runtime
    spec = next((s for s in runtime.schedules.installed() if s.name == name), None)
    if spec is None:
        log.warning("schedule %s fired at %s but is no longer installed; nothing runs", name, tick)
        return None
    first, *rest = spec.post_to or (None,)
    job, created = runtime.submit(spec.agent, spec.input_text(), requester=f"schedule:{name}", channel="schedule",
                                  dedupe_key=tick_key(name, tick),
                                  reply_to=channel_ref(first) if first else None,
                                  channel_id=first.where if first else None)
    if created:
        log.info("schedule %s: tick %s is job %s (%s)", name, tick, job.id, spec.agent)
    return {"id": job.id, "workflow": workflow_id(job), "placement": engine.places.placement(job.agent),
            "also": [[p.platform, dict(p.place)] for p in rest]}


async def _post_copy(engine: Engine, job_id: str, platform: str, place: str | dict[str, str]) -> bool:
    """The tick's card in a further place of the schedule, by that platform's delivery. `place` is the
    destination's keys (edge.plugins.schedules.DESTINATIONS), or a channel id alone (a tick journaled
    before there were other keys)."""
    post = Post(platform, tuple(place.items()) if isinstance(place, dict) else (("channel", place),))
    job = engine.runtime.job(job_id)
    deliver = engine.runtime.deliverer(platform)
    if job is None or deliver is None:
        log.warning("schedule job %s: no %s channel here to post its card to %s", job_id, platform, post.where)
        return False
    await deliver(replace(job, reply_to=channel_ref(post), channel_id=post.where))
    return True


def apply_schedules(engine: Engine, *, launched_at: datetime | None) -> list[ScheduleSpec]:
    """Make the engine's schedules the installed ones (a schedule whose plugin is gone is deleted), then
    run, once, the latest tick each `catch_up` schedule missed before this replica's engine launched at
    `launched_at` (its scheduler fires every tick after that). `launched_at` None: a re-apply while the
    engine runs (follow_installs), which catches nothing up."""
    specs = engine.runtime.schedules.installed()
    before = {s["schedule_name"]: s for s in DBOS.list_schedules(schedule_name_prefix=ENGINE_PREFIX)}
    DBOS.apply_schedules([{"schedule_name": engine_name(s.name),
                           "workflow_fn": _tick_workflow,  # type: ignore[typeddict-item]
                           "schedule": s.engine_cron, "cron_timezone": s.timezone, "context": {"name": s.name},
                           "automatic_backfill": False} for s in specs])
    for gone in set(before) - {engine_name(s.name) for s in specs}:
        DBOS.delete_schedule(gone)
    for spec in specs:
        row = before.get(engine_name(spec.name))  # it has fired before: a tick since is one it missed
        if launched_at is not None and spec.catch_up and row is not None and row.get("status", "ACTIVE") == "ACTIVE" and row.get("last_fired_at"):
            _catch_up(spec, launched_at)
    if specs:
        log.info("schedules: %s", ", ".join(f"{s.name} ({s.cron} {s.timezone})" for s in specs))
    return specs


def follow_installs(watch: PluginWatch, engine: Engine) -> None:
    """Re-apply the schedules whenever the installed plugins change (an install, uninstall or rollback
    made on any replica, seen by this replica's watch within its poll): a new plugin's schedules tick,
    a removed one's stop, without a restart. Each replica applies the same set; the engine's apply is
    an idempotent upsert by name, so they agree."""

    def reapply(_state: InstalledState) -> None:
        if engine.launched:   # a database fault is retried (step_retries.retried): the schedules never stay stale
            retried("re-applying the schedules", lambda: apply_schedules(engine, launched_at=None),
                    go_on=lambda: engine.launched)

    watch.watch(reapply)


def _catch_up(spec: ScheduleSpec, launched_at: datetime) -> None:
    """The latest tick before the launch, unless a replica ran it (its workflow exists)."""
    tz = ZoneInfo(spec.timezone)
    missed = croniter(spec.engine_cron, launched_at.astimezone(tz), second_at_beginning=True).get_prev(datetime)
    wid = f"sched-{engine_name(spec.name)}-{missed.isoformat()}"  # the scheduler's own id for that tick
    if DBOS.list_workflows(workflow_ids=[wid], load_input=False, load_output=False):
        return
    log.info("schedule %s missed its tick at %s while no replica ran (catch_up: true): it runs now", spec.name,
             missed.isoformat())
    # the window holds that tick alone; under the scheduler's id, a replica starting beside this one runs it once
    DBOS.backfill_schedule(engine_name(spec.name), missed - timedelta(seconds=1), missed + timedelta(microseconds=1))
