"""A job's question as a Slack modal (`views.open`), and what its submission says, as plain data.

Not a card: a modal is a form, so it has its own pure builder here, beside the Block Kit renderer,
and the Slack channel only sends it. One input block per answer field, in the schema's order
(block_id `oz0_f{i}`, action_id `value`): a checkbox for a boolean (always optional: unticked is
false), a `static_select` for an enum (at most 100 options), a `number_input` for a number, a
`plain_text_input` for text. A schema of more fields than a modal holds is answered as one JSON
object in a single input. Every text is a `plain_text` object (Slack draws it as written), cleaned.

Slack limits owned here: title, submit and close 24 characters; 100 blocks; 3,000 characters of
`private_metadata`; 2,000 of an input's label or hint; 3,000 of a section's text and of a
`plain_text_input`; 100 options of 75 characters each.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from oz0.renderers.answer_form import fields, named_field
from oz0.renderers.safety import clean, clip, one_line

__all__ = ["CALLBACK_ID", "METADATA_MAX", "errors_for", "modal_for", "submitted"]

CALLBACK_ID = "oz0_answer_form"
TITLE_MAX = 24              # a modal's title, submit and close texts
BLOCKS_MAX = 100            # blocks in a modal
METADATA_MAX = 3_000        # characters of private_metadata
LABEL_MAX = 2_000           # an input block's label and hint
SECTION_MAX = 3_000         # a section's text
TEXT_INPUT_MAX = 3_000      # a plain_text_input's max_length
OPTIONS_MAX = 100           # options of a static_select
OPTION_TEXT_MAX = 75        # characters of an option's text
ERROR_MAX = 1_000           # what is shown under a field that was refused
ACTION = "value"
JSON_BLOCK = "oz0_json"
_HEAD_BLOCKS = 2            # the question and who asks


def _plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": clip(clean(text), limit) or " ", "emoji": False}


_fields = fields


def _options(prop: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A select's options: each value's label (its `enumNames` entry, else the value), by index."""
    values = prop["enum"]
    names = prop.get("enumNames")
    labels = names if isinstance(names, list) and len(names) == len(values) else values
    return [{"text": _plain(one_line(v if isinstance(v, str) else json.dumps(v)), OPTION_TEXT_MAX),
             "value": str(i)} for i, v in enumerate(labels)]


def _element(prop: Mapping[str, Any]) -> dict[str, Any]:
    kind, values = prop.get("type"), prop.get("enum")
    if kind == "boolean":
        option = {"text": _plain("Yes", OPTION_TEXT_MAX), "value": "true"}
        element: dict[str, Any] = {"type": "checkboxes", "action_id": ACTION, "options": [option]}
        if prop.get("default") is True:
            element["initial_options"] = [option]
        return element
    items = prop.get("items") if kind == "array" and isinstance(prop.get("items"), Mapping) else None
    if items is not None and isinstance(items.get("enum"), list) and 0 < len(items["enum"]) <= OPTIONS_MAX:
        options = _options(items)
        element = {"type": "multi_static_select", "action_id": ACTION, "options": options}
        if isinstance(prop.get("maxItems"), int) and prop["maxItems"] > 0:
            element["max_selected_items"] = prop["maxItems"]
        chosen = [options[items["enum"].index(d)] for d in prop.get("default") or () if d in items["enum"]]
        if chosen:
            element["initial_options"] = chosen
        return element
    if isinstance(values, list) and 0 < len(values) <= OPTIONS_MAX:
        options = _options(prop)
        element = {"type": "static_select", "action_id": ACTION, "options": options}
        if prop.get("default") in values:
            element["initial_option"] = options[values.index(prop["default"])]
        return element
    if kind in ("integer", "number"):
        element = {"type": "number_input", "action_id": ACTION, "is_decimal_allowed": kind == "number"}
        for key, slack_key in (("minimum", "min_value"), ("maximum", "max_value")):
            if isinstance(prop.get(key), (int, float)) and not isinstance(prop.get(key), bool):
                element[slack_key] = str(prop[key])
        return element
    most = prop.get("maxLength")
    element = {"type": "plain_text_input", "action_id": ACTION,
               "max_length": min(most, TEXT_INPUT_MAX) if isinstance(most, int) and most > 0 else TEXT_INPUT_MAX,
               "multiline": not (isinstance(most, int) and most <= 150)}
    if isinstance(prop.get("minLength"), int) and 0 < prop["minLength"] <= TEXT_INPUT_MAX:
        element["min_length"] = prop["minLength"]
    if isinstance(prop.get("default"), str):
        element["initial_value"] = clip(prop["default"], element["max_length"], marker="")
    return element


