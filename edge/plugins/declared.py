"""Reading a plugin's declared files: YAML read safely, checked against its manifest schema, the `budget:`,
`price:` and `examples:` keys agent and flow files share, and the one error a bad file raises.

Shared by edge.plugins.manifest (plugins and agents) and edge.plugins.flow_manifest (flows), which
load_plugin calls. The manifest shapes are the JSON Schemas in `schemas/`.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import yaml

from oz0.edge.contracts.bundled import shipped_schema
from oz0.edge.contracts.schema import Contract, load_contract
from oz0.edge.errors import Oz0Error
from oz0.edge.model.budget import BudgetDeclarationError, parse_budget, parse_price
from oz0.edge.plugins.yaml_safe import safe_load

if TYPE_CHECKING:
    from oz0.edge.model.agent import Example

__all__ = ["AGENT_NAME_RE", "PluginError", "budget_of", "examples_of", "manifest_contract", "read_yaml"]

AGENT_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")  # as agent.schema.json's `name`; file stems too


class PluginError(Oz0Error, ValueError):
    """A plugin that cannot be loaded: the file, where in it, what is wrong."""

    def __init__(self, message: str, *, file: str, location: str = "") -> None:
        self.message = message
        self.file = file
        self.location = location
        where = f" at {location}" if location else ""
        super().__init__(f"{file}{where}: {message}")


def read_yaml(path: Path) -> Any:
    """A YAML file, with an error that names it and the line when it does not parse."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the reader for ever
            raise PluginError("not a regular file (a FIFO, socket or device)", file=str(path))
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PluginError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise PluginError(f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start} "
                          "cannot be decoded", file=str(path)) from None
    try:
        return safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise PluginError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=str(path), location=where) from None


def manifest_contract(name: str) -> Contract:
    """The schema of a manifest file (`plugin`, `agent` or `flow`), shipped in schemas/."""
    data = shipped_schema(f"{name}.schema.json").read_bytes()
    return load_contract(orjson.loads(data), source=f"{name}.schema.json")


def budget_of(data: Mapping[str, Any], file: Path, *, key: str = "budget") -> Any:
    """An agent or flow file's `budget:` (or `price:`), its amounts exact; PluginError naming the path."""
    try:
        return (parse_budget if key == "budget" else parse_price)(data.get(key), f"$.{key}")
    except BudgetDeclarationError as exc:
        raise PluginError(exc.message, file=str(file), location=exc.path) from None


def examples_of(data: Mapping[str, Any]) -> tuple[Example, ...]:
    """An agent or flow file's `examples:` (checked in shape by its manifest schema), in order."""
    from oz0.edge.model.agent import Example  # defers a costly import (the agent model's dataclasses): lint builds none

    return tuple(Example(input=e["input"], description=str(e.get("description", "")), output=e.get("output"),
                         has_output="output" in e)
                 for e in data.get("examples") or () if isinstance(e, Mapping) and "input" in e)
