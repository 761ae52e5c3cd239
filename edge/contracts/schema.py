"""Contracts: JSON Schemas loaded once, checked at load, compiled once, never fetching anything.

A contract is the schema an agent or tool declares for what it takes or answers. Every `$ref` is
checked when the schema is loaded, not lazily when an instance happens to reach it: a reference must
resolve inside the same document (`#/...`, `#anchor`, or an `$id` embedded in that document), or be
one of the known meta-schemas or a schema the edge bundles (the QZX Result Contract v1, see
edge.contracts.bundled), which resolve locally. The compiled validator is built `offline` with
a retriever that refuses anything else, so nothing can be fetched even if the load-time check had a gap.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urldefrag, urljoin, urlsplit

import orjson

from oz0.edge.contracts.bundled import bundled_schema
from oz0.edge.contracts.dialects import DEFAULT_DIALECT, DIALECTS, META_NAMESPACES, meta_schema_refusal
from oz0.edge.contracts.formats import formats_for
from oz0.edge.contracts.json_data import JsonDataError, check_json_data, loads_exact
from oz0.edge.contracts.pointer import PointerError, format_pointer, fragment_pointer, json_path, locate
from oz0.edge.contracts.view import REF_KEYS, Resolved, SchemaDepthError, ViewMemo, hidden_refs, join_uri, walk_schema
from oz0.edge.errors import Oz0Error

__all__ = [
    "DIALECTS",
    "Contract",
    "ContractError",
    "Violation",
    "compile_count",
    "json_path",
    "load_contract",
    "load_json_file",
    "violation_sentence",
]


MAX_SCHEMA_BYTES = 1_048_576
MAX_SCHEMA_DEPTH = 64
MAX_MESSAGE_CHARS = 300
MAX_REMEMBERED_REFS = 1_024  # $ref lookups a contract remembers (its own references: a handful, as a rule)

T = TypeVar("T")

_lock = threading.Lock()
_cache: dict[bytes, Contract] = {}  # by the schema's canonical JSON
_compiles = 0


class ContractError(Oz0Error, ValueError):
    """A schema that cannot serve as a contract: names the source, where in the schema, and what is wrong."""

    def __init__(self, message: str, *, source: str = "<schema>", location: str = "") -> None:
        self.message = message
        self.source = source
        self.location = location
        where = f" at {location}" if location else ""
        super().__init__(f"{source}{where}: {message}")


@dataclass(frozen=True)
class Violation:
    """One way an instance breaks its contract, as data: where in the instance, which rule, why."""

    json_path: str
    schema_path: str
    keyword: str
    message: str

    def describe(self) -> str:
        return f"{self.json_path}: {self.message} (rule {self.keyword} at {self.schema_path or '/'})"

    def to_dict(self) -> dict[str, str]:
        return {"json_path": self.json_path, "schema_path": self.schema_path, "keyword": self.keyword,
                "message": self.message}


def violation_sentence(violations: Any, *, subject: str = "the value", rules_of: str | None = None) -> str:
    """The first violation in words, and how many more there are: `the value at $.n breaks the rule
    'type' (...) (and 2 more)`, or with `rules_of` (the schema file) `the input at $.n breaks the rule
    'type' of in.json: ... (and 2 more)`. One sentence for cards, jobs and the CLI."""
    first = violations[0]
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    if rules_of is None:
        return f"{subject} at {first.json_path} breaks the rule '{first.keyword}' ({first.message}){more}"
    return f"{subject} at {first.json_path} breaks the rule '{first.keyword}' of {rules_of}: {first.message}{more}"


def _refuse_retrieval(uri: str) -> Any:
    known = bundled_schema(_norm(uri))
    if known is not None:
        return known
    raise ContractError(f"refusing to fetch {uri!r}: a contract's $ref must stay inside its own document")


@dataclass(frozen=True, eq=False)
class Contract:
    """A loaded, checked and compiled schema. Build with `load_contract`; share freely."""

    schema: Any
    source: str
    dialect: str
    _canonical: bytes = field(repr=False)  # the schema's canonical JSON (sorted keys): what `digest` hashes
    _validator: Any = field(repr=False)
    _resources: dict[str, Any] = field(repr=False)
    _bases: dict[int, str] = field(repr=False)
    _found: dict[tuple[str, str], Resolved] = field(default_factory=dict, repr=False)
    _views: ViewMemo = field(default_factory=ViewMemo, repr=False)
    _derived: dict[Hashable, Any] = field(default_factory=dict, repr=False)

    def is_valid(self, instance: Any) -> bool:
        return bool(self._validator.is_valid(instance))

    def validate(self, instance: Any, *, limit: int = 20) -> tuple[Violation, ...]:
        """Every way `instance` breaks the contract (at most `limit`), empty when it conforms."""
        if self._validator.is_valid(instance):
            return ()
        found = []
        for error in self._validator.iter_errors(instance):
            found.append(_violation(error))
            if len(found) >= limit:
                break
        return tuple(found)

    def resolve(self, ref: str, *, base: str = "") -> Any:
        """The subschema a local `$ref` names (used to follow properties for card order)."""
        return self.lookup(ref, base=base).contents

    def lookup(self, ref: str, *, base: str = "") -> Resolved:
        """The subschema a local `$ref` (written under `base`, by default the root's) names, with the
        base URI references inside it resolve against; LookupError names what is missing.

        Remembered (a contract never changes, and a card looks up the same few references for every
        result), up to MAX_REMEMBERED_REFS."""
        key = (ref, base)
        found = self._found.get(key)
        if found is None:
            target, doc = _resolve_ref(ref, base or self.base, self._resources, self.dialect)
            found = Resolved(target, self._bases.get(id(target), doc))
            if len(self._found) < MAX_REMEMBERED_REFS:
                self._found[key] = found
        return found

    def memo_for(self, node: Any) -> ViewMemo | None:
        """The contract's view memo for a node of its own schema (held, so its id stays its own)."""
        return self._views if id(node) in self._bases else None

    def derived(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`, computed once per `key` for this contract: a fact read off its schema (the column
        order a card takes from it), which never changes, so a card asks for it once per contract, not
        once per result. `key` names schema positions only, never data; up to MAX_REMEMBERED_REFS kept."""
        try:
            return cast(T, self._derived[key])
        except KeyError:
            value = make()
            if len(self._derived) < MAX_REMEMBERED_REFS:
                self._derived[key] = value
            return value

    @cached_property
    def digest(self) -> str:
        """SHA-256 (hex) of the schema's canonical JSON: what an install records and a job is checked against."""
        import hashlib  # defers a costly import (OpenSSL): `oz0 plugin lint` and `oz0 render` read no digest

        return hashlib.sha256(self._canonical).hexdigest()

    @cached_property
    def base(self) -> str:
        """The root's base URI: its `$id`, or `urn:oz0:root`."""
        root_id = self.schema.get("$id") if isinstance(self.schema, dict) else None
        return _norm(root_id or "urn:oz0:root")


def _violation(error: Any) -> Violation:
    schema_path = list(error.schema_path)
    keyword = error.kind.name
    if schema_path and isinstance(schema_path[-1], str) and schema_path[-1] != keyword and keyword != "falseSchema":
        keyword = schema_path[-1] if schema_path[-1] in _KNOWN_KEYWORDS else keyword
    if keyword == "falseSchema":
        keyword = "false"
    message = error.message
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return Violation(json_path(error.instance_path), format_pointer(schema_path), keyword, message)


_KNOWN_KEYWORDS = frozenset({
    "type", "enum", "const", "required", "properties", "additionalProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "items", "prefixItems", "additionalItems",
    "contains", "minContains", "maxContains", "minItems", "maxItems", "uniqueItems", "minLength",
    "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentRequired",
    "dependentSchemas", "unevaluatedItems", "unevaluatedProperties", "contentEncoding",
    "contentMediaType", "$ref", "$dynamicRef",
})


def compile_count() -> int:
    """How many schemas were compiled in this process: the cache makes this one per distinct schema."""
    return _compiles


def load_json_file(path: str | os.PathLike[str], *, what: str = "JSON") -> Any:
    """Read a JSON file or `-` for stdin, with an error that names the file and the problem."""
    name = str(path)
    try:
        if name == "-":
            import sys
            data = sys.stdin.buffer.read()
            name = "<stdin>"
        else:
            data = Path(path).read_bytes()
    except OSError as exc:
        raise ContractError(f"cannot read {what}: {exc.strerror or exc}", source=name) from exc
    try:
        value = loads_exact(data)
    except orjson.JSONDecodeError as exc:
        raise ContractError(f"not valid JSON: {exc}", source=name) from exc
    _check_data(value, name)
    return value


def _check_data(value: Any, source: str) -> None:
    try:
        check_json_data(value)
    except JsonDataError as exc:
        location = exc.path if len(exc.path) <= 80 else ""
        raise ContractError(exc.message, source=source, location=location) from None


def load_contract(schema: Any, *, source: str | None = None) -> Contract:
    """Load, check and compile a schema (a dict, a bool, or a path to a JSON file), cached by content.

    Raises ContractError for an unreadable file, an unknown dialect, an invalid schema, or a `$ref`
    that leaves the document.
    """
    global _compiles
    import jsonschema_rs  # here, not at the top: a card drawn without a schema never loads the validator

    if isinstance(schema, (str, os.PathLike)):
        source = source or str(schema)
        schema = load_json_file(schema, what="schema")
    source = source or "<schema>"
    if not isinstance(schema, (dict, bool)):
        raise ContractError(f"a schema must be a JSON object or boolean, not {type(schema).__name__}",
                            source=source)
    _check_data(schema, source)
    try:
        raw = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits
        raw = json.dumps(schema, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    if len(raw) > MAX_SCHEMA_BYTES:
        raise ContractError(f"schema is {len(raw):,} bytes; the limit is {MAX_SCHEMA_BYTES:,}", source=source)
    cached = _cache.get(raw)
    if cached is not None:
        return cached
    dialect = _dialect(schema, source)
    resources, bases = _check_refs(schema, source, DIALECTS[dialect])
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        raise ContractError(f"not a valid JSON Schema: {exc.message}", source=source,
                            location=format_pointer(exc.instance_path) or "/") from None
    except jsonschema_rs.ReferencingError as exc:
        raise ContractError(f"cannot check against its meta-schema: {exc}", source=source) from None
    try:
        validator = jsonschema_rs.validator_for(
            schema, retriever=_refuse_retrieval, validate_formats=True, formats=formats_for(dialect),
            pattern_options=jsonschema_rs.FancyRegexOptions(backtrack_limit=1_000_000, size_limit=1 << 20,
                                                              dfa_size_limit=1 << 20),
        )
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        raise ContractError(f"cannot compile: {first}", source=source) from None
    with _lock:
        _compiles += 1
        contract = Contract(schema, source, DIALECTS[dialect], raw, validator, resources, bases)
        _cache[raw] = contract
    return contract


def _dialect(schema: Any, source: str) -> str:
    if not isinstance(schema, dict):
        return DEFAULT_DIALECT
    declared = schema.get("$schema", DEFAULT_DIALECT)
    if not isinstance(declared, str):
        raise ContractError("$schema must be a string", source=source, location="/$schema")
    key = declared.rstrip("#")
    if key not in DIALECTS:
        allowed = ", ".join(f"{v} ({k})" for k, v in DIALECTS.items())
        raise ContractError(f"unsupported $schema {declared!r}; supported dialects: {allowed}",
                            source=source, location="/$schema")
    return key


def _norm(uri: str) -> str:
    base, _ = urldefrag(uri)
    return base


def _check_refs(schema: Any, source: str, dialect: str) -> tuple[dict[str, Any], dict[int, str]]:
    """Map every resource and anchor in the document, then prove each `$ref` lands on one; also the
    base URI of every schema object (by id), for lookups that land inside an embedded resource."""
    root_base = _norm(schema.get("$id", "urn:oz0:root")) if isinstance(schema, dict) else "urn:oz0:root"
    resources: dict[str, Any] = {}
    try:
        nodes = list(walk_schema(schema, root_base, max_depth=MAX_SCHEMA_DEPTH))
    except SchemaDepthError as exc:
        raise ContractError(str(exc), source=source, location=format_pointer(exc.path)) from None
    bases = {id(node): base for node, base, _ in nodes}
    for node, base, _ in nodes:
        resources.setdefault(base, node)
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str):
                resources[f"{base}#{node[key]}"] = node
        legacy = node.get("$id")
        if isinstance(legacy, str) and "#" in legacy and not legacy.endswith("#"):
            doc, frag = urldefrag(join_uri(base, legacy))
            if frag and not frag.startswith("/"):
                resources[f"{doc}#{frag}"] = node
    for node, base, path in nodes:
        for key in REF_KEYS:
            ref = node.get(key)
            if ref is None:
                continue
            where = format_pointer(path + (key,))
            if not isinstance(ref, str):
                raise ContractError(f"{key} must be a string", source=source, location=where)
            try:
                _resolve_ref(ref, base, resources, dialect)
            except LookupError as exc:
                raise ContractError(f"{key} {ref!r} {exc}", source=source, location=where) from None
    for path, keyword, key, ref, base in hidden_refs(nodes):  # no validator follows these; another reader might
        try:
            _resolve_ref(ref, base, resources, dialect) if isinstance(ref, str) else None
        except LookupError as exc:
            raise ContractError(f"{key} {ref!r} {exc} (it sits under the unknown keyword {keyword!r}, which "
                                "no validator follows)", source=source, location=format_pointer(path)) from None
    return resources, bases


def _without_dot_segments(uri: str) -> str:
    """RFC 3986 dot-segment removal, which urljoin applies to a path it resolves."""
    return urljoin(uri, urlsplit(uri).path) if "/." in uri else uri


def _resolve_ref(ref: str, base: str, resources: dict[str, Any], dialect: str) -> tuple[Any, str]:
    if ref.startswith("#"):
        doc, fragment = base, fragment_pointer(ref[1:])
    else:
        doc, fragment = urldefrag(join_uri(base, ref))
        fragment = fragment_pointer(fragment)
    if doc not in resources and bundled_schema(doc) is not None:
        resources = {doc: bundled_schema(doc)}
    if doc not in resources:
        resolved = _without_dot_segments(doc)
        if resolved != doc and doc.startswith(META_NAMESPACES) and not resolved.startswith(META_NAMESPACES):
            raise LookupError(f"leaves the meta-schema namespace: its '..' segments make it {resolved!r}, "
                              "which is not a known meta-schema; nothing is fetched")
        if resolved.startswith(META_NAMESPACES):
            why = meta_schema_refusal(resolved, dialect)
            if why is None:
                return {}, doc
            raise LookupError(why)
        scheme = ref.split(":", 1)[0].lower() if ":" in ref else ""
        if scheme in ("http", "https", "file", "ftp"):
            raise LookupError(f"points outside this document ({scheme}://); nothing is fetched, so embed it "
                              "under $defs and refer to it as '#/$defs/...'")
        raise LookupError("does not resolve inside this document; refer to '#/$defs/...' or an $id embedded here")
    node = resources[doc]
    if not fragment:
        return node, doc
    if not fragment.startswith("/"):
        anchored = resources.get(f"{doc}#{fragment}")
        if anchored is None:
            raise LookupError(f"names anchor {fragment!r}, which this document does not define")
        return anchored, doc
    try:
        _, node = locate(node, fragment)
    except PointerError:
        raise LookupError("points at nothing: no such location in this document") from None
    return node, doc
