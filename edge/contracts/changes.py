"""What the upgrade check reports: a `Change` (which agent, which side, where, what, the verdict), the
error for two contracts it refuses to compare, and how it follows a `$ref` in an OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from oz0.edge.contracts.view import DocumentRefs, SchemaView
from oz0.edge.errors import Oz0Error

__all__ = [
    "Change",
    "CompatError",
    "breaking_changes",
    "deref",
    "describe_change",
    "resolve_pointer",
]


class CompatError(Oz0Error, ValueError):
    """Two contracts the check refuses to compare (a `$ref` that leaves the document)."""


@dataclass(frozen=True)
class Change:
    """One difference between two versions: which agent, which side of it, where, what, and the verdict.

    `direction` is "input", "output", "failure", or "agent" (the operation itself).
    """

    agent: str
    direction: str
    json_path: str
    what: str
    breaking: bool

    def clause(self) -> str:
        """The change in words, as the refusal message lists it: `helper: input: $.repo is newly required`."""
        if self.direction == "agent":
            return f"{self.agent}: {self.what}"
        return f"{self.agent}: {self.direction}: {self.what}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def describe_change(change: Change) -> str:
    """One line for a terminal: the verdict first, then the clause."""
    return f"{'breaking' if change.breaking else 'not breaking'}: {change.clause()}"


def breaking_changes(changes: Iterable[Change]) -> list[Change]:
    return [c for c in changes if c.breaking]


def deref(document: Mapping[str, Any], node: Any) -> Any:
    """The schema `node`'s `$ref` chain ends at; CompatError for a reference that finds nothing."""
    try:
        return SchemaView(DocumentRefs(document), node).deref().node
    except LookupError as exc:
        raise CompatError(str(exc)) from None


def resolve_pointer(document: Any, ref: str) -> Any:
    """The value a local `$ref` (`#/...`) points at in `document`; CompatError for anything else."""
    try:
        return DocumentRefs(document).lookup(ref).contents
    except LookupError as exc:
        raise CompatError(str(exc)) from None
