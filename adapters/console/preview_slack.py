"""The Slack preview's rules: Block Kit blocks and rich text elements as HTML (see adapters/console/preview.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from html import unescape
from typing import Any

from oz0.adapters.console.preview import draw, esc
from oz0.renderers.safety import html_hyphens_kept

__all__ = ["BLOCK_RULES", "ELEMENT_RULES", "INLINE_RULES", "message"]

_MRKDWN_LINK = re.compile(r"<([^<>|]+)\|([^<>]+)>|<([^<>]+)>")


def _text(obj: Any) -> str:
    """A text object: plain_text as it is; mrkdwn with Slack's entities undone and links as their labels."""
    if not isinstance(obj, Mapping):
        return ""
    text = str(obj.get("text", ""))
    if obj.get("type") == "mrkdwn":
        text = unescape(_MRKDWN_LINK.sub(lambda m: m[2] or m[3], text))
    return f'<span class="pv-text">{esc(text)}</span>'


# inline rich text elements ----------------------------------------------------------------------------
_STYLE_TAGS = (("code", "code"), ("bold", "strong"), ("italic", "em"), ("strike", "s"))


def _rt_text(el: Mapping[str, Any]) -> str:
    html = esc(el.get("text", ""))
    style = el.get("style") or {}
    for flag, tag in _STYLE_TAGS:
        if style.get(flag):
            html = f"<{tag}>{html}</{tag}>"
    return html


def _rt_link(el: Mapping[str, Any]) -> str:
    return f'<span class="pv-link">{esc(el.get("text") or el.get("url", ""))}</span>'


INLINE_RULES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "text": _rt_text,
    "link": _rt_link,
    "emoji": lambda el: f":{esc(el.get('name', ''))}:",
    "user": lambda el: f'<span class="pv-mention">@{esc(el.get("user_id", ""))}</span>',
    "channel": lambda el: f'<span class="pv-mention">#{esc(el.get("channel_id", ""))}</span>',
    "usergroup": lambda el: f'<span class="pv-mention">@{esc(el.get("usergroup_id", ""))}</span>',
    "broadcast": lambda el: f'<span class="pv-mention">@{esc(el.get("range", ""))}</span>',
    "date": lambda el: esc(el.get("fallback", el.get("timestamp", ""))),
}


def _inline(el: Mapping[str, Any]) -> str:
    return draw(INLINE_RULES, el.get("elements") or (), kind="rich text element")


# rich text block elements ----------------------------------------------------------------------------
def _rt_list(el: Mapping[str, Any]) -> str:
    tag = "ol" if el.get("style") == "ordered" else "ul"
    items = "".join(f"<li>{_inline(item)}</li>" for item in el.get("elements") or () if isinstance(item, Mapping))
    indent = int(el.get("indent") or 0) if str(el.get("indent") or 0).isdigit() else 0
    return f'<{tag} class="pv-rt-list pv-indent-{min(indent, 6)}">{items}</{tag}>'


ELEMENT_RULES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "rich_text_section": lambda el: f'<div class="pv-rt-section">{_inline(el)}</div>',
    "rich_text_preformatted": lambda el: f'<pre class="pv-pre">{_inline(el)}</pre>',
    "rich_text_quote": lambda el: f'<blockquote class="pv-quote">{_inline(el)}</blockquote>',
    "rich_text_list": _rt_list,
}


# blocks ---------------------------------------------------------------------------------------------
def _header(block: Mapping[str, Any]) -> str:
    return f'<div class="pv-slack-header">{_text(block.get("text"))}</div>'


def _section(block: Mapping[str, Any]) -> str:
    parts = []
    if block.get("text"):
        parts.append(f'<div class="pv-section-text">{_text(block["text"])}</div>')
    if block.get("fields"):
        fields = "".join(f'<div class="pv-field">{_text(f)}</div>' for f in block["fields"])
        parts.append(f'<div class="pv-fields">{fields}</div>')
    if isinstance(block.get("accessory"), Mapping):
        parts.append(f'<div class="pv-accessory">{draw(_ACTION_RULES, [block["accessory"]], kind="element")}</div>')
    return f'<div class="pv-section">{"".join(parts)}</div>'


def _cell(cell: Any) -> str:
    if isinstance(cell, Mapping) and cell.get("type") == "rich_text":
        return draw(ELEMENT_RULES, cell.get("elements") or (), kind="rich text block")
    if isinstance(cell, Mapping):
        return esc(cell.get("text", ""))
    return esc(cell)


def _table(block: Mapping[str, Any]) -> str:
    rows = [r for r in block.get("rows") or () if isinstance(r, list)]
    settings = block.get("column_settings") or []
    align = [s.get("align", "left") if isinstance(s, Mapping) else "left" for s in settings]

    def row(cells: list[Any], tag: str) -> str:
        return "<tr>" + "".join(
            f'<{tag} class="pv-align-{esc(align[i] if i < len(align) else "left")}">{html_hyphens_kept(_cell(c))}</{tag}>'
            for i, c in enumerate(cells)) + "</tr>"

    head = f"<thead>{row(rows[0], 'th')}</thead>" if rows else ""
    body = "".join(row(r, "td") for r in rows[1:])
    return f'<div class="pv-table-wrap"><table class="pv-table">{head}<tbody>{body}</tbody></table></div>'


def _context(block: Mapping[str, Any]) -> str:
    items = []
    for el in block.get("elements") or ():
        if isinstance(el, Mapping) and el.get("type") == "image":
            items.append(f'<span class="pv-image">[image: {esc(el.get("alt_text", ""))}]</span>')
        else:
            items.append(_text(el))
    return f'<div class="pv-context">{" ".join(items)}</div>'


def _button(el: Mapping[str, Any]) -> str:
    style = el.get("style") if el.get("style") in ("primary", "danger") else "default"
    return f'<span class="pv-button pv-button--{style}">{_text(el.get("text"))}</span>'


_ACTION_RULES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "button": _button,
    "static_select": lambda el: f'<span class="pv-button">{_text(el.get("placeholder"))} ▾</span>',
    "overflow": lambda el: '<span class="pv-button">⋯</span>',
    "image": lambda el: f'<span class="pv-image">[image: {esc(el.get("alt_text", ""))}]</span>',
}


def _actions(block: Mapping[str, Any]) -> str:
    return f'<div class="pv-actions">{draw(_ACTION_RULES, block.get("elements") or (), kind="element")}</div>'


BLOCK_RULES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "header": _header,
    "section": _section,
    "rich_text": lambda block: f'<div class="pv-rich-text">{draw(ELEMENT_RULES, block.get("elements") or (), kind="rich text block")}</div>',
    "table": _table,
    "context": _context,
    "actions": _actions,
    "divider": lambda block: '<hr class="pv-divider">',
    "image": lambda block: f'<div class="pv-image">[image: {esc(block.get("alt_text", ""))}]</div>',
}


def message(payload: Any) -> str:
    """A chat.postMessage payload: its blocks, or its `text` when it has none."""
    if not isinstance(payload, Mapping):
        return '<div class="pv-unknown">(not a Slack message payload)</div>'
    blocks = payload.get("blocks")
    if not blocks:
        return f'<div class="pv-rt-section">{esc(payload.get("text", ""))}</div>'
    return draw(BLOCK_RULES, blocks, kind="block")
