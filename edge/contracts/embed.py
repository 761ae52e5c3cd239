"""A contract's schema embedded in a larger document (an OpenAPI document, the hashed contract parts): a copy
whose local references are JSON pointers from that document's root, in the 2020-12 dialect."""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import quote, urldefrag

from oz0.edge.contracts.pointer import PointerError, fragment_pointer, locate
from oz0.edge.contracts.schema import Contract
from oz0.edge.contracts.view import walk_schema

__all__ = ["embed_contract", "escape_token"]

_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_DROPPED = ("$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$schema")


def escape_token(token: str) -> str:
    return quote(token.replace("~", "~0").replace("/", "~1"), safe="~.-_!$&'()*+,;=:@")


def _pointer(parts: tuple[Any, ...]) -> str:
    return "".join("/" + escape_token(str(p)) for p in parts)


def embed_contract(contract: Contract, prefix: str) -> Any:
    """A copy of the contract's schema whose local references are pointers from the document root."""
    schema = contract.schema
    if not isinstance(schema, dict):
        return schema
    root_id = schema.get("$id")
    root_base = urldefrag(root_id)[0] if isinstance(root_id, str) else "urn:oz0:root"
    nodes = list(walk_schema(schema, root_base))
    where = {id(node): path for node, _, path in nodes}
    rewrites: dict[tuple[Any, ...], dict[str, str]] = {}
    for node, base, path in nodes:
        for key in _REF_KEYS:
            ref = node.get(key)
            if not isinstance(ref, str):
                continue
            target = contract.resolve(ref, base=base)
            target_path = where.get(id(target))
            if target_path is None:
                target_path = _pointer_target(schema, ref)
            if target_path is not None:
                rewrites.setdefault(path, {})[key] = prefix + _pointer(_as_2020_12(schema, target_path))
    copied = copy.deepcopy(schema)
    for node, _, path in list(walk_schema(copied, root_base)):
        for key, ref in rewrites.get(path, {}).items():
            node[key] = ref
        for key in _DROPPED:
            node.pop(key, None)
        _to_2020_12(node)
    return copied


def _pointer_target(schema: Any, ref: str) -> tuple[Any, ...] | None:
    """A `#/...` pointer to a value that is not itself a schema object (`true`, `false`)."""
    if not ref.startswith("#/"):
        return None
    try:
        parts, _ = locate(schema, fragment_pointer(ref[1:]))
    except PointerError:
        return None
    return parts


def _as_2020_12(schema: Any, path: tuple[Any, ...]) -> tuple[Any, ...]:
    """Where `path` lands once `_to_2020_12` has renamed tuple `items` on the way."""
    out: list[Any] = []
    node = schema
    for part in path:
        tuple_items = isinstance(node, dict) and isinstance(node.get("items"), list)
        if tuple_items and part == "items":
            out.append("prefixItems")
        elif tuple_items and part == "additionalItems":
            out.append("items")
        else:
            out.append(part)
        node = node[part] if isinstance(node, (dict, list)) else None
    return tuple(out)


def _to_2020_12(node: dict[str, Any]) -> None:
    """Older dialects' tuple `items` become `prefixItems`, so every schema reads one way."""
    if isinstance(node.get("items"), list):
        node["prefixItems"] = node.pop("items")
        if "additionalItems" in node:
            node["items"] = node.pop("additionalItems")
