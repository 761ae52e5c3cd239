"""The schema view: one way to read a schema, for card choice, MCP, the upgrade check, lint, run forms
and OpenAPI.

Modelled on python-jsonschema's `referencing`: a view is a subschema together with the base URI it
sits under, and a `$ref` is looked up by a registry (a `Contract`, or `DocumentRefs` for a document
with plain pointers) that answers `Resolved(contents, base)`, so a reference inside an embedded `$id`
resource resolves against that resource, as a validator would. Only local references exist: a
contract proved at load that each of its `$ref`s lands inside the document.

`layers()` is the node then what its `$ref` and `allOf` branches contribute, nearest first (where to
look up `x-oz0-order`, `type` or `title`); `properties()` are the property schemas in the order the
schema is written, `$ref` and `allOf` followed in place. `walk_schema` visits every schema position.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urldefrag, urljoin

from oz0.edge.contracts.pointer import PointerError, fragment_pointer, resolve_pointer
from oz0.edge.errors import Oz0Error

__all__ = [
    "MAX_REF_CHAIN",
    "REF_KEYS",
    "DocumentRefs",
    "Refs",
    "Resolved",
    "SchemaDepthError",
    "SchemaView",
    "hidden_refs",
    "join_uri",
    "subschemas",
    "walk_schema",
]

MAX_REF_CHAIN = 64

_SCHEMA_VALUED = (
    "additionalProperties", "additionalItems", "contains", "propertyNames", "if", "then", "else",
    "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
)
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SCHEMA_ARRAYS = ("allOf", "anyOf", "oneOf", "prefixItems")
_DATA_VALUED = ("const", "enum", "default", "examples")  # instances, where a "$ref" key is only data
REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


@dataclass(frozen=True)
class Resolved:
    """What a `$ref` names, and the base URI references inside it resolve against."""

    contents: Any
    base: str


class Refs(Protocol):
    """A registry that looks references up: `Contract` is one."""

    def lookup(self, ref: str, *, base: str = "") -> Resolved: ...


class DocumentRefs:
    """The registry of a document that has no `$id`s, only `#/...` pointers (the OpenAPI document).

    A reference that leaves the document, or points at nothing, raises LookupError naming it.
    """

    __slots__ = ("document",)

    def __init__(self, document: Any) -> None:
        self.document = document

    def lookup(self, ref: str, *, base: str = "") -> Resolved:
        if not ref.startswith("#"):
            raise LookupError(f"$ref {ref!r} leaves the document; the check compares local references only")
        try:
            return Resolved(resolve_pointer(self.document, fragment_pointer(ref[1:])), base)
        except PointerError:
            raise LookupError(f"$ref {ref!r} points at nothing in the document") from None


class SchemaDepthError(Oz0Error, ValueError):
    """A schema nested deeper than the walk allows; `path` is where the walk stopped."""

    def __init__(self, path: tuple[Any, ...], limit: int) -> None:
        self.path = path
        self.limit = limit
        super().__init__(f"schema nests deeper than {limit} levels")


def join_uri(base: str, ref: str) -> str:
    """`ref` resolved against `base` by the rule of referencing's `Resolver.lookup`: a reference that
    starts with `#` stays on `base` (urljoin drops a `urn:` base), anything else is urljoin'ed. The
    library itself is not imported here: it costs 40 to 60 ms of start-up (measured), on every command
    that loads a contract."""
    return base + ref if ref.startswith("#") else urljoin(base, ref)


def _in_resource(node: Any, base: str) -> str:
    """The base URI inside `node`: its own `$id` (resolved against `base`) when it has one."""
    own_id = node.get("$id") if isinstance(node, dict) else None
    if isinstance(own_id, str) and not own_id.startswith("#"):
        return urldefrag(join_uri(base, own_id))[0]
    return base


def subschemas(node: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """The schemas directly inside `node`, each with the keys that lead to it."""
    for key in _SCHEMA_VALUED:
        if key in node and isinstance(node[key], (dict, bool)):
            yield (key,), node[key]
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, (dict, bool)):
                    yield (key, name), sub
    for key in _SCHEMA_ARRAYS:
        value = node.get(key)
        if isinstance(value, list):
            for i, sub in enumerate(value):
                yield (key, i), sub
    items = node.get("items")
    if isinstance(items, (dict, bool)):
        yield ("items",), items
    elif isinstance(items, list):
        for i, sub in enumerate(items):
            yield ("items", i), sub


def walk_schema(schema: Any, base: str, *, max_depth: int | None = None, path: tuple[Any, ...] = (),
                depth: int = 0) -> Iterator[tuple[dict[str, Any], str, tuple[Any, ...]]]:
    """Every schema object in `schema` (depth first, the node before what it holds) with its base URI
    and its path; SchemaDepthError past `max_depth` levels."""
    if not isinstance(schema, dict):
        return
    if max_depth is not None and depth > max_depth:
        raise SchemaDepthError(path, max_depth)
    base = _in_resource(schema, base)
    yield schema, base, path
    for sub_path, sub in subschemas(schema):
        yield from walk_schema(sub, base, max_depth=max_depth, path=path + sub_path, depth=depth + 1)


def hidden_refs(nodes: list[tuple[dict[str, Any], str, tuple[Any, ...]]]
                ) -> Iterator[tuple[tuple[Any, ...], str, str, Any, str]]:
    """Each `$ref` (or `$dynamicRef`, `$recursiveRef`) under a keyword no vocabulary defines, which no
    validator follows: (its path, that keyword, its key, its value, the base of the schema around it).
    `nodes` are `walk_schema`'s; what sits under const, enum, default and examples is data, not looked at."""
    known = set(_SCHEMA_VALUED) | set(_SCHEMA_MAPS) | set(_SCHEMA_ARRAYS) | set(_DATA_VALUED) | {"items"}
    for node, base, path in nodes:
        for keyword, value in node.items():
            if keyword in known or not isinstance(value, (dict, list)):
                continue
            stack: list[tuple[tuple[Any, ...], Any]] = [(path + (keyword,), value)]
            while stack:
                where, value = stack.pop()
                items = enumerate(value) if isinstance(value, list) else value.items()
                for key, sub in items:
                    if key in REF_KEYS:
                        yield where + (key,), keyword, key, sub, base
                    elif isinstance(sub, (dict, list)):
                        stack.append((where + (key,), sub))


