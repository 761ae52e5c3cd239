"""How every command prints a card: the text drawn for a target, JSON for the card and platform payloads."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from oz0.renderers import RENDERERS

if TYPE_CHECKING:
    from oz0.edge import Card

__all__ = ["TARGETS", "render_payload"]

TARGETS: tuple[str, ...] = ("card", *RENDERERS)


def render_payload(card: Card, target: str) -> str:
    """The card drawn for `target` (a key of TARGETS) as the text printed: JSON for the card and the
    platform payloads (the body the channel is sent, as it is sent; the files uploaded beside it are
    not printed)."""
    if target == "card":
        return json.dumps(card.to_dict(), indent=2, ensure_ascii=False, default=str)
    payload = RENDERERS[target](card).payload
    return payload if isinstance(payload, str) else json.dumps(payload, indent=2, ensure_ascii=False)
