"""Two schemas compared keyword by keyword, side by side, with the rules of COMPATIBILITY.md.

Every rule is an *effect* on the set of values a schema allows (it widens, narrows, or changes it,
or it is only an annotation); the direction then decides whether that breaks callers: an input must
accept everything it accepted, an output must not allow anything it excluded. Schemas are compared
recursively through properties and items, after resolving local `$ref`s; a `$ref` that leaves the
document is an error, and a keyword the check does not compare (`anyOf` and `oneOf` among them)
counts as breaking when it changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from oz0.edge.contracts.changes import Change, resolve_pointer
from oz0.edge.contracts.pointer import json_path as _json_path

__all__ = [
    "ANNOTATIONS",
    "CHANGES",
    "MAX_COMPARE_DEPTH",
    "NARROWS",
    "NEUTRAL",
    "WIDENS",
    "SchemaComparison",
]

MAX_COMPARE_DEPTH = 64
MAX_VALUE_CHARS = 60

# (breaks an input, breaks an output) for each effect a change has on the values a schema allows.
WIDENS = (False, True)
NARROWS = (True, False)
CHANGES = (True, True)
NEUTRAL = (False, False)

ANNOTATIONS = frozenset({"title", "description", "examples", "x-oz0-order", "$comment"})
_IGNORED = frozenset({"$defs", "definitions", "$schema"})
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_OBJECT = ("properties", "required", "additionalProperties")
_ARRAY = ("items", "prefixItems")


def _show(value: Any) -> str:
    text = f"'{value}'" if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _types(schema: Mapping[str, Any]) -> frozenset[str] | None:
    value = schema.get("type")
    if value is None:
        return None
    return frozenset([value] if isinstance(value, str) else value)


def _covers(wide: frozenset[str] | None, narrow: frozenset[str] | None) -> bool:
    if wide is None:
        return True
    if narrow is None:
        return False
    return all(t in wide or (t == "integer" and "number" in wide) for t in narrow)


def _type_words(types: frozenset[str] | None) -> str:
    return "any type" if types is None else " or ".join(sorted(types))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class SchemaComparison:
    """One direction of one agent: walks two schemas side by side and collects changes."""

    def __init__(self, agent: str, direction: str, old_doc: Mapping[str, Any], new_doc: Mapping[str, Any],
                 changes: list[Change]) -> None:
        self.agent = agent
        self.direction = direction
        self.old_doc = old_doc
        self.new_doc = new_doc
        self.changes = changes
        self._in_progress: set[tuple[str, str]] = set()

    @property
    def is_input(self) -> bool:
        return self.direction == "input"

    def add(self, path: tuple[Any, ...], effect: tuple[bool, bool], what: str) -> None:
        breaking = effect[0] if self.is_input else effect[1]
        self.changes.append(Change(self.agent, self.direction, _path(path), what, breaking))

    # bodies

    def body(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        old_types, new_types = set(old or {}), set(new or {})
        verb = "takes" if self.is_input else "returns"
        if old_types == new_types:
            for media in sorted(old_types & {"application/json"}):
                self.schema((old or {})[media].get("schema", True), (new or {})[media].get("schema", True), ())
            return
        if old_types == {"text/plain"} and new_types == {"application/json"}:
            self.add((), NARROWS, f"{verb} JSON that matches a schema instead of text")
        elif old_types == {"application/json"} and new_types == {"text/plain"}:
            self.add((), WIDENS, f"{verb} text instead of JSON")
        else:
            self.add((), CHANGES, f"{verb} {', '.join(sorted(new_types)) or 'nothing'} instead of "
                                  f"{', '.join(sorted(old_types)) or 'nothing'}")

    # schemas

    def schema(self, old: Any, new: Any, path: tuple[Any, ...], depth: int = 0) -> None:
        p = _path(path)
        if depth > MAX_COMPARE_DEPTH:
            self.add(path, CHANGES, f"{p} cannot be compared: it nests deeper than {MAX_COMPARE_DEPTH} levels")
            return
        if old == new and not _has_ref(old):
            return
        if isinstance(old, Mapping) and isinstance(new, Mapping) and ("$ref" in old or "$ref" in new):
            self._refs(old, new, path, depth)
            return
        if old is False or new is False:
            if old is False:
                self.add(path, WIDENS, f"{p} now allows values; it allowed none")
            else:
                self.add(path, NARROWS, f"{p} no longer allows any value")
            return
        old = {} if old is True else old
        new = {} if new is True else new
        if not isinstance(old, Mapping) or not isinstance(new, Mapping):
            self.add(path, CHANGES, f"{p} cannot be compared: a schema must be an object or a boolean")
            return
        self._keywords(old, new, path, depth)

    def _refs(self, old: Mapping[str, Any], new: Mapping[str, Any], path: tuple[Any, ...], depth: int) -> None:
        old_ref, new_ref = old.get("$ref"), new.get("$ref")
        if old_ref is not None and new_ref is not None:
            if old_ref != new_ref:
                self.add(path, CHANGES, f"{_path(path)} now refers to {self._short(new_ref)} instead of "
                                        f"{self._short(old_ref)}")
                return
            key = (old_ref, new_ref)
            if key in self._in_progress:
                return
            self._in_progress.add(key)
            try:
                self.schema(resolve_pointer(self.old_doc, old_ref), resolve_pointer(self.new_doc, new_ref),
                            path, depth + 1)
            finally:
                self._in_progress.discard(key)
            rest_old = {k: v for k, v in old.items() if k != "$ref"}
            rest_new = {k: v for k, v in new.items() if k != "$ref"}
            if rest_old or rest_new:
                self._keywords(rest_old, rest_new, path, depth)
            return
        self.schema(self._inline(old, self.old_doc, path), self._inline(new, self.new_doc, path), path, depth + 1)

    def _inline(self, node: Mapping[str, Any], document: Mapping[str, Any], path: tuple[Any, ...]) -> Any:
        """A `$ref` with its siblings as one schema, when they do not overlap; else CompatError."""
        if "$ref" not in node:
            return node
        target = resolve_pointer(document, node["$ref"])
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if not siblings:
            return target
        if isinstance(target, Mapping) and not (siblings.keys() - ANNOTATIONS) & target.keys():
            return {**target, **siblings}
        if target is True:
            return siblings
        return {"allOf": [target, siblings]}

    def _short(self, ref: str) -> str:
        match = re.match(r"^#/components/schemas/[^/]+(/.*)?$", ref)
        return "#" + (match[1] or "") if match else ref

    def _keywords(self, old: Mapping[str, Any], new: Mapping[str, Any], path: tuple[Any, ...], depth: int) -> None:
        p = _path(path)
        keys = list(old) + [k for k in new if k not in old]
        if any(k in _OBJECT for k in keys):
            self._object(old, new, path, depth)
        if any(k in _ARRAY for k in keys):
            self._array(old, new, path, depth)
        for key in keys:
            if key in _OBJECT or key in _ARRAY or key in _IGNORED or key == "$ref":
                continue
            has_old, has_new = key in old, key in new
            ov, nv = old.get(key), new.get(key)
            if has_old and has_new and self._canon(ov, self.old_doc) == self._canon(nv, self.new_doc):
                continue
            if key in ANNOTATIONS:
                self.add(path, NEUTRAL, f"{key} of {p} changed")
            elif key == "type":
                self._type(old, new, p, path)
            elif key == "enum" and isinstance(ov or [], list) and isinstance(nv or [], list):
                self._enum(ov, nv, has_old, has_new, p, path)
            elif key == "const":
                if not has_old:
                    self.add(path, NARROWS, f"{p} must now be {_show(nv)}" if self.is_input
                             else f"{p} is now always {_show(nv)}")
                elif not has_new:
                    self.add(path, WIDENS, f"{p} is no longer fixed to {_show(ov)}")
                else:
                    self.add(path, CHANGES, f"{p} changed from {_show(ov)} to {_show(nv)}")
            elif key in _UPPER_BOUNDS + _LOWER_BOUNDS and (ov is None or _number(ov)) and (nv is None or _number(nv)):
                self._bound(key, ov, nv, p, path)
            elif key == "multipleOf" and (ov is None or _number(ov)) and (nv is None or _number(nv)):
                self._multiple_of(ov, nv, p, path)
            elif key in ("pattern", "format"):
                if not has_old:
                    self.add(path, NARROWS, f"{p} must now match {key} {_show(nv)}")
                elif not has_new:
                    self.add(path, WIDENS, f"{p} no longer has to match {key} {_show(ov)}")
                else:
                    self.add(path, CHANGES, f"{key} of {p} changed from {_show(ov)} to {_show(nv)}")
            elif key in ("anyOf", "oneOf") and isinstance(ov or [], list) and isinstance(nv or [], list):
                self._branches(key, ov, nv, has_old, has_new, p, path)
            elif not has_old:
                self.add(path, CHANGES, f"{key} added to {p} (the check does not compare {key})")
            elif not has_new:
                self.add(path, CHANGES, f"{key} removed from {p} (the check does not compare {key})")
            else:
                self.add(path, CHANGES, f"{key} of {p} changed (the check does not compare {key})")

    def _type(self, old: Mapping[str, Any], new: Mapping[str, Any], p: str, path: tuple[Any, ...]) -> None:
        try:
            ot, nt = _types(old), _types(new)
        except TypeError:
            self.add(path, CHANGES, f"type of {p} changed")
            return
        wider, narrower = _covers(nt, ot), _covers(ot, nt)
        words = f"from {_type_words(ot)} to {_type_words(nt)}"
        if wider and narrower:
            return
        if wider:
            self.add(path, WIDENS, f"type of {p} widened {words}")
        elif narrower:
            self.add(path, NARROWS, f"type of {p} narrowed {words}")
        else:
            self.add(path, CHANGES, f"type of {p} changed {words}")

    def _enum(self, ov: list[Any] | None, nv: list[Any] | None, has_old: bool, has_new: bool, p: str,
              path: tuple[Any, ...]) -> None:
        if not has_old:
            self.add(path, NARROWS, f"{p} is now limited to the values {', '.join(_show(v) for v in nv or [])}")
            return
        if not has_new:
            self.add(path, WIDENS, f"{p} is no longer limited to the values {', '.join(_show(v) for v in ov or [])}")
            return
        old_keys = {_canon_key(v): v for v in ov or []}
        new_keys = {_canon_key(v): v for v in nv or []}
        for key, value in old_keys.items():
            if key not in new_keys:
                self.add(path, NARROWS, f"{p} no longer accepts the enum value {_show(value)}" if self.is_input
                         else f"{p} no longer holds the enum value {_show(value)}")
        for key, value in new_keys.items():
            if key not in old_keys:
                self.add(path, WIDENS, f"{p} accepts a new enum value {_show(value)}" if self.is_input
                         else f"{p} may hold a new enum value {_show(value)}")

    def _bound(self, key: str, ov: Any, nv: Any, p: str, path: tuple[Any, ...]) -> None:
        upper = key in _UPPER_BOUNDS
        if ov is None:
            self.add(path, NARROWS, f"{p} now has {key} {_show(nv)}")
        elif nv is None:
            self.add(path, WIDENS, f"{p} no longer has {key} (it was {_show(ov)})")
        else:
            lowered = nv < ov
            effect = NARROWS if lowered == upper else WIDENS
            self.add(path, effect, f"{key} of {p} {'lowered' if lowered else 'raised'} from {_show(ov)} to {_show(nv)}")

    def _multiple_of(self, ov: Any, nv: Any, p: str, path: tuple[Any, ...]) -> None:
        if ov is None:
            self.add(path, NARROWS, f"{p} must now be a multiple of {_show(nv)}")
            return
        if nv is None:
            self.add(path, WIDENS, f"{p} no longer has to be a multiple of {_show(ov)}")
            return
        old, new = Fraction(str(ov)), Fraction(str(nv))
        if new and (old / new).denominator == 1:
            effect = WIDENS
        elif old and (new / old).denominator == 1:
            effect = NARROWS
        else:
            effect = CHANGES
        self.add(path, effect, f"multipleOf of {p} changed from {_show(ov)} to {_show(nv)}")

    def _branches(self, key: str, ov: list[Any] | None, nv: list[Any] | None, has_old: bool, has_new: bool,
                  p: str, path: tuple[Any, ...]) -> None:
        """anyOf/oneOf are not compared (a oneOf branch added may reject a value two branches now match,
        an anyOf branch changed may do anything), so any change breaks both directions; the words still
        say which branches came and went."""
        why = f" (the check does not compare {key}, so any change to it counts as breaking)"
        if not has_old or not has_new:
            self.add(path, CHANGES, f"{key} {'added to' if not has_old else 'removed from'} {p}{why}")
            return
        old_keys = {_canon_key(self._canon(b, self.old_doc)): b for b in ov or []}
        new_keys = {_canon_key(self._canon(b, self.new_doc)): b for b in nv or []}
        lost = [_branch_words(b) for c, b in old_keys.items() if c not in new_keys]
        gained = [_branch_words(b) for c, b in new_keys.items() if c not in old_keys]
        words = [f"lost {'an' if key == 'anyOf' else 'a'} {key} branch: {w}" for w in lost]
        words += [f"has a new {key} branch: {w}" for w in gained]
        self.add(path, CHANGES, f"{p} {'; '.join(words) or f'reordered or repeated its {key} branches'}{why}")

    def _object(self, old: Mapping[str, Any], new: Mapping[str, Any], path: tuple[Any, ...], depth: int) -> None:
        old_props = old.get("properties") or {}
        new_props = new.get("properties") or {}
        old_req = set(old.get("required") or [])
        new_req = set(new.get("required") or [])
        closed = old.get("additionalProperties") is False or old.get("unevaluatedProperties") is False
        for name in list(old_props) + [n for n in new_props if n not in old_props]:
            child = path + (name,)
            c = _path(child)
            if name in old_props and name in new_props:
                self.schema(old_props[name], new_props[name], child, depth + 1)
            elif name in new_props and name in new_req:
                self.add(child, NARROWS, f"{c} is a new required property")
            elif name in new_props:
                if self.is_input:
                    self.add(child, NEUTRAL, f"{c} is a new optional property")
                else:
                    self.add(child, (False, closed), f"{c} is a new property" +
                             (" of an object that was closed (additionalProperties: false)" if closed else ""))
            else:
                self.add(child, CHANGES, f"{c} was removed")
        added = set(new_props) - set(old_props)
        removed = set(old_props) - set(new_props)
        for name in sorted(new_req - old_req - added):
            self.add(path + (name,), NARROWS, f"{_path(path + (name,))} is newly required")
        for name in sorted(old_req - new_req - removed):
            c = _path(path + (name,))
            self.add(path + (name,), WIDENS, f"{c} is no longer required" if self.is_input else f"{c} may now be missing")
        oa, na = old.get("additionalProperties", True), new.get("additionalProperties", True)
        if oa == na and not _has_ref(oa):
            return
        p = _path(path)
        if na is False and oa is not False:
            self.add(path, NARROWS, f"{p} no longer allows additional properties")
        elif oa is False and na is not False:
            self.add(path, WIDENS, f"{p} now allows additional properties")
        else:
            self.schema(oa, na, path + ("*",), depth + 1)

    def _array(self, old: Mapping[str, Any], new: Mapping[str, Any], path: tuple[Any, ...], depth: int) -> None:
        old_prefix, new_prefix = old.get("prefixItems") or [], new.get("prefixItems") or []
        old_items, new_items = old.get("items", True), new.get("items", True)
        for i in range(max(len(old_prefix), len(new_prefix))):
            o = old_prefix[i] if i < len(old_prefix) else old_items
            n = new_prefix[i] if i < len(new_prefix) else new_items
            self.schema(o, n, path + (i,), depth + 1)
        if old_items != new_items or _has_ref(old_items):
            self.schema(old_items, new_items, path + ("[*]",), depth + 1)

    def _canon(self, node: Any, document: Mapping[str, Any], *, depth: int = 0, trail: tuple[str, ...] = ()) -> Any:
        """`node` with local references followed (a cycle keeps its `$ref`), to compare as data."""
        if depth > MAX_COMPARE_DEPTH:
            return node
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref not in trail:
                target = resolve_pointer(document, ref)
                rest = {k: self._canon(v, document, depth=depth + 1, trail=trail) for k, v in node.items()
                        if k != "$ref"}
                inlined = self._canon(target, document, depth=depth + 1, trail=trail + (ref,))
                return {"$ref:": inlined, **rest} if rest else inlined
            return {k: self._canon(v, document, depth=depth + 1, trail=trail) for k, v in node.items()}
        if isinstance(node, list):
            return [self._canon(v, document, depth=depth + 1, trail=trail) for v in node]
        return node


def _has_ref(node: Any) -> bool:
    if isinstance(node, Mapping):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def _canon_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _branch_words(branch: Any) -> str:
    if isinstance(branch, Mapping) and isinstance(branch.get("title"), str):
        return _show(branch["title"])
    return _show(branch) if not isinstance(branch, str) else branch


def _path(parts: tuple[Any, ...]) -> str:
    out = "$"
    for part in parts:
        if part == "[*]":
            out += "[*]"
        elif part == "*":
            out += ".*"
        elif isinstance(part, int):
            out += f"[{part}]"
        else:
            out += _json_path([part])[1:]
    return out
