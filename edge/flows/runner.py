"""Running a flow: its steps in order, each agent step a child job of the flow's job.

The loop is written once (`drive`) over its effects (`StepEffects`: run an agent step, ask a person,
record how a step went), done one of two ways: in this process (`HereEffects`, `oz0 run`, no engine:
the child job runs here, a person step waits on the runtime) or inside the flow's durable workflow
(edge.flows.durable: the child is a child workflow, a person step a durable wait, so both survive a
restart). A step's state is `{output, answer}`; expressions see
`{input, steps: {ID: {output, answer}}}`. The flow's output is the output of the last agent step
that ran, checked against the flow's output contract by the runtime like any agent's answer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from oz0.edge.contracts.json_data import dumps_exact
from oz0.edge.model.flow import FlowSpec, FlowStep
from oz0.edge.model.job import BUILTIN_FAILURES, Job, JobFailure
from oz0.edge.model.progress import Progress, ProgressSink
from oz0.edge.plugins.expressions import ExpressionError, evaluate, render_text, truthy
from oz0.edge.runtime.questions import Question

if TYPE_CHECKING:
    from oz0.edge.runtime.questions import Answer
    from oz0.edge.runtime.runner import Runtime

__all__ = [
    "HereEffects",
    "StepEffects",
    "StepResult",
    "child_dedupe_key",
    "child_input",
    "drive",
    "journal_skipped",
    "person_question",
    "run_here",
    "step_note",
    "step_progress",
    "step_results",
]



@dataclass(frozen=True)
class StepResult:
    step: str
    status: str            # succeeded, failed, skipped, answered, declined, timed out
    job_id: str | None = None


class StepEffects(Protocol):
    """What `drive` does to the world, in this process or in a durable workflow."""

    async def run_agent(self, step: FlowStep, text: str, run: int) -> Job:
        """The agent step's child job (its `run`-th run: 1, 2, ... for a loop), once it has ended."""
        ...

    async def ask_person(self, step: FlowStep, message: str) -> Answer:
        """The person step asked and its answer (a timeout answer once its time is up)."""
        ...

    async def record(self, result: StepResult) -> None:
        """How a step went (a skipped step is journaled as a child job too)."""
        ...


def child_dedupe_key(parent_id: str, step: str, run: int = 1) -> str:
    """The child job of a step is journaled once, however often the flow resumes; the runs of a loop
    (`until:`) after the first are `step#2`, `step#3`, ..."""
    return f"flow:{parent_id}:{step}" + (f"#{run}" if run > 1 else "")


def child_input(step: FlowStep, state: Mapping[str, Any], previous: Any) -> str:
    """The text a step's agent gets: its `input:` mapping evaluated, else the previous output."""
    if step.input is None:
        value = previous
    elif isinstance(step.input, str):
        value = _eval(step, "input", step.input, state)
    else:
        value = {key: _eval(step, f"input.{key}", expr, state) for key, expr in step.input.items()}
    return value if isinstance(value, str) else dumps_exact(value).decode()


def _eval(step: FlowStep, where: str, expr: str, state: Mapping[str, Any]) -> Any:
    try:
        return evaluate(expr, state)
    except ExpressionError as exc:
        raise JobFailure("Misconfigured", f"step {step.id} {where}: {exc}") from None


def _step_failure(spec: FlowSpec, step: FlowStep, child: Job) -> JobFailure:
    kind = child.failure_kind or "AgentError"
    if kind == "LimitExceeded":  # the tree's reason as it was reached; the flow's job keeps its steps' outputs
        return JobFailure(kind, child.failure_reason or "a limit of the job tree was reached")
    reason = f"step {step.id} ({step.agent}, job {child.id}) failed with {kind}: {child.failure_reason or ''}".rstrip(": ")
    if spec.failure(kind) is not None or kind in BUILTIN_FAILURES:
        return JobFailure(kind, reason, partial_output=child.output)
    return JobFailure("StepFailed", reason, partial_output=child.output)


