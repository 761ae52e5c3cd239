"""What the adapters upload beside a card: the same convention for every chat renderer.

A Slack or Discord payload may carry `oz0_attachments`, a list of descriptors
`{"filename", "content_type", "size"}`. Adapters pop every key starting with `oz0_` before posting,
and upload one file per descriptor, its bytes from `attachment_for(card)`:
- a card that was not drawn (over 64 KiB, or it broke its contract) carries the full result as
  `Card.attachment`, and that is what is uploaded;
- a drawn card that a renderer had to cut to fit a platform limit (rows, lines, characters) is
  uploaded whole as the card's JSON (`oz0 render --to card`), so nothing the card holds is lost.
The card says so in words too ("… 412 more rows, full result attached"): never a silent cut.
"""

from __future__ import annotations

import json
import re
import weakref
from typing import Any

from edge.cards import Attachment, Card

__all__ = ["ATTACHMENTS_KEY", "attachment_for", "descriptors", "safe_filename", "size_text"]

ATTACHMENTS_KEY = "oz0_attachments"

# A card is frozen, so its JSON is made once per card, however many renderers and adapters ask.
_drawn: dict[int, tuple["weakref.ref[Card]", Attachment]] = {}


def attachment_for(card: Card) -> Attachment:
    """The file that carries everything the card was drawn from, under a name safe on every platform."""
    if card.attachment is not None:
        a = card.attachment
        name, kind = safe_filename(a.filename), re.sub(r"[^A-Za-z0-9.+/-]", "", a.content_type)
        return a if (name, kind) == (a.filename, a.content_type) else Attachment(
            name, kind or "application/octet-stream", a.data)
    key = id(card)
    hit = _drawn.get(key)
    if hit is not None and hit[0]() is card:
        return hit[1]
    data = json.dumps(card.to_dict(), ensure_ascii=False, indent=2, default=str).encode("utf-8", "replace")
    made = Attachment("result.json", "application/json", data)
    _drawn[key] = (weakref.ref(card, lambda _: _drawn.pop(key, None)), made)
    return made


def descriptors(card: Card, *, cut: bool) -> list[dict[str, Any]]:
    """The `oz0_attachments` list: the card's own attachment, or the whole card when a renderer cut it."""
    if card.attachment is not None or cut:
        return [attachment_for(card).to_dict()]
    return []


def safe_filename(name: str) -> str:
    """A file name of letters, digits, `.`, `_` and `-` only (it also goes in `attachment://` URLs)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") [:100]
    return name or "result.json"


def size_text(size: int) -> str:
    """A byte count for people: "70,123 bytes"."""
    return f"{size:,} bytes"
