"""Renderers: pure functions from a neutral card to one platform's payload.

Registration is this explicit table; adding a platform means one new module and one new line here.
Each renderer's module is imported on its first call, so drawing for one platform (or listing the
platforms, as the command line's --help does) loads no other platform's libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from oz0.edge.cards.model import Card
    from oz0.renderers.rendered import Rendered

__all__ = ["RENDERERS", "Rendered", "render"]


def _on_first_call(module: str) -> Callable[[Card], Any]:
    """`oz0.renderers.<module>.render`, imported when it is first called."""
    name = f"oz0.renderers.{module}"

    def render(card: Card) -> Any:
        return importlib.import_module(name).render(card)

    render.__qualname__ = render.__name__ = f"{module}.render"
    return render


RENDERERS: dict[str, Callable[[Card], Any]] = {
    "text": _on_first_call("plain_text"),
    "slack": _on_first_call("slack_blocks"),
    "discord": _on_first_call("discord_message"),
    "html": _on_first_call("html_console"),
}


def __getattr__(name: str) -> Any:
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
    return _as_rendered(card, renderer(card))


def _as_rendered(card: Card, out: Any) -> Rendered:
    """TRANSITIONAL: wraps a renderer's legacy output (a payload carrying `oz0_attachments`) as Rendered,
    until every renderer returns Rendered itself."""
    from oz0.renderers.rendered import Rendered

    if isinstance(out, Rendered):
        return out
    if not isinstance(out, dict):
        return Rendered(out)
    from oz0.renderers.attachments import attachment_for

    payload = {k: v for k, v in out.items() if not k.startswith("oz0_")}
    uploads = (attachment_for(card),) if out.get("oz0_attachments") else ()
    return Rendered(payload, uploads)