def modal_for(*, message: str, answer_schema: Mapping[str, Any], metadata: str,
              source: str | None = None) -> dict[str, Any]:
    """The `views.open` view for a question. `metadata` (the job, step and where the question is
    shown) comes back with the submission; ValueError when it is over METADATA_MAX."""
    if len(metadata) > METADATA_MAX:
        raise ValueError(f"the modal's private_metadata is {len(metadata)} characters; Slack takes at most "
                         f"{METADATA_MAX}")
    blocks: list[dict[str, Any]] = [{"type": "section", "text": _plain(message, SECTION_MAX)}]
    if source:
        blocks.append({"type": "context", "elements": [_plain(f"Asked by {one_line(source)}", LABEL_MAX)]})
    found = _fields(answer_schema)
    as_json = len(found) > BLOCKS_MAX - _HEAD_BLOCKS
    if as_json:
        names = ", ".join(name for name, _, _ in found)
        blocks.append({"type": "input", "block_id": JSON_BLOCK, "label": _plain("Answer (JSON object)", LABEL_MAX),
                       "hint": _plain(f"A JSON object with: {names}", LABEL_MAX),
                       "element": {"type": "plain_text_input", "action_id": ACTION, "multiline": True,
                                   "max_length": TEXT_INPUT_MAX}})
    for i, (name, prop, required) in enumerate(() if as_json else found):
        block: dict[str, Any] = {"type": "input", "block_id": f"oz0_f{i}",
                                 "label": _plain(one_line(str(prop.get("title") or name)), LABEL_MAX),
                                 "element": _element(prop),
                                 "optional": not required or prop.get("type") == "boolean"}
        if isinstance(prop.get("description"), str) and prop["description"].strip():
            block["hint"] = _plain(prop["description"], LABEL_MAX)
        blocks.append(block)
    return {"type": "modal", "callback_id": CALLBACK_ID, "private_metadata": metadata,
            "title": _plain("Answer", TITLE_MAX), "submit": _plain("Send", TITLE_MAX),
            "close": _plain("Cancel", TITLE_MAX), "blocks": blocks}


def submitted(answer_schema: Mapping[str, Any], state_values: Mapping[str, Any]) -> dict[str, Any]:
    """A view_submission's `view.state.values` as field -> what was entered: text as typed, a
    checkbox as true/false, a select as the enum's value; "" -> the text of the JSON input."""
    if JSON_BLOCK in state_values:
        return {"": str((state_values[JSON_BLOCK].get(ACTION) or {}).get("value") or "")}
    out: dict[str, Any] = {}
    for i, (name, prop, _) in enumerate(_fields(answer_schema)):
        state = (state_values.get(f"oz0_f{i}") or {}).get(ACTION)
        if not isinstance(state, Mapping):
            continue
        if state.get("type") == "checkboxes":
            out[name] = bool(state.get("selected_options"))
        elif state.get("type") == "static_select":
            chosen = (state.get("selected_option") or {}).get("value")
            values = prop.get("enum") or []
            if chosen is not None and str(chosen).isdigit() and int(chosen) < len(values):
                out[name] = values[int(chosen)]
        elif state.get("type") == "multi_static_select":
            values = (prop.get("items") or {}).get("enum") or []
            out[name] = [values[int(c)] for c in (o.get("value") for o in state.get("selected_options") or ())
                         if str(c).isdigit() and int(c) < len(values)]
        elif state.get("value") is not None:
            out[name] = str(state["value"])
        else:
            out[name] = ""
    return out


def errors_for(answer_schema: Mapping[str, Any], message: str) -> dict[str, Any]:
    """The view_submission answer that keeps the modal open and shows why the answer was refused,
    under the field its JSON path names (else under the first input)."""
    found = _fields(answer_schema)
    block = JSON_BLOCK if len(found) > BLOCKS_MAX - _HEAD_BLOCKS else _named(found, message)
    return {"response_action": "errors", "errors": {block: clip(one_line(message), ERROR_MAX)}}


def _named(found: list[tuple[str, dict[str, Any], bool]], message: str) -> str:
    """The block of the field a refusal names (`renderers.answer_form.named_field`)."""
    return f"oz0_f{named_field(found, message)}"
