"""Independent checks of rendered payloads: what each platform would accept, and that nothing can run.

Slack: slack_sdk's `Block.parse` + `validate_json()` for every block, plus the caps slack_sdk does not
check (50 blocks, one table of at most 100 rows x 20 cells, no empty cell, the aggregate size).
Discord: the components rebuilt as discord.py `ui.LayoutView` items (which refuse more than 40) and
its `content_length()` against 4,000, plus the message rules. HTML: `html.parser` sees only
allowed tags and attributes, no `script`/`style`, no `on*`, no URL outside http, https and mailto.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import discord
from discord import ui
from slack_sdk.models.blocks import Block

from oz0.edge.cards.model import Attachment
from oz0.renderers import Rendered

# Characters no payload may carry (ZWSP is allowed only where Discord escaping puts it; ZWJ only
# between two emoji, tag characters only in the three subdivision flags, see `hidden`).
FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u061c\u115f\u1160\u180e"
                       "\u200c-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\u2800\u3164"
                       "\ufeff\uffa0\ud800-\udfff\U000e0000-\U000e007f]")
ZWSP = "\u200b"
# England, Scotland, Wales: the subdivision flags Unicode recommends, written with tag characters
FLAGS = tuple("\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in code) + "\U000e007f"
              for code in ("gbeng", "gbsct", "gbwls"))
_EMOJI_ZWJ = re.compile("(?<=[\u2190-\u2bff\U0001f000-\U0001faff\ufe0f\U0001f3fb-\U0001f3ff])\u200d"
                        "(?=[\u2190-\u2bff\U0001f000-\U0001faff])")
MARK_RUN = 4  # the renderers' limit: more combining marks than this on one character is a disguise (Zalgo)


def _marks() -> str:
    ranges: list[str] = []
    start = None
    for cp in [*range(0x20000), *range(0xE0000, 0xE0200), 0x10FFFF]:
        mark = cp != 0x10FFFF and unicodedata.category(chr(cp)) in ("Mn", "Me")
        if mark and start is None:
            start = cp
        elif not mark and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(cp - 1))}")
            start = None
    return "".join(ranges)


_MARK_RUN = re.compile(f"[{_marks()}]{{{MARK_RUN + 1},}}")


def _spelling(text: str, i: int) -> bool:
    """A zero-width non-joiner between a letter or mark and a letter, both past Latin: part of a word."""
    before, after = text[i - 1:i], text[i + 1:i + 2]
    return (bool(before) and bool(after) and ord(before) > 0x24F and ord(after) > 0x24F
            and unicodedata.category(before)[0] in "LM" and unicodedata.category(after)[0] == "L")


def hidden(text: str) -> str | None:
    """What in `text` is invisible or disguising, if anything: a forbidden character (a ZWJ outside an
    emoji sequence, a tag character outside the three flags) or a run of combining marks over the limit."""
    for flag in FLAGS:
        text = text.replace(flag, "")
    text = _EMOJI_ZWJ.sub("", text)
    text = "".join(c for i, c in enumerate(text) if c != "\u200c" or not _spelling(text, i))
    found = FORBIDDEN.search(text) or _MARK_RUN.search(text)
    return None if found is None else f"{found.group(0)!r} in {text[max(0, found.start() - 20):found.end() + 20]!r}"


def _strings(node: Any) -> list[str]:
    out: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
    return out


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _safe_scheme(url: str) -> bool:
    """http, https or mailto, no space, and no user name before the host (`https://trusted.example@evil.example`)."""
    parts = urlsplit(url)
    return (parts.scheme.lower() in ("http", "https", "mailto") and not any(c.isspace() for c in url)
            and "@" not in parts.netloc)


# a URL Discord would make a live link of: outside code, with a user name before the host
_DISCORD_USERINFO = re.compile(r"https?://[^\s/?#`]*@", re.I)
# ... or with a host that is not ASCII (an IDN host that can disguise itself as another)
_DISCORD_HOST = re.compile(r"https?://([^\s/?#`<>@|()\\]*)", re.I)


def _rendered(rendered: Rendered) -> Any:
    """The payload, after checking what every renderer returns: no private key, uploads as Attachments
    under names safe in an `attachment://` URL, cuts as sentences."""
    assert isinstance(rendered, Rendered), type(rendered)
    assert isinstance(rendered.uploads, tuple) and isinstance(rendered.cuts, tuple)
    for a in rendered.uploads:
        assert isinstance(a, Attachment) and isinstance(a.data, bytes)
        assert re.fullmatch(r"[A-Za-z0-9._-]+", a.filename), a.filename
    assert all(isinstance(c, str) and c.strip() for c in rendered.cuts), rendered.cuts
    if isinstance(rendered.payload, dict):
        assert not [k for k in rendered.payload if k.startswith("oz0_")], "a private key in the payload"
    if rendered.cuts:
        assert rendered.uploads, "a cut card uploads the full result"
    return rendered.payload


def _drawn_within_budget(payload: dict[str, Any], platform: str) -> None:
    text = json.dumps(payload, ensure_ascii=False)
    assert f"did not fit in a {platform} message" not in text, \
        "the renderer broke a limit despite its budgets and sent the shortened card instead"


def check_slack(rendered: Rendered, *, shortened: bool = False) -> None:
    payload = _rendered(rendered)
    assert payload["unfurl_links"] is False and payload["unfurl_media"] is False
    text = payload["text"]
    assert isinstance(text, str) and text.strip() and _utf16(text) <= 40_000
    assert "<" not in text and ">" not in text, "the fallback text is parsed: <…> must be escaped"
    assert not re.search(r"&(?!amp;|lt;|gt;)", text)
    # the fallback follows the blocks' cut rules: within its 3,000 UTF-16 units after escaping, no code
    # fence from data, and a cut card says what was cut (the first sentence at least) there too
    assert _utf16(text) <= 3_000, f"a fallback of {_utf16(text):,} UTF-16 units"
    assert "```" not in text, "a code fence in the fallback text"
    if rendered.cuts and "did not fit in a Slack message" not in text:
        escaped = [c.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for c in rendered.cuts]
        assert any(c in text for c in escaped) or "more lines in the card" in text, (text[-300:], rendered.cuts)
    blocks = payload["blocks"]
    assert 1 <= len(blocks) <= 50, f"{len(blocks)} blocks"
    assert set(payload) == {"text", "blocks", "unfurl_links", "unfurl_media"}
    tables = [b for b in blocks if b["type"] == "table"]
    assert len(tables) <= 1, "one table a message"
    for table in tables:
        rows = table["rows"]
        assert 1 <= len(rows) <= 100 and len({len(r) for r in rows}) == 1
        for row in rows:
            assert 1 <= len(row) <= 20
            for cell in row:
                assert cell["type"] == "raw_text" and cell["text"].strip(), f"empty cell {cell!r}"
    total = sum(_utf16(s) for b in blocks for s in _texts(b))
    assert total <= 13_200, f"{total} characters of block text"
    for block in blocks:
        model = Block.parse(block)
        assert model is not None, f"unknown block {block['type']}"
        model.validate_json()
        assert model.to_dict() == block, "the block as slack_sdk writes it"
        if block["type"] in ("section", "context"):
            for obj in ([block.get("text")] if block.get("text") else []) + block.get("fields", []) + \
                    block.get("elements", []):
                if obj.get("type") == "mrkdwn":
                    assert "<" not in obj["text"] and ">" not in obj["text"]
    for link in _links(blocks):
        assert _safe_scheme(link), link
    for s in _strings(payload):
        assert not hidden(s) and ZWSP not in s, hidden(s) or repr(s[:80])
    json.dumps(payload, ensure_ascii=False).encode("utf-8")
    if not shortened:
        _drawn_within_budget(payload, "Slack")


def _texts(block: Any) -> list[str]:
    out: list[str] = []
    stack = [block]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "text" and isinstance(value, str):
                    out.append(value)
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(node, list):
            stack += node
    return out


def _links(node: Any) -> list[str]:
    out = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "link":
                out.append(item["url"])
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
    return out


_MENTION = re.compile(r"<(?:@|#|/|t:|:|a:)")
_MASKED = re.compile(r"\[[^\]\n]*\]\(")


def discord_outside_code(content: str) -> str:
    """The text Discord formats: backslash escapes replaced by a neutral dot, code blocks and spans removed."""
    out: list[str] = []
    i = 0
    while i < len(content):
        if content[i] == "\\" and i + 1 < len(content):
            out.append("·")
            i += 2
        elif content.startswith("```", i):
            end = content.find("```", i + 3)
            assert end != -1, "unclosed code block"
            assert "```" not in content[i + 3:end]
            i = end + 3
        elif content[i] == "`":
            end = content.find("`", i + 1)
            if end == -1:
                out.append("`")
                i += 1
            else:
                i = end + 1
        else:
            out.append(content[i])
            i += 1
    return "".join(out)


def check_discord_text(content: str) -> None:
    """One Text Display: nothing outside code can mention, mask a link, or break out of a fence."""
    outside = discord_outside_code(content)
    assert not _MENTION.search(outside), f"live mention in {outside[:200]!r}"
    assert not _MASKED.search(outside), f"masked link in {outside[:200]!r}"
    assert not _DISCORD_USERINFO.search(outside), f"a live link with a user name in {outside[:200]!r}"
    for host in _DISCORD_HOST.findall(outside):  # "·" stands for an escape, which ends a link
        letters = [c for c in host.split("·")[0] if not c.isascii() and unicodedata.category(c).startswith("L")]
        assert not letters, f"a live link with a non-ASCII host in {outside[:200]!r}"
    assert not re.search(r"@(everyone|here)", content, re.I), "@everyone/@here not neutralised"
    assert not hidden(content), hidden(content)


def check_discord(rendered: Rendered, *, shortened: bool = False) -> None:
    payload = _rendered(rendered)
    assert payload["allowed_mentions"] == {"parse": []}
    assert payload["flags"] & (1 << 15), "Components V2 flag"
    assert payload["flags"] & (1 << 2), "link previews suppressed"
    assert "content" not in payload and "embeds" not in payload, "V2 messages carry neither"
    assert set(payload) == {"flags", "components", "allowed_mentions"}
    view = ui.LayoutView(timeout=None)
    for component in payload["components"]:
        view.add_item(_item(component))
    assert view.total_children_count <= 40
    assert view.to_components() == payload["components"], "the components as discord.py writes them"
    assert view.content_length() <= 4_000
    total = 0
    for text in _display_texts(payload["components"]):
        assert text.strip(), "an empty Text Display"
        check_discord_text(text)
        total += _utf16(text)
    assert total <= 4_000, f"{total} UTF-16 units of text"
    for s in _strings(payload):
        assert not hidden(s), hidden(s)
    files = [c["file"]["url"] for c in _walk(payload["components"]) if c.get("type") == 13]
    assert files == [f"attachment://{a.filename}" for a in rendered.uploads], "a File component for each upload"
    if not shortened:
        _drawn_within_budget(payload, "Discord")


def _walk(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    stack = list(components)
    while stack:
        c = stack.pop()
        out.append(c)
        stack += c.get("components", [])
    return out


def _display_texts(components: list[dict[str, Any]]) -> list[str]:
    return [c["content"] for c in _walk(components) if c.get("type") == 10]


def _item(data: dict[str, Any]) -> ui.Item[Any]:
    kind = data["type"]
    if kind == 17:
        colour = data.get("accent_color")
        return ui.Container(*(_item(c) for c in data["components"]),
                            accent_colour=discord.Colour(colour) if colour is not None else None)
    if kind == 10:
        return ui.TextDisplay(data["content"])
    if kind == 14:
        return ui.Separator()
    if kind == 13:
        return ui.File(data["file"]["url"])
    if kind == 1:
        return ui.ActionRow(*(_item(c) for c in data["components"]))
    if kind == 2:
        styles = {1: discord.ButtonStyle.primary, 2: discord.ButtonStyle.secondary, 4: discord.ButtonStyle.danger}
        button = ui.Button(label=data["label"], style=styles[data["style"]], custom_id=data["custom_id"],
                           disabled=data["disabled"])
        assert button.to_component_dict() == data, (button.to_component_dict(), data)
        return button
    raise AssertionError(f"unexpected component type {kind}")


ALLOWED_TAGS = {"section", "header", "h2", "h3", "h4", "h5", "h6", "div", "p", "strong", "em", "del", "code",
                "pre", "span", "a", "br", "hr", "ul", "ol", "li", "dl", "dt", "dd", "blockquote", "table",
                "thead", "tbody", "tr", "th", "td"}
ALLOWED_ATTRS = {"class", "role", "href", "rel", "scope", "start", "data-lang", "data-oz0-attachment",
                 "data-oz0-content-type", "data-oz0-size"}
_VOID = {"br", "hr"}


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.stack: list[str] = []
        self.roots = 0
        self.text: list[str] = []
        self.other: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self.stack:
            self.roots += 1
        self.tags.append((tag, attrs))
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not self.stack and data.strip():
            raise AssertionError(f"text outside the section: {data[:80]!r}")
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.other.append("comment")

    def handle_decl(self, decl: str) -> None:
        self.other.append("decl")

    def unknown_decl(self, data: str) -> None:
        self.other.append("decl")

    def handle_pi(self, data: str) -> None:
        self.other.append("pi")


def check_html(rendered: Rendered) -> None:
    fragment = _rendered(rendered)
    assert fragment.startswith("<section ") and fragment.endswith("</section>")
    parser = _Collector()
    parser.feed(fragment)
    parser.close()
    assert parser.roots == 1 and not parser.stack, "one closed <section>"
    assert not parser.other, parser.other
    for tag, attrs in parser.tags:
        assert tag in ALLOWED_TAGS, f"<{tag}>"
        for name, value in attrs:
            assert name in ALLOWED_ATTRS, f"<{tag} {name}>"
            assert not name.startswith("on")
            if name == "href":
                assert value is not None and _safe_scheme(value), value
    for s in parser.text + [v or "" for _, attrs in parser.tags for _, v in attrs]:
        assert not hidden(s) and ZWSP not in s, hidden(s) or repr(s[:80])


CHECKS = {"slack": check_slack, "discord": check_discord, "html": check_html}


# Teams ---------------------------------------------------------------------------------------------

TEAMS_SCHEMA = Path(__file__).resolve().parent / "schemas" / "adaptive-card-1.5.json"
TEAMS_MAX_BYTES = 28_000
_TEAMS_INERT = re.compile(r"^[^*_~`\[\]()<>\\#|]*$")
_USERINFO_URL = re.compile(r"https?://[^\s/?#`]*@[^\s]*", re.I)


@cache
def adaptive_card_validator() -> Any:
    """The official Adaptive Card 1.5 schema (draft-06, from microsoft/AdaptiveCards schemas/1.5.0),
    compiled by jsonschema-rs (the project's validator engine) with a retriever that refuses to fetch
    anything: every `$ref` in it is local."""
    import jsonschema_rs

    def refuse(uri: str) -> Any:
        raise AssertionError(f"the Adaptive Card schema asked to fetch {uri}")

    schema = json.loads(TEAMS_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema_rs.Draft6Validator(schema, retriever=refuse)


def _walk_nodes(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            out.append(item)
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
    return out


def check_teams(rendered: Rendered, *, shortened: bool = False) -> None:
    payload = _rendered(rendered)
    assert set(payload) == {"type", "summary", "attachments"} and payload["type"] == "message", set(payload)
    size = len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    assert size <= TEAMS_MAX_BYTES, f"an activity of {size:,} bytes, over Teams' 28 KB"
    [attachment] = payload["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["version"] == "1.5"
    errors = list(adaptive_card_validator().iter_errors(card))
    assert not errors, [f"{list(e.instance_path)}: {e.message[:200]}" for e in errors[:3]]
    nodes = _walk_nodes(payload)
    for node in nodes:
        assert "entities" not in node and "msteams" not in node, "a mention entity would make <at> live"
        kind = node.get("type")
        assert kind != "TextBlock", "data in a TextBlock is parsed as markdown"
        if kind == "Fact":
            raise AssertionError("facts carry no type")
        if "title" in node and "value" in node and kind is None:
            for text in (node["title"], node["value"]):
                assert _TEAMS_INERT.match(text) and "://" not in text, f"a FactSet text Teams would parse: {text!r}"
        if kind == "Action.OpenUrl":
            assert urlsplit(node["url"]).scheme in ("http", "https") and _safe_scheme(node["url"]), node["url"]
        if kind == "TextRun" and "selectAction" not in node:
            for m in _USERINFO_URL.finditer(node["text"]):
                assert "real host is" in node["text"][m.start():], f"a live link with a user name: {node['text'][:200]!r}"
        if kind == "Action.Execute":
            assert set(node["data"]) == {"id", "value"} and node["verb"] == node["data"]["id"]
    for s in _strings(payload):
        assert not hidden(s) and ZWSP not in s, hidden(s) or repr(s[:80])
    if not shortened:
        _drawn_within_budget(payload, "Teams")


CHECKS["teams"] = check_teams
