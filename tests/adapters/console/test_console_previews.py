"""The channel previews' rules on their own: buttons, separators, accents, types without a rule,
and hostile text, drawn from the renderers' real payloads (the browser test reads them on the page)."""

from __future__ import annotations

from oz0.adapters.console.preview import preview
from oz0.adapters.console.preview_discord import markdown
from oz0.adapters.console.preview_slack import message as slack_message
from oz0.edge.cards.model import Action, Card, Status
from oz0.renderers import render
from oz0.renderers.rendered import Rendered

EVIL = "<script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3)) &amp;"


def card_with_actions() -> Card:
    return Card(form="text", title=EVIL, text=EVIL, text_format="markdown",
                status=Status(success=True, message="ok"),
                actions=(Action("share", "Share in channel", "j1", "primary"), Action("no", "No", "j1", "danger")))


def test_buttons_are_drawn_with_their_labels_and_styles_on_both_platforms():
    card = card_with_actions()
    slack = str(preview("slack", render(card, "slack")))
    assert '<span class="pv-button pv-button--primary"><span class="pv-text">Share in channel</span></span>' in slack
    assert "pv-button--danger" in slack
    discord = str(preview("discord", render(card, "discord")))
    assert '<span class="pv-button pv-button--primary">Share in channel</span>' in discord
    assert '<span class="pv-button pv-button--danger">No</span>' in discord
    assert "pv-accent--green" in discord and 'title="accent colour #2e7d32"' in discord


def test_hostile_text_stays_text_and_links_are_inert():
    card = card_with_actions()
    for platform in ("slack", "discord", "teams"):
        html = str(preview(platform, render(card, platform)))
        assert "<script" not in html and "<img" not in html and "href" not in html and "<a " not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # a javascript: link stays text, an entity is not decoded, an image is a "!" and a link, as on Discord
    assert markdown("[x](javascript:alert(3)) &amp; ![i](http://127.0.0.1:9/i.png)") == (
        '<p>[x](javascript:alert(3)) &amp;amp; !<span class="pv-link">i</span></p>\n')


def test_discord_subtext_separators_and_a_type_without_a_rule():
    payload = {"components": [{"type": 17, "accent_color": 0xC62828, "components": [
        {"type": 10, "content": "## Title\n-# small print\nline one\nline two"},
        {"type": 14, "divider": True, "spacing": 2},
        {"type": 99, "content": "?"}]}]}
    html = str(preview("discord", Rendered(payload, cuts=("… 3 more rows",))))
    assert "<h2>Title</h2>" in html and '<div class="pv-subtext">small print</div>' in html
    assert "line one<br />\nline two" in html
    assert '<hr class="pv-separator pv-separator--large">' in html and "pv-accent--red" in html
    assert "(a component of type 99 the preview does not draw)" in html
    assert '<div class="pv-cuts"><span class="pv-mark">cut</span><ul><li>… 3 more rows</li></ul></div>' in html


def test_slack_mrkdwn_entities_and_links_are_shown_as_slack_shows_them():
    html = slack_message({"blocks": [{"type": "section", "text": {"type": "mrkdwn",
                                                                   "text": "a &lt;b&gt; <https://x.example|label>"}},
                                     {"type": "video"}]})
    assert '<span class="pv-text">a &lt;b&gt; label</span>' in html
    assert "(a block of type &#39;video&#39; the preview does not draw)" in html


def test_the_teams_preview_draws_the_adaptive_card_tables_facts_and_buttons():
    card = card_with_actions()
    teams = str(preview("teams", render(card, "teams")))
    assert '<span class="pv-button pv-button--primary">Share in channel</span>' in teams
    assert '<span class="pv-button pv-button--danger">No</span>' in teams
    assert 'pv-run--good' in teams and "✅ Succeeded: " in teams
    table = str(preview("teams", render(Card(form="table", columns=("a", "b"), rows=((EVIL, 2),)), "teams")))
    assert "<th>" in table and "&lt;img src=x onerror=alert(2)&gt;" in table and "<img" not in table
    facts = str(preview("teams", render(Card(form="key_values", keys=("service",), values=("billing",)), "teams")))
    assert "<dt>service</dt><dd>billing</dd>" in facts
    html = str(preview("teams", Rendered({"attachments": [{"content": {"body": [{"type": "Media"}]}}]})))
    assert "(a element of type &#39;Media&#39; the preview does not draw)" in html
