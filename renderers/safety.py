"""Platform-neutral cleaning that every renderer applies to every string from a result or schema.

Removes what can disguise or run: C0/C1 control characters (terminal escape sequences among them),
bidi overrides and isolates, zero-width characters, lone surrogates. Newlines and tabs survive only
where the caller allows them. Platform escaping (Slack's `&<>`, Discord markdown, HTML) is each
renderer's own job, done after this.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["clean", "clip", "one_line", "safe_url"]

_INVISIBLE = (
    "\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f"  # C0 (but \t \n \r) and C1 controls
    "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"  # bidi, zero-width
    "\ud800-\udfff"  # lone surrogates
)
_STRIP = re.compile(f"[{_INVISIBLE}]")
_STRIP_ALL_CONTROLS = re.compile(f"[{_INVISIBLE}\t\n\r\u2028\u2029\u0085]+")
_ALLOWED_SCHEMES = ("http", "https", "mailto")


def clean(text: str) -> str:
    """`text` without controls, bidi overrides, zero-width characters or lone surrogates; keeps \\n and \\t."""
    text = _STRIP.sub("", text)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def one_line(text: str) -> str:
    """`text` cleaned and folded onto one line (table cells, field names, headers)."""
    return _STRIP_ALL_CONTROLS.sub(" ", text).strip()


def clip(text: str, limit: int, *, marker: str = "…") -> str:
    """`text` cut to at most `limit` characters, ending with `marker` when anything was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))] + marker


def safe_url(url: str) -> str | None:
    """The URL if it is http, https or mailto and carries nothing hidden; None otherwise."""
    url = url.strip()
    if _STRIP.search(url) or any(c.isspace() for c in url):
        return None
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return url if scheme in _ALLOWED_SCHEMES else None
