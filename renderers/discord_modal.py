"""A job's question as a Discord modal (interaction callback type 9), and what its submit says, as
plain data.

Not a card: a modal is a form, so it has its own pure builder here, and the Discord channel only
sends it. One Label per answer field, in the schema's order (custom_id `oz0_f{i}`): a string select
for a boolean (Yes / No) or an enum of at most 25 values, a text input for the rest (short when the
field's maxLength is small, else a paragraph). A schema of more fields than a modal holds is
answered as one JSON object in a single paragraph input. Texts are cleaned and cut; Discord does not
draw markdown in a modal's labels.

Discord limits owned here: 5 components a modal; a title of 45 characters; a label of 45 and its
description of 100; a custom_id of 100; a text input of 4,000 characters; a placeholder of 100;
25 options a select, each label and value 100.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from oz0.renderers.safety import clean, clip, one_line

__all__ = ["ASK_AGENT_ID", "ASK_INPUT_ID", "ASK_MODAL_ID", "COMPONENTS_MAX", "CUSTOM_ID_MAX", "ask_modal",
           "modal_for", "submitted"]

COMPONENTS_MAX = 5          # top-level components of a modal
TITLE_MAX = 45
LABEL_MAX = 45
DESCRIPTION_MAX = 100
CUSTOM_ID_MAX = 100
TEXT_INPUT_MAX = 4_000
PLACEHOLDER_MAX = 100
OPTIONS_MAX = 25
OPTION_MAX = 100            # an option's label and value
NUMBER_MAX = 100            # characters of a number typed in a text input
SHORT_MAX = 150             # a field of at most this maxLength gets a one-line input
JSON_ID = "oz0_json"
ASK_MODAL_ID = "oz0_ask"    # the "Ask an agent about this" form, and its two fields
ASK_AGENT_ID = "oz0:ask:agent"
ASK_INPUT_ID = "oz0:ask:input"


def _fields(schema: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = set(schema.get("required") or ())
    return [(str(k), dict(v) if isinstance(v, Mapping) else {}, k in required) for k, v in props.items()]


def _select(custom_id: str, labels: list[str], *, required: bool, most: int = 1,
            chosen: Iterable[int] = ()) -> dict[str, Any]:
    picked = set(chosen)
    return {"type": 3, "custom_id": custom_id, "required": required, "min_values": 1 if required else 0,
            "max_values": most, "options": [{"label": clip(one_line(label), OPTION_MAX) or "-", "value": str(i),
                                             **({"default": True} if i in picked else {})}
                                            for i, label in enumerate(labels)]}


def _indices(values: list[Any], chosen: Any) -> list[int]:
    return [values.index(c) for c in (chosen if isinstance(chosen, list) else [chosen]) if c in values]


def _labels(prop: Mapping[str, Any]) -> list[str]:
    """A select's labels: its `enumNames` when there is one per value, else the values."""
    values, names = prop["enum"], prop.get("enumNames")
    labels = names if isinstance(names, list) and len(names) == len(values) else values
    return [v if isinstance(v, str) else json.dumps(v) for v in labels]


def _component(custom_id: str, prop: Mapping[str, Any], required: bool) -> dict[str, Any]:
    kind, values = prop.get("type"), prop.get("enum")
    if kind == "boolean":
        return _select(custom_id, ["Yes", "No"], required=required)
    items = prop.get("items") if kind == "array" and isinstance(prop.get("items"), Mapping) else None
    if items is not None and isinstance(items.get("enum"), list) and 0 < len(items["enum"]) <= OPTIONS_MAX:
        most = prop.get("maxItems") if isinstance(prop.get("maxItems"), int) and prop["maxItems"] > 0 else None
        return _select(custom_id, _labels(items), required=required, most=min(most or OPTIONS_MAX, len(items["enum"])),
                       chosen=_indices(items["enum"], prop.get("default") or []))
    if isinstance(values, list) and 0 < len(values) <= OPTIONS_MAX:
        return _select(custom_id, _labels(prop), required=required,
                       chosen=_indices(values, prop["default"]) if "default" in prop else ())
    most = prop.get("maxLength")
    most = min(most, TEXT_INPUT_MAX) if isinstance(most, int) and most > 0 else TEXT_INPUT_MAX
    if kind in ("integer", "number"):
        most = min(most, NUMBER_MAX)
    out: dict[str, Any] = {"type": 4, "custom_id": custom_id, "style": 1 if most <= SHORT_MAX else 2,
                           "required": required, "max_length": most}
    if isinstance(prop.get("minLength"), int) and 0 < prop["minLength"] <= most:
        out["min_length"] = prop["minLength"]
    hint = {"integer": "a whole number", "number": "a number"}.get(str(kind))
    if hint is None and kind not in (None, "string"):
        hint = f"JSON ({kind})"
    if hint:
        out["placeholder"] = hint
    if isinstance(prop.get("default"), str):
        out["value"] = clip(prop["default"], most, marker="")
    return out


