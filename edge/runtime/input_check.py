"""The one check of a job's input: its size, then (for an agent with an input schema) JSON read exactly
and validated. It returns data (`Checked`): the value an agent gets, or what is wrong with it, with the
contract's violations (JSON path, keyword, message) for an API or a form to point at.

A job's input is checked once: by a way in that must answer before it journals the job (the console, the
runtime API: 422 with the path and the rule), which hands the result to `Runtime.submit`, or else by the
run itself (chat: the job ends with `InvalidInput`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from oz0.edge.contracts.json_data import loads_exact
from oz0.edge.contracts.schema import Violation, violation_sentence
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import JobFailure

__all__ = ["MAX_INPUT_CHARS", "Checked", "check_input"]

MAX_INPUT_CHARS = 262_144


@dataclass(frozen=True)
class Checked:
    """The input as the agent gets it (`value`), or why not: `failure` (InvalidInput, with a sentence
    naming the path and the rule) and the contract's `violations`."""

    value: Any = None
    failure: JobFailure | None = field(default=None, compare=False)
    violations: tuple[Violation, ...] = ()

    @property
    def ok(self) -> bool:
        return self.failure is None

    def value_or_raise(self) -> Any:
        if self.failure is not None:
            raise self.failure
        return self.value


def _refused(reason: str, violations: tuple[Violation, ...] = ()) -> Checked:
    return Checked(failure=JobFailure("InvalidInput", reason), violations=violations)


def check_input(spec: AgentSpec, text: Any) -> Checked:
    """The input an agent gets: the text itself, or for an agent with an input schema the JSON parsed
    and checked against it."""
    if isinstance(text, str) and len(text) > MAX_INPUT_CHARS:
        return _refused(f"the input is {len(text):,} characters; an agent takes at most {MAX_INPUT_CHARS:,}. "
                        "Send a reference to the data instead")
    if spec.input is None:
        if not isinstance(text, str):
            return _refused(f"{spec.name} takes text, not {type(text).__name__}")
        return Checked(text)
    hint = f"; for example: {spec.example}" if spec.example else ""
    try:
        value = loads_exact(text)
    except orjson.JSONDecodeError as exc:
        return _refused(f"{spec.name} takes JSON that matches {spec.input_schema_file}, and this is not JSON "
                        f"({exc}){hint}", (Violation("$", "", "json", f"not JSON: {exc.msg} at line {exc.lineno} "
                                                                   f"column {exc.colno}"),))
    violations = tuple(spec.input.validate(value))
    if violations:
        return _refused(violation_sentence(violations, subject="the input", rules_of=spec.input_schema_file) + hint,
                        violations)
    return Checked(value)
