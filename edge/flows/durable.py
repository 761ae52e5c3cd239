"""A flow as a durable DBOS workflow (`oz0 serve`): its agent steps child workflows, its person steps
durable waits, so a restart (or a replica's death) resumes the flow where it was.

The workflow `oz0.flow` claims the flow's job, then runs `edge.flows.runner.drive` (the one flow runner)
over `DurableEffects`, steps that DBOS checkpoints: a child job journaled once (its dedupe key is the parent and the step), run as the
child workflow `oz0.job` (the same workflow as any job, under its own id) and read back; a question
recorded with `runtime.ask` and waited for with `questions.wait_in_workflow` (checkpointed waits woken
by the job's event stream). Every step is retried through a fault of the database or the disk
(edge.runtime.step_retries), as a job's own steps are, so a Postgres outage mid-flow loses nothing. The
expressions between steps are pure functions of checkpointed values, so a replay takes the same way.
Imported through the runtime's flow engine (edge.flows.engine) before DBOS launches, so the workflow is registered.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from dbos import DBOS
from dbos._error import DBOSAwaitedWorkflowCancelledError  # a cancelled child's result (DBOS does not export it)

from oz0.edge.flows.runner import StepResult, child_dedupe_key, drive, journal_skipped, person_question, step_progress
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.flow import FLOW_KIND, FlowSpec, FlowStep
from oz0.edge.model.job import Job, JobFailure
from oz0.edge.plugins.flow_manifest import load_flow
from oz0.edge.runtime.body_retries import read_out
from oz0.edge.runtime.durable import RESULT_POLL_S, Engine, current_engine
from oz0.edge.runtime.progress import JournalProgress
from oz0.edge.runtime.questions import Answer, wait_in_workflow
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.step_retries import step_options

__all__ = ["DurableEffects", "flow_workflow"]


class DurableEffects:
    """The flow's steps as DBOS checkpoints: a child job journaled once and run as the child workflow
    `oz0.job`, a person step asked in a step and waited for durably, a skipped step journaled in a step.
    The journal and the catalog are read in those steps only (never between them, where a database
    fault would end the workflow ERROR): the flow's job is named by its id, read inside each step."""

    def __init__(self, engine: Engine, job_id: str, spec: FlowSpec) -> None:
        self.engine, self.runtime, self.job_id, self.spec = engine, engine.runtime, job_id, spec
        # "step 2 of 3: approve": journaled, published, and shown by whoever waits for the flow here
        self.report = JournalProgress(self.runtime.store, job_id,
                                      lambda p: (engine.progress_of(job_id) or _ignore)(p),
                                      publish=self.runtime.stream.publish)

    async def run_agent(self, step: FlowStep, text: str, run: int) -> Job:
        assert step.agent is not None
        engine, runtime, job_id = self.engine, self.runtime, self.job_id
        where = step_progress(self.spec, step)
        self.report(where)
        made = await DBOS.run_step_async(step_options("oz0.flow.child"), _child, engine, job_id, step, text, run)
        if "refused" in made:  # the tree's limits refused the child (edge.runtime.tree)
            raise JobFailure(made["refused"]["kind"], made["refused"]["reason"])
        child_id = made["id"]
        # the step's own reports follow its line, when the step runs in this process
        follow = engine.follow(child_id, lambda p: self.report(replace(p, message=f"{where.message} · {p.message}")))
        try:
            handle = await engine.places.start_child(made["placement"], child_dedupe_key(job_id, step.id, run), child_id)
            result = handle.get_result(polling_interval_sec=RESULT_POLL_S)
            try:  # not past the tree's time (tree_timeout_s), when one bounds it: then the child is stopped
                if made["bounded"]:
                    flow = await read_out("a flow's job", _journaled, runtime, job_id)
                    await runtime.tree.watch_child(flow, child_id, result)
                else:
                    await result
            except DBOSAwaitedWorkflowCancelledError:
                ended_by_tree = await DBOS.run_step_async(step_options("oz0.flow.tree_reason"), _tree_ended,
                                                          runtime, job_id)
                if not ended_by_tree:  # cancelled by someone else than the tree's limits
                    raise
        finally:
            engine.unfollow(child_id, follow)
        ended = await DBOS.run_step_async(step_options("oz0.flow.read"), _read, runtime, child_id)
        return _as_job(ended)

    async def ask_person(self, step: FlowStep, message: str) -> Answer:
        runtime, job_id, spec = self.runtime, self.job_id, self.spec
        self.report(step_progress(spec, step))
        await DBOS.run_step_async(step_options("oz0.flow.ask"), _ask, runtime, job_id, step, message)
        if spec.limits.tree_timeout_s is None or not spec.limits.count_waits:
            return await wait_in_workflow(job_id, step.id, step.timeout_s)
        left = await DBOS.run_step_async(step_options("oz0.flow.tree_left"), _tree_left, runtime, job_id)
        by_tree = left is not None and (step.timeout_s is None or left < step.timeout_s)
        answer = await wait_in_workflow(job_id, step.id, left if by_tree else step.timeout_s)
        if answer.action == "timeout" and by_tree:  # the tree's time ran out, not the step's
            reason = await DBOS.run_step_async(step_options("oz0.flow.tree_time"), _tree_time_up, runtime, job_id,
                                               step.id)
            raise JobFailure("LimitExceeded", reason)
        return answer

    async def record(self, result: StepResult) -> None:
        if result.status == "skipped":
            await DBOS.run_step_async(step_options("oz0.flow.skip"), _skip, self.runtime, self.job_id,
                                      self.spec.step(result.step))