def _label(text: str, component: dict[str, Any], description: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": 18, "label": clip(one_line(text), LABEL_MAX) or "-", "component": component}
    if description and one_line(description):
        out["description"] = clip(one_line(clean(description)), DESCRIPTION_MAX)
    return out


def modal_for(*, answer_schema: Mapping[str, Any], custom_id: str, title: str = "Answer") -> dict[str, Any]:
    """The modal's callback data. `custom_id` (the job and step) comes back with the submit;
    ValueError when it is over CUSTOM_ID_MAX."""
    if not 1 <= len(custom_id) <= CUSTOM_ID_MAX:
        raise ValueError(f"the modal's custom_id is {len(custom_id)} characters; Discord takes 1 to {CUSTOM_ID_MAX}")
    found = _fields(answer_schema)
    if len(found) > COMPONENTS_MAX:
        names = ", ".join(name for name, _, _ in found)
        text = {"type": 4, "custom_id": JSON_ID, "style": 2, "required": True, "max_length": TEXT_INPUT_MAX,
                "placeholder": clip(one_line("{" + ", ".join(f'"{n}": ...' for n, _, _ in found) + "}"),
                                    PLACEHOLDER_MAX)}
        components = [_label("Answer (JSON object)", text, f"Fields: {names}")]
    else:
        components = [_label(str(prop.get("title") or name), _component(f"oz0_f{i}", prop, required),
                             prop.get("description") if isinstance(prop.get("description"), str) else None)
                      for i, (name, prop, required) in enumerate(found)]
    return {"custom_id": custom_id, "title": clip(one_line(title), TITLE_MAX) or "Answer", "components": components}


def ask_modal(agents: list[str], text: str) -> dict[str, Any]:
    """The message command's form (callback data): which agent (a select of the agents the asker may
    run, or a text input when there are more than a select's 25 options) and the message's text as
    the editable input, cut to a text input's 4,000 characters."""
    if 0 < len(agents) <= OPTIONS_MAX:
        picker: dict[str, Any] = {"type": 3, "custom_id": ASK_AGENT_ID, "required": True, "min_values": 1,
                                  "max_values": 1, "options": [{"label": clip(one_line(a), OPTION_MAX) or "-",
                                                                "value": a} for a in agents]}
    else:
        picker = {"type": 4, "custom_id": ASK_AGENT_ID, "style": 1, "required": True, "max_length": OPTION_MAX,
                  "placeholder": "agent name (see /agents)"}
    value = clip(text, TEXT_INPUT_MAX, marker="")
    field: dict[str, Any] = {"type": 4, "custom_id": ASK_INPUT_ID, "style": 2, "required": False,
                             "max_length": TEXT_INPUT_MAX}
    if value:
        field["value"] = value
    return {"custom_id": ASK_MODAL_ID, "title": "Ask an agent",
            "components": [_label("Agent", picker, None), _label("Input", field, None)]}


def submitted(answer_schema: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """A modal submit's values (custom_id -> text, or a select's chosen indices joined by commas) as
    field -> what was entered: a select as the enum's value (or true/false), a multi-select as the list
    of its values; "" -> the text of the JSON input."""
    if JSON_ID in values:
        return {"": values[JSON_ID]}
    out: dict[str, Any] = {}
    for i, (name, prop, _) in enumerate(_fields(answer_schema)):
        value = values.get(f"oz0_f{i}")
        if value is None:
            continue
        component = _component("x", prop, False)
        if component["type"] == 3 and prop.get("type") == "array":
            choices = (prop.get("items") or {}).get("enum") or []
            out[name] = [choices[int(c)] for c in value.split(",") if c.isdigit() and int(c) < len(choices)]
        elif component["type"] == 3:
            if not value.isdigit():
                continue
            choice = int(value)
            if prop.get("type") == "boolean":
                out[name] = choice == 0
            elif choice < len(prop.get("enum") or ()):
                out[name] = prop["enum"][choice]
        else:
            out[name] = value
    return out
