"""Markdown from a result, parsed once into a small neutral tree that every renderer maps to its markup.

Why a tree and not markdown-it's own HTML: each platform needs its own markup (Slack rich text,
Discord markdown, HTML, terminal text), and safety is easier to prove on a dozen node types than
on four renderers' ideas of markdown. The parser is markdown-it-py's CommonMark preset with raw
HTML off (`html=False`: an HTML tag in data stays text), plus tables and strikethrough.

What the tree guarantees, so renderers only escape for their platform:
- every string is `clean`ed (no controls, bidi overrides, zero-width characters, lone surrogates);
- a `Link.url` is http, https or mailto (markdown-it already refuses `javascript:`, `vbscript:`,
  `file:` and `data:` links; `safe_url` checks again); an image is never an image, only a link
  labelled "image: alt", so nothing is fetched;
- a `Link.url` names no user before its host: `[login](https://trusted.example@evil.example/)`
  is text: the URL and "is not a link: its real host is evil.example"; and its host is ASCII (an
  internationalised host is in its punycode form, which renderers show as the URL);
- nesting is bounded: blocks by markdown-it's `maxNesting` (20), inline styles by `MAX_INLINE_DEPTH`.
  markdown-it silently drops what is nested deeper than `maxNesting`, so a text that reaches it is
  not parsed: it becomes a notice and the whole text as a code block (nothing lost, nothing run).

Renderers walk the tree with a table of small rule functions keyed by node class, the way
markdown-it-py's own renderer does with token types.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from oz0.renderers.safety import ascii_host_url, clean, safe_url, userinfo_host

__all__ = [
    "MAX_INLINE_DEPTH",
    "MAX_NESTING",
    "PARSE_MAX",
    "Block",
    "Code",
    "CodeBlock",
    "Emph",
    "Heading",
    "LineBreak",
    "Link",
    "ListBlock",
    "Paragraph",
    "Quote",
    "Rule",
    "Span",
    "Strike",
    "Strong",
    "Table",
    "Text",
    "document",
    "parse",
    "parse_prefix",
    "plain",
]

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

MAX_NESTING = 20
MAX_INLINE_DEPTH = 8
PARSE_MAX = 100_000


# Inline spans -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class LineBreak:
    hard: bool = False


@dataclass(frozen=True)
class Strong:
    children: tuple[Span, ...]


@dataclass(frozen=True)
class Emph:
    children: tuple[Span, ...]


@dataclass(frozen=True)
class Strike:
    children: tuple[Span, ...]


@dataclass(frozen=True)
class Link:
    """A safe link: `url` is http, https or mailto. Renderers show the URL itself, never hide it."""

    url: str
    children: tuple[Span, ...]


Span = Text | Code | LineBreak | Strong | Emph | Strike | Link


# Blocks -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Paragraph:
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Heading:
    level: int
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class CodeBlock:
    text: str
    lang: str = ""


@dataclass(frozen=True)
class ListBlock:
    ordered: bool
    start: int
    items: tuple[tuple[Block, ...], ...]


@dataclass(frozen=True)
class Quote:
    children: tuple[Block, ...]


@dataclass(frozen=True)
class Rule:
    pass


@dataclass(frozen=True)
class Table:
    header: tuple[tuple[Span, ...], ...]
    rows: tuple[tuple[tuple[Span, ...], ...], ...]


Block = Paragraph | Heading | CodeBlock | ListBlock | Quote | Rule | Table


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """The one parser, made on first use: a card without markdown never imports markdown-it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_NESTING}).enable(["table", "strikethrough"])


@lru_cache(maxsize=32)
def parse(markdown: str) -> tuple[Block, ...]:
    """The markdown as neutral blocks; see the module docstring for what they guarantee.

    Cached (bounded, keyed by the text): the tree is immutable, and every renderer of a card asks for
    the same text (`document`), for its body and its fallback alike.
    """
    source = clean(markdown)
    tokens = _parser().parse(source)
    if any(t.level >= MAX_NESTING - 1 for t in tokens):
        return (Paragraph((Text(f"(The text is nested too deeply to format (the limit is {MAX_NESTING} "
                                "levels); it is shown as written.)"),)),
                CodeBlock(source))
    blocks, _ = _blocks(tokens, 0, None)
    return tuple(blocks)


def document(markdown: str) -> tuple[tuple[Block, ...], int]:
    """A card's markdown as the one tree every renderer maps: its first `PARSE_MAX` characters or so
    as blocks, and how many characters were left unparsed.

    Every renderer asks for the same prefix, so `parse`'s cache (keyed by the text) parses a card's
    text once however many renderers draw it, and a renderer that shows less takes fewer blocks.
    """
    return parse_prefix(markdown, PARSE_MAX)


