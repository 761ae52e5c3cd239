"""The web console: a card as one escaped `<section>` fragment, styled by classes only.

Everything from a result, a schema or an agent is `clean`ed and HTML-escaped (`html_escape`, quotes
included), so a `<script>` in data is text. The fragment has no `style` attribute or element, no
`on*` attribute, no image (nothing is fetched), and its only URLs are `href`s that `safe_url`
allowed (http, https, mailto), each shown as its real URL beside its label and opened with
`rel="nofollow noopener noreferrer"`. Markdown is drawn from the shared tree of
`renderers.markdown_blocks`: raw HTML in markdown is never passed through.

Class names (`oz0-card`, `oz0-card--failure`, `oz0-table`, …) are the console stylesheet's hooks.
The console has no platform limit, but a page should stay usable: at most `MAX_ROWS` table rows and
`MAX_TEXT` characters of text are drawn; anything cut is said, and `data-oz0-attachment` on the
attachment note names the file the console offers for download (the full result).

`render` returns `Rendered(fragment, uploads, cuts)`. A card's actions are not drawn: they are the
chat channels' buttons ("Share in channel"), and the console has no channel to act in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oz0.edge.cards.model import Card, cell_text
from oz0.renderers import markdown_blocks as md
from oz0.renderers.attachments import files_for, size_text, uploads_for
from oz0.renderers.rendered import Rendered
from oz0.renderers.safety import clean, clip, html_escape, html_hyphens_kept, one_line

__all__ = ["MAX_ROWS", "MAX_TEXT", "render"]

MAX_ROWS = 1_000
MAX_LINES = 2_000
MAX_TEXT = 200_000
CELL_MAX = 2_000

_e = html_escape


def _cell(value: Any) -> str:
    return html_hyphens_kept(_e(clip(one_line(cell_text(value)), CELL_MAX)))


# Markdown tree to HTML ----------------------------------------------------------------------------

def _spans(spans: tuple[md.Span, ...]) -> str:
    return "".join(_SPAN_RULES[type(s)](s) for s in spans)


def _link(span: md.Link) -> str:
    label = md.plain(span.children)
    anchor = f'<a href="{_e(span.url)}" rel="nofollow noopener noreferrer">{_e(span.url)}</a>'
    if label in ("", span.url):
        return anchor
    return f'{_spans(span.children)} <span class="oz0-link">({anchor})</span>'


_SPAN_RULES: dict[type, Callable[[Any], str]] = {
    md.Text: lambda s: _e(s.text),
    md.Code: lambda s: f"<code>{_e(s.text)}</code>",
    md.LineBreak: lambda s: "<br>" if s.hard else "\n",
    md.Strong: lambda s: f"<strong>{_spans(s.children)}</strong>",
    md.Emph: lambda s: f"<em>{_spans(s.children)}</em>",
    md.Strike: lambda s: f"<del>{_spans(s.children)}</del>",
    md.Link: _link,
}


def _blocks(blocks: tuple[md.Block, ...]) -> str:
    return "".join(_BLOCK_RULES[type(b)](b) for b in blocks)


def _list(block: md.ListBlock) -> str:
    items = "".join(f"<li>{_blocks(item)}</li>" for item in block.items)
    if not block.ordered:
        return f"<ul>{items}</ul>"
    start = f' start="{block.start}"' if block.start != 1 else ""
    return f"<ol{start}>{items}</ol>"


def _md_table(block: md.Table) -> str:
    head = "".join(f'<th scope="col">{html_hyphens_kept(_spans(c))}</th>' for c in block.header)
    rows = "".join("<tr>" + "".join(f"<td>{html_hyphens_kept(_spans(c))}</td>" for c in r) + "</tr>"
                   for r in block.rows)
    return f'<table class="oz0-md-table"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


_BLOCK_RULES: dict[type, Callable[[Any], str]] = {
    md.Paragraph: lambda b: f"<p>{_spans(b.spans)}</p>",
    md.Heading: lambda b: f"<h{min(b.level + 2, 6)}>{_spans(b.spans)}</h{min(b.level + 2, 6)}>",
    md.CodeBlock: lambda b: (f'<pre class="oz0-code"><code'
                             f'{f" data-lang={chr(34)}{_e(b.lang)}{chr(34)}" if b.lang else ""}>'
                             f"{_e(b.text)}</code></pre>"),
    md.ListBlock: _list,
    md.Quote: lambda b: f"<blockquote>{_blocks(b.children)}</blockquote>",
    md.Rule: lambda b: "<hr>",
    md.Table: _md_table,
}


# Forms --------------------------------------------------------------------------------------------

def _body_table(card: Card, cut: list[str]) -> str:
    head = "".join(f'<th scope="col">{html_hyphens_kept(_e(one_line(c)))}</th>' for c in card.columns)
    rows = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
                   for row in card.rows[:MAX_ROWS])
    if len(card.rows) > MAX_ROWS:
        cut.append(f"… {len(card.rows) - MAX_ROWS:,} more rows (the console draws {MAX_ROWS:,}), "
                   "full result attached")
    empty = '<p class="oz0-empty">(no rows)</p>' if not card.rows else ""
    return (f'<div class="oz0-table-wrap"><table class="oz0-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>{empty}")


def _kv(keys: tuple[str, ...], values: tuple[Any, ...]) -> str:
    items = "".join(f'<div class="oz0-kv__item"><dt>{_e(one_line(k))}</dt><dd>{_cell(v)}</dd></div>'
                    for k, v in zip(keys[:MAX_ROWS], values))
    return f'<dl class="oz0-kv">{items}</dl>'


def _body_key_values(card: Card, cut: list[str]) -> str:
    if len(card.keys) > MAX_ROWS:
        cut.append(f"… {len(card.keys) - MAX_ROWS:,} more fields, full result attached")
    return _kv(card.keys, card.values) if card.keys else '<p class="oz0-empty">(no fields)</p>'


_DIFF_CLASS = {"+": "oz0-diff__add", "-": "oz0-diff__del", "@": "oz0-diff__hunk", " ": "oz0-diff__ctx"}


def _body_diff(card: Card, cut: list[str]) -> str:
    out = _body_key_values(card, cut) if card.keys else ""
    diff = card.diff
    if diff is None:
        return out
    if diff.kind == "lines":
        lines = [f'<span class="oz0-diff__file">--- {_e(one_line(diff.before))}</span>',
                 f'<span class="oz0-diff__file">+++ {_e(one_line(diff.after))}</span>']
        for ln in diff.lines[:MAX_LINES]:
            text = (ln.op if ln.op != "@" else "") + clean(ln.text).replace("\n", " ")
            lines.append(f'<span class="{_DIFF_CLASS.get(ln.op, "oz0-diff__ctx")}">{_e(text)}</span>')
        if len(diff.lines) > MAX_LINES:
            cut.append(f"… {len(diff.lines) - MAX_LINES:,} more diff lines, full result attached")
        empty = '<p class="oz0-empty">(no differences)</p>' if not diff.lines else ""
        return out + f'<pre class="oz0-diff"><code>{chr(10).join(lines)}</code></pre>{empty}'
    rows = []
    for c in diff.changes[:MAX_ROWS]:
        before = _cell(c.before) if c.change != "added" else ""
        after = _cell(c.after) if c.change != "removed" else ""
        change = _e(one_line(c.change))
        rows.append(f'<tr class="oz0-change oz0-change--{change}"><td>{_e(one_line(c.key))}</td>'
                    f"<td>{change}</td><td>{before}</td><td>{after}</td></tr>")
    if len(diff.changes) > MAX_ROWS:
        cut.append(f"… {len(diff.changes) - MAX_ROWS:,} more changes, full result attached")
    if not diff.changes:
        return out + '<p class="oz0-empty">(no differences)</p>'
    return out + ('<table class="oz0-diff-keys"><thead><tr><th scope="col">key</th><th scope="col">change'
                  '</th><th scope="col">before</th><th scope="col">after</th></tr></thead>'
                  f'<tbody>{"".join(rows)}</tbody></table>')


def _body_text(card: Card, cut: list[str]) -> str:
    text = card.text
    if not text.strip():
        return ""
    over = max(0, len(text) - MAX_TEXT)
    if over:
        cut.append(f"… {over:,} more characters of text, full result attached")
        text = text[:MAX_TEXT]
    if card.text_format == "json":
        return f'<pre class="oz0-json"><code>{_e(text)}</code></pre>'
    if card.text_format == "plain":
        return f'<pre class="oz0-plain">{_e(text)}</pre>'
    blocks, unparsed = md.document(card.text)
    unparsed -= over
    if unparsed:
        cut.append(f"… {unparsed:,} more characters of text, full result attached")
    return f'<div class="oz0-markdown">{_blocks(blocks)}</div>'


_RULES: dict[str, Callable[[Card, list[str]], str]] = {
    "table": _body_table,
    "key_values": _body_key_values,
    "diff": _body_diff,
    "text": _body_text,
}


def _status(card: Card) -> str:
    s = card.status
    if s is None:
        return ""
    word, kind = ("Succeeded", "success") if s.success else ("Failed", "failure")
    facts = []
    for label, value in (("error code", s.error_code), ("error", s.error), ("command", s.command)):
        if value:
            facts.append(f"<div><dt>{label}</dt><dd>{_e(one_line(value))}</dd></div>")
    if s.duration_ms is not None:
        facts.append(f"<div><dt>duration</dt><dd>{s.duration_ms:,.0f} ms</dd></div>")
    warnings = "".join(f"<li>{_e(one_line(w))}</li>" for w in s.warnings)
    return (f'<div class="oz0-status oz0-status--{kind}" role="status">'
            f'<strong class="oz0-status__label">{word}</strong> '
            f'<span class="oz0-status__message">{_e(one_line(s.message))}</span>'
            + (f'<dl class="oz0-status__facts">{"".join(facts)}</dl>' if facts else "")
            + (f'<ul class="oz0-status__warnings">{warnings}</ul>' if warnings else "")
            + "</div>")


def _not_drawn(card: Card) -> str:
    if card.drawn:
        return ""
    items = "".join(f"<li>{_e(one_line(v.describe()))}</li>" for v in card.violations[:MAX_ROWS])
    return (f'<div class="oz0-not-drawn"><p><strong>Not drawn as a card.</strong> '
            f'{_e(one_line(card.reason or "The result could not be drawn."))}</p>'
            + (f'<ul class="oz0-violations">{items}</ul>' if items else "") + "</div>")


def render(card: Card) -> Rendered:
    """The card as an HTML fragment (one `<section>`, everything escaped, classes only), the file the
    console offers beside it and what was cut."""
    kind = ("failure" if card.status is not None and not card.status.success else
            "not-drawn" if not card.drawn else "success" if card.status is not None else "plain")
    cut: list[str] = []
    rule = _RULES.get(card.form)
    body = rule(card, cut) if rule else _body_text(card.degrade(), cut)
    parts = [f'<section class="oz0-card oz0-card--{_e(card.form)} oz0-card--{kind}">']
    if card.title and one_line(card.title):
        parts.append(f'<header class="oz0-card__header"><h2 class="oz0-card__title">{_e(one_line(card.title))}'
                     "</h2></header>")
    parts += [_status(card), _not_drawn(card)]
    if body:
        parts.append(f'<div class="oz0-card__body">{body}</div>')
    if card.notes:
        parts.append('<ul class="oz0-notes">' + "".join(f"<li>{_e(one_line(n))}</li>" for n in card.notes)
                     + "</ul>")
    parts += [f'<p class="oz0-cut">{_e(c)}</p>' for c in cut]
    uploads = uploads_for(card, cut=bool(cut))
    for a in uploads:
        parts.append(f'<p class="oz0-attachment" data-oz0-attachment="{_e(a.filename)}" '
                     f'data-oz0-content-type="{_e(a.content_type)}" data-oz0-size="{a.size}">'
                     f"Full result attached: {_e(a.filename)} ({_e(a.content_type)}, {size_text(a.size)})</p>")
    for a in files_for(card):
        parts.append(f'<p class="oz0-attachment" data-oz0-attachment="{_e(a.filename)}" '
                     f'data-oz0-content-type="{_e(a.content_type)}" data-oz0-size="{a.size}">'
                     f"Attached: {_e(a.filename)} ({_e(a.content_type)}, {size_text(a.size)})</p>")
    parts.append("</section>")
    return Rendered("".join(p for p in parts if p), uploads + files_for(card), tuple(cut))
