"""The card of a job: its answer drawn under its output contract, or its failure, and a flow's steps.

A mixin of edge.runtime.runner.Runtime (which provides `agent`, `_checked` and `_failure_kind`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from oz0.edge.cards.choice import choose_card, is_qzx_result
from oz0.edge.cards.model import Card, Status
from oz0.edge.model.flow import FLOW_KIND
from oz0.edge.runtime.conversations import dropped_note
from oz0.edge.mcp.kind import with_known_contracts
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import FAILED_STATUSES, Job, UnknownAgent, failure_code

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["JobCards"]


class JobCards:
    """Runtime's card method."""

    def card(self, job: Job) -> Card:
        """The card for a job: its answer drawn under its output contract, or its failure."""
        title = job.agent
        try:
            spec: AgentSpec | None = self.agent(job.agent)
        except UnknownAgent:
            spec = None
        contract = with_known_contracts(spec).output if spec is not None else None
        if job.status == "succeeded":
            checked = contract is not None and self._checked.get(job.id) == contract.digest
            card = choose_card(job.output, contract, title=title, checked=checked)
            if spec is not None:
                note = dropped_note(self.conversations.history(job.id, spec.conversation))
                card = replace(card, notes=(*card.notes, note)) if note else card
            return self._with_steps(card, spec, job)
        if job.status in FAILED_STATUSES:
            code = failure_code(job)
            status = Status(success=False, message=job.failure_reason or "the job failed", error_code=code)
            if is_qzx_result(job.output):
                card = choose_card(job.output, None, title=title)
                merged = replace(card.status, error_code=code) if card.status else status
                return replace(card, status=merged)
            notes = tuple(n for n in (_failure_note(self, spec, job),) if n)
            card = Card(form="text", title=title, status=status, text="", text_format="plain", notes=notes)
            return self._with_steps(card, spec, job)
        return Card(form="text", title=title, text_format="plain",
                    status=Status(success=True, message=f"job {job.id} is {job.status}"), text="")

    def _with_steps(self, card: Card, spec: AgentSpec | None, job: Job) -> Card:
        """A flow's card: its steps' status in one collapsed line (a note) under the card."""
        if spec is None or spec.kind != FLOW_KIND or self.flow_engine is None:
            return card
        return replace(card, notes=(*card.notes, self.flow_engine.step_note(self, spec, job)))  # type: ignore[arg-type]


def _failure_note(runtime: "Runtime", spec: AgentSpec | None, job: Job) -> str:
    if spec is None:
        return ""
    kind = runtime._failure_kind(spec, job.failure_kind or "")
    parts = []
    if kind.person:
        parts.append("a person needs to act before this can work")
    if kind.partial:
        parts.append("the agent may have done part of the work")
    if job.attempts > 1:
        parts.append(f"tried {job.attempts} times")
    return "; ".join(parts)
