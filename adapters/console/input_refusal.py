"""Whether a run may start from the console or the API: the asker's access, then the input's one check.

One rule for the console's run form, `POST /v1/agents/{name}/runs` and a conversation's follow-ups, so
each refuses the same input with the same status, title and findings.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from oz0.adapters.console.api_replies import INVALID_INPUT_HTTP
from oz0.edge import Violation
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import snake_case
from oz0.edge.runtime.access import AccessError, AccessPolicy, Asker
from oz0.edge.runtime.input_check import Checked
from oz0.edge.runtime.input_check import check_input as edge_check_input

__all__ = ["Refusal", "check_input"]

log = logging.getLogger("oz0.console.api")


@dataclass(frozen=True)
class Refusal:
    """Why a run did not start: the HTTP status, a title and message for people, the contract's findings."""

    status: int
    title: str
    message: str
    error_code: str
    kind: str | None = None
    violations: tuple[Violation, ...] = field(default=())


def check_input(spec: AgentSpec, text: str, *, home: Any, asker_user: str) -> Refusal | Checked:
    """Whether `text` may run on this agent from the console or the API: access, then the input's one
    check (edge.runtime.input_check), whose result `Runtime.submit` takes so the run does not check again."""
    asker = Asker(platform="console", user=asker_user)
    try:
        policy = AccessPolicy.load(home)
    except AccessError as exc:
        log.error("access.yaml cannot be read: %s", exc)
        return Refusal(500, "Access rules are broken", str(exc), "access_rules_broken")
    if not policy.allows(spec.name, asker):
        return Refusal(403, "Not allowed", policy.explain_denial(spec.name, asker), "forbidden")
    checked = edge_check_input(spec, text)
    if checked.failure is not None:
        failure = checked.failure
        return Refusal(INVALID_INPUT_HTTP, "The input does not match the contract", failure.reason,
                       snake_case(failure.kind), kind=failure.kind, violations=checked.violations)
    return checked