class SchemaView:
    """A subschema seen through local `$ref` and `allOf`, to find properties, items and keywords.

    `refs` is None for a schema that could not be loaded: then no `$ref` is followed.
    """

    __slots__ = ("base", "node", "refs")

    def __init__(self, refs: Refs | None, node: Any, base: str = "") -> None:
        self.refs = refs
        self.node = node
        self.base = _in_resource(node, base) if base else base

    def _lookup(self, ref: str, base: str) -> Resolved:
        assert self.refs is not None
        return self.refs.lookup(ref, base=base)

    def layers(self) -> Iterator[dict[str, Any]]:
        """The node, then what its `$ref` and `allOf` branches contribute, in written order."""
        for node, _ in self._based_layers():
            yield node

    def _based_layers(self) -> Iterator[tuple[dict[str, Any], str]]:
        stack, seen = [(self.node, self.base)], set()
        while stack:
            node, base = stack.pop(0)
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            yield node, base
            extra = []
            for key, sub in node.items():
                if key == "$ref" and isinstance(sub, str) and self.refs is not None:
                    found = self._lookup(sub, base)
                    extra.append((found.contents, _in_resource(found.contents, found.base)))
                elif key == "allOf" and isinstance(sub, list):
                    extra.extend((branch, _in_resource(branch, base)) for branch in sub)
            stack[0:0] = extra

    def keyword(self, name: str) -> Any:
        """The nearest layer's value of keyword `name`, or None."""
        for layer, _ in self._based_layers():
            if name in layer:
                return layer[name]
        return None

    def properties(self) -> dict[str, Any]:
        """Property schemas in the order the schema is written, `$ref` and `allOf` followed in place."""
        return {name: prop for name, (prop, _) in self._properties().items()}

    def _properties(self) -> dict[str, tuple[Any, str]]:
        props: dict[str, tuple[Any, str]] = {}
        self._collect(self.node, self.base, props, set())
        return props

    def _collect(self, node: Any, base: str, props: dict[str, tuple[Any, str]], seen: set[int]) -> None:
        if not isinstance(node, dict) or id(node) in seen:
            return
        seen.add(id(node))
        for key, sub in node.items():
            if key == "properties" and isinstance(sub, dict):
                for name, prop in sub.items():
                    props.setdefault(name, (prop, base))
            elif key == "allOf" and isinstance(sub, list):
                for branch in sub:
                    self._collect(branch, _in_resource(branch, base), props, seen)
            elif key == "$ref" and isinstance(sub, str) and self.refs is not None:
                found = self._lookup(sub, base)
                self._collect(found.contents, _in_resource(found.contents, found.base), props, seen)

    def property(self, name: str) -> SchemaView:
        """The view of property `name` (of a None node when the schema names no such property)."""
        prop, base = self._properties().get(name, (None, self.base))
        return SchemaView(self.refs, prop, base)

    def items(self) -> SchemaView:
        """The view of the array items' schema (of a None node when there is no single items schema)."""
        for node, base in self._based_layers():
            if "items" in node:
                items = node["items"]
                return SchemaView(self.refs, items if isinstance(items, dict) else None, base)
        return SchemaView(self.refs, None, self.base)

    def deref(self) -> SchemaView:
        """The view of the schema this node's `$ref` chain ends at (the node itself without `$ref`)."""
        view = self
        for _ in range(MAX_REF_CHAIN):
            ref = view.node.get("$ref") if isinstance(view.node, Mapping) else None
            if not isinstance(ref, str) or view.refs is None:
                return view
            found = view._lookup(ref, view.base)
            view = SchemaView(view.refs, found.contents, found.base)
        return view
