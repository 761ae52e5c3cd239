"""Which part of a growing text may be shown, and the safe pieces to append (renderers/stream_text.py)."""

from __future__ import annotations

import pytest

from oz0.renderers.stream_text import MAX_HELD, SafeChunks, markdown_safe, showable


def appended(pieces: list[str]) -> str:
    chunks, text, out = SafeChunks(), "", []
    for piece in pieces:
        text += piece
        out.append(chunks.take(text))
    out.append(chunks.rest(text))
    return "".join(out)


@pytest.mark.parametrize("pieces", [
    ["ping <!chan", "nel> now"],
    ["ping <", "!channel", "> now"],
    ["see [the do", "cs](https://ev", "il.example) now"],
    ["see [the docs]", "(https://evil.example) now"],
    ["a <@U0", "42|ana> and <http://x|cl", "ick>"],
])
def test_a_mention_or_a_link_cut_across_pieces_is_as_safe_as_the_whole(pieces):
    whole = "".join(pieces)
    assert appended(pieces) == markdown_safe(whole)
    assert "<!" not in appended(pieces) and "](" not in appended(pieces) and "<@" not in appended(pieces)


def test_a_masked_link_shows_its_label_and_real_url_and_other_brackets_are_escaped():
    assert markdown_safe("[docs](https://e.x/a) and [1] or ![img](https://e.x/i.png)") == \
        "docs (https://e.x/a) and \\[1\\] or img (https://e.x/i.png)"


def test_what_is_shown_waits_for_a_word_or_a_link_to_end():
    assert showable("Ping <!chan") == len("Ping ")
    assert showable("read [the docs") == len("read ")
    assert showable("read [the docs](https://x.y) now") == len("read [the docs](https://x.y) ")
    assert showable("read [1] now ") == len("read [1] now ")
    assert showable("no end", final=True) == len("no end")
    assert showable("x" * (MAX_HELD + 10)) == 10   # bounded: a token that never ends is shown past MAX_HELD


def test_a_rewound_text_is_not_appended_again():
    chunks = SafeChunks()
    assert chunks.take("first answer ") == "first answer "
    assert chunks.take("second ") == "" and chunks.rewound
