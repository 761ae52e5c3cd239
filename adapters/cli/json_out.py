"""The QZX CLI JSON profile for every `oz0 ... --json` command: one validated QZX result on stdout.

Progress and incidental output go to stderr; stdout carries exactly one JSON document; the exit code
is 0 on success, 1 on failure, 2 on a usage error. The envelope is checked against QZX Result
Contract v1 before it is printed (edge.results.qzx.result_envelope), so a producer bug surfaces as a
conforming `invalid_result_contract` failure rather than as a malformed document.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from oz0.edge.results.qzx import result_envelope

__all__ = ["USAGE_ERROR", "command_name", "emit_result", "usage_failure"]

USAGE_ERROR = "usage_error"


def emit_result(command: str, success: bool, message: str, *, data: Mapping[str, Any] | None = None,
                error: str | None = None, error_code: str | None = None,
                details: Mapping[str, Any] | None = None, warnings: Sequence[str] = (),
                started: float | None = None, duration_ms: float | None = None,
                stream: TextIO | None = None) -> int:
    """Write one QZX result for `command` to stdout (or `stream`) and return the exit code.

    Stable signature, shared by every `--json` command:
      command      the command's name as typed, e.g. "qzx validate" or "run"; kept in meta.command
      success      True only when the requested operation completed
      message      the whole outcome in one non-blank sentence
      data         command-specific fields, placed at the top level (must not reuse a core field name)
      error        for failures: what went wrong, for people
      error_code   for failures: a stable `^[a-z][a-z0-9_]*$` identifier; "usage_error" exits 2
      details      diagnostics or remediation, a JSON object
      warnings     non-blank sentences about conditions that did not stop the command
      started      a time.monotonic() reading taken when the command began (sets meta.duration_ms)
      duration_ms  alternatively, the duration itself
    Returns 0 for a success, 2 for a failure whose error_code is "usage_error", 1 for any other
    failure, including an envelope that broke the contract and became `invalid_result_contract`.
    A failure must carry `error` or `error_code`; a success must carry neither.
    """
    if duration_ms is None and started is not None:
        duration_ms = round((time.monotonic() - started) * 1000, 3)
    envelope = result_envelope(command, success, message, data=data, error=error, error_code=error_code,
                               details=details, warnings=warnings, duration_ms=duration_ms)
    out = stream if stream is not None else sys.stdout
    out.write(json.dumps(envelope, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    out.flush()
    if envelope["success"]:
        return 0
    return 2 if envelope.get("error_code") == USAGE_ERROR else 1


def usage_failure(command: str, problem: str, *, started: float | None = None,
                  stream: TextIO | None = None) -> int:
    """A usage error under --json: a conforming failure with error_code "usage_error"; returns 2."""
    return emit_result(command, False, f"{command} was not run: {problem}", error=problem,
                       error_code=USAGE_ERROR, started=started, stream=stream)


def command_name(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """The command `argv` runs as typed, its subcommand words only ("jobs show", "mcp tools"): the
    name a failure under --json carries in meta.command when the command itself could not say it."""
    words: list[str] = []
    for word in argv:
        if word.startswith("-"):
            continue
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or word not in sub.choices:
            break
        words.append(word)
        parser = sub.choices[word]
    return " ".join(words) or "oz0"
