"""Renderers: pure functions from a neutral card to one platform's payload.

Registration is this explicit table; adding a platform means one new module and one new line here.
"""

from __future__ import annotations

from typing import Any, Callable

from oz0.edge.cards.model import Card
from oz0.renderers import discord_message, html_console, plain_text, slack_blocks
from oz0.renderers.rendered import Rendered

__all__ = ["RENDERERS", "Rendered", "render"]

RENDERERS: dict[str, Callable[[Card], Any]] = {
    "text": plain_text.render,
    "slack": slack_blocks.render,
    "discord": discord_message.render,
    "html": html_console.render,
}


def render(card: Card, platform: str) -> Rendered:
    """Draw `card` for `platform` (a key of RENDERERS)."""
    try:
        renderer = RENDERERS[platform]
    except KeyError:
        raise ValueError(f"unknown renderer {platform!r}; known: {', '.join(RENDERERS)}") from None
    return _as_rendered(card, renderer(card))


def _as_rendered(card: Card, out: Any) -> Rendered:
    """TRANSITIONAL: wraps a renderer's legacy output (a payload carrying `oz0_attachments`) as Rendered,
    until every renderer returns Rendered itself."""
    if isinstance(out, Rendered):
        return out
    if not isinstance(out, dict):
        return Rendered(out)
    from oz0.renderers.attachments import attachment_for

    payload = {k: v for k, v in out.items() if not k.startswith("oz0_")}
    uploads = (attachment_for(card),) if out.get("oz0_attachments") else ()
    return Rendered(payload, uploads)
