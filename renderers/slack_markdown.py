"""Slack: the shared markdown tree (`renderers.markdown_blocks`) as rich text elements.

Paragraphs and headings become rich text sections with bold/italic/strike/code styles, lists and
quotes their rich text elements, code and markdown tables preformatted text. Links are `link`
elements for http, https and mailto only, with the URL itself visible. A module of its own so that
a card with no markdown (a table, key-values) does not import the tree (renderers.slack_blocks
imports this one only for a markdown text).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oz0.renderers import markdown_blocks as md
from oz0.renderers.monospace import aligned
from oz0.renderers.safety import one_line
from oz0.renderers.slack_rich_text import LIST_INDENT_MAX, preformatted, rt_text, section

__all__ = ["markdown_head", "rt_blocks"]


def markdown_head(text: str) -> str:
    """The first blocks of a markdown text as plain text (the notification's fallback)."""
    return md.plain(_first_spans(text))


def _first_spans(text: str) -> tuple[md.Span, ...]:
    spans: list[md.Span] = []
    for block in md.document(text)[0][:5]:
        if isinstance(block, (md.Paragraph, md.Heading)):
            spans += list(block.spans) + [md.LineBreak(hard=True)]
        elif isinstance(block, md.CodeBlock):
            spans += [md.Code(block.text), md.LineBreak(hard=True)]
    return tuple(spans)


def _rt_spans(spans: tuple[md.Span, ...], style: dict[str, bool]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for span in spans:
        if isinstance(span, md.Text):
            if span.text:
                out.append(rt_text(span.text, style))
        elif isinstance(span, md.Code):
            if span.text:
                out.append(rt_text(span.text, {**style, "code": True}))
        elif isinstance(span, md.LineBreak):
            out.append(rt_text("\n"))
        elif isinstance(span, md.Link):
            label = md.plain(span.children)
            if label not in ("", span.url):
                out += _rt_spans(span.children, style)
                out.append(rt_text(" ("))
            out.append({"text": span.url, "type": "link", "url": span.url})
            if label not in ("", span.url):
                out.append(rt_text(")"))
        else:
            flag = {md.Strong: "bold", md.Emph: "italic", md.Strike: "strike"}[type(span)]
            out += _rt_spans(span.children, {**style, flag: True})
    return out


def rt_blocks(blocks: tuple[md.Block, ...], depth: int = 0) -> list[dict[str, Any]]:
    """Markdown blocks as rich text elements (sections, lists, quotes, preformatted)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        out += _RICH_RULES[type(block)](block, depth)
    return out


def _rt_paragraph(block: md.Paragraph, depth: int) -> list[dict[str, Any]]:
    return [section(_rt_spans(block.spans, {}) + [rt_text("\n")])]


def _rt_heading(block: md.Heading, depth: int) -> list[dict[str, Any]]:
    return [section(_rt_spans(block.spans, {"bold": True}) + [rt_text("\n")])]


def _rt_code(block: md.CodeBlock, depth: int) -> list[dict[str, Any]]:
    return [preformatted(block.text)]


def _rt_list(block: md.ListBlock, depth: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    first = block.start

    def flush(next_number: int) -> None:
        nonlocal pending, first
        if pending:
            item: dict[str, Any] = {"elements": pending, "indent": min(depth, LIST_INDENT_MAX)}
            if block.ordered and first > 1:
                item["offset"] = first - 1
            item["style"] = "ordered" if block.ordered else "bullet"
            item["type"] = "rich_text_list"
            out.append(item)
        pending, first = [], next_number

    for number, item in enumerate(block.items, start=block.start):
        lead = [b for b in item if isinstance(b, (md.Paragraph, md.Heading))][:1]
        pending.append(section(_rt_spans(lead[0].spans, {}) if lead else []))
        rest = [b for b in item if not lead or b is not lead[0]]
        if rest:
            flush(number + 1)
            out += rt_blocks(tuple(rest), depth + 1)
    flush(0)
    return out


def _rt_quote(block: md.Quote, depth: int) -> list[dict[str, Any]]:
    elements: list[dict[str, Any]] = []
    for child in block.children:
        for el in rt_blocks((child,), depth):
            text = "".join(e.get("text", "") for e in el.get("elements", []) if isinstance(e, dict)) \
                if el["type"] != "rich_text_section" else None
            if text is None:
                elements += el["elements"]
            else:
                elements.append(rt_text(text.strip("\n") + "\n"))
    return [{"elements": elements or [rt_text(" ")], "type": "rich_text_quote"}]


def _rt_rule(block: md.Rule, depth: int) -> list[dict[str, Any]]:
    return [section([rt_text("──────────\n")])]


def _rt_table(block: md.Table, depth: int) -> list[dict[str, Any]]:
    return [preformatted(aligned([[one_line(md.plain(c)) for c in block.header]]
                                 + [[one_line(md.plain(c)) for c in row] for row in block.rows]))]


_RICH_RULES: dict[type, Callable[[Any, int], list[dict[str, Any]]]] = {
    md.Paragraph: _rt_paragraph,
    md.Heading: _rt_heading,
    md.CodeBlock: _rt_code,
    md.ListBlock: _rt_list,
    md.Quote: _rt_quote,
    md.Rule: _rt_rule,
    md.Table: _rt_table,
}
