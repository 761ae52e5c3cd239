"""Where a tool loop's calls are checkpointed: one DBOS step each under `oz0 serve`, plain calls elsewhere.

Under the job engine the loop of a model agent with tools runs as the job workflow's own code
(edge.runtime.durable runs its job there, not inside the `oz0.run` step), so each model request and
each tool call given to `Checkpoints.step` is a DBOS step: recorded when it ends, replayed from the
record when the workflow is resumed after a crash, never made again. A step's value is JSON data (the
engine's serializer is DBOS's portable JSON), and a step reports a failure as data (`{"failure": ...}`)
so its record replays it exactly. A step a database fault cut short is retried (edge.runtime.step_retries):
its call is made again, at least once as after a crash, never recorded twice. `oz0 run` and `oz0 jobs answer`
run a loop under an engine of their own on a SQLite home (adapters.cli.loop_engine), so there too. Outside a
workflow (`oz0 run` on Postgres, a test, a loop run by a step of another job) the same calls run directly:
journaled, not resumable.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from oz0.edge import tracing
from oz0.edge.model.job import JobFailure
from oz0.edge.runtime.step_retries import step_options

__all__ = ["Checkpoints", "checkpoints_for", "failure_of", "raise_failure"]

StepValue = dict[str, Any]


class Checkpoints(Protocol):
    durable: bool

    async def step(self, name: str, call: Callable[..., Coroutine[Any, Any, StepValue]], *args: Any) -> StepValue: ...


class _Direct:
    durable = False

    async def step(self, name: str, call: Callable[..., Coroutine[Any, Any, StepValue]], *args: Any) -> StepValue:
        return await _traced(name, call, *args)


class _Dbos:
    durable = True

    async def step(self, name: str, call: Callable[..., Coroutine[Any, Any, StepValue]], *args: Any) -> StepValue:
        from dbos import DBOS  # loaded already: the engine launched it

        return await DBOS.run_step_async(step_options(name), _traced, name, call, *args)


async def _traced(name: str, call: Callable[..., Coroutine[Any, Any, StepValue]], *args: Any) -> StepValue:
    """The step's call in a span of its name (a model request, a tool call): made only when the call runs,
    so a step a replay reads back from its checkpoint makes no second span."""
    with tracing.span(name) as span:
        value = await call(*args)
        if "failure" in value:
            span.failed(str(value["failure"].get("kind")))
        return value


def checkpoints_for(engine_launched: bool) -> Checkpoints:
    """DBOS steps when this code runs as a workflow's own code (not inside one of its steps)."""
    if engine_launched:
        from dbos import DBOS  # loaded already: the engine launched it

        if DBOS.workflow_id is not None and DBOS.step_id is None:
            return _Dbos()
    return _Direct()


def failure_of(failure: JobFailure) -> StepValue:
    """A failure as a step's value: what `raise_failure` raises again, on the run and on a replay."""
    return {"failure": {"kind": failure.kind, "reason": failure.reason}}


def raise_failure(value: StepValue) -> StepValue:
    if "failure" in value:
        raise JobFailure(value["failure"]["kind"], value["failure"]["reason"])
    return value
