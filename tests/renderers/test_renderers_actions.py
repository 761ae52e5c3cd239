"""Buttons under a card (`Card.actions`), pure renderers, one markdown parse, and the shared table fitter."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from hostile import big_cards
from renderer_oracles import CHECKS

from oz0.edge.cards.model import Action, Card, Status
from oz0.renderers import RENDERERS, discord_message, markdown_blocks, monospace, slack_blocks

SHARE = Action("oz0_share", "Share in channel", value="job-1234", style="primary")
CARD = Card(form="table", title="deploys", status=Status(True, "2 rows"), columns=("service", "n"),
            rows=(("api", 1), ("web", 2)))


def _buttons(components: list[dict]) -> list[dict]:
    found, stack = [], list(components)
    while stack:
        node = stack.pop(0)
        if node.get("type") == 2:
            found.append(node)
        stack += node.get("components") or []
    return found


def test_slack_draws_actions_as_the_last_block_of_buttons() -> None:
    danger = Action("oz0_cancel", "Cancel", value="job-1234", style="danger")
    rendered = slack_blocks.render(replace(CARD, actions=(SHARE, danger, Action("x", "Plain"))))
    CHECKS["slack"](rendered)
    block = rendered.payload["blocks"][-1]
    assert block == {"block_id": "oz0_share", "type": "actions", "elements": [
        {"action_id": "oz0_share", "style": "primary", "type": "button", "value": "job-1234",
         "text": {"emoji": True, "text": "Share in channel", "type": "plain_text"}},
        {"action_id": "oz0_cancel", "style": "danger", "type": "button", "value": "job-1234",
         "text": {"emoji": True, "text": "Cancel", "type": "plain_text"}},
        {"action_id": "x", "type": "button", "text": {"emoji": True, "text": "Plain", "type": "plain_text"}}]}


def test_slack_reserves_the_actions_block_within_50_blocks() -> None:
    card = replace(big_cards()["keys_500"], form="diff", actions=(SHARE,))
    rendered = slack_blocks.render(card)
    CHECKS["slack"](rendered)
    assert len(rendered.payload["blocks"]) <= slack_blocks.MAX_BLOCKS
    assert rendered.payload["blocks"][-1]["type"] == "actions"


def test_discord_draws_actions_as_an_action_row_after_the_card() -> None:
    shared = Action("oz0_share", "Shared in channel", value="job-1234", disabled=True)
    for action, style in ((SHARE, 1), (shared, 2)):
        rendered = discord_message.render(replace(CARD, actions=(action,)))
        CHECKS["discord"](rendered)
        components = rendered.payload["components"]
        assert components[0]["type"] == 17 and components[1]["type"] == 1
        assert _buttons(components) == [{"type": 2, "style": style, "disabled": action.disabled,
                                         "label": action.label, "custom_id": "oz0_share:job-1234"}]


def test_discord_counts_buttons_in_its_40_components() -> None:
    actions = tuple(Action(f"a{i}", f"Button {i}", value=str(i)) for i in range(25))
    rendered = discord_message.render(replace(big_cards()["many_violations"], actions=actions))
    CHECKS["discord"](rendered)
    assert discord_message.component_count(rendered.payload["components"]) <= discord_message.MAX_COMPONENTS
    assert [len(r["components"]) for r in rendered.payload["components"][1:]] == [5] * 5


@pytest.mark.parametrize("action,words", [
    (Action("oz0_share", "Share", value="j" * 95), "custom_id is 105 characters; Discord takes at most 100"),
])
def test_discord_refuses_an_action_it_cannot_send(action: Action, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        discord_message.render(replace(CARD, actions=(action,)))


def test_too_many_actions_is_a_clear_error() -> None:
    actions = tuple(Action(f"a{i}", "b") for i in range(26))
    with pytest.raises(ValueError, match="at most 25"):
        slack_blocks.render(replace(CARD, actions=actions))
    with pytest.raises(ValueError, match="at most 25 buttons"):
        discord_message.render(replace(CARD, actions=actions))


@pytest.mark.parametrize("platform", ["text", "html"])
def test_text_and_html_do_not_draw_actions(platform: str) -> None:
    assert RENDERERS[platform](replace(CARD, actions=(SHARE,))) == RENDERERS[platform](CARD)


def test_rendering_loads_no_channel_database_or_server_library() -> None:
    """In a fresh interpreter, importing the renderers and drawing a card for every platform imports
    none of the SDKs, HTTP or database libraries (they stay in the adapters and the tests' oracles)."""
    script = """
import sys
from oz0.edge.cards.model import Action, Card, Status
from oz0.renderers import RENDERERS
card = Card(form="text", title="t", status=Status(True, "ok"), text="# hi\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |",
            actions=(Action("oz0_share", "Share", value="j"),))
table = Card(form="table", columns=("a",), rows=tuple((i,) for i in range(500)))
for platform in RENDERERS:
    RENDERERS[platform](card), RENDERERS[platform](table)
banned = ("discord", "slack_sdk", "slack_bolt", "aiohttp", "sqlalchemy", "mcp", "starlette")
print(sorted(m for m in sys.modules if m.split(".")[0] in banned))
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.replace("'", '"')) == []


def test_markdown_is_parsed_once_for_every_renderer(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n\n".join(f"## part {i}\n\nwords **{i}** and `code` " * 3 for i in range(600))  # past every budget
    markdown_blocks.parse.cache_clear()
    calls: list[int] = []
    parser = markdown_blocks._parser()
    real = parser.parse
    monkeypatch.setattr(parser, "parse", lambda source, *a: calls.append(len(source)) or real(source, *a))
    card = Card(form="text", text=text)
    for platform in RENDERERS:
        RENDERERS[platform](card)
    assert len(calls) == 1


def test_monospace_aligned_measures_terminal_columns() -> None:
    assert monospace.aligned([["日本", "x"], ["a", "b"]], rule=True) == "日本  x\n────  ─\na     b"
    fitted = monospace.fit_table(["id", "name"], [(1, "a"), (22, "日本語")], 1_000, cell_width=32, probe_rows=200)
    assert fitted.text == "id  name\n──  ──────\n1   a\n22  日本語" and fitted.shown == 2
    assert fitted.used == len(fitted.text) + 1 and not fitted.clipped


def test_monospace_fit_table_small_and_general_paths_agree() -> None:
    rows = [(i, "x" * (i % 40), "日本" * (i % 3)) for i in range(24)]
    for chars in (60, 200, 700, 5_000):
        small = monospace.fit_table(["id", "text", "jp"], rows, chars, cell_width=32, probe_rows=200)
        general = monospace.fit_table(["id", "text", "jp"], rows + [(99, "", "")], chars, cell_width=32, probe_rows=24)
        if small.shown == len(rows):
            assert general.text.startswith(small.text)
        else:
            assert (small.text, small.shown) == (general.text, general.shown)
