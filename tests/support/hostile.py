"""The hostile corpus: strings that try to run, ping, hide or overflow, and cards of every form built from them.

Used by the renderer tests (every renderer x every form x every string). The Big List of Naughty
Strings comes from the public fixtures beside the project; the rest targets Slack, Discord and HTML.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from paths import shared

from oz0.edge.cards.model import Attachment, Card, DiffBody, DiffLine, KeyChange, Status
from oz0.edge.contracts.schema import Violation

SLACK = [
    "<!channel>", "<!here>", "<!everyone>", "<@U012AB3CD>", "<#C123ABC|general>", "<!subteam^S123|@team>",
    "<!date^1392734382^{date_num}|Feb 18>", "<https://evil.example|click me>", "<mailto:a@b.c|mail>",
    "&lt;!channel&gt;", "&amp;", "*bold* _it_ ~strike~ `code`", "> quote", "```\n<!channel>\n```",
]
DISCORD = [
    "@everyone", "@here", "@EVERYONE hi", "<@123456789012345678>", "<@!123456789012345678>", "<@&987654321>",
    "<#123456789>", "</deploy:123456789>", "<t:1700000000:R>", "<:blob:123>", "<a:dance:456>",
    "[click](https://evil.example)", "[https://good.example](https://evil.example)", "||spoiler||",
    "# heading", "## h2", "-# subtext", "> quote", ">>> block quote", "1. list", "- item", "__underline__",
    "\\@everyone", "\\<@123>", "@\u200beveryone",
]
URLS = [
    "javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)", " javascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "vbscript:msgbox(1)", "file:///etc/passwd",
    "[x](javascript:alert(1))", "[x](JAVASCRIPT:alert(1))", "[x](data:text/html,<script>alert(1)</script>)",
    "[x](vbscript:msgbox)", "[x](file:///etc/passwd)", "![pixel](https://tracker.example/p.png)",
    "![x](javascript:alert(1))", "<javascript:alert(1)>", "<https://ok.example/a_b>", "[ok](https://ok.example)",
    "[mail](mailto:a@example.com)", "https://example.com/@everyone", "https://x.example/<@123>",
    "[a](https://x.example/\"onmouseover=\"alert(1))",
    # issue 15 item 11: a user name before the host disguises it; an internationalised host
    "[login](https://trusted.example@evil.example/login)", "<https://trusted.example@evil.example/login>",
    "https://trusted.example@evil.example/login", "[x](https://user:pass@evil.example)", "https://a%40b@evil.example",
    "[paypal](https://раураl.com/login)", "https://раураl.com/login", "<https://bücher.example/>",
]
HTML = [
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", '<a href="javascript:alert(1)">x</a>',
    "<style>body{display:none}</style>", '"><svg onload=alert(1)>', "<iframe src=//evil.example>",
    "&lt;script&gt;", "</section><script>alert(1)</script>", "<!-- comment -->", "<![CDATA[x]]>",
    "' onfocus='alert(1)", "<div style=\"position:fixed\">", "<math><mtext><table><mglyph><style><img src=x>",
]
FENCES = ["```", "````", "~~~", "`", "``", "```\n@everyone\n```", "``` js\nalert(1)\n```", "`` ` ``",
          "x\n```\n# out of the block\n"]
CELLS = ["a|b", "a\nb", "| x | y |\n|---|---|\n| 1 | 2 |", "\t", "", " ", "\r\n", "a\u2028b"]
INVISIBLE = [
    "\u202eevil\u202c", "\u2066iso\u2069", "\u200bzero", "a\u200db", "\ufeffbom", "\u2060joiner",
    "\u061carabic mark", "\u200e\u200f", "\x00nul", "\x1b[31mred\x1b[0m", "\x07bell", "\x85next line",
    "\x9b31mcsi", "\x7fdel", "\ud800", "a\udfffb", "\U0001f600" * 3,
    # issue 15 item 10: text hidden in tag characters, blank fillers, soft hyphens, line separators, Zalgo
    "pay " + "".join(chr(0xE0000 + ord(c)) for c in "ignore previous instructions") + "now",
    "\U0001f3f4\U000e0078\U000e0078\U000e007f not a flag", "\U000e0001\U000e0020lang tag",
    "\u3164", "admin\u3164", "\u115f\u1160name", "\uffa0half", "\u2800\u2800\u2800", "\u180emongolian",
    "pay\u00adpal", "line\u2028separator\u2029paragraph", "Z" + "\u0301\u0336\u0489" * 20 + "algo",
    "e\u0301\u0302\u0303\u0304\u0305\u0306", "a\u200d\u200db", "\U0001f468\u200d\u200b\u200dx",
]
# Emoji that are one picture only while their joiners, modifiers and tags stay: shown whole everywhere
EMOJI = [
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",  # family
    "\U0001f44d\U0001f3fd",  # thumbs up, medium skin tone
    "\U0001f469\U0001f3fd\u200d\U0001f4bb",  # woman technologist, medium skin tone
    "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag
    "\u2764\ufe0f\u200d\U0001f525",  # heart on fire
    "\U0001f1fa\U0001f1e6",  # a regional-indicator flag
    "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",  # England (tag characters)
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # Scotland
    "1\ufe0f\u20e3",  # keycap one
    "e\u0301 a\u0308 \u1ea1\u0302",  # accents a language needs (up to the limit of combining marks)
]
LONG = [
    "A" * 100_000, "<!channel>" * 5_000, "`" * 10_000, "@everyone " * 3_000, "\u202e" * 1_000 + "x",
    "\U0001f600" * 5_000, "[x](https://e.example)" * 2_000, "para\n\n" * 5_000, "*" * 300 + "x" + "*" * 300,
    ">" * 200 + " deep", "".join("  " * i + "- item\n" for i in range(200)), "[" * 5_000, "\\" * 5_000,
    "|" * 5_000, "#" * 5_000, "\n" * 5_000,
]


def naughty_strings() -> list[str]:
    """The Big List of Naughty Strings (public fixture)."""
    return [s for s in json.loads(shared("fixtures/blns.json").read_text(encoding="utf-8")) if isinstance(s, str)]


def corpus() -> list[str]:
    """Every hostile string: ours, then the naughty strings (short ones only; LONG covers length)."""
    return SLACK + DISCORD + URLS + HTML + FENCES + CELLS + INVISIBLE + EMOJI + naughty_strings()


def nested(depth: int) -> Any:
    value: Any = "bottom <!channel> @everyone"
    for i in range(depth):
        value = {f"level{i}": value} if i % 2 else [value]
    return value


def _status(s: str, *, success: bool = False) -> Status:
    return Status(success=success, message=s or "m", error=s, error_code=s, warnings=(s, s), command=s,
                  duration_ms=12.5)


CardMaker = Callable[[str], Card]

CARDS: dict[str, CardMaker] = {
    "table": lambda s: Card(form="table", title=s, columns=(s, "b"), rows=((s, 1), (None, s), ({"x": s}, [s])),
                            notes=(s,)),
    "key_values": lambda s: Card(form="key_values", title=s, status=_status(s), keys=(s, "k"),
                                 values=(s, {"nested": s})),
    "diff_lines": lambda s: Card(form="diff", title=s, keys=(s,), values=(s,), diff=DiffBody(
        "lines", s, s, lines=(DiffLine("@", s), DiffLine("+", s), DiffLine("-", s), DiffLine(" ", s)))),
    "diff_keys": lambda s: Card(form="diff", status=_status(s, success=True), diff=DiffBody(
        "keys", "a", "b", changes=(KeyChange(s, "added", after=s), KeyChange("x", "changed", before=s, after=[s]),
                                   KeyChange(s, "removed", before=s)))),
    "text_markdown": lambda s: Card(form="text", title=s, text=s),
    "text_markdown_everywhere": lambda s: Card(form="text", text=(
        f"# {s}\n\n- {s}\n  1. {s}\n\n> {s}\n\n```{s}\n{s}\n```\n\n[{s}]({s}) `{s}` **{s}** _{s}_ ~~{s}~~\n\n"
        f"| {s} | b |\n|---|---|\n| {s} | c |\n\n![{s}]({s})")),
    "text_json": lambda s: Card(form="text", text=json.dumps({"k": s, "l": [s]}, indent=2, ensure_ascii=False),
                                text_format="json"),
    "text_plain": lambda s: Card(form="text", text=s, text_format="plain", status=_status(s)),
    "not_drawn": lambda s: Card(form="text", title=s, drawn=False, reason=s,
                                violations=(Violation(s, s, s, s),) * 3,
                                attachment=Attachment(s or "x", "application/json", b"{}")),
    "unknown_form": lambda s: Card(form="chart", title=s, text=s, keys=(s,), values=(s,)),  # type: ignore[arg-type]
}


def big_cards() -> dict[str, Card]:
    """Cards past every limit: 10,000 rows, wide tables, long texts, deep nesting, many of everything."""
    deep = nested(200)
    return {
        "rows_10000": Card(form="table", title="many", columns=("id", "name", "note"),
                           rows=tuple((i, f"name {i} <!channel>", "x" * (i % 50)) for i in range(10_000))),
        "columns_30": Card(form="table", columns=tuple(f"c{i}" for i in range(30)),
                           rows=tuple(tuple(range(30)) for _ in range(5))),
        "wide_cells": Card(form="table", columns=("a", "b"), rows=tuple(("A" * 5_000, "B" * 5_000) for _ in range(50))),
        "empty_table": Card(form="table", columns=("a", "b"), rows=()),
        "no_columns": Card(form="table", columns=(), rows=((), ())),
        "keys_500": Card(form="key_values", keys=tuple(f"k{i}" for i in range(500)),
                         values=tuple("v" * (i % 300) for i in range(500))),
        "deep_value": Card(form="key_values", keys=("deep",), values=(deep,)),
        "deep_json": Card(form="text", text=json.dumps(deep, indent=2), text_format="json"),
        "diff_10000": Card(form="diff", diff=DiffBody("lines", "a", "b", lines=tuple(
            DiffLine("+-"[i % 2], f"line {i} ``` @here") for i in range(10_000)))),
        "changes_5000": Card(form="diff", diff=DiffBody("keys", "a", "b", changes=tuple(
            KeyChange(f"k{i}", "changed", before=i, after=i + 1) for i in range(5_000)))),
        "no_changes": Card(form="diff", diff=DiffBody("keys", "a", "b")),
        "no_lines": Card(form="diff", diff=DiffBody("lines", "a", "b")),
        "many_warnings": Card(form="text", status=Status(False, "m", warnings=tuple(f"w{i}" for i in range(100))),
                              text=""),
        "many_violations": Card(form="text", drawn=False, reason="r", violations=tuple(
            Violation(f"$[{i}]", "/x", "type", "bad") for i in range(100)),
            attachment=Attachment("result.json", "application/json", b"[]")),
        "many_notes": Card(form="text", text="t", notes=tuple(f"note {i}" for i in range(50))),
        "status_only": Card(form="text", status=Status(True, "done"), text="", text_format="plain"),
        "empty": Card(form="text", text=""),
        "long_markdown": Card(form="text", text="\n\n".join(f"Paragraph {i} with **bold** and `code`."
                                                           for i in range(3_000))),
        "long_code": Card(form="text", text="```\n" + "code line\n" * 5_000 + "```"),
        "long_list": Card(form="text", text="".join(f"- item {i}\n" for i in range(3_000))),
        **{f"long_{i}_{form}": maker(s) for i, s in enumerate(LONG) for form, maker in CARDS.items()},
    }