@DBOS.workflow(name="oz0.flow")
async def flow_workflow(job_id: str) -> str:
    engine = current_engine()
    runtime = engine.runtime
    started = await DBOS.run_step_async(step_options("oz0.flow.start"), _start, runtime, job_id)
    status: str = started["status"]
    if started["run"]:
        spec = _flow_spec(runtime, started)
        effects = DurableEffects(engine, job_id, spec)
        try:
            output = await drive(spec, started["value"], effects)
            status = await DBOS.run_step_async(step_options("oz0.flow.end"), _succeed, runtime, job_id, output)
        except JobFailure as failure:
            status = await DBOS.run_step_async(step_options("oz0.flow.end"), _fail, runtime, job_id, failure.kind,
                                               failure.reason, failure.partial_output)
        finally:
            effects.report.close()
    await DBOS.run_step_async(step_options("oz0.deliver"), engine.deliver_step, job_id)
    engine.finished(job_id)
    return status


def _ignore(progress: Any) -> None:
    return None


def _start(runtime: Runtime, job_id: str) -> dict[str, Any]:
    """The flow's job claimed, its input checked, and where its flow file is (JSON data: the flow's
    spec is loaded from that file between the steps, never read from the catalog there)."""
    job = runtime.job(job_id)
    if job is None:
        return {"run": False, "status": "missing"}
    if job.finished:
        return {"run": False, "status": job.status}
    import time

    runtime.store.update_job(job_id, only_if_status=("queued",), status="running", started=time.time(),
                             attempts=1)
    try:
        spec, plugin = runtime.catalog.lookup(job.agent)
        value = runtime.input_of(job, spec)
    except JobFailure as failure:
        ended = runtime.end(job_id, "failed", attempts=1, kind=failure.kind, reason=failure.reason)
        return {"run": False, "status": ended.status}
    except ValueError as exc:  # UnknownAgent: uninstalled since it was asked
        ended = runtime.end(job_id, "failed", attempts=0, kind="UnknownAgent", reason=str(exc))
        return {"run": False, "status": ended.status}
    return {"run": True, "status": "running", "agent": job.agent, "value": value, "plugin": plugin.name,
            "root": str(plugin.path), "file": spec.file}


def _flow_spec(runtime: Runtime, started: dict[str, Any]) -> FlowSpec:
    """The flow `_start` found, loaded from its file in the plugin's content-addressed folder (the same
    version on a replay). A replica whose cache lacks that folder (a replay elsewhere) asks the catalog."""
    file = Path(started["file"])
    if file.is_file():
        spec: AgentSpec = load_flow(Path(started["root"]), file, started["plugin"])
    else:
        spec = runtime.agent(started["agent"])
    assert isinstance(spec, FlowSpec) and spec.kind == FLOW_KIND
    return spec


