"""The card of a job: its answer drawn under its output contract, or its failure, and a flow's steps.

An answer the runtime checked against the same contract (`CheckedAnswers`) is drawn without being
validated again. A flow's steps are read back by the flows above the runtime (edge.flows), which
the composition root hands in as `step_note`, so this floor imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from oz0.edge.cards.choice import choose_card, is_qzx_result
from oz0.edge.cards.model import Card, Status
from oz0.edge.mcp.kind import with_known_contracts
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.flow import FLOW_KIND
from oz0.edge.model.job import FAILED_STATUSES, Job, failure_code
from oz0.edge.runtime.attempts import CheckedAnswers, failure_kind
from oz0.edge.runtime.catalog import Catalog
from oz0.edge.runtime.conversations import Conversations, dropped_note

__all__ = ["Cards", "StepNote"]

StepNote = Callable[[AgentSpec, Job], str]  # a flow job's steps in one collapsed line


class Cards:
    """Draws a job as a card (edge.cards), from its agent as installed now."""

    def __init__(self, catalog: Catalog, checked: CheckedAnswers, conversations: Conversations,
                 step_note: StepNote | None) -> None:
        self.catalog = catalog
        self.checked = checked
        self.conversations = conversations
        self.step_note = step_note  # None: a runtime built without a flow engine

    def card(self, job: Job) -> Card:
        """The card for a job: its answer drawn under its output contract, or its failure."""
        title = job.agent
        spec = self.catalog.agent_or_none(job.agent)
        contract = with_known_contracts(spec).output if spec is not None else None
        if job.status == "succeeded":
            checked = contract is not None and self.checked.met(job.id, contract.digest)
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
            notes = tuple(n for n in (_failure_note(spec, job),) if n)
            card = Card(form="text", title=title, status=status, text="", text_format="plain", notes=notes)
            return self._with_steps(card, spec, job)
        return Card(form="text", title=title, text_format="plain",
                    status=Status(success=True, message=f"job {job.id} is {job.status}"), text="")

    def _with_steps(self, card: Card, spec: AgentSpec | None, job: Job) -> Card:
        """A flow's card: its steps' status in one collapsed line (a note) under the card."""
        if spec is None or spec.kind != FLOW_KIND or self.step_note is None:
            return card
        return replace(card, notes=(*card.notes, self.step_note(spec, job)))


def _failure_note(spec: AgentSpec | None, job: Job) -> str:
    if spec is None:
        return ""
    kind = failure_kind(spec, job.failure_kind or "")
    parts = []
    if kind.person:
        parts.append("a person needs to act before this can work")
    if kind.partial:
        parts.append("the agent may have done part of the work")
    if job.attempts > 1:
        parts.append(f"tried {job.attempts} times")
    return "; ".join(parts)
