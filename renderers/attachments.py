"""What the adapters upload beside a card: the same rule for every renderer.

A renderer returns the files to upload in `Rendered.uploads` (`uploads_for`), and adapters upload them
as they are. The file is always the full result, so a reader gets everything the agent answered, not
just what the card could hold:
- a card that was not drawn (over 64 KiB, or it broke its contract) carries the full result as
  `Card.attachment`, and that is what is uploaded;
- a drawn card that a renderer had to cut to fit a platform limit (rows, lines, characters) uploads
  the result's compact JSON that the edge already made to measure it (`Card.full_result`), so
  nothing is serialized again however many renderers ask; a card built by hand (a failure card, a
  test) has none, and its own JSON (`oz0 render --to card`) is uploaded instead.
The card says so in words too ("… 412 more rows, full result attached"): never a silent cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import orjson

from oz0.edge.cards.model import Attachment, Card
from oz0.renderers.rendered import Rendered

if TYPE_CHECKING:
    import logging

__all__ = ["attachment_for", "files_for", "safe_filename", "shortened", "size_text", "uploads_for", "within_limits"]


def attachment_for(card: Card) -> Attachment:
    """The file that carries everything the card was drawn from, under a name safe on every platform."""
    if card.attachment is not None:
        a = card.attachment
        name, kind = safe_filename(a.filename), re.sub(r"[^A-Za-z0-9.+/-]", "", a.content_type)
        return a if (name, kind) == (a.filename, a.content_type) else Attachment(
            name, kind or "application/octet-stream", a.data)
    if card.full_result:
        return Attachment("result.json", "application/json", card.full_result)
    return Attachment("result.json", "application/json", _card_json(card))


def _card_json(card: Card) -> bytes:
    """A hand-built card's own JSON, indented (a value orjson refuses, such as a huge int, goes through json)."""
    data = card.to_dict()
    try:
        return orjson.dumps(data, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(data, ensure_ascii=False, indent=2, default=str).encode("utf-8", "replace")


def uploads_for(card: Card, *, cut: bool) -> tuple[Attachment, ...]:
    """What to upload beside the card: its own attachment, or the full result when a renderer cut it."""
    if card.attachment is not None or cut:
        return (attachment_for(card),)
    return ()


def files_for(card: Card) -> tuple[Attachment, ...]:
    """The files the result carries besides its JSON (`Card.files`: an MCP image, audio clip or embedded
    resource), uploaded beside the card by every renderer under names safe on every platform; the
    card's notes name them."""
    return tuple(f if safe_filename(f.filename) == f.filename else Attachment(safe_filename(f.filename),
                                                                               f.content_type, f.data)
                 for f in card.files)


def safe_filename(name: str) -> str:
    """A file name of letters, digits, `.`, `_` and `-` only (it also goes in `attachment://` URLs)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") [:100]
    return name or "result.json"


def size_text(size: int) -> str:
    """A byte count for people: "70,123 bytes"."""
    return f"{size:,} bytes"


def shortened(card: Card, why: str) -> Card:
    """`card` as a short text card saying `why` and carrying the full result as its attachment: what a
    renderer sends when its drawing broke a platform limit despite its budgets (a bug it logs), so the
    reader still gets the whole result rather than an error."""
    return replace(card, form="text", text=why, text_format="plain", columns=(), rows=(), keys=(), values=(),
                   diff=None, violations=card.violations[:5], notes=card.notes[:3],
                   attachment=attachment_for(card))


def within_limits(draw: Callable[[Card], tuple[Rendered, str | None]], card: Card, *, platform: str,
                  log: logging.Logger) -> Rendered:
    """`draw(card)` (the drawing and which platform limit it breaks, if any); should it break one
    despite its budgets (a bug, logged), the short card saying which limit, with the full result
    attached. A payload the platform would refuse is never returned (RuntimeError instead)."""
    rendered, problem = draw(card)
    if problem is None:
        return rendered
    log.error("%s card over a limit despite its budgets (%s); sending it shortened", platform, problem)
    rendered, problem = draw(shortened(card, f"This result did not fit in a {platform} message ({problem}); "
                                             "the full result is attached."))
    if problem is not None:
        raise RuntimeError(f"a shortened {platform} card is still over a limit: {problem}")
    return rendered
