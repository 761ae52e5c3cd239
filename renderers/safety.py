"""Platform-neutral cleaning that every renderer applies to every string from a result or schema.

Removes what can disguise or run: C0/C1 control characters (terminal escape sequences among them),
bidi overrides and isolates, zero-width characters, soft hyphens, Unicode tag characters (text
hidden in U+E0000-E007F), lone surrogates, and combining marks past `MAX_MARKS` on one character
(Zalgo). Blank fillers that pass for letters (U+115F, U+1160, U+3164, U+FFA0, the braille blank
U+2800) become an ordinary space, so a name made of them reads as empty; U+2028, U+2029 and U+0085
become a newline. Newlines and tabs survive only where the caller allows them. Platform escaping
(Slack's `&<>`, Discord markdown, HTML) is each renderer's own job, done after this.

Emoji stay whole: a zero-width joiner is kept between two emoji (a family, a profession with a skin
tone, the rainbow flag), and tag characters are kept in the three subdivision flags Unicode
recommends (England, Scotland, Wales), the only tag sequences platforms draw; any other tag sequence
is removed, leaving its black flag. Words stay whole: a zero-width non-joiner is kept between a
letter (or the mark ending one, such as a virama) and a letter of a script other than Latin, where
it is spelling (Persian `می‌خواهم`, Hindi, Malayalam); anywhere else it is removed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import cache
from html import escape as _html_escape
from itertools import filterfalse
from urllib.parse import urlsplit

__all__ = [
    "MAX_MARKS",
    "ascii_host_url",
    "clean",
    "clip",
    "clip_each",
    "clipped_clean_each",
    "discord_escape",
    "fence_marks_broken",
    "fence_safe",
    "fence_safe_clipped",
    "fence_safe_each",
    "html_escape",
    "html_hyphens_kept",
    "idn_host",
    "one_line",
    "one_line_each",
    "safe_url",
    "slack_escape",
    "userinfo_host",
    "utf16_len",
    "utf16_lens",
]

MAX_MARKS = 4  # combining marks kept on one character: enough for any language's accents, not for Zalgo

_CONTROLS = "\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u0084\u0086-\u009f"  # C0 (but \t \n \r), C1
_INVISIBLE = (
    _CONTROLS + "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"  # soft hyphen, bidi, zero-width, tags
    "\ud800-\udfff"  # lone surrogates
)
_FILLERS = "\u115f\u1160\u2800\u3164\uffa0"
_STRIP = re.compile(f"[{_INVISIBLE}\u0085\u2028\u2029]")  # what a URL may not hold
_ASCII_CONTROLS = re.compile(f"[{_CONTROLS}]")
_EMOJI = "\u2190-\u2bff\U0001f000-\U0001faff"
_FLAGS = tuple("\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in code) + "\U000e007f"
               for code in ("gbeng", "gbsct", "gbwls"))
_HIDDEN = re.compile("(" + "|".join(_FLAGS) + ")"  # kept whole
                     f"|([{_EMOJI}][\ufe0f\U0001f3fb-\U0001f3ff]?)\u200d(?=[{_EMOJI}])"  # kept: joins emoji
                     "|(?<=[^\\W\\d_\x00-\u024f]|[\u0900-\u0dff\u1000-\u109f])(\u200c)(?=[^\\W\\d_\x00-\u024f])"  # kept if spelling
                     f"|[{_INVISIBLE}]+")  # removed
_LINE_BREAKS = re.compile("\r\n?|[\u0085\u2028\u2029]")
_TABS_AND_NEWLINES = str.maketrans("", "", "\t\n")
_FOLD = re.compile("[\t\n]+")
_ALLOWED_SCHEMES = ("http", "https", "mailto")


@cache
def _marks() -> tuple[str, str]:
    """The combining marks (Mn, Me) as two character classes, the BMP's and the rest; built on first use.

    Two classes because `re` tests a class of BMP characters in constant time and one with
    characters past U+FFFF range by range (30 times slower); the second is used only on a run of
    such characters."""
    bmp = [chr(cp) for cp in range(0x10000) if unicodedata.category(chr(cp)) in ("Mn", "Me")]
    astral = [chr(cp) for cp in [*range(0x10000, 0x20000), *range(0xE0100, 0xE01F0)]
              if unicodedata.category(chr(cp)) in ("Mn", "Me")]
    return "".join(map(re.escape, bmp)), "".join(map(re.escape, astral))


@cache
def _disguise() -> re.Pattern[str]:
    """Printable but disguising: a blank filler, or more than MAX_MARKS combining marks in a row."""
    bmp, _ = _marks()
    return re.compile(f"[{_FILLERS}]|[{bmp}]{{{MAX_MARKS + 1},}}|[\U00010000-\U0010ffff]{{{MAX_MARKS + 1},}}")


@cache
def _mark_runs() -> tuple[re.Pattern[str], re.Pattern[str]]:
    bmp, astral = _marks()
    return (re.compile(f"([{bmp}]{{{MAX_MARKS}}})[{bmp}]+"),
            re.compile(f"([{astral}]{{{MAX_MARKS}}})[{astral}]+"))


@cache
def _suspect() -> re.Pattern[str]:
    """Any BMP character `_disguise` starts from (a filler or a combining mark): one character class of
    the BMP, which `re` scans several times faster than `_disguise`'s alternatives (and twice as fast as
    a class that also holds the range past U+FFFF, which `re` tests range by range), so text without
    any such character (nearly all non-ASCII text) is passed without running `_disguise`."""
    bmp, _ = _marks()
    return re.compile(f"[{_FILLERS}{bmp}]")


_ASTRAL_RUN = re.compile(f"[\U00010000-\U0010ffff]{{{MAX_MARKS + 1},}}")


def _untouched(text: str) -> bool:
    """True when `clean` leaves `text` as it is (nearly always: one C-level check, and a scan for non-ASCII).

    Without a filler or a BMP mark (`_suspect`), `_disguise` can only find a run of characters past
    U+FFFF, which one range class finds faster: an emoji in a text does not send it to `_disguise`."""
    return text.isprintable() and (text.isascii() or (not _suspect().search(text) and (
        utf16_len(text) == len(text) or not _ASTRAL_RUN.search(text))) or not _disguise().search(text))


def _keep_emoji(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(1)
    if m.group(3):
        return m.group(3)
    return m.group(2) + "\u200d" if m.group(2) else ""


def clean(text: str) -> str:
    """`text` without anything invisible or disguising (see the module docstring); keeps \\n and \\t."""
    if _untouched(text):
        return text
    if text.isascii():
        if "\r" not in text and text.translate(_TABS_AND_NEWLINES).isprintable():  # lines of printable ASCII
            return text
        text = _ASCII_CONTROLS.sub("", text)
    else:
        text = _HIDDEN.sub(_keep_emoji, text)
        bmp_run, astral_run = _mark_runs()
        text = bmp_run.sub(r"\1", text)
        if _ASTRAL_RUN.search(text):
            text = astral_run.sub(r"\1", text)
        for filler in _FILLERS:
            text = text.replace(filler, " ")
    return _LINE_BREAKS.sub("\n", text)


def one_line(text: str) -> str:
    """`text` cleaned and folded onto one line (table cells, field names, headers)."""
    if _untouched(text):
        return text.strip()
    return _FOLD.sub(" ", clean(text)).strip()


def clip(text: str, limit: int, *, marker: str = "…") -> str:
    """`text` cut to at most `limit` characters, ending with `marker` when anything was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(marker))] + marker


