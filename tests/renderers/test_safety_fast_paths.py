"""The shortcuts `renderers.safety` takes for the usual text draw exactly what the full rules draw.

Each case sits at the edge of a shortcut: the one-class scan before the disguise scan, lines of
printable ASCII passed whole, the Discord escape without a URL or a list mark, a table's clean cells
cleaned again only where they were clipped, Slack's size walk skipped when the blocks' JSON bounds it.
"""

from __future__ import annotations

import orjson
import pytest
from hostile import CARDS, big_cards, corpus

from oz0.renderers import monospace, slack_blocks, slack_tables
from oz0.renderers.safety import (
    clean,
    clip_each,
    discord_escape,
    fence_safe,
    fence_safe_clipped,
    fence_safe_each,
    one_line,
    one_line_each,
    utf16_len,
    utf16_lens,
)
from oz0.renderers.slack_rich_text import Room, blocks_size


@pytest.mark.parametrize(("text", "cleaned"), [
    ("Zürich 日本語 naïve", "Zürich 日本語 naïve"),           # no mark, filler or astral character: untouched
    ("e\u0301\u0301\u0301\u0301\u0301\u0301 Zürich", "e\u0301\u0301\u0301\u0301 Zürich"),  # Zalgo still cut to 4 marks
    ("name\u3164 日本", "name  日本"),                         # a blank filler still becomes a space
    ("🎉🎉🎉🎉🎉🎉 party", "🎉🎉🎉🎉🎉🎉 party"),             # a run of emoji is kept
    ("📎 attached 日本", "📎 attached 日本"),                  # an emoji without a mark or filler: untouched
    ("📎 e\u0301\u0301\u0301\u0301\u0301\u0301", "📎 e\u0301\u0301\u0301\u0301"),  # with Zalgo: still cut
    ("📎\u3164name", "📎 name"),                              # with a filler: still a space
    ("line one\n\tline two", "line one\n\tline two"),       # lines of printable ASCII pass whole
    ("a\r\nb\rc", "a\nb\nc"),                                # but a carriage return is still a newline
    ("bell\x07 and del\x7f\nnext", "bell and del\nnext"),    # and controls are still removed
])
def test_clean_fast_paths_keep_every_rule(text: str, cleaned: str) -> None:
    assert clean(text) == cleaned


def test_one_line_each_matches_one_line_on_hostile_cells() -> None:
    cells = ["ok", "e\u0301\u0301\u0301\u0301\u0301\u0301x", "a\u202eb", "t\tb\nc", "\u3164", "日本語"]
    assert one_line_each(cells) == [one_line(c) for c in cells] == ["ok", "e\u0301\u0301\u0301\u0301x", "ab",
                                                                      "t b c", "", "日本語"]


@pytest.mark.parametrize(("text", "escaped"), [
    ("plain words", "plain words"),
    ("*bold* `tick` <@U024> [x](y) a|b ~s~ back\\slash",
     "\\*bold\\* \\`tick\\` \\<@U024\\> \\[x\\](y) a\\|b \\~s\\~ back\\\\slash"),
    ("@everyone and @HERE", "@\u200beveryone and @\u200bHERE"),
    ("1. first", "1\\. first"),
    ("  - item", "  \\- item"),
    ("# heading", "\\# heading"),
    ("12) twelve", "12\\) twelve"),
    ("see https://example.com/a@everyone now", "see https://example.com/a%40everyone now"),
])
def test_discord_escape_without_urls_or_marks_is_the_full_escape(text: str, escaped: str) -> None:
    assert discord_escape(text) == escaped


def _groups(texts: list[str], size: int) -> list[list[str]]:
    return [texts[i:i + size] for i in range(0, len(texts), size)]


