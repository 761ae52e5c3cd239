"""JMESPath over a flow's state `{input, steps: {ID: {output, answer}}}`: the `if:` conditions, the
`input:` mappings and the `{expr}` holes of an `ask` text, compiled once and checked by lint.

An expression may build values much larger than its state (`[@, @][]` doubles a list; ten of them
make it a thousand times larger), so evaluation is bounded while it runs: every intermediate result
is measured (values plus string characters, shared parts counted each time they appear, as they
would be written out) and may hold at most MAX_EXPRESSION_GROWTH more than the state itself, and
evaluation stops after MAX_EXPRESSION_S seconds. Either refuses the expression at once, naming the
limit, before memory or time run away.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.visitor import TreeInterpreter

from oz0.edge.errors import Oz0Error

__all__ = [
    "MAX_EXPRESSION_GROWTH",
    "MAX_EXPRESSION_S",
    "MAX_HOLE_CHARS",
    "ExpressionError",
    "compile_expression",
    "evaluate",
    "field_paths",
    "holes",
    "render_text",
    "truthy",
]

MAX_HOLE_CHARS = 500  # what one `{expr}` of an ask text may put into the question
MAX_EXPRESSION_GROWTH = 100_000  # values and characters an intermediate result may hold beyond the state's
MAX_EXPRESSION_S = 2.0
_HOLE = re.compile(r"\{([^{}]+)\}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class ExpressionError(Oz0Error, ValueError):
    """An expression that does not parse or evaluate: the expression and why."""


def compile_expression(expr: str) -> Any:
    """The compiled JMESPath expression; ExpressionError naming it when it does not parse."""
    try:
        return jmespath.compile(expr)
    except JMESPathError as exc:
        first = str(exc).splitlines()[0]
        raise ExpressionError(f"{expr!r} is not a JMESPath expression ({first})") from None


def evaluate(expr: str, state: Mapping[str, Any]) -> Any:
    """The value of `expr` over the flow's state (null for a path that is not there); ExpressionError
    when it does not evaluate or goes past MAX_EXPRESSION_GROWTH or MAX_EXPRESSION_S."""
    parsed = compile_expression(expr).parsed
    root = dict(state)
    try:
        return _Bounded(expr, root).visit(parsed, root)
    except JMESPathError as exc:
        raise ExpressionError(f"{expr!r} could not be evaluated: {exc}") from None


class _Bounded(TreeInterpreter):
    """jmespath's interpreter, measuring each intermediate result and the time as it goes (`visit`
    is the one method every node's evaluation passes through)."""

    def __init__(self, expr: str, root: Any) -> None:
        super().__init__()
        self._expr = expr
        self._deadline = time.monotonic() + MAX_EXPRESSION_S
        self._sizes: dict[int, int] = {}
        self._visits = 0
        self._kept: list[Any] = []  # the measured containers, alive so that their ids stay theirs
        self._limit = float("inf")  # the state is what it is (its parts were checked as they came)
        self._limit = self._size(root) + MAX_EXPRESSION_GROWTH

    def visit(self, node: Any, *args: Any, **kwargs: Any) -> Any:
        self._visits += 1
        if not self._visits % 256 and time.monotonic() > self._deadline:
            raise ExpressionError(f"{self._expr!r} took more than {MAX_EXPRESSION_S:g} s to evaluate: refused")
        result = super().visit(node, *args, **kwargs)
        if isinstance(result, (list, dict)):
            if id(result) not in self._sizes:
                self._size(result)
        elif isinstance(result, str) and len(result) >= self._limit:
            raise self._too_large()
        return result

    def _too_large(self) -> ExpressionError:
        return ExpressionError(f"{self._expr!r} builds a value of more than {self._limit:,} values and characters, "
                               f"{MAX_EXPRESSION_GROWTH:,} more than the flow's state holds: refused")

    def _size(self, value: Any) -> int:
        """Values plus string characters of `value` as written out; each container measured once."""
        if not isinstance(value, (list, dict)):
            return 1 + len(value) if isinstance(value, str) else 1
        sizes = self._sizes
        stack = [value]
        while stack:
            item = stack[-1]
            if id(item) in sizes:
                stack.pop()
                continue
            kids = list(item.values()) if isinstance(item, dict) else item
            pending = [k for k in kids if isinstance(k, (list, dict)) and id(k) not in sizes]
            if pending:
                stack.extend(pending)
                continue
            total = 1 + sum(sizes[id(k)] if isinstance(k, (list, dict)) else
                            (1 + len(k) if isinstance(k, str) else 1) for k in kids)
            if isinstance(item, dict):
                total += sum(len(k) for k in item)
            if total > self._limit:
                raise self._too_large()
            sizes[id(item)] = total
            self._kept.append(item)
            stack.pop()
        return sizes[id(value)]


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
