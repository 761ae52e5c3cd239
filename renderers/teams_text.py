"""Teams: data as Adaptive Card text that runs nothing, and the shared markdown tree drawn as such text.

Data never goes in a `TextBlock` (whose `text` Teams parses as markdown: `[label](url)` would be a
masked link) nor a `FactSet` value unless it is inert. It goes in `RichTextBlock` inlines of
`TextRun`s, which the schema defines as "Markdown is not supported": `*`, `[x](y)`, `<at>…</at>` and
HTML tags are shown as written. A `<at>` mention is live only with a mention entity in the
activity's `entities` (or the card's `msteams.entities`), and the renderer never writes one.

Teams makes a link of a bare URL in any text, as Discord does, so the rule of `renderers.safety`
applies here too: a URL naming a user before its host is followed by "(not a link: its real host is
…)", and an internationalised host is followed by its punycode form. A link from the markdown tree
is a `TextRun` whose `selectAction` opens the URL, and its text is the URL itself (after the label),
so the reader always sees where it goes. Only http(s) URLs are links; a `mailto:` is shown as text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from oz0.renderers import markdown_blocks as md
from oz0.renderers.monospace import aligned
from oz0.renderers.safety import clean, idn_host, one_line, userinfo_host

__all__ = ["INERT", "md_blocks", "mono", "rich", "run", "shown"]

_URL = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
INERT = re.compile(r"^[^*_~`\[\]()<>\\#|]*$")  # no markdown a FactSet value could parse, and no URL
_NOTE = (" (not a link: its real host", " is not a link: its real host")


def shown(text: str) -> str:
    """Data as Teams shows it: cleaned, and every bare URL followed by the host it really goes to
    where that host is hidden (a user name before it) or disguised (an internationalised name)."""
    text = clean(text)
    if "://" not in text:
        return text
    out: list[str] = []
    pos = 0
    for m in _URL.finditer(text):
        out.append(text[pos:m.end()])
        pos = m.end()
        url, after = m.group(0), text[m.end():m.end() + 40]
        host = userinfo_host(url)
        if host is not None:
            if not after.startswith(_NOTE):
                out.append(f" (not a link: its real host is {host})")
            continue
        try:
            ascii_host = idn_host(urlsplit(url).hostname or "")
        except ValueError:
            ascii_host = None
        if ascii_host and not after.startswith(f" ({ascii_host})"):
            out.append(f" ({ascii_host})")
    out.append(text[pos:])
    return "".join(out)


def run(text: str, **style: Any) -> dict[str, Any]:
    """One `TextRun` of data (shown as written); `style` are TextRun properties (weight, color…)."""
    return {"type": "TextRun", "text": shown(text), **style}


def rich(inlines: list[dict[str, Any]], **props: Any) -> dict[str, Any]:
    """A `RichTextBlock` of these inlines (one blank run when there are none: the schema wants some)."""
    inlines = [i for i in inlines if i.get("text")] or [{"type": "TextRun", "text": " "}]
    return {"type": "RichTextBlock", "inlines": inlines, **props}


def mono(lines: list[str], colours: list[str | None] | None = None) -> dict[str, Any]:
    """Lines in a monospace `RichTextBlock`, each its own run (coloured, for a diff's +/- lines)."""
    runs = []
    for i, line in enumerate(lines):
        style: dict[str, Any] = {"fontType": "Monospace"}
        colour = colours[i] if colours else None
        if colour:
            style["color"] = colour
        runs.append(run(line + ("\n" if i < len(lines) - 1 else ""), **style))
    return rich(runs)


def _spans(spans: tuple[md.Span, ...], style: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for span in spans:
        if isinstance(span, md.Text):
            out.append(run(span.text, **style))
        elif isinstance(span, md.Code):
            out.append(run(span.text, **style, fontType="Monospace"))
        elif isinstance(span, md.LineBreak):
            out.append(run("\n"))
        elif isinstance(span, md.Link) and not span.url.lower().startswith(("http://", "https://")):
            out += _spans(span.children, style)
            if md.plain(span.children) != span.url:
                out.append(run(f" ({span.url})"))
        elif isinstance(span, md.Link):
            label = md.plain(span.children)
            if label not in ("", span.url):
                out += _spans(span.children, style)
                out.append(run(" ("))
            out.append({"type": "TextRun", "text": span.url,
                        "selectAction": {"type": "Action.OpenUrl", "url": span.url}})
            if label not in ("", span.url):
                out.append(run(")"))
        else:
            flag = {md.Strong: ("weight", "Bolder"), md.Emph: ("italic", True),
                    md.Strike: ("strikethrough", True)}[type(span)]
            out += _spans(span.children, {**style, flag[0]: flag[1]})
    return out


def _paragraph(block: md.Paragraph, lead: str) -> list[dict[str, Any]]:
    return [rich(([run(lead)] if lead else []) + _spans(block.spans, {}))]


def _heading(block: md.Heading, lead: str) -> list[dict[str, Any]]:
    size = "Large" if block.level == 1 else "Medium" if block.level == 2 else "Default"
    return [rich(_spans(block.spans, {"weight": "Bolder", "size": size}))]


def _code(block: md.CodeBlock, lead: str) -> list[dict[str, Any]]:
    return [mono([lead + ln for ln in block.text.rstrip("\n").split("\n")])]


def _list(block: md.ListBlock, lead: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for number, item in enumerate(block.items, start=block.start):
        mark = f"{lead}{number}. " if block.ordered else f"{lead}• "
        for i, child in enumerate(item):
            out += _RULES[type(child)](child, mark if i == 0 else lead + "   ")
    return out


def _quote(block: md.Quote, lead: str) -> list[dict[str, Any]]:
    return [el for child in block.children for el in _RULES[type(child)](child, lead + "│ ")]


def _rule(block: md.Rule, lead: str) -> list[dict[str, Any]]:
    return [rich([run(lead + "──────────", isSubtle=True)])]


def _table(block: md.Table, lead: str) -> list[dict[str, Any]]:
    rows = [[one_line(md.plain(c)) for c in block.header]] + [[one_line(md.plain(c)) for c in r] for r in block.rows]
    return [mono([lead + ln for ln in aligned(rows, rule=True).split("\n")])]


_RULES: dict[type, Callable[[Any, str], list[dict[str, Any]]]] = {
    md.Paragraph: _paragraph,
    md.Heading: _heading,
    md.CodeBlock: _code,
    md.ListBlock: _list,
    md.Quote: _quote,
    md.Rule: _rule,
    md.Table: _table,
}


def md_blocks(block: md.Block) -> list[dict[str, Any]]:
    """One markdown block as Adaptive Card elements (RichTextBlocks): the subset Teams draws, data literal."""
    return _RULES[type(block)](block, "")
