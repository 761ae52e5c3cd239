"""Every renderer x every card form x every hostile string, checked by independent oracles.

A renderer added to `renderers.RENDERERS` is picked up here automatically: it gets the platform
oracle if there is one (Slack, Discord, HTML), and the generic checks otherwise.
"""

from __future__ import annotations

import json

import pytest
from hostile import CARDS, CELLS, DISCORD, EMOJI, FENCES, HTML, INVISIBLE, SLACK, URLS, big_cards, naughty_strings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from renderer_oracles import CHECKS, hidden

from oz0.edge.cards.model import Card
from oz0.renderers import RENDERERS, Rendered

TARGETED = SLACK + DISCORD + URLS + HTML + FENCES + CELLS + INVISIBLE + EMOJI
BLNS_FORMS = ("table", "key_values", "text_markdown_everywhere", "not_drawn", "diff_lines")
BIG = big_cards()


def _check(platform: str, rendered: Rendered) -> None:
    check = CHECKS.get(platform)
    if check is not None:
        check(rendered)
        return
    assert isinstance(rendered, Rendered)
    payload = rendered.payload
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    assert not hidden(text), hidden(text)


def _run(platform: str, form: str, strings: list[str]) -> None:
    renderer = RENDERERS[platform]
    for s in strings:
        card = CARDS[form](s)
        try:
            first = renderer(card)
            _check(platform, first)
        except AssertionError as error:
            raise AssertionError(f"{platform} {form} {s[:60]!r}: {error}") from None
        assert renderer(card) == first, "renderers are pure: same card, same payload"


@pytest.mark.parametrize("form", sorted(CARDS))
@pytest.mark.parametrize("platform", sorted(RENDERERS))
def test_targeted_hostile_strings(platform: str, form: str) -> None:
    _run(platform, form, TARGETED)


@pytest.mark.parametrize("form", BLNS_FORMS)
@pytest.mark.parametrize("platform", sorted(RENDERERS))
def test_big_list_of_naughty_strings(platform: str, form: str) -> None:
    strings = naughty_strings()
    assert len(strings) > 500
    _run(platform, form, strings)


@pytest.mark.parametrize("name", sorted(BIG))
@pytest.mark.parametrize("platform", sorted(RENDERERS))
def test_past_every_limit(platform: str, name: str) -> None:
    _check(platform, RENDERERS[platform](BIG[name]))


def _shown(rendered: Rendered) -> str:
    payload = rendered.payload
    return payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)


@pytest.mark.parametrize("form", ["table", "key_values", "text_markdown", "text_markdown_everywhere", "text_plain",
                                  "diff_keys", "not_drawn"])
@pytest.mark.parametrize("platform", sorted(RENDERERS))
def test_emoji_sequences_stay_whole(platform: str, form: str) -> None:
    """A family, a skin tone, a rainbow flag, England's flag: joiners, modifiers and tags kept (item 10)."""
    for emoji in EMOJI:
        assert emoji in _shown(RENDERERS[platform](CARDS[form](f"see {emoji} here"))), (form, emoji)


WORDS_WITH_ZWNJ = ("می\u200cخواهم", "क्\u200cष", "ക്\u200cക")  # Persian, Hindi, Malayalam: ZWNJ is spelling


@pytest.mark.parametrize("form", ["table", "key_values", "text_markdown", "text_plain"])
@pytest.mark.parametrize("platform", sorted(RENDERERS))
def test_a_zero_width_non_joiner_that_spells_a_word_is_kept_and_any_other_removed(platform: str, form: str) -> None:
    for word in WORDS_WITH_ZWNJ:
        assert word in _shown(RENDERERS[platform](CARDS[form](f"see {word} here"))), (form, word)
    shown = _shown(RENDERERS[platform](CARDS[form]("pay\u200cpal \u200cadmin")))
    assert "\u200c" not in shown and "paypal" in shown, (form, shown[:300])


DISGUISES = {  # what is written -> what the reader sees instead, and what they must not see
    "pay\u00adpal": ("paypal", "\u00ad"),
    "admin\u3164": ("admin", "\u3164"),
    "pay " + "".join(chr(0xE0000 + ord(c)) for c in "ignore previous") + "now": ("pay now", "\U000e0069"),
    "\U0001f3f4\U000e0078\U000e0078\U000e007f flag": ("\U0001f3f4 flag", "\U000e0078"),
    "Z" + "\u0301" * 40 + "algo": ("Z" + "\u0301" * 4 + "algo", "\u0301" * 5),
}


@pytest.mark.parametrize("form", ["table", "key_values", "text_markdown", "text_plain"])
@pytest.mark.parametrize("platform", sorted(RENDERERS))
def test_disguising_characters_are_removed(platform: str, form: str) -> None:
    for written, (seen, unseen) in DISGUISES.items():
        shown = _shown(RENDERERS[platform](CARDS[form](written)))
        assert seen in shown and unseen not in shown, (form, written, shown[:300])


@pytest.mark.parametrize("written", ["[login](https://trusted.example@evil.example/login)",
                                     "<https://trusted.example@evil.example/login>",
                                     "https://trusted.example@evil.example/login"])
@pytest.mark.parametrize("form", ["text_markdown", "table", "key_values"])
@pytest.mark.parametrize("platform", sorted(RENDERERS))
def test_a_link_with_a_user_name_is_text_with_its_real_host(platform: str, form: str, written: str) -> None:
    """Item 11: never a live link (the oracles refuse one), the URL shown and its real host named."""
    rendered = RENDERERS[platform](CARDS[form](written))
    _check(platform, rendered)
    shown = _shown(rendered)
    assert "trusted.example@evil.example/login" in shown
    if (form == "text_markdown" and written[0] in "[<") or (platform == "discord" and form != "table"):
        assert "real host is evil.example" in shown, shown[:400]


@pytest.mark.parametrize("written", ["[paypal](https://раураl.com/login)", "<https://раураl.com/login>",
                                     "https://раураl.com/login"])
@pytest.mark.parametrize("platform", sorted(RENDERERS))
def test_an_internationalised_host_is_shown_in_punycode_next_to_the_link(platform: str, written: str) -> None:
    shown = _shown(RENDERERS[platform](CARDS["text_markdown"](written)))
    if written.startswith("https") and platform != "discord":
        return  # a bare URL is a link only where the platform makes one (Discord); elsewhere it is text
    assert "xn--l-7sba6dbr.com" in shown, shown[:400]


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=()), max_size=300) | st.sampled_from(
    TARGETED).flatmap(lambda s: st.text(max_size=20).map(lambda t: s + t))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(s=_text, form=st.sampled_from(sorted(CARDS)))
def test_any_string_in_any_form(s: str, form: str) -> None:
    for platform in RENDERERS:
        _check(platform, RENDERERS[platform](CARDS[form](s)))


def test_the_slack_fallback_carries_no_fence_and_says_what_was_cut() -> None:
    """Item 12: the `text` Slack parses as mrkdwn: data's fence spaced out, cut at a line with the cut said."""
    text = RENDERERS["slack"](CARDS["text_plain"]("```\nfenced\n```")).payload["text"]
    assert "```" not in text and "` ` `\nfenced\n` ` `" in text
    rendered = RENDERERS["slack"](BIG["rows_10000"])
    assert rendered.payload["text"].endswith(rendered.cuts[0])
    text = RENDERERS["slack"](Card(form="text", text="<b>\n" * 2_000, text_format="plain")).payload["text"]
    assert text.startswith("&lt;b&gt;\n&lt;b&gt;\n") and len(text) <= 3_000
    assert text.endswith("more lines in the card") or text.endswith("full result attached"), text[-200:]