# The `_each` forms do the same to a whole column of table cells: one C-level check over all of them
# (nearly always "nothing to change"), and the per-cell work only when that check fails.

def _untouched_each(texts: Sequence[str]) -> bool:
    """True when `clean` leaves every text as it is: all printable (one C-level check each), and no
    disguise in the texts past ASCII, scanned together. ASCII holds no filler, mark or character past
    U+FFFF, so a column of ASCII with a few names in 日本語 scans only those names; a run of marks
    made where two of them meet only sends the column down the per-text path."""
    if not all(map(str.isprintable, texts)):
        return False
    wide = "".join(filterfalse(str.isascii, texts))
    return not wide or _untouched(wide)


def one_line_each(texts: Sequence[str]) -> list[str]:
    """`one_line` of every text."""
    if _untouched_each(texts):
        return list(map(str.strip, texts))
    return [one_line(t) for t in texts]


def clip_each(texts: Sequence[str], limit: int) -> list[str]:
    """`clip` of every text to `limit` characters."""
    if max(map(len, texts), default=0) <= limit:
        return list(texts)
    return [t if len(t) <= limit else clip(t, limit) for t in texts]


def fence_safe_clipped(texts: Sequence[str], limit: int) -> list[str]:
    """`fence_safe_each(clip_each(texts, limit))` of texts `one_line_each` made (a table's cells for a code block)."""
    return _marks_broken_each(clipped_clean_each(texts, limit))