def test_fence_safe_clipped_matches_the_full_rules_on_the_hostile_corpus() -> None:
    # a cut can end a text in a joiner, a non-joiner or a flag's tags that only the whole text kept
    cut_kept = ["👨\u200d👩\u200d👧 family", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f flag"]
    lines = one_line_each(corpus() + cut_kept + ["`a` ~~~b~~~ @everyone", "x@here`"])
    assert fence_safe_clipped(["👨\u200d👩 family"], 2) == [clean("👨\u200d…")] == ["👨…"]
    for limit in (1, 2, 3, 5, 8, 32, 300):
        for group in _groups(lines, 7) + _groups(lines, 1) + [lines, []]:
            assert fence_safe_clipped(group, limit) == fence_safe_each(clip_each(group, limit))
            assert fence_safe_clipped(group, limit) == [fence_safe(t[:limit - 1] + "…" if len(t) > limit else t)
                                                        for t in group]


def test_fence_safe_each_matches_fence_safe_on_the_hostile_corpus() -> None:
    texts = corpus() + ["`a` ~~~b~~~ @everyone", "~~~~", "x@here`"]
    lines = [one_line(t) for t in texts]  # one-line texts: where the joined shortcut is taken
    for group in _groups(texts, 7) + _groups(lines, 7) + _groups(lines, 1) + [lines, []]:
        assert fence_safe_each(group) == [fence_safe(t) for t in group]


def test_fit_table_small_and_general_paths_agree_on_the_hostile_corpus() -> None:
    """The small path breaks fence marks once in the drawn text, the general path in each cell: the same
    text, marks at a cell's edge (`~~` then `~`, `@` then `everyone`) and wide cells included."""
    texts = corpus() + ["~~", "~", "@", "everyone", "`", "日`本", "~~~~", "@here`", "a@Everyone", "`" * 40]
    for group in _groups(texts, 48):
        rows = [tuple(group[i:i + 2]) + (i,) for i in range(0, len(group), 2)]
        small = monospace.fit_table(["a", "b", "n"], rows, 100_000, cell_width=32, probe_rows=200)
        general = monospace.fit_table(["a", "b", "n"], rows + [("", "", 0)] * 25, 100_000, cell_width=32,
                                      probe_rows=len(rows))
        assert small.shown == general.shown == len(rows)
        assert (small.text, small.used, small.clipped) == (general.text, general.used, general.clipped)


def test_fit_table_draws_the_same_table_however_many_rows_it_makes_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """After its first rows the fitter makes as many as the budget seems to hold (too few after long rows):
    rows made a few at a time, or in the usual chunks, give the table all of them made at once give."""
    texts = corpus() + ["x" * 40, "日本語" * 9, "plain"]
    rows = [(texts[i % len(texts)], i, texts[(i * 7) % len(texts)], i / 3) for i in range(150)]
    rows[5:5] = [("x" * 40, 10**15, "日本語" * 11, 1e300)] * 20  # long rows that make the next chunk too short
    header = ["a", "n", "b", "f"]

    def fitted(chars: int, first: int, least: int) -> monospace.FittedTable:
        with monkeypatch.context() as patch:
            patch.setattr(monospace, "_CHUNK_ROWS", first)
            patch.setattr(monospace, "_MIN_CHUNK_ROWS", least)
            return monospace.fit_table(header, rows, chars, cell_width=32, probe_rows=120)

    for chars in range(200, 12_000, 290):
        at_once = fitted(chars, 1_000, 1_000)
        assert fitted(chars, 24, 8) == fitted(chars, 2, 1) == at_once, chars


def test_the_each_forms_match_the_one_text_forms_on_the_hostile_corpus() -> None:
    """Columns scanned together (only their texts past ASCII read for disguises) come out as each text alone."""
    texts = corpus() + ["e\u0301\u0301", "\u0301\u0301\u0301x", "🎉🎉", "🎉🎉🎉", "日本語", "plain", "Zürich"]
    for group in _groups(texts, 7) + _groups(texts, 2) + [texts, []]:
        assert one_line_each(group) == [one_line(t) for t in group]
        assert utf16_lens(group) == [utf16_len(t) for t in group]


def test_slack_small_table_path_draws_what_the_general_path_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table of a few rows is made in one pass; the block, what it counts and what it says it cut are the same."""
    texts = corpus() + ["x" * 400, "y" * 301]
    cases = [[(texts[i], texts[i + 1], i, i / 7, None) for i in range(start, start + 2 * rows, 2)]
             for start, rows in zip(range(0, len(texts) - 60, 50), [1, 5, 24, 12] * 40)]
    cases += [[("x" * 400, "y" * 301, 1, 0.5, None), ("", " ", 2, 1e300, None)], [("x" * 301, "b", 1, 0.5, None)]]
    for rows in cases:
        small_room = Room(11_000, 40)
        small = slack_tables.table_block(["a", "b", "n", "f", "none"], rows, small_room)
        with monkeypatch.context() as patch:
            patch.setattr(slack_tables, "_small_table", lambda *args: None)
            general_room = Room(11_000, 40)
            general = slack_tables.table_block(["a", "b", "n", "f", "none"], rows, general_room)
        assert small == general
        assert (small_room.chars, small_room.blocks, small_room.cut) == (
            general_room.chars, general_room.blocks, general_room.cut)


@pytest.mark.parametrize(("cells", "size"), [
    ([{"text": "ab", "type": "raw_text"}, {"text": "日本", "type": "raw_text"}], 2 + 4 + 2 + 4),  # the fast count
    ([{"text": "ab", "type": "raw_text", "url": "xyz"}], 2 + 4 + 3 + 4),   # a third key: every text is counted
    ([{"text": "ab", "type": "raw_text"}, {"type": "raw_text", "x": 1}], 2 + 4),  # one without text: walked
    ([{"text": "ab", "type": "rich_text"}], 2 + 4),
    ([{"text": "🎉", "type": "raw_text"}], 2 + 4),                     # a character past U+FFFF counts twice
])
def test_slack_counts_a_table_as_its_walk_does(cells: list[dict[str, object]], size: int) -> None:
    """The table's count at C speed is the count of every text and URL the generic walk would find."""
    table = {"column_settings": [{"align": "left", "is_wrapped": True}], "rows": [cells], "type": "table"}
    assert blocks_size([table]) == size


def test_slack_blocks_json_bounds_their_counted_size_on_the_hostile_corpus() -> None:
    """`_over_limit` skips the walk when the blocks' JSON is within the limit: that JSON must never be
    smaller than what the walk counts (astral characters, escapes, tables, links and all)."""
    cards = [make(text) for text in corpus() for make in CARDS.values()] + list(big_cards().values())
    for card in cards:
        blocks = slack_blocks.render(card).payload["blocks"]
        assert blocks_size(blocks) <= len(orjson.dumps(blocks))
    emoji = [{"type": "context", "elements": [{"type": "plain_text", "text": "😀" * 3_000, "emoji": False}]}]
    assert blocks_size(emoji) == 6_004 and len(orjson.dumps(emoji)) > 12_000


def test_slack_over_limit_still_walks_blocks_its_json_cannot_hold() -> None:
    lone = {"blocks": [{"type": "section", "text": {"type": "plain_text", "text": "\ud800" * 12_500}}]}
    assert slack_blocks._over_limit(lone) == "12,504 characters of blocks, over our 12,000"
    small = {"blocks": [{"type": "section", "text": {"type": "plain_text", "text": "x" * 100}}]}
    assert slack_blocks._over_limit(small) is None