async def drive(spec: FlowSpec, value: Any, effects: StepEffects) -> Any:
    """The flow's steps in order; its output. Raises JobFailure as a flow fails."""
    record = effects.record
    state: dict[str, Any] = {"input": value, "steps": {}}
    previous: Any = value
    for step in spec.steps:
        if step.condition is not None and not truthy(_eval(step, "if", step.condition, state)):
            state["steps"][step.id] = {"output": None, "answer": None}
            await record(StepResult(step.id, "skipped"))
            continue
        if step.is_ask:
            assert step.ask is not None
            try:
                message = render_text(step.ask, state)
            except ExpressionError as exc:
                raise JobFailure("Misconfigured", f"step {step.id} ask: {exc}") from None
            answer = await effects.ask_person(step, message)
            action, content = answer.action, answer.content
            if action == "timeout":
                if step.on_timeout is None:
                    await record(StepResult(step.id, "timed out"))
                    raise JobFailure("NoAnswer", f"step {step.id}: nobody answered within {step.timeout_s:g} s "
                                                 "(its timeout_s)")
                content = dict(step.on_timeout["answer"])
                await record(StepResult(step.id, "timed out, answered by on_timeout"))
            elif action != "accept":
                await record(StepResult(step.id, "declined"))
                raise JobFailure("Declined", f"step {step.id}: {answer.by or 'the person'} "
                                             f"{'declined' if action == 'decline' else 'cancelled'}")
            else:
                await record(StepResult(step.id, f"answered by {answer.by or '?'}"))
            state["steps"][step.id] = {"output": None, "answer": content}
            continue
        run = 0
        while True:
            run += 1
            child = await effects.run_agent(step, child_input(step, state, previous), run)
            if child.status != "succeeded":
                await record(StepResult(step.id, child.status if run == 1 else f"{child.status} at run {run}", child.id))
                raise _step_failure(spec, step, child)
            state["steps"][step.id] = {"output": child.output, "answer": None, "runs": run}
            previous = child.output
            if step.until is None or truthy(_eval(step, "until", step.until, state)):
                break
        await record(StepResult(step.id, "succeeded" if run == 1 else f"succeeded after {run} runs", child.id))
    return previous


def step_note(results: list[StepResult] | tuple[StepResult, ...]) -> str:
    """The collapsed line under a flow's card: each step and how it went."""
    return "steps: " + "; ".join(f"{r.step} {r.status}" for r in results)


def step_progress(spec: FlowSpec, step: FlowStep, *, run: int = 1) -> Progress:
    """"step 2 of 3: approve" (an agent step also names its agent, a loop's later runs their number):
    where a running flow is."""
    number = next(i for i, s in enumerate(spec.steps, start=1) if s.id == step.id)
    agent = f" ({step.agent})" if step.agent and not step.is_ask else ""
    again = f", run {run}" if run > 1 else ""
    return Progress.of(f"step {number} of {len(spec.steps)}: {step.id}{agent}{again}")


class HereEffects:
    """The steps in this process (no engine): each agent step a child job run here, each person step
    a wait on the runtime (not durable: a restart ends the flow interrupted)."""

    def __init__(self, runtime: Runtime, job: Job, spec: FlowSpec, on_progress: ProgressSink | None) -> None:
        self.runtime, self.job, self.spec, self.on_progress = runtime, job, spec, on_progress
        self.results: list[StepResult] = []

    async def run_agent(self, step: FlowStep, text: str, run: int) -> Job:
        assert step.agent is not None
        runtime, job, on_progress = self.runtime, self.job, self.on_progress
        child = runtime.submit_child(job, step.agent, text, dedupe_key=child_dedupe_key(job.id, step.id, run))
        if child.finished:
            return child
        if on_progress is None:
            return await runtime.execute_here(child.id)
        where = step_progress(self.spec, step, run=run)
        on_progress(where)
        return await runtime.execute_here(child.id, on_progress=lambda p: on_progress(
            replace(p, message=f"{where.message} · {p.message}")))

    async def ask_person(self, step: FlowStep, message: str) -> Answer:
        if self.on_progress is not None:
            self.on_progress(step_progress(self.spec, step))
        self.runtime.ask(person_question(self.job, step, message))
        return await self.runtime.wait_answer_async(self.job.id, step.id, timeout_s=step.timeout_s)

    async def record(self, result: StepResult) -> None:
        self.results.append(result)
        if result.status == "skipped":
            journal_skipped(self.runtime, self.job, self.spec.step(result.step))