def _child(engine: Engine, job_id: str, step: FlowStep, text: str, run: int) -> dict[str, Any]:
    """The step's child job journaled (once), where it runs (Engine.placement) and whether a
    tree_timeout_s bounds the tree, or why the tree's limits refuse it: a checkpointed value, so a
    replay takes the same way."""
    runtime = engine.runtime
    if step.agent is None:
        return {"refused": {"kind": "Misconfigured", "reason": f"step {step.id!r} names no agent to run"}}
    job = _journaled(runtime, job_id)
    try:
        child = runtime.submit_child(job, step.agent, text, dedupe_key=child_dedupe_key(job.id, step.id, run))
    except JobFailure as failure:
        return {"refused": {"kind": failure.kind, "reason": failure.reason}}
    return {"id": child.id, "placement": engine.places.placement(step.agent),
            "bounded": runtime.tree.time_left(job) is not None}


def _tree_ended(runtime: Runtime, job_id: str) -> bool:
    """Whether the flow's tree was ended by a limit (which cancelled its child)."""
    return runtime.tree_reason(_journaled(runtime, job_id)) is not None


def _skip(runtime: Runtime, job_id: str, step: FlowStep) -> None:
    journal_skipped(runtime, _journaled(runtime, job_id), step)


def _read(runtime: Runtime, child_id: str) -> dict[str, Any]:
    child = runtime.job(child_id)
    assert child is not None
    return {"id": child.id, "status": child.status, "output": child.output, "failure_kind": child.failure_kind,
            "failure_reason": child.failure_reason}


def _as_job(row: dict[str, Any]) -> Job:
    return Job(id=row["id"], agent="", requester="", channel="", input="", status=row["status"],
               output=row["output"], failure_kind=row["failure_kind"], failure_reason=row["failure_reason"],
               created=0.0, started=None, ended=None, attempts=0, dedupe_key=None, reply_to=None)


def _journaled(runtime: Runtime, job_id: str) -> Job:
    """The flow's own job, which its workflow runs for: journaled before the workflow started."""
    job = runtime.job(job_id)
    if job is None:
        raise JobFailure("Misconfigured", f"job {job_id} is not in the journal")
    return job


def _tree_left(runtime: Runtime, job_id: str) -> float | None:
    """Seconds left of the flow's tree_timeout_s (count_waits: a wait for a person counts)."""
    return runtime.tree.time_left(_journaled(runtime, job_id))


def _tree_time_up(runtime: Runtime, job_id: str, step: str) -> str:
    """The tree's time ran out while its person step `step` waited: the reason, recorded on the root."""
    job = _journaled(runtime, job_id)
    return runtime.tree.time_up(job, where=f"person step {step} of job {job.id}")


def _ask(runtime: Runtime, job_id: str, step: FlowStep, message: str) -> None:
    runtime.ask(person_question(_journaled(runtime, job_id), step, message))


def _succeed(runtime: Runtime, job_id: str, output: Any) -> str:
    spec = runtime.agent(_journaled(runtime, job_id).agent)
    try:
        checked = runtime.attempts.checked_output(job_id, spec, output)
    except JobFailure as failure:
        return runtime.end(job_id, "failed", attempts=1, kind=failure.kind, reason=failure.reason,
                           output=failure.partial_output).status
    return runtime.end(job_id, "succeeded", attempts=1, output=checked).status


async def _fail(runtime: Runtime, job_id: str, kind: str, reason: str, partial: Any) -> str:
    if kind == "LimitExceeded" and partial is None:
        partial = runtime.tree_partial(job_id)
    ended = runtime.end(job_id, "failed", attempts=1, kind=kind, reason=reason, output=partial)
    await runtime.tree.end_tree(job_id)  # a limit ended the tree: its children still running are cancelled
    return ended.status
