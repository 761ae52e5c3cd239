"""Run forms of the web console, generated from an agent's input contract.

A form is derived data, like a card: fields in `x-oz0-order` order, then the order the schema is
written in (local `$ref` and `allOf` followed), each with the widget its type asks for. Submitted
values are turned back into JSON by the same field list, and the runtime then validates the whole
input against the contract: the form never decides what is valid, it only helps to type it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oz0.edge.contracts.answer_fields import labels_of
from oz0.edge.contracts.json_data import JsonDataError, loads_data
from oz0.edge.contracts.schema import Contract
from oz0.edge.contracts.view import SchemaView

__all__ = ["TEXT_FIELD", "Field", "FormError", "fields_for", "form_input"]

Widget = Literal["text", "textarea", "integer", "number", "checkbox", "select", "multiselect", "lines", "json"]
TEXT_FIELD = "text"
MAX_FIELDS = 200


class FormError(ValueError):
    """A submitted value that cannot be read as its field's type: names the field and why."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class Field:
    """One form field: the property it fills, the widget that types it, and what the schema says."""

    name: str
    widget: Widget
    required: bool = False
    label: str = ""
    description: str = ""
    choices: tuple[tuple[str, str], ...] = ()  # (submitted value as JSON, shown text)
    default: str = ""
    item_type: str = ""
    picked: tuple[str, ...] = ()  # a multiselect's chosen values (as JSON) by default

    def choice_id(self, number: int) -> str:
        """The form name of a multiselect's choice: one checkbox per value."""
        return f"{self.html_id}-{number}"

    @property
    def html_id(self) -> str:
        return "f-" + "".join(c if c.isalnum() or c in "-_" else f"_{ord(c):x}_" for c in self.name)


def fields_for(contract: Contract | None) -> tuple[Field, ...]:
    """The fields of an agent's run form; a text agent (no contract) gets one textarea."""
    if contract is None:
        return (Field(TEXT_FIELD, "textarea", required=True, label="Text"),)
    view = SchemaView(contract, contract.schema if isinstance(contract.schema, dict) else {}, contract.base)
    layers = list(view.layers())
    props = view.properties()
    if _type_of(layers) not in ("object", None) or not props:
        return (Field(TEXT_FIELD, "json", required=True, label="Input (JSON)",
                      description=_first(layers, "description") or ""),)
    required = {n for layer in layers for n in layer.get("required", []) if isinstance(n, str)}
    order = _first(layers, "x-oz0-order")
    names = dict.fromkeys(n for n in (order if isinstance(order, list) else []) if n in props)
    names.update(dict.fromkeys(props))
    return tuple(_field(view.property(name), name, name in required) for name in list(names)[:MAX_FIELDS])


def form_input(fields: Iterable[Field], form: Mapping[str, str]) -> Any:
    """The JSON input a submitted form stands for (text for a text agent); FormError for unreadable values.

    Empty optional fields are left out, so the contract's defaults and `required` rules apply as written.
    """
    fields = tuple(fields)
    if len(fields) == 1 and fields[0].name == TEXT_FIELD and fields[0].widget in ("textarea", "json"):
        raw = form.get(fields[0].html_id, "")
        if fields[0].widget == "textarea":
            return raw
        return _json(fields[0], raw)
    out: dict[str, Any] = {}
    for field in fields:
        raw = form.get(field.html_id)
        if field.widget == "checkbox":
            out[field.name] = raw is not None
            continue
        if field.widget == "multiselect":
            chosen = [json.loads(value) for i, (value, _) in enumerate(field.choices) if field.choice_id(i) in form]
            if chosen or field.required:
                out[field.name] = chosen
            continue
        if raw is None or raw.strip() == "":
            continue
        out[field.name] = _value(field, raw)
    return out


