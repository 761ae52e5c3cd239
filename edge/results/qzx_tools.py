"""QZX tool definitions: how a tool's `outputSchema` declares the contract (its mode), and what a
weaker one lacks.

`canonical_inline` means the outputSchema IS the published canonical schema, keyword for keyword
(descriptions and examples included; only key order may differ), as qzx's own validator decides. The
published schema's text is not shipped here; its fingerprint is (`CANONICAL_SCHEMA_SHA256`, the SHA-256
of its JSON with sorted keys), so an inline copy is recognised exactly. The project's own schema of
the envelope (schemas/qzx-result-v1.schema.json) has the same constraints but its own wording, so
inlining it is `structural_core`, like any other schema that differs in a keyword.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from oz0.edge.contracts.bundled import CONTRACT_SCHEMA_URL, bundled_schema
from oz0.edge.results.qzx import Finding, at_key, is_number, kind_of

__all__ = [
    "CANONICAL_SCHEMA_SHA256",
    "OUTPUT_SCHEMA_MODES",
    "OutputSchemaVerdict",
    "canonical_schema",
    "check_output_schema",
    "schema_fingerprint",
]

OUTPUT_SCHEMA_MODES = ("canonical_ref", "canonical_inline", "canonical_allof", "structural_core")

_ANNOTATIONS = frozenset({"$id", "title", "description", "examples", "$comment"})
CANONICAL_SCHEMA_SHA256 = "f33d4b1f168622f92bc773d032483729c28d48e05e63c75d59b532918ed600d0"


@dataclass(frozen=True)
class OutputSchemaVerdict:
    """How a tool definition's `outputSchema` relates to the contract, and what that costs."""

    mode: str | None
    violations: tuple[Finding, ...] = ()
    warnings: tuple[Finding, ...] = ()


def canonical_schema() -> dict[str, Any]:
    """The project's own schema of the envelope, shipped as package data (a fresh copy each call)."""
    schema: dict[str, Any] = json.loads(json.dumps(bundled_schema(CONTRACT_SCHEMA_URL)))
    return schema


def _normal(value: Any) -> Any:
    """A JSON value as qzx compares it: an integral float is its integer (1.0 == 1), true stays true."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def schema_fingerprint(schema: Any) -> str:
    """The SHA-256 of a schema's JSON with sorted keys (compact, UTF-8): equal for equal schemas."""
    text = json.dumps(_normal(schema), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical_mode(schema: Any) -> str | None:
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        rest = set(schema) - {"$ref", "$schema"} - _ANNOTATIONS
        if not rest and schema["$ref"].rstrip("#") == CONTRACT_SCHEMA_URL:
            return "canonical_ref"
    if (isinstance(schema, dict) and schema.get("$id") == CONTRACT_SCHEMA_URL
            and schema_fingerprint(schema) == CANONICAL_SCHEMA_SHA256):
        return "canonical_inline"
    return None


def check_output_schema(tool_definition: Any, *, base: str = "$") -> OutputSchemaVerdict:
    """Classify a tool definition's `outputSchema`: canonical_ref, canonical_inline, canonical_allof,
    or structural_core (passes with a warning); anything weaker is a violation naming what is missing.
    """
    if not isinstance(tool_definition, dict):
        return OutputSchemaVerdict(None, (Finding(base, f"a tool definition must be a JSON object, got "
                                                        f"{kind_of(tool_definition)}"),))
    where = at_key(base, "outputSchema")
    if "outputSchema" not in tool_definition:
        return OutputSchemaVerdict(None, (Finding(where, "is required: the tool must declare the schema "
                                                         "of its structuredContent"),))
    schema = tool_definition["outputSchema"]
    mode = _canonical_mode(schema)
    if mode:
        return OutputSchemaVerdict(mode)
    if isinstance(schema, dict) and isinstance(schema.get("allOf"), list):
        if any(_canonical_mode(branch) for branch in schema["allOf"]):
            return OutputSchemaVerdict("canonical_allof")
    missing = _structural_gaps(schema)
    if missing:
        return OutputSchemaVerdict(None, tuple(Finding(where, gap) for gap in missing))
    return OutputSchemaVerdict("structural_core", warnings=(Finding(
        where, "matches only the structural core of the contract (mode structural_core); reference "
               f"{CONTRACT_SCHEMA_URL} to declare the full contract"),))


def _structural_gaps(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return [f"must be a JSON Schema object, got {kind_of(schema)}"]
    gaps: list[str] = []
    if schema.get("type") != "object":
        gaps.append('is weaker than the contract: needs "type": "object"')
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    for name in ("success", "message"):
        if name not in required:
            gaps.append(f'is weaker than the contract: "{name}" must be required')
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    success = props.get("success")
    if not (isinstance(success, dict) and success.get("type") == "boolean"):
        gaps.append('is weaker than the contract: properties.success needs "type": "boolean"')
    message = props.get("message")
    message = message if isinstance(message, dict) else {}
    min_length = message.get("minLength")
    if (message.get("type") != "string" or not is_number(min_length) or min_length < 1
            or message.get("pattern") != r"\S"):
        gaps.append('is weaker than the contract: properties.message needs "type": "string", '
                    '"minLength" >= 1 and "pattern": "\\\\S"')
    code = props.get("error_code")
    if "error" not in props and not (isinstance(code, dict) and isinstance(code.get("pattern"), str)):
        gaps.append('is weaker than the contract: declare properties.error or a properties.error_code '
                    'with a "pattern"')
    return gaps
