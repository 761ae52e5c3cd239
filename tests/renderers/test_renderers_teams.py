"""Teams: what a user sees in an Adaptive Card, checked against the official Adaptive Card 1.5 schema."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hostile import big_cards
from renderer_oracles import adaptive_card_validator, check_teams

from oz0.edge import choose_card
from oz0.edge.cards.model import Action, Card, DiffBody, DiffLine, Status
from oz0.renderers import RENDERERS, teams_adaptive


def _card(rendered) -> dict:
    return rendered.payload["attachments"][0]["content"]


def _runs(node) -> list[str]:
    out, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "TextRun":
                out.append(item["text"])
            stack += list(item.values())
        elif isinstance(item, list):
            stack += reversed(item)
    return out


def _kinds(card: dict) -> list[str]:
    return [el["type"] for el in card["body"]]


def test_the_oracle_refuses_what_the_official_schema_refuses() -> None:
    """The bundled schema is the real check: an unknown property or element type is refused."""
    good = _card(RENDERERS["teams"](Card(form="text", text="hello")))
    assert adaptive_card_validator().is_valid(good)
    bad = json.loads(json.dumps(good))
    bad["body"][0]["inlines"][0]["markdown"] = True
    assert not adaptive_card_validator().is_valid(bad)
    bad["body"] = [{"type": "HtmlBlock", "html": "<b>x</b>"}]
    assert not adaptive_card_validator().is_valid(bad)
    assert not adaptive_card_validator().is_valid({**good, "msteams": {"entities": []}})


def test_a_table_is_a_table_element_in_the_schemas_column_order_with_its_header_first() -> None:
    card = Card(form="table", title="deploys", columns=("service", "version", "ok"),
                rows=(("billing", "1.2", True), ("auth", None, False)))
    rendered = RENDERERS["teams"](card)
    check_teams(rendered)
    body = _card(rendered)["body"]
    [table] = [el for el in body if el["type"] == "Table"]
    assert table["firstRowAsHeader"] is True and len(table["columns"]) == 3
    assert [_runs(r) for r in table["rows"]] == [["service", "version", "ok"], ["billing", "1.2", "true"],
                                                  ["auth", " ", "false"]]
    assert rendered.uploads == () and rendered.cuts == ()


def test_key_values_are_a_factset_and_a_two_column_table_when_a_value_would_be_parsed() -> None:
    inert = RENDERERS["teams"](Card(form="key_values", keys=("service", "replicas"), values=("billing", 3)))
    check_teams(inert)
    [facts] = _card(inert)["body"]
    assert facts == {"type": "FactSet", "facts": [{"title": "service", "value": "billing"},
                                                  {"title": "replicas", "value": "3"}]}
    parsed = RENDERERS["teams"](Card(form="key_values", keys=("link",), values=("[click](https://evil.example)",)))
    check_teams(parsed)
    assert _kinds(_card(parsed)) == ["Table"]
    assert "[click](https://evil.example)" in _runs(_card(parsed))


def test_a_diff_is_monospace_with_coloured_plus_and_minus_lines() -> None:
    diff = DiffBody(kind="lines", before="old", after="new",
                    lines=(DiffLine("@", "@@ -1 +1 @@"), DiffLine("-", "a = 1"), DiffLine("+", "a = 2")))
    rendered = RENDERERS["teams"](Card(form="diff", diff=diff))
    check_teams(rendered)
    [block] = _card(rendered)["body"]
    runs = block["inlines"]
    assert all(r["fontType"] == "Monospace" for r in runs)
    assert [(r["text"].rstrip("\n"), r.get("color")) for r in runs[2:]] == [
        ("@@ -1 +1 @@", "Accent"), ("-a = 1", "Attention"), ("+a = 2", "Good")]


def test_the_status_header_says_failed_with_code_and_command() -> None:
    card = Card(form="text", text="", status=Status(success=False, message="deploy failed", error_code="E42",
                                                    command="deploy billing", duration_ms=1234))
    rendered = RENDERERS["teams"](card)
    check_teams(rendered)
    runs = _runs(_card(rendered))
    assert runs[:2] == ["❌ Failed: ", "deploy failed"]
    assert "error code: E42 · command: deploy billing · 1,234 ms" in runs
    assert _card(rendered)["body"][0]["inlines"][0]["color"] == "Attention"


def test_mentions_markdown_and_html_from_data_stay_text() -> None:
    text = "<at>Everyone</at> <b>bold</b> **strong** [x](https://evil.example) @everyone"
    for card in (Card(form="text", text=text, text_format="plain"), Card(form="table", columns=("a",), rows=((text,),))):
        rendered = RENDERERS["teams"](card)
        check_teams(rendered)
        assert text in _runs(_card(rendered))
        assert "entities" not in json.dumps(rendered.payload)


def test_markdown_links_open_only_http_urls_and_show_the_url_itself() -> None:
    md = "See [the docs](https://docs.example/a) or [mail](mailto:a@example.com) or [login](https://trusted.example@evil.example/)."
    rendered = RENDERERS["teams"](Card(form="text", text=md))
    check_teams(rendered)
    inlines = _card(rendered)["body"][0]["inlines"]
    links = [r for r in inlines if "selectAction" in r]
    assert [(r["text"], r["selectAction"]["url"]) for r in links] == [("https://docs.example/a",) * 2]
    shown = "".join(r["text"] for r in inlines)
    assert "the docs (https://docs.example/a)" in shown and "mail (mailto:a@example.com)" in shown
    assert "real host is evil.example" in shown


def test_a_bare_url_with_a_user_name_or_an_idn_host_says_where_it_goes() -> None:
    rendered = RENDERERS["teams"](Card(form="table", columns=("url",), rows=(("https://trusted.example@evil.example/x",),
                                                                            ("https://раураl.com/login",))))
    check_teams(rendered)
    runs = _runs(_card(rendered))
    assert "https://trusted.example@evil.example/x (not a link: its real host is evil.example)" in runs
    assert "https://раураl.com/login (xn--l-7sba6dbr.com)" in runs


def test_a_card_past_28_kb_is_cut_says_so_and_carries_the_full_result() -> None:
    result = {"rows": [{"service": f"service-{i}", "note": "x" * 80} for i in range(400)]}
    card = choose_card(result, None)
    rendered = RENDERERS["teams"](card)
    check_teams(rendered)
    assert teams_adaptive.payload_bytes(rendered.payload) <= teams_adaptive.MAX_BYTES
    shown = [r["rows"] for r in _card(rendered)["body"] if r["type"] == "Table"][0]
    assert 20 < len(shown) - 1 < 400
    assert rendered.cuts == (f"… {400 - (len(shown) - 1):,} more rows, full result attached",)
    [upload] = rendered.uploads
    assert json.loads(upload.data) == result
    assert any(t.startswith("📎 Full result: result.json") for t in _runs(_card(rendered)))


def test_the_file_line_says_where_the_channel_puts_the_full_result() -> None:
    """`Card.files_at` (the wire's files_place: the console's job page, or a file offered in a
    personal chat) ends the file line of a cut card; an uncut card has no file line at all."""
    where = "on the console: https://oz0.example.com/jobs/j1"
    cut = replace(choose_card({"rows": [{"note": "x" * 80, "n": i} for i in range(400)]}, None), files_at=where)
    rendered = RENDERERS["teams"](cut)
    check_teams(rendered)
    [line] = [t for t in _runs(_card(rendered)) if t.startswith("📎 ")]
    assert line.startswith("📎 Full result: result.json (application/json, ") and line.endswith(f"), {where}")
    small = RENDERERS["teams"](replace(choose_card({"rows": [{"n": 1}]}, None), files_at=where))
    assert not [t for t in _runs(_card(small)) if t.startswith("📎 ") or where in t]


@pytest.mark.parametrize("name", sorted(big_cards()))
def test_every_oversized_card_fits(name: str) -> None:
    rendered = RENDERERS["teams"](big_cards()[name])
    check_teams(rendered)
    assert teams_adaptive.payload_bytes(rendered.payload) <= teams_adaptive.MAX_BYTES


def test_actions_are_action_execute_with_the_id_and_value_to_read_back() -> None:
    actions = (Action("oz0_share", "Share in channel", "job-1", style="primary"),
               Action("oz0_stop", "Stop", "job-1", style="danger", disabled=True))
    rendered = RENDERERS["teams"](Card(form="text", text="done", actions=actions))
    check_teams(rendered)
    assert _card(rendered)["actions"] == [
        {"type": "Action.Execute", "title": "Share in channel", "verb": "oz0_share",
         "data": {"id": "oz0_share", "value": "job-1"}, "style": "positive", "isEnabled": True},
        {"type": "Action.Execute", "title": "Stop", "verb": "oz0_stop", "data": {"id": "oz0_stop", "value": "job-1"},
         "style": "destructive", "isEnabled": False}]
    with pytest.raises(ValueError, match="Teams shows at most 6"):
        RENDERERS["teams"](Card(form="text", text="x", actions=tuple(Action(f"a{i}", "b") for i in range(7))))


def test_a_card_asking_for_feedback_carries_thumbs_up_and_down_after_its_own_buttons() -> None:
    stop = Action("oz0_stop", "Stop", "teams:19:chan:1", style="danger")
    rendered = RENDERERS["teams"](Card(form="text", text="done", actions=(stop,), feedback="job-7"))
    check_teams(rendered)
    assert [(a["title"], a["verb"], a["data"]) for a in _card(rendered)["actions"]] == [
        ("Stop", "oz0_stop", {"id": "oz0_stop", "value": "teams:19:chan:1"}),
        ("👍", "oz0_feedback", {"id": "oz0_feedback", "value": "good:job-7"}),
        ("👎", "oz0_feedback", {"id": "oz0_feedback", "value": "bad:job-7"})]
    assert "actions" not in _card(RENDERERS["teams"](Card(form="text", text="done")))
