"""JSON Pointer (RFC 6901): the one resolver the contracts, the OpenAPI document and the upgrade check use.

A pointer is the plain string form (`/properties/a~1b/items`). A `$ref` fragment is a URI fragment:
it is percent-decoded first (as `referencing` does) and then read as a pointer, so `#/a%20b` and
`#/a b` name the same place. An array index is a token of digits within the array's length.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from oz0.edge.errors import Oz0Error

__all__ = ["PointerError", "format_pointer", "fragment_pointer", "json_path", "locate", "parse_pointer",
           "resolve_pointer"]


class PointerError(Oz0Error, LookupError):
    """A pointer that names no value in the document: says which token found nothing, and where."""

    def __init__(self, pointer: str, token: str, at: str) -> None:
        self.pointer = pointer
        self.token = token
        self.at = at
        super().__init__(f"pointer {pointer!r} points at nothing: no {token!r} at {at or '/'}")


def parse_pointer(pointer: str) -> list[str]:
    """The reference tokens of a pointer, unescaped (`~1` is `/`, `~0` is `~`); "" is the whole document."""
    if not pointer:
        return []
    if not pointer.startswith("/"):
        raise PointerError(pointer, pointer, "")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def format_pointer(parts: Iterable[Any]) -> str:
    """The pointer for a path of keys and indexes, escaped (`("a/b", 0)` -> `/a~1b/0`)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def fragment_pointer(fragment: str) -> str:
    """The pointer a `$ref`'s URI fragment (without its `#`) stands for: percent-decoded."""
    return unquote(fragment)


def locate(document: Any, pointer: str) -> tuple[tuple[str | int, ...], Any]:
    """The typed path (an index as an int) and the value a pointer names; PointerError if it names nothing."""
    node = document
    parts: list[str | int] = []
    for token in parse_pointer(pointer):
        if isinstance(node, Mapping) and token in node:
            node = node[token]
            parts.append(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
            parts.append(int(token))
        else:
            raise PointerError(pointer, token, format_pointer(parts))
    return tuple(parts), node


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value a pointer names in `document`; PointerError (a LookupError) if it names nothing."""
    return locate(document, pointer)[1]


def json_path(parts: Any) -> str:
    """Render an instance location as a JSONPath (`$.rows[3].name`, `$['odd key']`)."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier():
            out.append(f".{part}")
        else:
            out.append("[" + json.dumps(part, ensure_ascii=False) + "]")
    return "".join(out)