def clipped_clean_each(texts: Sequence[str], limit: int) -> list[str]:
    """`clip_each(texts, limit)` of clean one-line texts, still clean.

    They are clean already, so only a clipped one past ASCII is cleaned again: a cut can leave a joiner
    or a tag character without the emoji or the flag that kept it."""
    if max(map(len, texts), default=0) <= limit:
        return list(texts)
    return [t if len(t) <= limit else clip(t, limit) if t.isascii() else clean(clip(t, limit)) for t in texts]


def fence_safe_each(texts: Sequence[str]) -> list[str]:
    """`fence_safe` of every text.

    When `clean` leaves them whole together (it then leaves each whole, and none holds a newline, which
    is not printable), the fence marks are broken in all of them at once, joined by newlines: no mark
    spans a newline, so each text comes back as `fence_safe` makes it."""
    if _untouched_each(texts):
        return _marks_broken_each(list(texts))
    return [fence_safe(t) if "`" in t or "~~~" in t or "@" in t or not _untouched(t) else t for t in texts]


def _marks_broken_each(texts: list[str]) -> list[str]:
    """The fence marks broken in clean one-line texts, all at once: joined by newlines (no mark spans one)."""
    joined = "\n".join(texts)
    if "`" not in joined and "~" not in joined and "@" not in joined:
        return texts
    return fence_marks_broken(joined).split("\n")


def utf16_lens(texts: Sequence[str]) -> list[int]:
    """`utf16_len` of every text (only a character past U+FFFF counts twice, so most need no encoding)."""
    wide = "".join(filterfalse(str.isascii, texts))
    if utf16_len(wide) == len(wide):
        return list(map(len, texts))
    return list(map(utf16_len, texts))


def safe_url(url: str) -> str | None:
    """The URL if it is http, https or mailto and carries nothing hidden; None otherwise.

    Whether it may be a live link is `userinfo_host`'s question, asked where links are made."""
    url = url.strip()
    if _STRIP.search(url) or any(c.isspace() for c in url):
        return None
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return url if scheme in _ALLOWED_SCHEMES else None


