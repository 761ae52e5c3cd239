"""A flow as the edge passes it around: a FlowSpec is an AgentSpec of kind `flow` whose work is its steps.

Everything that takes an agent by name (the input check, the OpenAPI document, access rules, the card)
takes a flow the same way; only the runtime's execute tells them apart. Loaded by
edge.plugins.flow_manifest from `flows/NAME.yaml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from oz0.edge.model.agent import AgentSpec, FailureKind

if TYPE_CHECKING:
    from oz0.edge.contracts.schema import Contract

__all__ = ["FLOW_FAILURES", "FLOW_KIND", "FlowSpec", "FlowStep"]

FLOW_KIND = "flow"

# How a flow itself may end, beside its steps' kinds and the runtime's own.
FLOW_FAILURES: dict[str, FailureKind] = {f.name: f for f in (
    FailureKind("NoAnswer", description="A person step was not answered within its timeout_s.", person=True),
    FailureKind("Declined", description="The person asked declined or cancelled a person step.", person=True),
    FailureKind("StepFailed", description="A step's agent failed with a kind the flow does not declare.",
                partial=True),
)}


@dataclass(frozen=True)
class FlowStep:
    """One step: an agent run (`agent`, with an optional `input` mapping and `if` condition) or a
    person step (`ask`, with its answer schema, answerers and timeout)."""

    id: str
    agent: str | None = None
    ask: str | None = None
    input: Any = None                   # None (the previous output), a JMESPath string, or {key: JMESPath}
    condition: str | None = None        # `if:`
    answer_schema_file: str | None = None
    answer_schema: Contract | None = None
    answerers: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    timeout_s: float | None = None
    on_timeout: Mapping[str, Any] | None = None
    until: str | None = None            # run again (steps.ID.runs counting) until this is truthy

    @property
    def is_ask(self) -> bool:
        return self.ask is not None


@dataclass(frozen=True)
class FlowSpec(AgentSpec):
    """A flow: an agent of kind `flow` whose work is its steps."""

    steps: tuple[FlowStep, ...] = ()

    def failure(self, name: str) -> FailureKind | None:
        return super().failure(name) or FLOW_FAILURES.get(name)

    def step(self, step_id: str) -> FlowStep:
        return next(s for s in self.steps if s.id == step_id)

    @property
    def person_steps(self) -> tuple[FlowStep, ...]:
        return tuple(s for s in self.steps if s.is_ask)
