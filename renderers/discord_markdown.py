"""Discord: the shared markdown tree (`renderers.markdown_blocks`) as Discord markdown, and the escapes
every Discord text goes through.

Data is escaped with `discord_escape` (markdown, `<@…>`, `<@&…>`, `<#…>`, `</cmd:…>`, `<t:…>`, masked
links, `@everyone`/`@here`); code blocks hold `fence_safe` text that cannot close the fence; a link is
shown as its real URL in `<…>` (no preview, no masked label).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from oz0.renderers import markdown_blocks as md
from oz0.renderers.monospace import aligned
from oz0.renderers.safety import ascii_host_url, clip, discord_escape, fence_safe, one_line, utf16_len

__all__ = ["CELL_WIDTH", "block", "code_block", "code_block_raw", "esc", "plain_spans"]

CELL_WIDTH = 32
_LANG = re.compile(r"^[A-Za-z0-9_+\-]{1,20}$")


def esc(text: str, limit: int) -> str:
    """`text` on one line, escaped, at most `limit` UTF-16 units (escaping can double a text)."""
    text = one_line(text)
    out = discord_escape(clip(text, limit))
    return out if utf16_len(out) <= limit else discord_escape(clip(text, limit // 2 - 1))


def _spans(spans: tuple[md.Span, ...]) -> str:
    return "".join(_SPAN_RULES[type(s)](s) for s in spans)


def _wrap(marker: str) -> Callable[[Any], str]:
    def rule(span: Any) -> str:
        inner = _spans(span.children)
        return f"{marker}{inner}{marker}" if inner.strip() else inner
    return rule


def _code_span(span: md.Code) -> str:
    text = one_line(span.text)
    if not text or "`" in text:
        return discord_escape(text)
    return f"`{fence_safe(text)}`"


def _link(span: md.Link) -> str:
    label = md.plain(span.children)
    url = re.sub(r"@(everyone|here)", r"%40\1", span.url, flags=re.I)
    url = f"<{url}>" if not re.search(r"[<>\s]", url) else discord_escape(url)
    if label in ("", span.url):
        return url
    if ascii_host_url(label) == span.url:  # an autolink to a disguising host: as text, its real URL beside
        return f"`{fence_safe(label)}` ({url})"
    return f"{_spans(span.children)} ({url})"


_SPAN_RULES: dict[type, Callable[[Any], str]] = {
    md.Text: lambda s: discord_escape(s.text),
    md.Code: _code_span,
    md.LineBreak: lambda s: "\n",
    md.Strong: _wrap("**"),
    md.Emph: _wrap("*"),
    md.Strike: _wrap("~~"),
    md.Link: _link,
}


def code_block(text: str, lang: str = "") -> str:
    """`text` in a fenced code block it cannot close; `lang` kept only when it is a plain word."""
    lang = lang if _LANG.match(lang) else ""
    return f"```{lang}\n{fence_safe(text) or ' '}\n```"


def code_block_raw(body: str, lang: str) -> str:
    """`body` (already fence-safe) in a fenced code block."""
    return f"```{lang}\n{body or ' '}\n```"


def block(node: md.Block, depth: int = 0) -> str:
    """One markdown block as Discord markdown."""
    return _BLOCK_RULES[type(node)](node, depth)


def _list(node: md.ListBlock, depth: int) -> str:
    lines: list[str] = []
    indent = "  " * min(depth, 4)
    for number, item in enumerate(node.items, start=node.start):
        marker = f"{number}." if node.ordered else "-"
        parts = [block(b, depth + 1) for b in item]
        first, rest = (parts[0], parts[1:]) if parts else ("", [])
        lines.append(f"{indent}{marker} {first}")
        lines += rest
    return "\n".join(lines)


def _quote(node: md.Quote, depth: int) -> str:
    inner = "\n".join(block(b, depth) for b in node.children)
    return "\n".join("> " + line.lstrip("> ") if line.strip() else ">" for line in inner.split("\n"))


def _md_table(node: md.Table, depth: int) -> str:
    """A markdown table as a monospace table in a code block, cells cut to `CELL_WIDTH` columns."""
    header = [one_line(md.plain(c)) for c in node.header]
    rows = [[one_line(md.plain(c)) for c in r] for r in node.rows]
    cells = [[fence_safe(clip(c, CELL_WIDTH)) for c in r] for r in [header] + rows]
    return code_block(aligned(cells, rule=bool(header)))


_BLOCK_RULES: dict[type, Callable[[Any, int], str]] = {
    md.Paragraph: lambda b, d: _spans(b.spans),
    md.Heading: lambda b, d: ("### " + _spans(b.spans)) if b.level == 1 and d == 0 else f"**{_spans(b.spans)}**",
    md.CodeBlock: lambda b, d: code_block(b.text, b.lang),
    md.ListBlock: _list,
    md.Quote: _quote,
    md.Rule: lambda b, d: "──────────",
    md.Table: _md_table,
}


def plain_spans(node: md.Block) -> tuple[md.Span, ...]:
    """The spans whose plain text a block counts for when it is cut (code as text; others none)."""
    if isinstance(node, (md.Paragraph, md.Heading)):
        return node.spans
    if isinstance(node, md.CodeBlock):
        return (md.Text(node.text),)
    return (md.Text(""),)
