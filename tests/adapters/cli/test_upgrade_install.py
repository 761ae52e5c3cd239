"""`oz0 plugin install` over an installed version, `oz0 plugin openapi|diff|list`, `oz0 audit`:
the upgrade check as a user meets it, against a real SQLite store under a fresh OZ0_HOME."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from openapi_spec_validator import validate
from test_compat import obj, write_plugin

from oz0.adapters.cli import main

EXAMPLE_MESSAGE = (
    "Error: invalid_argument: invalid request: team 0.1.1 breaks the contracts of 0.1.0: helper: input: takes "
    "JSON that matches a schema instead of text; give it a new major version, or install it with --allow-breaking"
)
SCHEMA = obj({"q": {"type": "string"}})


def oz0(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(home: Path) -> tuple[list[str], dict[str, str]]:
    """Everything the store holds: every row of the database, and every file under OZ0_HOME but it."""
    with sqlite3.connect(home / "oz0.db") as db:
        rows = list(db.iterdump())
    files = {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(home.rglob("*")) if p.is_file() and not p.name.startswith("oz0.db")}
    return rows, files


@pytest.fixture
def team(tmp_path, oz0_home, capsys):
    """team 0.1.0 installed: its agent helper takes and answers text."""
    folder = write_plugin(tmp_path / "team-0.1.0", version="0.1.0", agents={"helper": {}})
    code, _out, err = oz0(capsys, "plugin", "install", str(folder))
    assert code == 0, err
    return oz0_home


def test_the_example_is_refused_with_exactly_its_message_and_the_store_is_untouched(tmp_path, team, capsys):
    before = snapshot(team)
    new = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={"helper": {"input": SCHEMA}})
    code, out, err = oz0(capsys, "plugin", "install", str(new))
    assert code == 1
    assert err.strip().splitlines()[-1] == EXAMPLE_MESSAGE
    assert "Installed" not in out
    assert snapshot(team) == before
    code, out, _ = oz0(capsys, "plugin", "list", "--json")
    assert [p["version"] for p in json.loads(out)["plugins"]] == ["0.1.0"]


def test_several_breaking_changes_are_each_a_clause(tmp_path, team, capsys):
    new = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={
        "helper": {"output": obj({"status": {"enum": ["ok"]}}), "failures": {"RateLimited": {"retryable": True}}},
        "other": {},
    })
    code, _, err = oz0(capsys, "plugin", "install", str(new))
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        "Error: invalid_argument: invalid request: team 0.1.1 breaks the contracts of 0.1.0: "
        "helper: failure: new failure kind RateLimited; give it a new major version, or install it with "
        "--allow-breaking")


def test_a_new_major_version_goes_through_and_prints_its_changes(tmp_path, team, capsys):
    new = write_plugin(tmp_path / "team-0.2.0", version="0.2.0", agents={"helper": {"input": SCHEMA}})
    code, out, err = oz0(capsys, "plugin", "install", str(new))
    assert code == 0, err
    assert "Installed team 0.2.0 (was 0.1.0)" in out
    assert "  breaking: helper: input: takes JSON that matches a schema instead of text" in out.splitlines()
    code, out, _ = oz0(capsys, "audit", "--json")
    records = json.loads(out)["records"]
    assert [r["action"] for r in records] == ["plugin.contracts.breaking", "plugin.install", "plugin.install"]
    assert records[0]["detail"]["allow_breaking"] is False  # let through by the major version (issue 28, 6)
    assert (records[0]["detail"]["previous_version"], records[0]["detail"]["version"]) == ("0.1.0", "0.2.0")
    assert records[0]["detail"]["changes"] == [{
        "agent": "helper", "direction": "input", "json_path": "$",
        "what": "takes JSON that matches a schema instead of text", "breaking": True}]


def test_allow_breaking_goes_through_and_is_audited(tmp_path, team, capsys):
    new = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={"helper": {"input": SCHEMA}})
    code, out, err = oz0(capsys, "plugin", "install", str(new), "--allow-breaking")
    assert code == 0, err
    assert "  breaking: helper: input: takes JSON that matches a schema instead of text" in out.splitlines()
    code, out, _ = oz0(capsys, "audit", "--json")
    records = json.loads(out)["records"]
    assert records[0]["action"] == "plugin.contracts.breaking"
    assert records[0]["detail"]["plugin"] == "team"
    assert (records[0]["detail"]["previous_version"], records[0]["detail"]["version"]) == ("0.1.0", "0.1.1")
    assert records[0]["detail"]["changes"] == [{
        "agent": "helper", "direction": "input", "json_path": "$",
        "what": "takes JSON that matches a schema instead of text", "breaking": True}]
    code, out, _ = oz0(capsys, "audit")
    assert code == 0 and "plugin.contracts.breaking" in out


def test_a_compatible_upgrade_goes_through_and_plugin_list_shows_its_changes(tmp_path, team, capsys):
    new = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={
        "helper": {"output": obj({"a": {"type": "string"}})}, "other": {}})
    code, out, err = oz0(capsys, "plugin", "install", str(new))
    assert code == 0, err
    assert "Contract changes (2, 0 breaking):" in out
    code, out, _ = oz0(capsys, "plugin", "list")
    assert "team 0.1.0 -> 0.1.1: 2 changes, 0 breaking" in out
    assert "  not breaking: helper: output: returns JSON that matches a schema instead of text" in out.splitlines()
    assert "  not breaking: other: agent added" in out.splitlines()
    code, out, _ = oz0(capsys, "plugin", "list", "--json")
    latest = json.loads(out)["plugins"][0]["latest_changes"]
    assert latest["previous_version"] == "0.1.0" and latest["version"] == "0.1.1"
    assert [(c["agent"], c["what"]) for c in latest["changes"]] == [
        ("helper", "returns JSON that matches a schema instead of text"), ("other", "agent added")]
    code, out, _ = oz0(capsys, "audit", "--json")
    assert "plugin.contracts.breaking" not in [r["action"] for r in json.loads(out)["records"]]


@pytest.mark.parametrize("old,new,ok", [
    ("1.4.0", "2.0.0", True), ("1.4.0", "1.5.0", False), ("0.2.1", "0.3.0", True), ("0.2.1", "0.2.2", False),
    ("0.0.3", "0.0.4", True),
])
def test_version_arithmetic_decides_the_install(tmp_path, oz0_home, capsys, old, new, ok):
    assert oz0(capsys, "plugin", "install", str(write_plugin(tmp_path / old, version=old, agents={
        "helper": {"input": obj({"a": {}})}})))[0] == 0
    code, _, err = oz0(capsys, "plugin", "install", str(write_plugin(tmp_path / new, version=new, agents={
        "helper": {"input": obj({"a": {}}, required=["a"])}})))
    assert code == (0 if ok else 1)
    if not ok:
        assert err.strip().splitlines()[-1] == (
            f"Error: invalid_argument: invalid request: team {new} breaks the contracts of {old}: helper: input: "
            "$.a is newly required; give it a new major version, or install it with --allow-breaking")


def test_plugin_openapi_prints_a_valid_document(tmp_path, capsys):
    folder = write_plugin(tmp_path / "p", version="1.0.0", agents={"helper": {"input": SCHEMA}, "echo": {}})
    code, out, _ = oz0(capsys, "plugin", "openapi", str(folder))
    assert code == 0
    document = json.loads(out)
    validate(document)
    assert {"/agents/echo/runs", "/agents/helper/runs"} <= set(document["paths"])  # as serve publishes it
    assert (document["info"]["title"], document["info"]["version"]) == ("team", "1.0.0")


def test_plugin_openapi_of_a_folder_that_is_no_plugin(tmp_path, capsys):
    code, _, err = oz0(capsys, "plugin", "openapi", str(tmp_path))
    assert code == 2
    assert "no plugin.yaml" in err and "Traceback" not in err


def test_plugin_diff_lists_every_change(tmp_path, capsys):
    old = write_plugin(tmp_path / "a", version="0.1.0", agents={"helper": {"input": obj({"repo": {}})}})
    new = write_plugin(tmp_path / "b", version="0.1.1", agents={
        "helper": {"input": obj({"repo": {}, "pr": {"type": "integer"}}, required=["repo"])}})
    code, out, _ = oz0(capsys, "plugin", "diff", str(old), str(new))
    assert code == 0
    assert out.splitlines()[0] == ("team 0.1.0 -> team 0.1.1: 2 changes, 1 breaking. Breaking changes need a new "
                                   "major version (0.2.0 or later), or install with --allow-breaking.")
    assert "$.repo is newly required" in out and "$.pr is a new optional property" in out
    code, out, _ = oz0(capsys, "plugin", "diff", str(old), str(new), "--json")
    assert code == 0
    result = json.loads(out)
    assert result["success"] is True and result["breaking"] is True and result["required_version"] == "0.2.0"
    assert result["changes"] == [
        {"agent": "helper", "direction": "input", "json_path": "$.pr", "what": "$.pr is a new optional property",
         "breaking": False},
        {"agent": "helper", "direction": "input", "json_path": "$.repo", "what": "$.repo is newly required",
         "breaking": True},
    ]


def test_plugin_diff_of_the_same_plugin(tmp_path, capsys):
    folder = write_plugin(tmp_path / "a", agents={"helper": {"input": SCHEMA}})
    code, out, _ = oz0(capsys, "plugin", "diff", str(folder), str(folder))
    assert (code, out) == (0, "team 0.1.0 -> team 0.1.0: no changes.\n")
