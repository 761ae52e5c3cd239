"""Lint of an agent's or flow's `examples:`: each input against the input contract, each output against
the output contract. A finding names the example by its index, the JSON path in the value and the rule
(the schema keyword) it breaks, so the example or the schema can be fixed where they disagree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from oz0.edge.contracts.schema import Contract

__all__ = ["MAX_FINDINGS_PER_VALUE", "lint_examples"]

MAX_FINDINGS_PER_VALUE = 3  # violations reported for one example's input or output
Add = Callable[..., None]   # add(severity, file, path, message, fix)


def lint_examples(add: Add, file: Path, data: dict[str, Any], *, input: Contract | None,
                  output: Contract | None) -> None:
    """Check `data["examples"]` (already checked in shape by the manifest schema) against the contracts;
    a side declared `text` (or not declared) takes any string."""
    examples = data.get("examples")
    if not isinstance(examples, list):
        return
    for i, example in enumerate(examples):
        if not isinstance(example, dict):
            continue
        if "input" in example:
            _check(add, file, i, "input", example["input"], input, text=data.get("input") == "text")
        if "output" in example:
            _check(add, file, i, "output", example["output"], output, text=data.get("output") == "text")


def _check(add: Add, file: Path, index: int, side: str, value: Any, contract: Contract | None, *,
           text: bool) -> None:
    where = f"$.examples[{index}].{side}"
    if contract is None:
        if text and not isinstance(value, str):
            add("error", file, where, f"example {index}: the {side} is text but this {side} is "
                f"{type(value).__name__}", f"write example {index}'s {side} as text")
        return
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            add("error", file, where, f"example {index}: the {side} is not JSON ({exc}) but the {side} "
                f"contract is {contract.source}", "write it as YAML data or a JSON string matching the schema")
            return
    for v in contract.validate(value, limit=MAX_FINDINGS_PER_VALUE):
        inner = v.json_path[1:] if v.json_path.startswith("$") else ""
        add("error", file, where + inner, f"example {index}: the {side} breaks {Path(contract.source).name} at "
            f"{v.json_path} (rule {v.keyword}): {v.message}",
            f"change example {index}'s {side} (or the schema) so they agree")
