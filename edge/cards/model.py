"""The neutral card: what the edge hands to every renderer, knowing no platform.

Cards are frozen and derived from the result; they hold references to the result's values and never
change them. `Card.to_dict()` is the JSON of `oz0 render --to card` (field names fixed by
ARCHITECTURE.md section 2). `Card.degrade()` turns any card into a text card, so a renderer that
does not know a form can still draw it (Errbot's rule: a card always degrades to text).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, Literal

from oz0.edge.contracts.schema import Violation
from oz0.edge.model.attachment import Attachment  # part of the card model: what a card carries

__all__ = [
    "FEEDBACK_ACTION",
    "FORMS",
    "Action",
    "Attachment",
    "Card",
    "DiffBody",
    "DiffLine",
    "KeyChange",
    "Status",
    "cell_text",
    "cell_texts",
]

Form = Literal["table", "key_values", "diff", "text"]
FORMS: tuple[str, ...] = ("table", "key_values", "diff", "text")


def cell_text(value: Any) -> str:
    """One value as a single line of text, the same on every platform (renderers escape it after)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value) if math.isfinite(value) else json.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def cell_texts(values: Sequence[Any], kinds: AbstractSet[type] | None = None) -> list[str]:
    """`cell_text` of every value, at C speed for a column of one JSON type (a table's usual column).

    `kinds` is the set of the values' types, when the caller has it already (Slack aligns a column by it)."""
    if kinds is None:
        kinds = set(map(type, values))
    if kinds <= {str}:
        return list(values)
    if kinds == {int} or (kinds == {float} and all(map(math.isfinite, values))):
        return _numbers_as_json(values) or list(map(int.__repr__ if kinds == {int} else float.__repr__, values))
    return [v if type(v) is str else cell_text(v) for v in values]


def _numbers_as_json(values: Sequence[int | float]) -> list[str] | None:
    """A column of ints or of finite floats as orjson writes it (about four times faster than `repr`
    for floats), or None where that is not what `cell_text` writes: orjson writes a float's shortest
    digits as `repr` does, but one under 1e-4 without an exponent (0.000099 for 9.9e-05) or with a
    shorter one (1e-7 for 1e-07), and no int past 64 bits."""
    try:
        data = _orjson_dumps()(values)
    except TypeError:  # orjson.JSONEncodeError: an int past 64 bits
        return None
    if b"e" in data or b"0.0000" in data:
        return None
    return data.decode()[1:-1].split(",")


@cache
def _orjson_dumps() -> Callable[[Any], bytes]:
    import orjson  # defers orjson to the first column of numbers: a card's model is imported without it

    return orjson.dumps


