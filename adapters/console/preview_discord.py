"""The Discord preview's rules: Components V2 (container, text display, separator, buttons, files) as
HTML, their markdown drawn by markdown-it-py with raw HTML, images and links made inert
(see adapters/console/preview.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from markdown_it import MarkdownIt

from oz0.adapters.console.preview import draw, esc

__all__ = ["ACCENTS", "COMPONENT_RULES", "markdown", "message"]

# Discord's colours: the renderer's three, Discord's own blurple and grey; an accent shows as the nearest.
ACCENTS = {"green": 0x2E7D32, "red": 0xC62828, "amber": 0xF9A825, "blurple": 0x5865F2, "grey": 0x99AAB5}
_BUTTON_STYLES = {1: "primary", 2: "secondary", 3: "success", 4: "danger", 5: "link", 6: "premium"}
MAX_NESTING = 20

_MD = (MarkdownIt("commonmark", {"html": False, "breaks": True, "maxNesting": MAX_NESTING})
       .enable(["strikethrough"]).disable(["image", "entity"]))  # Discord decodes no HTML entities


def _inert_link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return '<span class="pv-link">'


def _inert_link_close(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return "</span>"


_MD.add_render_rule("link_open", _inert_link_open)
_MD.add_render_rule("link_close", _inert_link_close)


def markdown(text: str) -> str:
    """Discord markdown as HTML: every raw `<` escaped, links as text, images never loaded. A `-# `
    line outside a code block is Discord's subtext (small, muted); the rest is CommonMark with
    Discord's single line breaks."""
    out: list[str] = []
    chunk: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("-# "):
            if chunk:
                out.append(_MD.render("\n".join(chunk)))
                chunk = []
            out.append(f'<div class="pv-subtext">{_MD.renderInline(line[3:])}</div>')
        else:
            chunk.append(line)
    if chunk:
        out.append(_MD.render("\n".join(chunk)))
    return "".join(out)


def _accent(value: Any) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        return ""
    r, g, b = value >> 16 & 255, value >> 8 & 255, value & 255

    def distance(colour: int) -> int:
        return (r - (colour >> 16 & 255)) ** 2 + (g - (colour >> 8 & 255)) ** 2 + (b - (colour & 255)) ** 2

    name = min(ACCENTS, key=lambda k: distance(ACCENTS[k]))
    return f" pv-accent pv-accent--{name}"


def _container(c: Mapping[str, Any]) -> str:
    colour = c.get("accent_color")
    title = f' title="accent colour #{colour:06x}"' if isinstance(colour, int) and not isinstance(colour, bool) else ""
    spoiler = " pv-spoiler" if c.get("spoiler") else ""
    inner = draw(COMPONENT_RULES, c.get("components") or (), kind="component")
    return f'<div class="pv-container{_accent(colour)}{spoiler}"{title}>{inner}</div>'


def _separator(c: Mapping[str, Any]) -> str:
    size = "large" if c.get("spacing") == 2 else "small"
    return f'<hr class="pv-separator pv-separator--{size}">' if c.get("divider", True) else \
        f'<div class="pv-spacer pv-spacer--{size}"></div>'


def _button(c: Mapping[str, Any]) -> str:
    style = _BUTTON_STYLES.get(c.get("style"), "secondary")  # type: ignore[arg-type]
    disabled = " pv-button--disabled" if c.get("disabled") else ""
    emoji = c.get("emoji") if isinstance(c.get("emoji"), Mapping) else {}
    label = " ".join(x for x in (str(emoji.get("name") or ""), str(c.get("label") or "")) if x)
    return f'<span class="pv-button pv-button--{style}{disabled}">{esc(label)}</span>'


def _file(c: Mapping[str, Any]) -> str:
    url = str((c.get("file") or {}).get("url", "")) if isinstance(c.get("file"), Mapping) else ""
    return f'<div class="pv-file"><span class="pv-file-name">{esc(url.removeprefix("attachment://"))}</span></div>'


def _gallery(c: Mapping[str, Any]) -> str:
    items = [i for i in c.get("items") or () if isinstance(i, Mapping)]
    names = "".join(f'<span class="pv-image">[image: {esc(i.get("description") or "")}]</span>' for i in items)
    return f'<div class="pv-gallery">{names}</div>'


def _section(c: Mapping[str, Any]) -> str:
    inner = draw(COMPONENT_RULES, c.get("components") or (), kind="component")
    accessory = c.get("accessory")
    side = draw(COMPONENT_RULES, [accessory], kind="component") if isinstance(accessory, Mapping) else ""
    return f'<div class="pv-dc-section"><div>{inner}</div><div class="pv-accessory">{side}</div></div>'


COMPONENT_RULES: dict[int, Callable[[Mapping[str, Any]], str]] = {
    1: lambda c: f'<div class="pv-actions">{draw(COMPONENT_RULES, c.get("components") or (), kind="component")}</div>',
    2: _button,
    9: _section,
    10: lambda c: f'<div class="pv-text-display">{markdown(str(c.get("content", "")))}</div>',
    11: lambda c: '<span class="pv-image">[thumbnail]</span>',
    12: _gallery,
    13: _file,
    14: _separator,
    17: _container,
}


def message(payload: Any) -> str:
    """A Discord message payload: its `content` (markdown) and its components."""
    if not isinstance(payload, Mapping):
        return '<div class="pv-unknown">(not a Discord message payload)</div>'
    head = f'<div class="pv-text-display">{markdown(str(payload["content"]))}</div>' if payload.get("content") else ""
    return head + draw(COMPONENT_RULES, payload.get("components") or (), kind="component")
