"""JSON data that tries to wedge or hide: deep nesting, lone surrogates, NaN, huge integers. Each ends
as a clear failure a user can read (exit 2, InvalidOutput, a 502), never an internal error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oz0.edge.contracts.json_data import MAX_JSON_DEPTH

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


def oz0(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OZ0, *args], capture_output=True, text=True, timeout=60)


# 4. deep nesting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("to", ["text", "card", "slack"])
def test_a_1000_level_result_is_exit_2_with_one_line(tmp_path, to):
    result = tmp_path / "deep.json"
    result.write_text("[" * 1000 + "]" * 1000)
    done = oz0("render", str(result), "--to", to)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "internal error" not in lines[0] and "Recursion" not in lines[0]
    assert str(result) in lines[0] and f"deeper than {MAX_JSON_DEPTH} levels" in lines[0]


def test_a_600_level_schema_is_exit_2_with_one_line(tmp_path):
    schema = tmp_path / "deep.schema.json"
    schema.write_text('{"not":' * 600 + "{}" + "}" * 600)
    result = tmp_path / "ok.json"
    result.write_text('{"a": 1}')
    done = oz0("render", str(result), "--schema", str(schema))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "internal error" not in lines[0]
    assert str(schema) in lines[0] and f"deeper than {MAX_JSON_DEPTH} levels" in lines[0]
