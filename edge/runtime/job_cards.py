"""The card of a job: its answer drawn under its output contract, or its failure, and a flow's steps.

A mixin of edge.runtime.runner.Runtime (which provides `agent`, `_checked` and `_failure_kind`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, cast

from oz0.edge.cards.choice import choose_card, is_qzx_result
from oz0.edge.cards.model import Card, Status
from oz0.edge.mcp.kind import with_known_contracts
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.flow import FLOW_KIND
from oz0.edge.model.job import FAILED_STATUSES, Job, UnknownAgent, failure_code
from oz0.edge.runtime.conversations import dropped_note

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["JobCards"]


class JobCards:
    """Runtime's card method."""

    def card(self, job: Job) -> Card:
        """The card for a job: its answer drawn under its output contract, or its failure."""
        runtime = cast("Runtime", self)  # a mixin of Runtime alone, whose state it reads
        title = job.agent
        try:
            spec: AgentSpec | None = runtime.agent(job.agent)
        except UnknownAgent:
            spec = None
        contract = with_known_contracts(spec).output if spec is not None else None
        if job.status == "succeeded":
            checked = contract is not None and runtime._checked.get(job.id) == contract.digest
            card = choose_card(job.output, contract, title=title, checked=checked)
            if spec is not None:
                note = dropped_note(runtime.conversations.history(job.id, spec.conversation))
                card = replace(card, notes=(*card.notes, note)) if note else card
            return self._with_steps(card, spec, job)
        if job.status in FAILED_STATUSES:
            code = failure_code(job)
            status = Status(success=False, message=job.failure_reason or "the job failed", error_code=code)
            if is_qzx_result(job.output):
                card = choose_card(job.output, None, title=title)
                merged = replace(card.status, error_code=code) if card.status else status
                return replace(card, status=merged)
            notes = tuple(n for n in (_failure_note(runtime, spec, job),) if n)
            card = Card(form="text", title=title, status=status, text="", text_format="plain", notes=notes)
            return self._with_steps(card, spec, job)
        return Card(form="text", title=title, text_format="plain",
                    status=Status(success=True, message=f"job {job.id} is {job.status}"), text="")

    def _with_steps(self, card: Card, spec: AgentSpec | None, job: Job) -> Card:
        """A flow's card: its steps' status in one collapsed line (a note) under the card."""
        runtime = cast("Runtime", self)  # a mixin of Runtime alone, whose state it reads
        if spec is None or spec.kind != FLOW_KIND or runtime.flow_engine is None:
            return card
        return replace(card, notes=(*card.notes, runtime.flow_engine.step_note(runtime, spec, job)))


def _failure_note(runtime: Runtime, spec: AgentSpec | None, job: Job) -> str:
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