def _value(field: Field, raw: str) -> Any:
    if field.widget in ("text", "textarea"):
        return raw
    if field.widget == "integer":
        try:
            return int(raw.strip())
        except ValueError:
            raise FormError(field.name, f"{raw.strip()[:40]!r} is not a whole number") from None
    if field.widget == "number":
        try:
            number = float(raw.strip())
        except ValueError:
            raise FormError(field.name, f"{raw.strip()[:40]!r} is not a number") from None
        if not math.isfinite(number):
            raise FormError(field.name, "must be a finite number")
        return int(number) if number.is_integer() and "." not in raw and "e" not in raw.lower() else number
    if field.widget == "select":
        allowed = {value for value, _ in field.choices}
        if raw not in allowed:
            raise FormError(field.name, "is not one of the listed choices")
        return json.loads(raw)
    if field.widget == "lines":
        items = [line.strip() for line in raw.splitlines() if line.strip()]
        if field.item_type in ("integer", "number"):
            sub = Field(field.name, field.item_type)  # type: ignore[arg-type]
            return [_value(sub, item) for item in items]
        return items
    return _json(field, raw)


def _json(field: Field, raw: str) -> Any:
    try:
        return loads_data(raw)
    except JsonDataError as exc:
        raise FormError(field.name, f"is not JSON data: {exc.message}") from None
    except json.JSONDecodeError as exc:
        raise FormError(field.name, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def _field(view: SchemaView, name: str, required: bool) -> Field:
    layers = list(view.layers())
    label = _first(layers, "title")
    common = {
        "required": required,
        "label": label if isinstance(label, str) and label.strip() else name,
        "description": str(_first(layers, "description") or ""),
    }
    default = _first(layers, "default")
    enum = _first(layers, "enum")
    const = _first(layers, "const")
    if const is not None and enum is None:
        enum = [const]
    if isinstance(enum, list) and enum:
        choices = _choices(enum, _first(layers, "enumNames"))
        return Field(name, "select", choices=choices,
                     default=json.dumps(default, ensure_ascii=False) if default is not None else "", **common)
    kind = _type_of(layers)
    shown_default = "" if default is None or isinstance(default, (dict, list)) else str(default)
    if kind == "boolean":
        if required:
            return Field(name, "checkbox", default="true" if default is True else "", **common)
        return Field(name, "select", choices=(("true", "true"), ("false", "false")),
                     default=json.dumps(default) if isinstance(default, bool) else "", **common)
    if kind == "integer":
        return Field(name, "integer", default=shown_default, **common)
    if kind == "number":
        return Field(name, "number", default=shown_default, **common)
    if kind == "string":
        long = _first(layers, "x-oz0-multiline") is True or _first(layers, "contentMediaType") is not None
        max_length = _first(layers, "maxLength")
        if isinstance(max_length, int) and max_length > 200:
            long = True
        return Field(name, "textarea" if long else "text", default=shown_default, **common)
    if kind == "array":
        items = list(view.items().layers())
        item_type = _type_of(items)
        if item_type in ("string", "integer", "number") and not _first(items, "enum"):
            return Field(name, "lines", item_type=item_type, **common)
        values = _first(items, "enum")
        if isinstance(values, list) and values:
            return Field(name, "multiselect", choices=_choices(values, _first(items, "enumNames")),
                         picked=tuple(json.dumps(v, ensure_ascii=False) for v in default)
                         if isinstance(default, list) else (), **common)
    return Field(name, "json",
                 default=json.dumps(default, ensure_ascii=False, indent=2) if default is not None else "", **common)


def _choices(values: list[Any], names: Any) -> tuple[tuple[str, str], ...]:
    """(value as JSON, label) of each choice: the label is its `enumNames` entry, else the value."""
    return tuple((json.dumps(v, ensure_ascii=False), shown)
                 for v, shown in zip(values, labels_of({"enum": values, "enumNames": names})))


def _first(layers: Iterable[dict[str, Any]], key: str) -> Any:
    for layer in layers:
        if key in layer:
            return layer[key]
    return None


def _type_of(layers: list[dict[str, Any]]) -> str | None:
    kind = _first(layers, "type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    return kind if isinstance(kind, str) else None