async def run_here(runtime: Runtime, job: Job, spec: FlowSpec, value: Any, *,
                   on_progress: ProgressSink | None = None) -> tuple[Any, list[StepResult]]:
    """The flow in this process (no engine): `drive` over HereEffects."""
    effects = HereEffects(runtime, job, spec, on_progress)
    output = await drive(spec, value, effects)
    return output, effects.results


def journal_skipped(runtime: Runtime, job: Job, step: FlowStep) -> None:
    """A step whose `if:` was false is a child job too, ended as `skipped`, so the tree shows it."""
    if step.is_ask:
        return
    assert step.agent is not None
    child, created = runtime.submit(step.agent, "", requester=job.requester, channel=job.channel,
                                    dedupe_key=child_dedupe_key(job.id, step.id), parent_id=job.id)
    if created:
        now = time.time()
        runtime.store.update_job(child.id, only_if_status=("queued",), status="skipped", started=now, ended=now,
                                 failure_reason=f"its condition `{step.condition}` was false")


def person_question(job: Job, step: FlowStep, message: str) -> Any:
    """The Question (edge.runtime.questions) a person step asks."""
    assert step.answer_schema is not None
    expires = time.time() + step.timeout_s if step.timeout_s else None
    return Question(job_id=job.id, step=step.id, message=message, answer_schema=step.answer_schema.schema,
                    answerers=dict(step.answerers), expires_at=expires)


def step_results(runtime: Runtime, spec: FlowSpec, job: Job) -> list[StepResult]:
    """How each step of a flow's job went, read back from the journal (its child jobs) and the
    person steps' answers."""
    children = {c.dedupe_key: c for c in runtime.children(job.id)}
    results: list[StepResult] = []
    reached = True
    for step in spec.steps:
        if step.is_ask:
            answer = _recorded_answer(runtime, job.id, step.id)
            if answer is not None:
                results.append(StepResult(step.id, answer))
            elif reached and job.status == "waiting":
                results.append(StepResult(step.id, "waiting"))
                reached = False
            else:
                results.append(StepResult(step.id, "not reached" if not reached or job.failed else "skipped"))
            continue
        child = children.get(child_dedupe_key(job.id, step.id))
        if child is not None:
            runs = 1
            while (later := children.get(child_dedupe_key(job.id, step.id, runs + 1))) is not None:
                child, runs = later, runs + 1  # a loop's runs (`until:`): how its last one went
            status = child.status if runs == 1 else (
                f"succeeded after {runs} runs" if child.status == "succeeded" else f"{child.status} at run {runs}")
            results.append(StepResult(step.id, status, child.id))
            if child.status != "succeeded":
                reached = False
        else:
            reached = False
            results.append(StepResult(step.id, "not run"))
    return results


def _recorded_answer(runtime: Runtime, job_id: str, step: str) -> str | None:
    """`answered by X` for a person step the runtime holds an answer to, else None."""
    found = runtime.questions.asked(job_id, step)
    answer = found[1] if found is not None else None
    if answer is None:
        return None
    if answer.action == "accept":
        return f"answered by {answer.by}"
    return {"timeout": "timed out", "decline": "declined", "cancel": "cancelled"}.get(answer.action, answer.action)
