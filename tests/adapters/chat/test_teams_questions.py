"""A job that asks a person, in Teams: the question's `Action.Execute` buttons, the form sent back to
the clicker in the invoke's response, a refused answer shown next to its field, and the message
updated into the decision."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ask_plugin import install_ask_plugin
from renderer_oracles import adaptive_card_validator
from teams_harness import home, run, running_channel  # noqa: F401 (home is a fixture)
from teams_standin import cards, runs_text


def channel(home: Path):
    return running_channel(home, before_serve=lambda rt: install_ask_plugin(rt, home.parent / "ask-plugin"))


async def asked(h: Any, kind: str) -> dict[str, Any]:
    """`@oz0 approve KIND`: the question's card."""
    ask = h.standin.message(f"approve {kind}")
    assert (await h.post(ask))[0] == 200
    found = await h.standin.wait_for(lambda calls: [c for c in calls if c.method == "POST"
                                                     and "Merge" in runs_text(cards(c))])
    return cards(found[0])


async def final_card(h: Any, text: str) -> dict[str, Any]:
    found = await h.standin.wait_for(lambda calls: [c for c in calls if c.method == "PUT" and text in runs_text(cards(c))])
    return cards(found[-1])


def test_a_yes_no_question_is_answered_by_its_action_execute_button(home):
    async def scenario():
        async with channel(home) as h:
            question = await asked(h, "bool")
            assert adaptive_card_validator().is_valid(question)
            assert "Merge <!here> #12 & ship? (bool)" in runs_text(question)       # drawn as written
            yes, no = question["actions"]
            assert (yes["type"], yes["title"], no["title"]) == ("Action.Execute", "Yes", "No")
            status, body = await h.post(h.standin.invoke(yes["data"]))
            assert status == 200 and body["statusCode"] == 200
            shown = body["value"] if isinstance(body["value"], str) else runs_text(body["value"])
            assert "Yes" in shown
            card = await final_card(h, "accept")
            assert 'accept {"approved": true} by teams:aad-user-1' in runs_text(card)
            again = await h.post(h.standin.invoke(no["data"]))
            assert again[1]["type"] == "application/vnd.microsoft.activity.message"
            assert "no longer" in again[1]["value"] or "answered" in again[1]["value"], again
    run(scenario())


def test_a_form_question_opens_a_form_and_a_refused_answer_shows_the_rule_next_to_its_field(home):
    async def scenario():
        async with channel(home) as h:
            question = await asked(h, "form")
            [answer] = question["actions"]
            status, opened = await h.post(h.standin.invoke(answer["data"]))
            assert status == 200 and opened["type"] == "application/vnd.microsoft.card.adaptive"
            form = opened["value"]
            assert adaptive_card_validator().is_valid(form)
            inputs = [el for el in form["body"] if el["type"].startswith("Input.")]
            assert [(i["type"], i["label"]) for i in inputs] == [
                ("Input.Text", "reason"), ("Input.Number", "count"), ("Input.Toggle", "urgent")]
            [send] = form["actions"]
            data = {**send["data"], "oz0_f0": "no", "oz0_f1": "2", "oz0_f2": "true"}
            _, refused = await h.post(h.standin.invoke(data, verb=send["verb"]))
            again = refused["value"]
            assert adaptive_card_validator().is_valid(again)
            reason = next(el for el in again["body"] if el.get("id") == "oz0_f0")
            assert "minLength" in reason["errorMessage"] or "shorter" in reason["errorMessage"], reason
            assert reason["value"] == "no"                                   # what was typed stays
            assert "errorMessage" not in next(el for el in again["body"] if el.get("id") == "oz0_f1")
            data = {**send["data"], "oz0_f0": "ship it", "oz0_f1": "2", "oz0_f2": "false"}
            status, _ = await h.post(h.standin.invoke(data, verb=send["verb"]))
            assert status == 200
            card = await final_card(h, "accept")
            assert 'accept {"count": 2, "reason": "ship it", "urgent": false} by teams:aad-user-1' in runs_text(card)
    run(scenario())