@dataclass(frozen=True)
class Status:
    """The status header of a QZX result (or an MCP `isError`, or a failed job)."""

    success: bool
    message: str
    error: str | None = None
    error_code: str | None = None
    warnings: tuple[str, ...] = ()
    command: str | None = None
    duration_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"success": self.success, "message": self.message}
        for name in ("error", "error_code", "command", "duration_ms"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


FEEDBACK_ACTION = "oz0_feedback"   # the action id of a card's feedback control; values "good:..." / "bad:..."


@dataclass(frozen=True)
class Action:
    """A button under a card ("Share in channel", "Yes", "Approve"), as neutral data.

    Renderers draw actions within their platform's limits (a Slack `actions` block: `action_id` is
    `id`, `value` is `value`; a Discord action row: `custom_id` is `f"{id}:{value}"`, at most 100
    characters), so an adapter never builds markup; it reads a click back by the same two fields.
    `style` is "default", "primary" or "danger".
    """

    id: str
    label: str
    value: str = ""
    style: Literal["default", "primary", "danger"] = "default"
    disabled: bool = False


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff: `op` is ' ' (context), '+', '-' or '@' (a hunk header)."""

    op: str
    text: str


@dataclass(frozen=True)
class KeyChange:
    key: str
    change: Literal["added", "removed", "changed"]
    before: Any = None
    after: Any = None


@dataclass(frozen=True)
class DiffBody:
    kind: Literal["lines", "keys"]
    before: str
    after: str
    lines: tuple[DiffLine, ...] = ()
    changes: tuple[KeyChange, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "before": self.before, "after": self.after}
        if self.kind == "lines":
            out["lines"] = [{"op": ln.op, "text": ln.text} for ln in self.lines]
        else:
            out["changes"] = [
                {"key": c.key, "change": c.change, **({"before": c.before} if c.change != "added" else {}),
                 **({"after": c.after} if c.change != "removed" else {})}
                for c in self.changes
            ]
        return out


@dataclass(frozen=True)
class Card:
    """A result, chosen into one form. Only the fields of its form are filled.

    - table: `columns` and `rows` (each row a tuple aligned with `columns`; a missing cell is None)
    - key_values: `keys` and `values` (aligned)
    - diff: `diff`, with `keys`/`values` for the other fields shown beside it
    - text: `text`, with `text_format` "markdown" or "json"
    `drawn` is False when the result was not drawn (too large, or it broke its contract): then
    `reason` says why, `violations` lists what broke, and `attachment` carries the full result.
    `full_result` is the result as compact JSON, as `choose_card` measured it for the size rule, kept
    so that a renderer that cuts the card can upload the whole result without serializing it again
    (empty for cards built by hand; not part of `to_dict()`). `actions` are buttons the renderer draws
    under the card (added by the adapter that asked, e.g. "Share in channel"). `files` are files the
    result carries besides its JSON (an MCP image, audio clip or embedded blob), which every renderer
    uploads beside the card where its platform allows and the card's notes name. `files_at` is where
    the channel delivering the card puts those files ("uploaded in this thread"), set by it before the
    card is drawn, so the renderer says so in the one drawing (not part of `to_dict()`).
    """

    form: Form
    title: str | None = None
    status: Status | None = None
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    keys: tuple[str, ...] = ()
    values: tuple[Any, ...] = ()
    diff: DiffBody | None = None
    text: str = ""
    text_format: Literal["markdown", "json", "plain"] = "markdown"
    drawn: bool = True
    reason: str | None = None
    violations: tuple[Violation, ...] = ()
    attachment: Attachment | None = None
    notes: tuple[str, ...] = ()
    full_result: bytes = field(default=b"", repr=False, compare=False)
    actions: tuple[Action, ...] = ()
    files: tuple[Attachment, ...] = ()
    files_at: str | None = None
    # non-empty: the platform's feedback control under the card (Slack's feedback buttons, Discord's
    # 👍 / 👎), each click carrying back f"{value}:{feedback}" under FEEDBACK_ACTION
    feedback: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The neutral card as JSON-ready data (`oz0 render --to card`)."""
        out: dict[str, Any] = {"form": self.form, "drawn": self.drawn}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.title is not None:
            out["title"] = self.title
        if self.status is not None:
            out["status"] = self.status.to_dict()
        if self.form == "table":
            out["columns"] = list(self.columns)
            out["rows"] = [list(r) for r in self.rows]
        if self.form in ("key_values", "diff") and (self.keys or self.form == "key_values"):
            out["keys"] = list(self.keys)
            out["values"] = list(self.values)
        if self.form == "diff" and self.diff is not None:
            out["diff"] = self.diff.to_dict()
        if self.form == "text":
            out["text"] = self.text
            out["text_format"] = self.text_format
        if self.violations:
            out["violations"] = [v.to_dict() for v in self.violations]
        if self.attachment is not None:
            out["attachment"] = self.attachment.to_dict()
        if self.notes:
            out["notes"] = list(self.notes)
        if self.files:
            out["files"] = [f.to_dict() for f in self.files]
        if self.actions:
            out["actions"] = [{"id": a.id, "label": a.label, "value": a.value, "style": a.style,
                               "disabled": a.disabled} for a in self.actions]
        return out

    def degrade(self) -> Card:
        """This card as a text card: what a renderer draws for a form it does not know."""
        if self.form == "text":
            return self
        return replace(self, form="text", text=self.plain_text(), text_format="plain", columns=(), rows=(),
                       keys=(), values=(), diff=None)

    def plain_text(self) -> str:
        """The body of the card as plain lines, with no markup at all (also the notification fallback)."""
        if self.form == "table":
            lines = [" | ".join(self.columns)]
            lines += [" | ".join(cell_text(c) for c in row) for row in self.rows]
            return "\n".join(lines) if self.columns else f"{len(self.rows)} rows"
        if self.form in ("key_values", "diff"):
            lines = [f"{k}: {cell_text(v)}" for k, v in zip(self.keys, self.values)]
            if self.diff is not None:
                if self.diff.kind == "lines":
                    lines += [f"{ln.op if ln.op != '@' else ''}{ln.text}" for ln in self.diff.lines]
                else:
                    for c in self.diff.changes:
                        if c.change == "added":
                            lines.append(f"+ {c.key}: {cell_text(c.after)}")
                        elif c.change == "removed":
                            lines.append(f"- {c.key}: {cell_text(c.before)}")
                        else:
                            lines.append(f"~ {c.key}: {cell_text(c.before)} -> {cell_text(c.after)}")
            return "\n".join(lines)
        return self.text
