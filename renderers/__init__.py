"""Renderers: pure functions from a neutral card to one platform's payload.

Registration is this explicit table; adding a platform means one new module and one new line here.
"""

from __future__ import annotations

from typing import Any, Callable

from oz0.edge.cards.model import Card
from oz0.renderers import discord_message
from oz0.renderers import html_console
from oz0.renderers import plain_text
from oz0.renderers import slack_blocks

__all__ = ["RENDERERS", "render"]

RENDERERS: dict[str, Callable[[Card], Any]] = {
    "text": plain_text.render,
    "slack": slack_blocks.render,
    "discord": discord_message.render,
    "html": html_console.render,
}


def render(card: Card, platform: str) -> Any:
    """Draw `card` for `platform` (a key of RENDERERS)."""
    try:
        renderer = RENDERERS[platform]
    except KeyError:
        raise ValueError(f"unknown renderer {platform!r}; known: {', '.join(RENDERERS)}") from None
    return renderer(card)
