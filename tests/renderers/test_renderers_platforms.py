"""What a user sees on each platform: the bundled examples, failure cards, cuts that say so, and escaping."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hostile import big_cards
from renderer_oracles import CHECKS, discord_outside_code

from oz0.adapters.cli.render import examples
from oz0.edge import choose_card, load_contract, load_json_file
from oz0.edge.cards.model import Card, Status
from oz0.renderers import (
    RENDERERS,
    Rendered,
    discord_message,
    html_console,
    markdown_blocks,
    slack_blocks,
    teams_adaptive,
)
from oz0.renderers.attachments import attachment_for

EXAMPLES = {e["name"]: e for e in examples()}
BIG = big_cards()


def _card(name: str) -> Card:
    entry = EXAMPLES[name]
    contract = load_contract(entry["schema"]) if entry["schema"] else None
    return choose_card(load_json_file(entry["result"]), contract, title=name)


def _texts(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False)


def _discord_texts(payload: dict) -> list[str]:
    return [c["content"] for c in payload["components"][0]["components"] if c["type"] == 10]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("platform", ["slack", "discord", "teams", "html"])
def test_bundled_examples_render_within_limits(platform: str, name: str) -> None:
    CHECKS[platform](RENDERERS[platform](_card(name)))


def test_registered_for_the_cli() -> None:
    assert {"slack", "discord", "teams", "html"} <= set(RENDERERS)


@pytest.mark.parametrize("platform", ["slack", "discord", "teams", "html"])
def test_oz0_render_prints_the_payload(platform: str) -> None:
    entry = EXAMPLES["deploys"]
    run = subprocess.run([sys.executable, "-m", "oz0.adapters.cli", "render", entry["result"], "--schema", entry["schema"],
                          "--to", platform], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    payload = run.stdout.rstrip("\n") if platform == "html" else json.loads(run.stdout)
    CHECKS[platform](Rendered(payload))
    assert "billing" in _texts(payload)


# Slack ---------------------------------------------------------------------------------------------

def test_slack_table_is_a_native_table_with_header_row() -> None:
    rendered = slack_blocks.render(_card("deploys"))
    payload = rendered.payload
    table = [b for b in payload["blocks"] if b["type"] == "table"][0]
    assert [c["text"] for c in table["rows"][0]] == list(_card("deploys").columns)
    assert len(table["rows"]) == 1 + len(_card("deploys").rows)
    assert payload["blocks"][0] == {"type": "header", "text": {"type": "plain_text", "text": "deploys", "emoji": False}}
    assert rendered.uploads == () and rendered.cuts == ()


def test_slack_failure_card_says_failed_with_code_and_command() -> None:
    payload = slack_blocks.render(_card("qzx-failure")).payload
    text = _texts(payload["blocks"])
    assert "❌" in text and "Failed" in text and "path_not_found" in text and "readFile" in text
    assert payload["text"].startswith("qzx-failure\nFailed: ")


def test_slack_cut_table_says_so_and_attaches() -> None:
    rendered = slack_blocks.render(BIG["rows_10000"])
    payload = rendered.payload
    table = [b for b in payload["blocks"] if b["type"] == "table"][0]
    shown = len(table["rows"]) - 1
    assert shown <= 99
    assert f"… {10_000 - shown:,} more rows" in _texts(payload["blocks"])
    assert "full result attached" in _texts(payload["blocks"])
    [upload] = rendered.uploads
    assert upload.filename == "result.json" and upload.size > 100_000
    assert rendered.cuts[0] == f"… {10_000 - shown:,} more rows (Slack shows at most 100 table rows), full result attached"


def test_a_cut_card_uploads_the_full_result_not_the_card() -> None:
    result = {"deploys": [{"service": f"svc{i}", "n": i, "tags": {"zone": "a"}} for i in range(300)]}
    card = choose_card(result, None)
    for platform in ("slack", "discord", "teams"):
        [upload] = RENDERERS[platform](card).uploads
        assert upload == attachment_for(card)
    assert json.loads(attachment_for(card).data) == result
    assert attachment_for(card).data is card.full_result  # the bytes the size rule measured, not made again


def test_a_hand_built_cut_card_uploads_its_own_json() -> None:
    card = Card(form="table", columns=("n",), rows=tuple((i,) for i in range(300)))
    assert json.loads(attachment_for(card).data) == card.to_dict()


def test_slack_not_drawn_attaches_the_result() -> None:
    rendered = slack_blocks.render(_card("large"))
    assert "Not drawn as a card" in _texts(rendered.payload["blocks"])
    assert rendered.uploads == (_card("large").attachment,)


@pytest.mark.parametrize("platform,budget,limit", [("slack", "_TAIL_CHARS", "over our 12,000"),
                                                    ("discord", "_TAIL_TEXT", "over Discord's 4,000"),
                                                    ("teams", "_TAIL_BYTES", "over Teams' 28,000")])
def test_a_card_over_a_limit_despite_the_budgets_is_sent_short_with_the_full_result(
        platform: str, budget: str, limit: str, monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    """A budget bug (simulated: the tail's reserve made negative) never yields a payload the platform
    refuses, nor an AssertionError that `python -O` would strip: the reader gets a short card naming
    the limit, with the whole result attached, and the bug is logged."""
    module = {"slack": slack_blocks, "discord": discord_message, "teams": teams_adaptive}[platform]
    monkeypatch.setattr(module, budget, -40_000)
    text = "\n\n".join(f"paragraph {i} " + "word " * 40 for i in range(400))
    card = Card(form="text", title="notes", text=text, text_format="plain",
                status=Status(success=True, message="written"))
    rendered = RENDERERS[platform](card)
    CHECKS[platform](rendered, shortened=True)
    payload = rendered.payload
    shown = _texts(payload)
    assert f"did not fit in a {platform.capitalize()} message" in shown and limit in shown
    assert "written" in shown and "paragraph 1 " not in shown
    assert rendered.uploads == (attachment_for(card),)
    assert json.loads(attachment_for(card).data)["text"] == text
    assert "over a limit despite its budgets" in caplog.text


def test_slack_mentions_stay_text() -> None:
    card = Card(form="table", title="<!channel>", columns=("who",), rows=(("<!here> <@U123>",),))
    payload = slack_blocks.render(card).payload
    assert payload["blocks"][0]["text"] == {"type": "plain_text", "text": "<!channel>", "emoji": False}
    assert "&lt;!channel&gt;" in payload["text"] and "<!" not in payload["text"]
    table = [b for b in payload["blocks"] if b["type"] == "table"][0]
    assert table["rows"][1][0] == {"type": "raw_text", "text": "<!here> <@U123>"}


def test_slack_markdown_is_rich_text_with_visible_safe_links() -> None:
    card = Card(form="text", text="**bold** [site](https://example.com) [bad](javascript:alert(1)) ![x](https://t.example/p.png)")
    section = slack_blocks.render(card).payload["blocks"][0]["elements"][0]
    assert section["elements"][0] == {"type": "text", "text": "bold", "style": {"bold": True}}
    links = [e for e in section["elements"] if e["type"] == "link"]
    assert [link["url"] for link in links] == ["https://example.com", "https://t.example/p.png"]
    assert all(link["text"] == link["url"] for link in links)
    assert "[bad](javascript:alert(1))" in _texts(section)


def test_slack_block_budget_holds_for_long_markdown() -> None:
    payload = slack_blocks.render(BIG["long_markdown"]).payload
    assert slack_blocks.blocks_size(payload["blocks"]) <= slack_blocks.MAX_BLOCKS_CHARS
    assert "more characters of text, full result attached" in _texts(payload["blocks"])


# Discord -------------------------------------------------------------------------------------------

def test_discord_message_shape() -> None:
    payload = discord_message.render(_card("deploys")).payload
    assert payload["flags"] == (1 << 15) | (1 << 2)
    assert payload["allowed_mentions"] == {"parse": []}
    container = payload["components"][0]
    assert container["type"] == 17
    texts = _discord_texts(payload)
    assert texts[0] == "## deploys"
    assert texts[1].startswith("```\nservice") and texts[1].endswith("```")


def test_discord_failure_is_red_and_success_green() -> None:
    assert discord_message.render(_card("qzx-failure")).payload["components"][0]["accent_color"] == 0xC62828
    assert discord_message.render(_card("qzx-success")).payload["components"][0]["accent_color"] == 0x2E7D32
    assert "❌ **Failed**" in _discord_texts(discord_message.render(_card("qzx-failure")).payload)[1]


def test_discord_not_drawn_shows_the_file() -> None:
    rendered = discord_message.render(_card("broken"))
    files = [c for c in rendered.payload["components"][0]["components"] if c["type"] == 13]
    assert files == [{"type": 13, "file": {"url": "attachment://result.json"}, "spoiler": False}]
    assert [u.filename for u in rendered.uploads] == ["result.json"]


def test_discord_neutralises_mentions_and_masked_links() -> None:
    card = Card(form="key_values", keys=("who",), values=("@everyone <@123> <#9> </cmd:1> <t:1:R> [x](https://evil.example)",))
    text = _discord_texts(discord_message.render(card).payload)[0]
    assert "@\u200beveryone" in text
    outside = discord_outside_code(text)
    for live in ("<@", "<#", "</", "<t:", "]("):
        assert live not in outside


def test_discord_code_fence_in_data_cannot_close_ours() -> None:
    card = Card(form="diff", diff=markdown_free_diff("```\n@here"))
    text = _discord_texts(discord_message.render(card).payload)[0]
    assert text.count("```") == 2


def markdown_free_diff(line: str):
    from oz0.edge.cards.model import DiffBody, DiffLine
    return DiffBody("lines", "a", "b", lines=(DiffLine("+", line),))


def test_discord_cut_table_says_so() -> None:
    payload = discord_message.render(BIG["rows_10000"]).payload
    notes = " ".join(_discord_texts(payload))
    assert "more rows, full result attached" in notes
    assert discord_message.text_length(payload["components"]) <= discord_message.MAX_TEXT


def test_discord_table_is_as_wide_as_the_rows_it_shows_and_shows_all_that_fit() -> None:
    rows = tuple((i, "y" * 40, "x" * (30 if i == 150 else 3)) for i in range(300))  # row 150 is never shown
    payload = discord_message.render(Card(form="table", columns=("id", "text", "v"), rows=rows)).payload
    [table] = [t for t in _discord_texts(payload) if t.startswith("```")]
    lines = table.split("\n")[1:-1]
    assert lines[1] == "──  " + "─" * 32 + "  ───"  # not widened by a row that is not shown
    shown = len(lines) - 2
    assert lines[2:] == [f"{i:<2}  {'y' * 31}…  xxx" for i in range(shown)]
    assert f"… {300 - shown:,} more rows" in " ".join(_discord_texts(payload))
    # every row that fits: 4,000 less 400 for the notes, 12 for the fence, 82 for the header and rule, 42 a row
    assert shown == (4_000 - 400 - 12 - 82) // 42 == 83


@pytest.mark.parametrize("rows", [2, 40])  # drawn whole, and by the fitter of longer tables
def test_discord_says_a_value_was_shortened_exactly_when_one_was(rows: int) -> None:
    """The note and the attachment follow what was cut: a value of more than 32 characters, not one that
    is wider than 32 monospace columns (20 CJK characters take 40 and are shown whole)."""
    accented = "e\u0301" * 20  # 40 characters (a letter and its accent each) in 20 columns: cut to 32
    for value, cut in (("日本語の値" * 4, False), (accented, True), ("x" * 32, False), ("x" * 33, True)):
        card = Card(form="table", columns=("id", "v"), rows=tuple((i, value) for i in range(rows)))
        rendered = discord_message.render(card)
        texts = " ".join(_discord_texts(rendered.payload))
        assert ("Values longer than 32 characters are shortened, full result attached" in texts) is cut, value
        assert bool(rendered.uploads) is cut, value
        assert (value in texts) is not cut, value


@pytest.mark.parametrize("rows", [2, 40])  # drawn in one pass, and a chunk of rows at a time
def test_slack_says_a_value_was_shortened_exactly_when_one_was(rows: int) -> None:
    """Slack's cells hold 300 characters (not UTF-16 units): the note and the attachment follow a value
    cut to them, and a long column name, shortened too, is no value."""
    emoji = "\U0001f600" * 200  # 200 characters in 400 UTF-16 units: shown whole
    for column, value, cut in (("v", "x" * 300, False), ("v", "x" * 301, True), ("n" * 400, "short", False),
                               ("v", emoji, False), ("v", emoji + "x" * 101, True)):
        card = Card(form="table", columns=("id", column), rows=tuple((i, value if i == 1 else "s") for i in range(rows)))
        rendered = slack_blocks.render(card)
        texts = _texts(rendered.payload["blocks"])
        assert ("Values longer than 300 characters are shortened, full result attached" in texts) is cut, column
        assert bool(rendered.uploads) is cut, column
        assert (value in texts) is not cut, column
        CHECKS["slack"](rendered, shortened=False)


@pytest.mark.parametrize(("at", "align"), [(None, "right"), (3, "left"), (60, "left"), (120, "right")])
def test_slack_aligns_a_column_by_its_first_100_rows_shown_or_not(at: int | None, align: str) -> None:
    """A column of numbers is right-aligned unless a row among Slack's first 100 holds something else,
    whether that row fits in the message or not (here about 40 do); rows past 100 do not count."""
    rows = tuple((i if i != at else "n/a", "x" * 250) for i in range(150))
    table = next(b for b in slack_blocks.render(Card(form="table", columns=("n", "text"), rows=rows)).payload["blocks"]
                 if b["type"] == "table")
    assert 2 < len(table["rows"]) < 60
    assert [s["align"] for s in table["column_settings"]] == [align, "left"]


# HTML ----------------------------------------------------------------------------------------------

def test_html_escapes_and_uses_classes() -> None:
    card = Card(form="key_values", title="<script>alert(1)</script>", status=Status(False, "boom"),
                keys=("a",), values=('"><img src=x onerror=alert(1)>',))
    html = html_console.render(card).payload
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'class="oz0-card oz0-card--key_values oz0-card--failure"' in html


def test_html_escapes_every_field_of_a_hand_built_card() -> None:
    """Cards are a public type: a renderer escapes what a card holds, not only what choose_card makes."""
    from oz0.edge.cards.model import DiffBody, KeyChange

    evil = '<img src=x onerror="alert(1)">'
    card = Card(form="diff", diff=DiffBody(kind="keys", before="a", after="b",
                                           changes=(KeyChange("k", evil, before=1, after=2),)))  # type: ignore[arg-type]
    rendered = RENDERERS["html"](card)
    CHECKS["html"](rendered)
    html = rendered.payload
    assert "&lt;img" in html and "<img" not in html


def test_html_markdown_links_show_the_real_url() -> None:
    html = html_console.render(Card(form="text", text="[docs](https://example.com/d) <b>raw</b>")).payload
    assert '<a href="https://example.com/d" rel="nofollow noopener noreferrer">https://example.com/d</a>' in html
    assert "&lt;b&gt;raw&lt;/b&gt;" in html


def test_html_table_and_cut() -> None:
    html = html_console.render(BIG["rows_10000"]).payload
    assert html.count("<tr>") == html_console.MAX_ROWS + 1
    assert "… 9,000 more rows" in html and 'data-oz0-attachment="result.json"' in html


# The shared markdown tree ---------------------------------------------------------------------------

def test_markdown_too_deep_is_shown_as_written() -> None:
    blocks = markdown_blocks.parse(">" * 200 + " deep")
    assert isinstance(blocks[-1], markdown_blocks.CodeBlock) and "deep" in blocks[-1].text
    assert "limit is 20" in markdown_blocks.plain(blocks[0].spans)


def test_markdown_unsafe_links_are_not_links() -> None:
    blocks = markdown_blocks.parse("[a](https://ok.example) <javascript:alert(1)> [b](data:text/html,x)")
    spans = blocks[0].spans
    assert [s.url for s in spans if isinstance(s, markdown_blocks.Link)] == ["https://ok.example"]


def test_plain_text_renders_markdown_readably() -> None:
    out = RENDERERS["text"](Card(form="text", text="# Title\n\n- **a** [l](https://x.example)\n\n```\ncode\n```")).payload
    assert "Title\n=====" in out and "• a l (https://x.example)" in out and "    code" in out
