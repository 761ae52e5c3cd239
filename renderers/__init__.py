"""Renderers: pure functions from a neutral card to one platform's `Rendered(payload, uploads, cuts)`.

Pure means plain data in and out: no platform SDK (discord.py, slack_sdk), HTTP client or database is
imported to render (a test checks the import graph). Registration is this explicit table; adding a
platform means one new module and one new line here.
"""

from __future__ import annotations

from typing import Callable

from oz0.edge.cards.model import Card
from oz0.renderers import discord_message, html_console, plain_text, slack_blocks
from oz0.renderers.rendered import Rendered

__all__ = ["RENDERERS", "Rendered", "render"]

RENDERERS: dict[str, Callable[[Card], Rendered]] = {
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
    return renderer(card)