def userinfo_host(url: str) -> str | None:
    """The host an http(s) URL really goes to when it names a user first, else None.

    `https://trusted.example@evil.example/login` reads as trusted.example and opens evil.example:
    such a URL is never a live link, it is shown as text with this host beside it."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or "@" not in parts.netloc:
        return None
    return (idn_host(host) or host) if host else "(none)"


def idn_host(host: str) -> str | None:
    """An internationalised host name in its punycode form (what it really is), None for an ASCII host."""
    if host.isascii():
        return None
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return "(a host name that cannot be written in ASCII)"


def ascii_host_url(url: str) -> str:
    """`url` with an internationalised host in punycode, the host it really goes to (markdown-it writes
    hrefs so already; kept as the rule, not left to the parser); any other URL unchanged."""
    try:
        parts = urlsplit(url)
        name = parts.hostname or ""
    except ValueError:
        return url
    host = idn_host(name) if not url.isascii() else None
    if not host or not host.isascii() or host.startswith("("):
        return url
    return parts._replace(netloc=parts.netloc.replace(name, host)).geturl()


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
_DISCORD_INLINE_ESCAPES = str.maketrans({c: "\\" + c for c in "\\*_~`|<>[]"})  # each backslash-escaped
_EVERYONE = re.compile(r"@(?=everyone|here)", re.IGNORECASE)  # the `@` alone: a literal replacement is no template
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
    if "http" not in text:  # no URL (the usual value): the plain escape of the whole text
        return _line_starts_escaped(_discord_escape_plain(text))
    out: list[str] = []
    pos = 0
    for match in _DISCORD_URL.finditer(text):
        out.append(_discord_escape_plain(text[pos:match.start()]))
        out.append(_discord_url(match.group(0), said=text[match.end():match.end() + 40]))
        pos = match.end()
    out.append(_discord_escape_plain(text[pos:]))
    return _line_starts_escaped("".join(out))


def _line_starts_escaped(text: str) -> str:
    """A line that starts (after blanks) with `-`, `+`, `#` or a number and `.` or `)`, escaped so it is
    no list or heading; the scan is skipped when none of those marks is in the text at all."""
    if "-" in text or "+" in text or "#" in text or "." in text or ")" in text:
        return _DISCORD_LINE_START.sub(_escape_line_start, text)
    return text


def _discord_url(url: str, *, said: str) -> str:
    """A bare URL, which Discord makes a link: as inline code (never a link) with its real host when
    it names a user first (unless the text `said` so right after it, as markdown's link rule does);
    as inline code with the link to its punycode host beside it when its host is internationalised."""
    host = userinfo_host(url)
    if host is not None:
        note = "" if said.startswith((" (not a link: its real host", " is not a link: its real host")) else \
            f" (not a link: its real host is {host})"
        return f"`{fence_safe(url)}`{note}"
    url = _EVERYONE.sub("%40", url)
    try:
        name = urlsplit(url).hostname or ""
    except ValueError:
        name = ""
    if name.isascii():
        return url
    real = ascii_host_url(url)  # a host that can disguise itself is never a live link: text, the real URL beside
    beside = f"(<{real}>)" if real != url else "(not a link: its host cannot be written in ASCII)"
    return f"`{fence_safe(url)}` {beside}"


def _escape_line_start(m: re.Match[str]) -> str:
    if m.group(2):
        return m.group(1) + "\\" + m.group(2)
    return m.group(1) + m.group(3) + "\\" + m.group(4)


def _discord_escape_plain(text: str) -> str:
    text = text.translate(_DISCORD_INLINE_ESCAPES)
    return _EVERYONE.sub("@\u200b", text) if "@" in text else text


def fence_safe(text: str) -> str:
    """Cleaned text for inside a code block: a run of backticks is broken so it cannot close the fence.

    `@everyone` and `@here` get a zero-width space too, so no copy of the text can ping.
    """
    return fence_marks_broken(clean(text))


def fence_marks_broken(text: str) -> str:
    """Clean text with its fence marks broken: a backtick or `~~~` cannot close a code block, `@everyone`
    and `@here` cannot ping. No mark spans a blank, so on clean one-line texts joined by blanks (a
    table's lines) it breaks exactly the marks that breaking each text would; a zero-width space takes
    no column, so texts padded before their marks are broken line up as those padded after."""
    text = text.replace("`", "`\u200b").replace("~~~", "~\u200b~~")
    return _EVERYONE.sub("@\u200b", text) if "@" in text else text


def html_escape(text: str) -> str:
    """Cleaned text escaped for HTML element content and quoted attribute values."""
    return _html_escape(clean(text), quote=True)


NOBR_MAX = 64  # a hyphenated word longer than this (no date, id or version is) may still wrap
_HYPHENATED = re.compile(r"\w+(?:-\w+)+")
_TAGS = re.compile(r"(<[^>]*>)")


def html_hyphens_kept(html: str) -> str:
    """Escaped HTML (text and tags) with each hyphenated word of up to NOBR_MAX characters (a date, an id,
    a version) in `<span class="oz0-nobr">`, which the console keeps on one line: a browser breaks a line
    after a hyphen (`2026-11-` / `30`), and a table cell is where that happens. The text is unchanged, so
    a copy of it is too (a non-breaking hyphen would not be)."""

    def words(text: str) -> str:
        return _HYPHENATED.sub(lambda m: f'<span class="oz0-nobr">{m[0]}</span>' if len(m[0]) <= NOBR_MAX
                               else m[0], text)

    if "-" not in html:
        return html
    return "".join(part if part.startswith("<") else words(part) for part in _TAGS.split(html))
