"""JMESPath over a flow's state `{input, steps: {ID: {output, answer}}}`: the `if:` conditions, the
`input:` mappings and the `{expr}` holes of an `ask` text, compiled once and checked by lint."""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

import jmespath
from jmespath.exceptions import JMESPathError

__all__ = [
    "ExpressionError",
    "MAX_HOLE_CHARS",
    "compile_expression",
    "evaluate",
    "field_paths",
    "holes",
    "render_text",
    "truthy",
]

MAX_HOLE_CHARS = 500  # what one `{expr}` of an ask text may put into the question
_HOLE = re.compile(r"\{([^{}]+)\}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class ExpressionError(ValueError):
    """An expression that does not parse or evaluate: the expression and why."""


def compile_expression(expr: str) -> Any:
    """The compiled JMESPath expression; ExpressionError naming it when it does not parse."""
    try:
        return jmespath.compile(expr)
    except JMESPathError as exc:
        first = str(exc).splitlines()[0]
        raise ExpressionError(f"{expr!r} is not a JMESPath expression ({first})") from None


def evaluate(expr: str, state: Mapping[str, Any]) -> Any:
    """The value of `expr` over the flow's state (null for a path that is not there)."""
    try:
        return compile_expression(expr).search(dict(state))
    except JMESPathError as exc:
        raise ExpressionError(f"{expr!r} could not be evaluated: {exc}") from None


def truthy(value: Any) -> bool:
    """JMESPath's truth: false, null, empty strings, lists and objects are false; everything else true."""
    return not (value is None or value is False or value in ("", [], {}))


def holes(text: str) -> list[str]:
    """The expressions of an ask text's `{expr}` holes, in order."""
    return [m.group(1).strip() for m in _HOLE.finditer(text)]


def render_text(text: str, state: Mapping[str, Any]) -> str:
    """The ask text with each `{expr}` replaced by its value as plain text (strings as they are, other
    values as JSON), control characters removed and each value cut at MAX_HOLE_CHARS: a value fills
    a hole, it never adds markup of its own (renderers draw the question as plain text)."""
    import orjson

    def fill(match: re.Match[str]) -> str:
        value = evaluate(match.group(1).strip(), state)
        shown = value if isinstance(value, str) else orjson.dumps(value).decode()
        shown = _CONTROL.sub("", shown)
        return shown if len(shown) <= MAX_HOLE_CHARS else shown[: MAX_HOLE_CHARS - 1] + "…"

    return _HOLE.sub(fill, text)


def field_paths(expr: str) -> Iterator[tuple[str, ...]]:
    """Every chain of plain field names the expression reads from the root (`steps.review.output` gives
    ("steps", "review", "output")), for lint's references and the contracts it can follow."""
    yield from _chains(compile_expression(expr).parsed, root=True)


def _chains(node: Mapping[str, Any], *, root: bool) -> Iterator[tuple[str, ...]]:
    kind = node.get("type")
    children = node.get("children") or []
    if kind == "field" and root:
        yield (node["value"],)
        return
    if kind == "subexpression" and root:
        names: list[str] = []
        for child in children:
            if child.get("type") != "field":
                break
            names.append(child["value"])
        if names:
            yield tuple(names)
            rest = children[len(names):]
            for child in rest:
                yield from _chains(child, root=False)
            return
    if kind in ("index_expression", "projection", "filter_projection", "value_projection",
                "flatten", "pipe") and children:
        yield from _chains(children[0], root=root)
        for child in children[1:]:
            yield from _chains(child, root=False)
        return
    for child in children:
        yield from _chains(child, root=root and kind not in ("current",))
