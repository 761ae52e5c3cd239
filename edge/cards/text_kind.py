"""Whether a result's text is markdown prose or plain line-oriented output (git status, logs, diffs).

Markdown reads tool output as markup it is not (an indented line as code, `*` as emphasis), where
every line is a fact (every renderer keeps a markdown text's single line breaks, as Slack and Discord
do). A text is read as plain, keeping its line breaks as written, when it looks like a unified diff,
or when it has single line breaks and no markdown construct at all (heading, fence, quote, list item,
table row, strong emphasis, link, code span).
A line starting with "* " is no such sign: `git branch` marks its current branch so.
Text on one line, or whose only breaks are between paragraphs, stays markdown as before.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["text_format_of"]

_DIFF = re.compile(r"(?m)^(?:diff --git |@@ -\d|--- \S|\+\+\+ \S)")
_SINGLE_BREAK = re.compile(r"[^\n]\n(?!\s*\n)[^\n]")
_MARKDOWN = re.compile(r"""(?mx)
    ^[ ]{0,3}\#{1,6}[ \t]          # a heading
  | ^[ ]{0,3}(?:```|~~~)           # a code fence
  | ^[ ]{0,3}>                     # a block quote
  | ^[ ]{0,3}(?:[-+]|\d{1,9}[.)])[ \t]+\S    # a list item ("* " starts lines of tool output too)
  | ^[ ]{0,3}\|.*\|[ \t]*$         # a table row
  | \*\*\S | __\S                  # strong emphasis
  | \[[^\]\n]+\]\([^)\s]+\)        # a link
  | `[^`\n]+`                      # a code span
""")


def text_format_of(text: str) -> Literal["markdown", "plain"]:
    """"plain" for line-oriented output whose single line breaks must be kept, else "markdown"."""
    if _DIFF.search(text):
        return "plain"
    if not _SINGLE_BREAK.search(text):
        return "markdown"
    return "markdown" if _MARKDOWN.search(text) else "plain"
