"""How a card looks on Slack, Discord and Teams, drawn as HTML from the very payload each renderer produced.

The console's job page shows these beside the HTML card. Each platform's preview is a table of small
rule functions, one per block or component type (adapters/console/preview_slack.py and
preview_discord.py), in the manner of markdown-it-py's renderer rules; a type without a rule is drawn
as a note saying so, never dropped. Every text is escaped here, links are drawn as inert text (no
`href`), images are named instead of loaded, and nothing needs script or inline style, so a preview
lives under the console's CSP. What the renderer cut and what it uploads beside the message are
marked under the message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from markupsafe import Markup, escape

__all__ = ["PREVIEWS", "Rules", "draw", "esc", "preview", "unknown"]

Rules = Mapping[Any, Callable[[Mapping[str, Any]], str]]


def esc(value: Any) -> str:
    """`value` as escaped HTML text (anything not a string is shown as its str)."""
    return str(escape("" if value is None else str(value)))


def unknown(kind: str, item: Any) -> str:
    return f'<div class="pv-unknown">(a {esc(kind)} the preview does not draw)</div>'


def draw(rules: Rules, items: Iterable[Any], *, kind: str) -> str:
    """Each item (a dict with a `type`) by the rule for its type; a note for a type without one."""
    out = []
    for item in items:
        if not isinstance(item, Mapping):
            out.append(unknown(kind, item))
            continue
        rule = rules.get(item.get("type"))
        out.append(rule(item) if rule is not None else unknown(f"{kind} of type {item.get('type')!r}", item))
    return "".join(out)


def _marks(rendered: Any) -> str:
    parts = []
    if rendered.uploads:
        files = "".join(f'<li><span class="pv-file-name">{esc(u.filename)}</span> '
                        f'<span class="muted">({esc(u.content_type)}, {len(u.data):,} bytes)</span></li>'
                        for u in rendered.uploads)
        parts.append(f'<div class="pv-uploads"><span class="pv-mark">uploaded beside it</span><ul>{files}</ul></div>')
    if rendered.cuts:
        cuts = "".join(f"<li>{esc(c)}</li>" for c in rendered.cuts)
        parts.append(f'<div class="pv-cuts"><span class="pv-mark">cut</span><ul>{cuts}</ul></div>')
    return "".join(parts)


def _slack(payload: Any) -> str:
    from oz0.adapters.console.preview_slack import message

    return message(payload)


def _discord(payload: Any) -> str:
    from oz0.adapters.console.preview_discord import message

    return message(payload)


def _teams(payload: Any) -> str:
    from oz0.adapters.console.preview_teams import message

    return message(payload)


PREVIEWS: dict[str, Callable[[Any], str]] = {"slack": _slack, "discord": _discord, "teams": _teams}


def preview(platform: str, rendered: Any) -> Markup:
    """The preview of `rendered` (a renderer's Rendered) on `platform`: the message, then its marks."""
    body = PREVIEWS[platform](rendered.payload)
    return Markup(f'<div class="pv pv--{esc(platform)}"><div class="pv-message">{body}</div>'
                  f"{_marks(rendered)}</div>")
