"""What lint knows of an agent's contracts, shared by the lint of its agents, flows and schedules.

A module of its own so that `oz0 plugin lint` of a plugin without flows or schedules describes its
agents without importing the flow lint (JMESPath, the flow model, the schema comparison) or the
schedule lint (croniter, the time zones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from oz0.edge.contracts.schema import Contract
    from oz0.edge.plugins.flow_lint import SchemaPart

__all__ = ["TEXT", "AgentSides", "Side"]

TEXT = "text"
Side: TypeAlias = "Contract | SchemaPart | str | None"  # a contract (or part of one), TEXT, or None: not known here


@dataclass(frozen=True)
class AgentSides:
    """What lint knows of an agent's contracts: each a Contract, TEXT, or None (not known), and the
    schema files they come from (named in findings)."""

    input: Side
    output: Side
    input_file: str | None = None
    output_file: str | None = None
