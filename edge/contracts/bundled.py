"""Known schemas the edge ships a copy of, so a contract may `$ref` them without anything being fetched.

The JSON Schema meta-schemas are known to the validator itself; the QZX Result Contract v1 schema is
another published schema tools declare by reference (an MCP outputSchema of `{"$ref": <its URL>}`), and
the edge resolves that URL to its bundled copy (schemas/qzx-result-v1.schema.json) the same way.
The table is explicit: one line per schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["BUNDLED_SCHEMAS", "CONTRACT_SCHEMA_URL", "bundled_schema", "shipped_schema"]

CONTRACT_SCHEMA_URL = "https://qzx.yumbale.com/schemas/result-contract-v1.schema.json"  # QZX Result Contract v1

BUNDLED_SCHEMAS: dict[str, str] = {
    CONTRACT_SCHEMA_URL: "qzx-result-v1.schema.json",
}
_loaded: dict[str, Any] = {}


def shipped_schema(name: str) -> Path:
    """A schema file the package ships: the repository's top-level `schemas/`, package data of `oz0`,
    found from this file as the migrations and the Teams app are (importlib.resources, with tempfile
    and zipfile, would cost `oz0 plugin lint` a tenth of its start-up)."""
    return Path(__file__).resolve().parents[2] / "schemas" / name


def bundled_schema(uri: str) -> Any | None:
    """The bundled copy of the schema at `uri` (without a fragment), or None when it is not one we ship.

    Loaded once and shared: callers only read it (compiled validators and card views never change a schema).
    """
    name = BUNDLED_SCHEMAS.get(uri.rstrip("#"))
    if name is None:
        return None
    if name not in _loaded:
        _loaded[name] = json.loads(shipped_schema(name).read_text("utf-8"))
    return _loaded[name]
