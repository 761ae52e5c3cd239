"""The terminal: the shared markdown tree (`renderers.markdown_blocks`) as readable text.

Styles are dropped, links read "label (url)", code is indented, lists keep their markers, quotes a bar
and markdown tables are aligned. A module of its own so that a card with no markdown (a table,
key-values) does not import the tree (renderers.plain_text imports this one only for a markdown text).
"""

from __future__ import annotations

from oz0.renderers import markdown_blocks as md
from oz0.renderers.monospace import aligned
from oz0.renderers.safety import one_line

__all__ = ["markdown_text"]


def markdown_text(text: str, *, width: int) -> tuple[str, int]:
    """A markdown text as readable text (a heading underlined up to `width` columns), and how many of
    its characters were left unparsed."""
    blocks, unparsed = md.document(text)
    return "\n\n".join(_block(b, width) for b in blocks), unparsed


def _block(block: md.Block, width: int) -> str:
    if isinstance(block, md.Heading):
        title = md.plain(block.spans)
        return title + "\n" + ("=" if block.level == 1 else "-") * min(len(title), width)
    if isinstance(block, md.Paragraph):
        return md.plain(block.spans)
    if isinstance(block, md.CodeBlock):
        return "\n".join("    " + line for line in block.text.split("\n"))
    if isinstance(block, md.ListBlock):
        lines = []
        for number, item in enumerate(block.items, start=block.start):
            marker = f"{number}." if block.ordered else "•"
            body = "\n".join(_block(b, width) for b in item).split("\n")
            pad = " " * (len(marker) + 1)
            lines.append(f"{marker} {body[0]}" + "".join("\n" + pad + rest for rest in body[1:]))
        return "\n".join(lines)
    if isinstance(block, md.Quote):
        inner = "\n\n".join(_block(b, width) for b in block.children)
        return "\n".join("│ " + line for line in inner.split("\n"))
    if isinstance(block, md.Table):
        return aligned([[one_line(md.plain(c)) for c in block.header]]
                       + [[one_line(md.plain(c)) for c in r] for r in block.rows])
    return "─" * 10
