"""Short, platform-neutral text about an input contract: what an agent takes, and an example of it.

Chat help (Slack's `/ask help`, Discord's `/agents`) and `oz0 mcp tools` describe contracts to people
who type the input by hand, so they all use the same words from here: one line such as
`JSON {service: string, rows?: integer}` and an example input built from the schema's `examples` or
its required properties. Plain text only: each adapter puts it into its own card.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from oz0.edge.model.agent import AgentSpec

__all__ = ["MAX_ENUM_SHOWN", "example_input", "input_summary", "schema_example", "schema_summary", "type_name"]

MAX_ENUM_SHOWN = 6   # an enum names at most this many values, then "..."
TEXT_EXAMPLE = "some text"
_SAMPLES: Mapping[str, Any] = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}


def type_name(node: Any) -> str:
    """A schema node as a person reads it: `string`, `array of Deploy`, `"a" | "b"`, `any`."""
    if node is True or node == {}:
        return "any"
    if not isinstance(node, dict):
        return "nothing"
    if isinstance(node.get("$ref"), str):
        ref: str = node["$ref"]
        return ref.rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            return " | ".join(type_name(n) for n in node[key])
    if isinstance(node.get("enum"), list):
        values = node["enum"]
        more = " | ..." if len(values) > MAX_ENUM_SHOWN else ""
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in values[:MAX_ENUM_SHOWN]) + more
    kind = node.get("type")
    if kind == "array":
        return f"array of {type_name(node.get('items', {}))}"
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    return str(kind) if kind else "any"


def schema_summary(schema: Mapping[str, Any], *, legend: bool = False) -> str:
    """One line for a schema: `{name: type, other?: type}` (`?` marks optional properties).

    A schema without named properties is its type name (`{} (no named fields)` for a bare object).
    `legend` appends `  (? optional)` when a property is optional, for readers who have not met the mark.
    """
    declared = schema.get("properties")
    props: dict[str, Any] = declared if isinstance(declared, dict) else {}
    if not props:
        name = type_name(schema)
        return name if name != "object" else "{} (no named fields)"
    required = set(schema.get("required") or ())
    parts = [f"{name}{'' if name in required else '?'}: {type_name(sub)}" for name, sub in props.items()]
    note = "  (? optional)" if legend and len(required & set(props)) < len(props) else ""
    return "{" + ", ".join(parts) + "}" + note


def input_summary(spec: AgentSpec) -> str:
    """What an agent takes, in one line: `text`, `JSON {service: string, rows?: integer}`, or
    `JSON (its schema file)` when the schema names no properties."""
    if spec.input is None:
        return "text"
    schema = spec.input.schema if isinstance(spec.input.schema, dict) else {}
    if not isinstance(schema.get("properties"), dict) or not schema["properties"]:
        return f"JSON ({spec.input_schema_file or 'schema'})"
    return "JSON " + schema_summary(schema)


def schema_example(schema: Any) -> str:
    """An example input as JSON text: the schema's first `examples` entry, else its required
    properties (all of them when none is required) filled with a placeholder of their type."""
    if not isinstance(schema, dict):
        return "{}"
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return json.dumps(examples[0], ensure_ascii=False)
    declared = schema.get("properties")
    props: dict[str, Any] = declared if isinstance(declared, dict) else {}
    required = set(schema.get("required") or props)
    sample = {name: _SAMPLES.get(str((sub if isinstance(sub, dict) else {}).get("type")), "...")
              for name, sub in props.items() if name in required}
    return json.dumps(sample, ensure_ascii=False)


def example_input(spec: AgentSpec) -> str:
    """The input to show in an agent's help: its declared `example:`, else the first of its `examples:`,
    else one built from its contract."""
    if spec.example:
        return spec.example
    if spec.examples:
        return spec.examples[0].input_text
    return TEXT_EXAMPLE if spec.input is None else schema_example(spec.input.schema)
