"""What the runtime needs from the flows above it (edge.flows) to run a flow's job.

Flows run their steps through the runtime, so the runtime does not import them: whoever builds a
Runtime passes the engine in (`Runtime(home, flow_engine=FLOW_ENGINE)`, edge.flows.engine). A runtime built
without one still lists and checks flows (they are agents of kind `flow`) and ends a flow's job
Misconfigured, saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import Job
from oz0.edge.model.progress import ProgressSink

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["NO_FLOW_ENGINE", "FlowEngine"]

NO_FLOW_ENGINE = "this runtime was built without a flow engine (edge.flows.engine.FLOW_ENGINE), so it runs no flows"


class FlowEngine(Protocol):
    """Runs a flow's steps in this process or as the durable flow workflow, and reads back how they went."""

    async def run_here(self, runtime: Runtime, job: Job, spec: AgentSpec, value: Any, *,
                       on_progress: ProgressSink | None = None) -> Any:
        """The flow's output, its steps run here (not durable)."""

    def step_note(self, runtime: Runtime, spec: AgentSpec, job: Job) -> str:
        """The collapsed line under a flow's card: each step and how it went."""

    def workflow(self) -> Any:
        """The durable flow workflow (registered with DBOS when first asked, before the engine launches)."""
