"""A file a card or a tool result carries (the full result, a text file an MCP tool returned), for the adapters
to upload. At the ground floor: results build them, cards carry them, renderers read them through the card
model (edge.cards.model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Attachment"]


@dataclass(frozen=True)
class Attachment:
    """The full result, for the adapters to upload when the card does not carry all of it."""

    filename: str
    content_type: str
    data: bytes = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.data)

    def to_dict(self) -> dict[str, Any]:
        return {"filename": self.filename, "content_type": self.content_type, "size": self.size}