def parse_prefix(markdown: str, limit: int) -> tuple[tuple[Block, ...], int]:
    """The first `limit` characters or so as blocks, and how many characters were left unparsed.

    A renderer that can show a few thousand characters need not parse 600 KB (markdown-it is linear
    but not free on pathological input). The cut falls at a blank line when there is one in the
    second half of the prefix; a fence or list cut there is still a safe tree.
    """
    if len(markdown) <= limit:
        return parse(markdown), 0
    cut = markdown.rfind("\n\n", limit // 2, limit)
    cut = cut if cut != -1 else limit
    return parse(markdown[:cut]), len(markdown) - cut


def plain(spans: Iterable[Span]) -> str:
    """Spans as plain text: styles dropped, a link as "label (url)" unless the label is the URL."""
    out: list[str] = []
    for span in spans:
        if isinstance(span, (Text, Code)):
            out.append(span.text)
        elif isinstance(span, LineBreak):
            out.append("\n" if span.hard else " ")
        elif isinstance(span, Link):
            label = plain(span.children)
            out.append(span.url if label in ("", span.url) else f"{label} ({span.url})")
        else:
            out.append(plain(span.children))
    return "".join(out)


def _blocks(tokens: list[Token], i: int, close: str | None) -> tuple[list[Block], int]:
    """Blocks from `tokens[i:]` up to the token of type `close`; returns them and the index after it."""
    out: list[Block] = []
    while i < len(tokens):
        tok = tokens[i]
        if close is not None and tok.type == close:
            return out, i + 1
        kind = tok.type
        if kind == "paragraph_open":
            out.append(Paragraph(_inline(tokens[i + 1])))
            i += 3
        elif kind == "heading_open":
            out.append(Heading(int(tok.tag[1:]), _inline(tokens[i + 1])))
            i += 3
        elif kind in ("fence", "code_block"):
            out.append(CodeBlock(tok.content.rstrip("\n"), clean(tok.info.split()[0]) if tok.info.strip() else ""))
            i += 1
        elif kind == "hr":
            out.append(Rule())
            i += 1
        elif kind == "blockquote_open":
            children, i = _blocks(tokens, i + 1, "blockquote_close")
            out.append(Quote(tuple(children)))
        elif kind in ("bullet_list_open", "ordered_list_open"):
            ordered = kind == "ordered_list_open"
            start = int(tok.attrs.get("start", 1)) if ordered else 1
            items: list[tuple[Block, ...]] = []
            i += 1
            end = "ordered_list_close" if ordered else "bullet_list_close"
            while tokens[i].type != end:
                children, i = _blocks(tokens, i + 1, "list_item_close")
                items.append(tuple(children))
            out.append(ListBlock(ordered, start, tuple(items)))
            i += 1
        elif kind == "table_open":
            table, i = _table(tokens, i + 1)
            out.append(table)
        elif kind == "inline":
            out.append(Paragraph(_inline(tok)))
            i += 1
        else:
            i += 1
    return out, i


def _table(tokens: list[Token], i: int) -> tuple[Table, int]:
    header: list[tuple[Span, ...]] = []
    rows: list[tuple[tuple[Span, ...], ...]] = []
    row: list[tuple[Span, ...]] = []
    in_head = False
    while tokens[i].type != "table_close":
        kind = tokens[i].type
        if kind == "thead_open":
            in_head = True
        elif kind == "thead_close":
            in_head = False
        elif kind == "tr_open":
            row = []
        elif kind == "inline":
            row.append(_inline(tokens[i]))
        elif kind == "tr_close":
            if in_head:
                header = row
            else:
                rows.append(tuple(row))
        i += 1
    return Table(tuple(header), tuple(rows)), i + 1


_STYLE = {"strong_open": Strong, "em_open": Emph, "s_open": Strike}
_CLOSE = {"strong_close", "em_close", "s_close", "link_close"}


def _inline(token: Token) -> tuple[Span, ...]:
    """An inline token's children as spans, built with an explicit stack (no recursion on input depth)."""
    root: list[Span] = []
    stack: list[tuple[type | None, str, list[Span]]] = [(None, "", root)]
    for child in token.children or ():
        kind = child.type
        top = stack[-1][2]
        if kind == "text":
            _append_text(top, clean(child.content))
        elif kind == "code_inline":
            top.append(Code(clean(child.content)))
        elif kind in ("softbreak", "hardbreak"):  # a result's lines are kept, as Slack and Discord keep them
            top.append(LineBreak(hard=True))
        elif kind in _STYLE or kind == "link_open":
            url = ""
            if kind == "link_open":
                url = safe_url(str(child.attrs.get("href", ""))) or ""
            stack.append((_STYLE.get(kind, Link), url, []))
        elif kind in _CLOSE and len(stack) > 1:
            cls, url, children = stack.pop()
            _close(stack[-1][2], cls, url, children, depth=len(stack))
        elif kind == "image":
            src = safe_url(str(child.attrs.get("src", "")))
            alt = clean(child.content) or "image"
            if src:
                _close(top, Link, src, [Text(f"image: {alt}")], depth=len(stack))
            else:
                _append_text(top, f"image: {alt}")
    while len(stack) > 1:
        cls, url, children = stack.pop()
        _close(stack[-1][2], cls, url, children, depth=len(stack))
    return tuple(root)


def _close(parent: list[Span], cls: type | None, url: str, children: list[Span], *, depth: int) -> None:
    if cls is Link:
        host = userinfo_host(url) if url else None
        if host is not None:
            label = plain(children)
            if label.strip() not in ("", url):
                parent.extend(children)
                _append_text(parent, f" ({url} is not a link: its real host is {host})")
            else:
                _append_text(parent, f"{url} (not a link: its real host is {host})")
        elif url:
            parent.append(Link(ascii_host_url(url), tuple(children)))
        else:
            parent.extend(children)
            _append_text(parent, " (unsafe link removed)")
    elif depth > MAX_INLINE_DEPTH or cls is None:
        parent.extend(children)
    else:
        parent.append(cls(tuple(children)))


def _append_text(spans: list[Span], text: str) -> None:
    if not text:
        return
    if spans and isinstance(spans[-1], Text):
        spans[-1] = Text(spans[-1].text + text)
    else:
        spans.append(Text(text))
