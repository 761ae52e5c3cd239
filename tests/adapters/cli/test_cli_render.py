"""`oz0 render` and `oz0 demo` as a user runs them: exit codes, stdout, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oz0.adapters.cli.render import examples

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


def oz0(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*OZ0, *args], input=stdin, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("entry", examples(), ids=lambda e: e["name"])
def test_each_bundled_example_gives_its_form(entry):
    args = ["render", entry["result"], "--to", "card"]
    if entry["schema"]:
        args += ["--schema", entry["schema"]]
    done = oz0(*args)
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    assert card["form"] == entry["form"]
    assert card["drawn"] is entry.get("drawn", True)
    if not card["drawn"]:
        assert card["reason"] and card["attachment"]["size"] > 0


def test_render_text_draws_a_table_for_the_terminal():
    entry = next(e for e in examples() if e["name"] == "deploys")
    done = oz0("render", entry["result"], "--schema", entry["schema"])
    assert done.returncode == 0
    header = next(line for line in done.stdout.splitlines() if "service" in line)
    assert header.index("service") < header.index("status") < header.index("version")
    assert "billing" in done.stdout


def test_render_reads_stdin():
    done = oz0("render", "-", "--to", "card", stdin='[{"a": 1}]')
    assert done.returncode == 0
    assert json.loads(done.stdout)["columns"] == ["a"]


def test_broken_result_is_not_an_error_but_says_why():
    entry = next(e for e in examples() if e["name"] == "broken")
    done = oz0("render", entry["result"], "--schema", entry["schema"])
    assert done.returncode == 0
    assert "$[1].cpu_pct" in done.stdout and "Not drawn" in done.stdout


@pytest.mark.parametrize("setup, expected", [
    (lambda d: ("missing.json", None), "missing.json: cannot read result"),
    (lambda d: (_write(d, "bad.json", "{oops"), None), "bad.json: not valid JSON"),
    (lambda d: (_write(d, "r.json", "1"), _write(d, "s.json", '{"type": "strnig"}')), "s.json at /type: not a valid JSON Schema"),
    (lambda d: (_write(d, "r.json", "1"), _write(d, "s.json", '{"$ref": "https://example.com/x.json"}')),
     "s.json at /$ref: $ref 'https://example.com/x.json' points outside"),
    (lambda d: (_write(d, "r.json", "1"), _write(d, "s.json", '{"$ref": "file:///etc/passwd"}')),
     "s.json at /$ref: $ref 'file:///etc/passwd' points outside"),
    (lambda d: (_write(d, "r.json", "1"), _write(d, "s.json", '{"$schema": "http://json-schema.org/draft-04/schema#"}')),
     "unsupported $schema"),
])
def test_bad_input_is_exit_2_and_one_clear_line(tmp_path, monkeypatch, setup, expected):
    monkeypatch.chdir(tmp_path)
    result, schema = setup(tmp_path)
    done = oz0("render", result, *(["--schema", schema] if schema else []))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert expected in lines[0]
    assert "Traceback" not in done.stderr


def _write(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text)
    return name


def test_render_help_explains_every_option():
    done = oz0("render", "--help")
    assert done.returncode == 0
    for word in ("RESULT", "--schema", "--to", "--mcp", "stdin", "64 KiB", "Exit codes"):
        assert word in done.stdout


def test_unknown_target_is_a_usage_error():
    done = oz0("render", "x.json", "--to", "fax")
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_demo_draws_every_example():
    done = oz0("demo")
    assert done.returncode == 0, done.stderr
    for entry in examples():
        assert f"━━ {entry['name']}" in done.stdout
    assert "Not drawn as a card" in done.stdout


def test_terminal_output_strips_escape_sequences(tmp_path):
    hostile = tmp_path / "h.json"
    hostile.write_text(json.dumps([{"name": "\x1b]0;pwned\x07\x1b[31mred\u202eevil"}]))
    done = oz0("render", str(hostile))
    assert done.returncode == 0
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout and "\x07" not in done.stdout
    assert "red" in done.stdout and "evil" in done.stdout


def test_command_errors_are_one_line_when_run_as_a_module(tmp_path):
    """`python -m oz0.adapters.cli` runs the package main; its errors must still be the user's, not a bug's."""
    done = subprocess.run([*OZ0, "jobs"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "OZ0_HOME": str(tmp_path),
                               "OZ0_DATABASE_URL": "sqlite:////proc/no-such-dir/oz0.db"})
    assert done.returncode == 1
    assert done.stderr.startswith("oz0: error: cannot open the oz0 database")
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
