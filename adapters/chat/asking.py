"""A job's question in chat, in neutral terms: its card, its buttons, the card once answered, and an
answer typed in a modal turned into JSON for the validator.

Buttons answer at once when the answer schema is one boolean (Yes / No), one enum of at most
MAX_BUTTONS values (a button each) or no field at all (OK); anything else gets one "Answer…" button
that opens the platform's modal (`oz0.renderers.slack_modal`, `oz0.renderers.discord_modal`). A
button's value names the job, a digest of the step (a button of an earlier question never answers a
later one) and the choice, and stays short enough for Discord's 100-character custom_id.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oz0.edge.cards.model import Action, Card
from oz0.edge.contracts.answer_fields import labels_of
from oz0.edge.contracts.json_data import loads_data

__all__ = [
    "ANSWER_ACTION",
    "FORM",
    "MAX_BUTTONS",
    "AnswerPick",
    "answered_card",
    "buttons",
    "content_from",
    "content_of",
    "fields",
    "pick_of",
    "question_card",
    "step_digest",
    "who",
]

ANSWER_ACTION = "oz0_answer"     # the action ids are f"{ANSWER_ACTION}_{choice}" (unique in a Slack block)
MAX_BUTTONS = 5                  # one enum of more values is answered in the modal (a select there)
FORM = "form"                    # the choice of the "Answer…" button


@dataclass(frozen=True)
class AnswerPick:
    """A click on a question's button, read back from its value: which job, step digest, choice."""

    job_id: str
    digest: str
    choice: str

    @property
    def value(self) -> str:
        return f"{self.job_id}/{self.digest}/{self.choice}"


def step_digest(step: str) -> str:
    return hashlib.sha256(step.encode("utf-8")).hexdigest()[:8]


def pick_of(value: str) -> AnswerPick | None:
    """The pick a button's value names, or None for a value that is not one of ours."""
    parts = value.split("/")
    if len(parts) != 3 or not all(parts):
        return None
    return AnswerPick(*parts)


def fields(schema: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """(name, property schema, required) of an answer schema's fields, in the schema's order."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    required = set(schema.get("required") or ()) if isinstance(schema, Mapping) else set()
    if not isinstance(props, Mapping):
        return []
    return [(str(k), dict(v) if isinstance(v, Mapping) else {}, k in required) for k, v in props.items()]


def _choices(schema: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]] | None:
    """(choice, label, answer) for each button, or None when the answer needs the modal."""
    found = fields(schema)
    if not found:
        return [("ok", "OK", {})]
    if len(found) != 1:
        return None
    name, prop, _ = found[0]
    if prop.get("type") == "boolean":
        return [("yes", "Yes", {name: True}), ("no", "No", {name: False})]
    values = prop.get("enum")
    if isinstance(values, list) and 0 < len(values) <= MAX_BUTTONS:
        return [(str(i), label, {name: v}) for i, (v, label) in enumerate(zip(values, labels_of(prop)))]
    return None


def content_of(schema: Mapping[str, Any], choice: str) -> dict[str, Any] | None:
    """The answer a button's choice stands for (None: not a choice of this schema)."""
    for key, _, content in _choices(schema) or ():
        if key == choice:
            return content
    return None


def buttons(job_id: str, step: str, schema: Mapping[str, Any]) -> tuple[Action, ...]:
    """The question's buttons: one per answer when the schema allows it, else "Answer…"."""
    digest = step_digest(step)
    choices = _choices(schema)
    if choices is None:
        pick = AnswerPick(job_id, digest, FORM)
        return (Action(f"{ANSWER_ACTION}_{FORM}", "Answer…", value=pick.value, style="primary"),)
    styles = {"yes": "primary", "no": "danger", "ok": "primary"}
    return tuple(Action(f"{ANSWER_ACTION}_{key}", label, value=AnswerPick(job_id, digest, key).value,
                        style=styles.get(key, "default"))  # type: ignore[arg-type]
                 for key, label, _ in choices)


def _when(at: float) -> str:
    return time.strftime("%H:%M UTC", time.gmtime(at))


def question_card(job_id: str, question: Any) -> Card:
    """The question as a card with its buttons. `question` is an `edge.runtime.questions.Question`."""
    notes = [f"Job {job_id}, step {question.step}."]
    if question.expires_at is not None:
        notes.append(f"Waits for an answer until {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(question.expires_at))}.")
    title = f"{question.source} asks" if question.source else "A question"
    return Card(form="text", title=title, text=question.message, text_format="plain", notes=tuple(notes),
                actions=buttons(job_id, question.step, question.answer_schema))


def who(by: str, platform: str) -> str:
    """The answerer as people here read it: "@U123" for one of this platform's users, else as recorded."""
    prefix = f"{platform}:"
    return "@" + by[len(prefix):] if by.startswith(prefix) else by


def answered_card(question: Any, answer: Any, *, platform: str, by_name: str | None = None) -> Card:
    """The question's card once answered: what was decided, by whom (`by_name`: their display name)
    and when; no buttons."""
    when = _when(answer.at)
    by = by_name or who(answer.by, platform)
    if answer.action == "timeout":
        line = f"No answer in time (closed at {when})"
    elif answer.action in ("decline", "cancel"):
        line = f"{answer.action.capitalize()}d by {by} at {when}"
    else:
        content = answer.content or {}
        choices = _choices(question.answer_schema) or []
        label = next((lbl for _, lbl, c in choices if c == content), None)
        said = label if label is not None else ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}"
                                                         for k, v in content.items())
        line = f"{said or 'Answered'} — by {by} at {when}"
    notes = (f"Asked by {question.source}.",) if question.source else ()
    return Card(form="text", title=line, text=question.message, text_format="plain", notes=notes)


def content_from(schema: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    """What a modal sent (field -> text, or "" -> a whole JSON object) as the answer's JSON.

    Text becomes the field's type where it reads as one; otherwise it stays text, so the validator
    names the field and the rule it breaks. An empty optional field is left out."""
    if "" in raw:
        try:
            whole = loads_data(str(raw[""]))
        except ValueError as exc:
            whole = {"": f"not JSON: {exc}"}   # refused by the schema, with the path and rule
        return whole if isinstance(whole, dict) else {"": whole}
    out: dict[str, Any] = {}
    for name, prop, required in fields(schema):
        if name not in raw:
            continue
        value = raw[name]
        if isinstance(value, str):
            if value == "" and not required:
                continue
            value = _typed(prop.get("type"), value)
        out[name] = value
    return out


def _typed(kind: Any, text: str) -> Any:
    try:
        if kind == "integer":
            return int(text.strip())
        if kind == "number":
            number = float(text.strip())
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        if kind == "boolean":
            return {"true": True, "false": False}.get(text.strip().lower(), text)
        if kind not in (None, "string"):
            return loads_data(text)
    except ValueError:
        return text
    return text
