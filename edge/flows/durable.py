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
from typing import Any

from dbos import DBOS
from dbos._error import DBOSAwaitedWorkflowCancelledError  # a cancelled child's result (DBOS does not export it)

from oz0.edge.flows.runner import StepResult, child_dedupe_key, drive, journal_skipped, person_question, step_progress
from oz0.edge.model.flow import FLOW_KIND, FlowSpec, FlowStep
from oz0.edge.model.job import Job, JobFailure
from oz0.edge.runtime.durable import RESULT_POLL_S, Engine, current_engine
from oz0.edge.runtime.progress import JournalProgress
from oz0.edge.runtime.questions import Answer, wait_in_workflow
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.step_retries import step_options

__all__ = ["DurableEffects", "flow_workflow"]


class DurableEffects:
    """The flow's steps as DBOS checkpoints: a child job journaled once and run as the child workflow
    `oz0.job`, a person step asked in a step and waited for durably, a skipped step journaled in a step."""

    def __init__(self, engine: Engine, job: Job, spec: FlowSpec) -> None:
        self.engine, self.runtime, self.job, self.spec = engine, engine.runtime, job, spec
        # "step 2 of 3: approve": journaled, published, and shown by whoever waits for the flow here
        self.report = JournalProgress(self.runtime.store, job.id,
                                      lambda p: (engine.progress_of(job.id) or _ignore)(p),
                                      publish=self.runtime.stream.publish)

    async def run_agent(self, step: FlowStep, text: str, run: int) -> Job:
        assert step.agent is not None
        engine, runtime, job = self.engine, self.runtime, self.job
        where = step_progress(self.spec, step)
        self.report(where)
        made = await DBOS.run_step_async(step_options("oz0.flow.child"), _child, runtime, job, step, text, run)
        if "refused" in made:  # the tree's limits refused the child (edge.runtime.tree)
            raise JobFailure(made["refused"]["kind"], made["refused"]["reason"])
        child_id = made["id"]
        # the step's own reports follow its line, when the step runs in this process
        follow = engine.follow(child_id, lambda p: self.report(replace(p, message=f"{where.message} · {p.message}")))
        try:
            handle = await engine.start_child(step.agent, child_dedupe_key(job.id, step.id, run), child_id)
            try:  # not past the tree's time (tree_timeout_s): then the child is stopped, wherever it runs
                await runtime.tree.watch_child(job, child_id, handle.get_result(polling_interval_sec=RESULT_POLL_S))
            except DBOSAwaitedWorkflowCancelledError:
                if runtime.tree_reason(job) is None:  # cancelled by someone else than the tree's limits
                    raise
        finally:
            engine.unfollow(child_id, follow)
        ended = await DBOS.run_step_async(step_options("oz0.flow.read"), _read, runtime, child_id)
        return _as_job(ended)

    async def ask_person(self, step: FlowStep, message: str) -> Answer:
        runtime, job, spec = self.runtime, self.job, self.spec
        self.report(step_progress(spec, step))
        await DBOS.run_step_async(step_options("oz0.flow.ask"), _ask, runtime, job, step, message)
        if spec.limits.tree_timeout_s is None or not spec.limits.count_waits:
            return await wait_in_workflow(job.id, step.id, step.timeout_s)
        left = await DBOS.run_step_async(step_options("oz0.flow.tree_left"), _tree_left, runtime, job.id)
        by_tree = left is not None and (step.timeout_s is None or left < step.timeout_s)
        answer = await wait_in_workflow(job.id, step.id, left if by_tree else step.timeout_s)
        if answer.action == "timeout" and by_tree:  # the tree's time ran out, not the step's
            reason = await DBOS.run_step_async(step_options("oz0.flow.tree_time"), _tree_time_up, runtime, job.id,
                                               step.id)
            raise JobFailure("LimitExceeded", reason)
        return answer

    async def record(self, result: StepResult) -> None:
        if result.status == "skipped":
            await DBOS.run_step_async(step_options("oz0.flow.skip"), journal_skipped, self.runtime, self.job,
                                      self.spec.step(result.step))


@DBOS.workflow(name="oz0.flow")
async def flow_workflow(job_id: str) -> str:
    engine = current_engine()
    runtime = engine.runtime
    started = await DBOS.run_step_async(step_options("oz0.flow.start"), _start, runtime, job_id)
    if started["run"]:
        spec = runtime.agent(started["agent"])
        assert isinstance(spec, FlowSpec) and spec.kind == FLOW_KIND
        job = runtime.job(job_id)
        assert job is not None
        try:
            output = await drive(spec, started["value"], DurableEffects(engine, job, spec))
            await DBOS.run_step_async(step_options("oz0.flow.end"), _succeed, runtime, job_id, output)
        except JobFailure as failure:
            await DBOS.run_step_async(step_options("oz0.flow.end"), _fail, runtime, job_id, failure.kind,
                                      failure.reason, failure.partial_output)
    await DBOS.run_step_async(step_options("oz0.deliver"), engine.deliver_step, job_id)
    engine.finished(job_id)
    ended = runtime.job(job_id)
    return ended.status if ended is not None else "missing"


def _ignore(progress: Any) -> None:
    return None


def _start(runtime: Runtime, job_id: str) -> dict[str, Any]:
    job = runtime.job(job_id)
    if job is None or job.finished:
        return {"run": False}
    import time

    runtime.store.update_job(job_id, only_if_status=("queued",), status="running", started=time.time(),
                             attempts=1)
    try:
        spec = runtime.agent(job.agent)
        value = runtime.input_of(job, spec)
    except JobFailure as failure:
        runtime.end(job_id, "failed", attempts=1, kind=failure.kind, reason=failure.reason)
        return {"run": False}
    except ValueError as exc:  # UnknownAgent: uninstalled since it was asked
        runtime.end(job_id, "failed", attempts=0, kind="UnknownAgent", reason=str(exc))
        return {"run": False}
    return {"run": True, "agent": job.agent, "value": value}


def _child(runtime: Runtime, job: Job, step: FlowStep, text: str, run: int) -> dict[str, Any]:
    """The step's child job journaled (once), or why the tree's limits refuse it: a checkpointed value,
    so a replay takes the same way."""
    if step.agent is None:
        return {"refused": {"kind": "Misconfigured", "reason": f"step {step.id!r} names no agent to run"}}
    try:
        child = runtime.submit_child(job, step.agent, text, dedupe_key=child_dedupe_key(job.id, step.id, run))
    except JobFailure as failure:
        return {"refused": {"kind": failure.kind, "reason": failure.reason}}
    return {"id": child.id}


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


def _ask(runtime: Runtime, job: Job, step: FlowStep, message: str) -> None:
    runtime.ask(person_question(job, step, message))


def _succeed(runtime: Runtime, job_id: str, output: Any) -> None:
    spec = runtime.agent(_journaled(runtime, job_id).agent)
    try:
        checked = runtime.attempts.checked_output(job_id, spec, output)
    except JobFailure as failure:
        runtime.end(job_id, "failed", attempts=1, kind=failure.kind, reason=failure.reason,
                    output=failure.partial_output)
        return
    runtime.end(job_id, "succeeded", attempts=1, output=checked)


async def _fail(runtime: Runtime, job_id: str, kind: str, reason: str, partial: Any) -> None:
    if kind == "LimitExceeded" and partial is None:
        partial = runtime.tree_partial(job_id)
    runtime.end(job_id, "failed", attempts=1, kind=kind, reason=reason, output=partial)
    await runtime.tree.end_tree(job_id)  # a limit ended the tree: its children still running are cancelled
