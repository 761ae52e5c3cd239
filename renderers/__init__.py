"""Renderers: pure functions from a neutral card to one platform's `Rendered(payload, uploads, cuts)`.

Pure means plain data in and out: no platform SDK (discord.py, slack_sdk), HTTP client or database is
imported to render (a test checks the import graph). Registration is this explicit table; adding a
platform means one new module and one new line here. Each renderer's module is imported on its first
call, so drawing for one platform (or listing the platforms, as the command line's --help does) loads
no other platform's modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oz0.edge.cards.model import Card
    from oz0.renderers.rendered import Rendered

__all__ = ["RENDERERS", "Rendered", "render"]


def _on_first_call(module: str) -> Callable[[Card], Rendered]:
    """`oz0.renderers.<module>.render`, imported when it is first called (and then called directly)."""
    name = f"oz0.renderers.{module}"
    found: list[Callable[[Card], Rendered]] = []

    def render(card: Card) -> Rendered:
        if not found:
            found.append(importlib.import_module(name).render)
        return found[0](card)

    render.__qualname__ = render.__name__ = f"{module}.render"
    return render


RENDERERS: dict[str, Callable[[Card], Rendered]] = {
    "text": _on_first_call("plain_text"),
    "slack": _on_first_call("slack_blocks"),
    "discord": _on_first_call("discord_message"),
    "teams": _on_first_call("teams_adaptive"),
    "html": _on_first_call("html_console"),
}


def __getattr__(name: str) -> object:
    if name == "Rendered":
        from oz0.renderers.rendered import Rendered

        return Rendered
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def render(card: Card, platform: str) -> Rendered:
    """Draw `card` for `platform` (a key of RENDERERS)."""
    try:
        renderer = RENDERERS[platform]
    except KeyError:
        raise ValueError(f"unknown renderer {platform!r}; known: {', '.join(RENDERERS)}") from None
    return renderer(card)
