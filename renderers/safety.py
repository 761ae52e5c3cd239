"""Platform-neutral cleaning that every renderer applies to every string from a result or schema.

Removes what can disguise or run: C0/C1 control characters (terminal escape sequences among them),
bidi overrides and isolates, zero-width characters, lone surrogates. Newlines and tabs survive only
where the caller allows them. Platform escaping (Slack's `&<>`, Discord markdown, HTML) is each
renderer's own job, done after this.
"""

from __future__ import annotations

import re
from html import escape as _html_escape
from typing import Sequence
from urllib.parse import urlsplit

__all__ = [
    "clean",
    "clip",
    "clip_each",
    "discord_escape",
    "fence_safe",
    "fence_safe_each",
    "html_escape",
    "one_line",
    "one_line_each",
    "safe_url",
    "slack_escape",
    "utf16_len",
    "utf16_lens",
]

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
    if text.isprintable():  # every character _STRIP or a line break matches is non-printable
        return text
    text = _STRIP.sub("", text)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def one_line(text: str) -> str:
    """`text` cleaned and folded onto one line (table cells, field names, headers)."""
    if text.isprintable():
        return text.strip()
    return _STRIP_ALL_CONTROLS.sub(" ", text).strip()


def clip(text: str, limit: int, *, marker: str = "…") -> str:
    """`text` cut to at most `limit` characters, ending with `marker` when anything was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))] + marker


# The `_each` forms do the same to a whole column of table cells: one C-level check over all of them
# (nearly always "nothing to change"), and the per-cell work only when that check fails.

def one_line_each(texts: Sequence[str]) -> list[str]:
    """`one_line` of every text."""
    if all(map(str.isprintable, texts)):
        return list(map(str.strip, texts))
    return [one_line(t) for t in texts]


def clip_each(texts: Sequence[str], limit: int) -> list[str]:
    """`clip` of every text to `limit` characters."""
    if max(map(len, texts), default=0) <= limit:
        return list(texts)
    return [clip(t, limit) for t in texts]


def fence_safe_each(texts: Sequence[str]) -> list[str]:
    """`fence_safe` of every text."""
    joined = "\n".join(texts)
    if "`" in joined or "~~~" in joined or "@" in joined or not all(map(str.isprintable, texts)):
        return [fence_safe(t) if "`" in t or "~~~" in t or "@" in t or not t.isprintable() else t for t in texts]
    return list(texts)


def utf16_lens(texts: Sequence[str]) -> list[int]:
    """`utf16_len` of every text (only a character past U+FFFF counts twice, so most need no encoding)."""
    if all(map(str.isascii, texts)) or utf16_len(joined := "".join(texts)) == len(joined):
        return list(map(len, texts))
    return list(map(utf16_len, texts))


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


def utf16_len(text: str) -> int:
    """Length as JavaScript counts it (UTF-16 code units): how Slack and Discord measure their limits."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def slack_escape(text: str) -> str:
    """Text for a Slack field that Slack parses (mrkdwn, markdown, the top-level `text`).

    Escaping `&`, `<` and `>` keeps `<!channel>`, `<@U…>`, `<#C…>`, `<!subteam^…>`, `<!date^…>` and
    `<url|label>` inert. mrkdwn cannot escape `*_~` or backticks: data that must be literal goes in
    plain_text, raw_text or rich text instead.
    """
    return clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_DISCORD_URL = re.compile(r"https?://[^\s<>`|\\\[\]()\"']+")
_DISCORD_INLINE = re.compile(r"([\\*_~`|<>\[\]])")
_EVERYONE = re.compile(r"@(everyone|here)", re.IGNORECASE)
_DISCORD_LINE_START = re.compile(r"^(\s*)(?:([-+#])|(\d+)([.)]))", re.MULTILINE)


def discord_escape(text: str) -> str:
    """Data as literal Discord markdown: no formatting, no mention, no masked link, no heading or list.

    Every markdown character is backslash-escaped, so `<@…>`, `<@&…>`, `<#…>`, `</cmd:…>`, `<t:…>`,
    `[label](url)`, `||spoiler||` and code fences stay text; `@everyone` and `@here` get a
    zero-width space after the `@` (Discord's own advice; `allowed_mentions` stops the ping anyway).
    URLs are kept whole so they still work as links (the message suppresses their previews); inside
    one, `@everyone` becomes the equivalent `%40everyone`.
    """
    text = clean(text)
    out: list[str] = []
    pos = 0
    for match in _DISCORD_URL.finditer(text):
        out.append(_discord_escape_plain(text[pos:match.start()]))
        out.append(_EVERYONE.sub("%40\\1", match.group(0)))
        pos = match.end()
    out.append(_discord_escape_plain(text[pos:]))
    return _DISCORD_LINE_START.sub(_escape_line_start, "".join(out))


def _escape_line_start(m: re.Match[str]) -> str:
    if m.group(2):
        return m.group(1) + "\\" + m.group(2)
    return m.group(1) + m.group(3) + "\\" + m.group(4)


def _discord_escape_plain(text: str) -> str:
    text = _DISCORD_INLINE.sub(r"\\\1", text)
    return _EVERYONE.sub("@\u200b\\1", text)


def fence_safe(text: str) -> str:
    """Cleaned text for inside a code block: a run of backticks is broken so it cannot close the fence.

    `@everyone` and `@here` get a zero-width space too, so no copy of the text can ping.
    """
    text = clean(text).replace("`", "`\u200b").replace("~~~", "~\u200b~~")
    return _EVERYONE.sub("@\u200b\\1", text) if "@" in text else text


def html_escape(text: str) -> str:
    """Cleaned text escaped for HTML element content and quoted attribute values."""
    return _html_escape(clean(text), quote=True)
