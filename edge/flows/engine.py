"""The flow engine the runtime is built with (edge.runtime.flow_engine.FlowEngine): edge.flows.runner for a
flow run here, edge.flows.durable for a flow run as a durable workflow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oz0.edge.flows.runner import run_here, step_note, step_results
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.flow import FlowSpec
from oz0.edge.model.job import Job
from oz0.edge.model.progress import ProgressSink

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["FLOW_ENGINE", "Flows"]


class Flows:
    """edge.flows behind the runtime's FlowEngine Protocol."""

    async def run_here(self, runtime: Runtime, job: Job, spec: AgentSpec, value: Any, *,
                       on_progress: ProgressSink | None = None) -> Any:
        assert isinstance(spec, FlowSpec), spec
        output, _ = await run_here(runtime, job, spec, value, on_progress=on_progress)
        return output

    def step_note(self, runtime: Runtime, spec: AgentSpec, job: Job) -> str:
        assert isinstance(spec, FlowSpec), spec
        return step_note(step_results(runtime, spec, job))

    def workflow(self) -> Any:
        from oz0.edge.flows.durable import flow_workflow  # imports dbos (about a second): only for the engine

        return flow_workflow


FLOW_ENGINE = Flows()
