"""Teams: a job's question as an Adaptive Card form, sent as the answerer's refreshed card.

Teams has no modal for a bot's message: the "Answer…" button (an `Action.Execute`) is answered with
this card in the invoke response, which Teams shows to the clicker in place of the question, and its
"Send" button (`Action.Execute`, verb `oz0_answer_send`, data `{id, value}`) brings the inputs back
in the next invoke's `action.data` beside `id` and `value`. When the answer is refused, the form is
sent again with what was typed and the rule under the field it broke (`errorMessage`, shown by
Teams next to the input; `renderers.answer_form.named_field` picks the field).

Inputs: a boolean is an `Input.Toggle`; an enum a compact `Input.ChoiceSet` (value = the enum's
index); a number an `Input.Number`; anything else an `Input.Text` (multi-line unless `maxLength` is
short). Labels and the question are TextRuns/labels, never markdown. Valid Adaptive Card 1.5.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from oz0.renderers.answer_form import fields, named_field
from oz0.renderers.safety import clean, clip, one_line
from oz0.renderers.teams_adaptive import CARD_TYPE
from oz0.renderers.teams_text import rich, run

__all__ = ["FORM_VERB", "form_card", "submitted"]

FORM_VERB = "oz0_answer_send"   # not "oz0_answer_form": that is the "Answer…" button's id
LABEL_MAX = 200
TEXT_MAX = 5_000
ERROR_MAX = 500
FIELDS_MAX = 40


def _input(i: int, prop: Mapping[str, Any], required: bool, label: str, typed: Any) -> dict[str, Any]:
    kind, values = prop.get("type"), prop.get("enum")
    base: dict[str, Any] = {"id": f"oz0_f{i}", "label": label, "isRequired": required and kind != "boolean"}
    if kind == "boolean":
        on = typed if isinstance(typed, bool) else prop.get("default") is True
        return {"type": "Input.Toggle", **base, "title": "Yes", "valueOn": "true", "valueOff": "false",
                "value": "true" if on else "false"}
    if isinstance(values, list) and values:
        el = {"type": "Input.ChoiceSet", **base, "style": "compact",
              "choices": [{"title": clip(one_line(v if isinstance(v, str) else json.dumps(v)), LABEL_MAX) or " ",
                           "value": str(n)} for n, v in enumerate(values)]}
        chosen = typed if typed in values else prop.get("default")
        if chosen in values:
            el["value"] = str(values.index(chosen))
        return el
    if kind in ("integer", "number"):
        el = {"type": "Input.Number", **base}
        for key, ac_key in (("minimum", "min"), ("maximum", "max")):
            if isinstance(prop.get(key), (int, float)) and not isinstance(prop.get(key), bool):
                el[ac_key] = prop[key]
        if isinstance(typed, (int, float)) and not isinstance(typed, bool):
            el["value"] = typed
        return el
    most = prop.get("maxLength")
    el = {"type": "Input.Text", **base, "maxLength": min(most, TEXT_MAX) if isinstance(most, int) and most > 0
          else TEXT_MAX, "isMultiline": not (isinstance(most, int) and most <= 150)}
    text = typed if isinstance(typed, str) else prop.get("default")
    if isinstance(text, str):
        el["value"] = clip(clean(text), el["maxLength"], marker="")
    return el


def form_card(*, message: str, answer_schema: Mapping[str, Any], value: str, source: str | None = None,
              typed: Mapping[str, Any] | None = None, refusal: str | None = None) -> dict[str, Any]:
    """The form as an Adaptive Card (the invoke response's `value`); `value` names the job and step
    (`AnswerPick.value`) and comes back with the answer; `refusal` goes under the field it names."""
    found = fields(answer_schema)[:FIELDS_MAX]
    body: list[dict[str, Any]] = [rich([run(clip(clean(message), 2_000), weight="Bolder")])]
    if source:
        body.append(rich([run(f"Asked by {clip(one_line(source), 200)}", isSubtle=True)], spacing="None"))
    wrong = named_field(found, refusal) if refusal and found else None
    for i, (name, prop, required) in enumerate(found):
        label = clip(one_line(str(prop.get("title") or name)), LABEL_MAX) or name[:LABEL_MAX] or "answer"
        el = _input(i, prop, required, label, (typed or {}).get(name))
        if i == wrong:
            el["errorMessage"] = clip(one_line(refusal or ""), ERROR_MAX)
        body.append(el)
        if isinstance(prop.get("description"), str) and prop["description"].strip():
            body.append(rich([run(clip(one_line(prop["description"]), LABEL_MAX), isSubtle=True)], spacing="None"))
    if refusal and wrong is None:
        body.append(rich([run(clip(one_line(refusal), ERROR_MAX), color="Attention")]))
    return {"type": "AdaptiveCard", "$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "version": "1.5",
            "fallbackText": "Answer", "body": body,
            "actions": [{"type": "Action.Execute", "title": "Send", "verb": FORM_VERB, "style": "positive",
                         "data": {"id": FORM_VERB, "value": value}}]}


def form_attachment(card: Mapping[str, Any]) -> dict[str, Any]:
    return {"contentType": CARD_TYPE, "content": dict(card)}


def submitted(answer_schema: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """An `Action.Execute` invoke's `action.data` as field -> what was entered: text as typed, a toggle
    as true/false, a choice as the enum's value."""
    out: dict[str, Any] = {}
    for i, (name, prop, _) in enumerate(fields(answer_schema)[:FIELDS_MAX]):
        raw = data.get(f"oz0_f{i}")
        if raw is None:
            continue
        values = prop.get("enum")
        if prop.get("type") == "boolean":
            out[name] = str(raw).lower() == "true"
        elif isinstance(values, list) and values:
            if str(raw).isdigit() and int(str(raw)) < len(values):
                out[name] = values[int(str(raw))]
        else:
            out[name] = str(raw)
    return out
