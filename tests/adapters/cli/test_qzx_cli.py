"""`oz0 qzx validate`, `oz0 qzx receipt` and the CLI JSON profile (emit_result), judged by what a user
sees: stdout, exit codes, the receipt file, and the official schemas as oracles."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
import referencing
from paths import shared

from oz0.adapters.cli import main
from oz0.adapters.cli.json_out import emit_result
from oz0.edge.contracts.bundled import CONTRACT_SCHEMA_URL
from oz0.edge.results.qzx import check_core

SPEC = shared("spec")

RESULT_ORACLE = jsonschema.Draft202012Validator(
    json.loads((SPEC / "result-contract-v1.schema.json").read_text()), registry=referencing.Registry())
RECEIPT_ORACLE = jsonschema.Draft202012Validator(
    json.loads((SPEC / "result-contract-conformance-receipt-v1.schema.json").read_text()),
    registry=referencing.Registry())
OZ0 = Path(sys.executable).with_name("oz0")

OK = {"success": True, "message": "Weather read for Lima.", "temperature": 22.5,
      "meta": {"schema_version": 1, "command": "weather", "duration_ms": 3.2}}
FAIL = {"success": False, "message": "City unknown: Atlantis.", "error": "no such city",
        "error_code": "city_unknown", "meta": {"schema_version": 1, "command": "weather"}}
TOOL = {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": {"$ref": CONTRACT_SCHEMA_URL}}


def write(path: Path, value, *, raw: str | None = None) -> Path:
    path.write_text(raw if raw is not None else json.dumps(value, indent=1), encoding="utf-8")
    return path


def mcp(structured, *, is_error=None, result_type="complete"):
    doc = {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured}
    if is_error is not None:
        doc["isError"] = is_error
    if result_type:
        doc["resultType"] = result_type
    return {"jsonrpc": "2.0", "id": 1, "result": doc}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_result(out: str) -> dict:
    doc = json.loads(out)
    assert RESULT_ORACLE.is_valid(doc), list(RESULT_ORACLE.iter_errors(doc))
    assert check_core(doc) == []
    return doc


# oz0 qzx validate

def test_validate_conforming_file(tmp_path, capsys):
    code, out, err = run(capsys, "qzx", "validate", str(write(tmp_path / "ok.json", OK)))
    assert code == 0 and err == ""
    assert out.endswith("under the core profile of QZX Result Contract v1: conforms.\n")


def test_validate_prints_each_violation_on_its_own_line(tmp_path, capsys):
    bad = write(tmp_path / "bad.json", {"success": "yes", "message": "", "meta": {"duration_ms": -1}})
    code, out, _ = run(capsys, "qzx", "validate", str(bad))
    assert code == 1
    lines = out.splitlines()
    assert f"{bad}: $.success: must be a boolean, got string" in lines
    assert f"{bad}: $.message: must contain a non-blank character" in lines
    assert f"{bad}: $.meta.duration_ms: must be >= 0, got -1" in lines
    assert lines[-1].endswith("does not conform (3 violations).")


def test_validate_nan_duration_is_a_violation_not_a_crash(tmp_path, capsys):
    path = write(tmp_path / "nan.json", None, raw='{"success": true, "message": "m", "meta": {"duration_ms": NaN}}')
    code, out, _ = run(capsys, "qzx", "validate", str(path))
    assert code == 1
    assert f"{path}: $.meta.duration_ms: must be a finite number >= 0, got NaN" in out.splitlines()


@pytest.mark.parametrize("argv,words", [
    (["MISSING"], "cannot read: No such file or directory"),
    (["BROKEN"], "not valid JSON: Expecting"),
    (["OK", "--profile", "mcp-1999"], "unknown profile 'mcp-1999'"),
    ([], "FILE is required"),
    (["OK", "--tool-definition", "BROKEN"], "not valid JSON"),
])
def test_validate_usage_and_input_errors_exit_2(tmp_path, capsys, argv, words):
    names = {"MISSING": str(tmp_path / "missing.json"), "OK": str(write(tmp_path / "ok.json", OK)),
             "BROKEN": str(write(tmp_path / "broken.json", None, raw='{"success": tru'))}
    argv = [names.get(a, a) for a in argv]
    code, out, err = run(capsys, "qzx", "validate", *argv)
    assert code == 2 and out == ""
    assert err.startswith("oz0: error: ") and words in err and err.count("\n") == 1
    code, out, err = run(capsys, "qzx", "validate", *argv, "--json")
    assert code == 2 and err == ""
    doc = one_result(out)
    assert doc["success"] is False and doc["error_code"] == "usage_error" and words in doc["error"]
    assert doc["meta"]["command"] == "qzx validate"


def test_validate_json_verdicts_are_qzx_results(tmp_path, capsys):
    code, out, err = run(capsys, "qzx", "validate", str(write(tmp_path / "ok.json", OK)), "--json")
    doc = one_result(out)
    assert code == 0 and err == "" and doc["success"] is True and doc["details"]["violations"] == []
    bad = write(tmp_path / "bad.json", {"success": True, "message": "m", "error": "e"})
    code, out, err = run(capsys, "qzx", "validate", str(bad), "--json")
    doc = one_result(out)
    assert code == 1 and err == ""
    assert doc["success"] is False and doc["error_code"] == "result_contract_violation"
    assert doc["details"]["violations"] == ["$.error: a success (success: true) must not carry this failure "
                                            "field, not even as null"]


def test_validate_mcp_profile_with_tool_definition_and_warning(tmp_path, capsys):
    doc = mcp(FAIL, is_error=True)
    doc["result"]["content"] = [{"type": "text", "text": "City unknown"}]
    structural = {"name": "w", "outputSchema": {
        "type": "object", "required": ["success", "message"],
        "properties": {"success": {"type": "boolean"}, "message": {"type": "string", "minLength": 1,
                                                                    "pattern": "\\S"}, "error": {}}}}
    code, out, _ = run(capsys, "qzx", "validate", str(write(tmp_path / "f.json", doc)), "--profile",
                       "mcp-2026-07-28", "--tool-definition", str(write(tmp_path / "t.json", structural)),
                       "--json")
    verdict = one_result(out)
    assert code == 0
    assert verdict["details"]["profile_facts"]["output_schema_mode"] == "structural_core"
    assert any("no text content block holds the same JSON" in w for w in verdict["warnings"])
    assert any("structural_core" in w for w in verdict["warnings"])


def test_validate_reads_stdin_through_the_installed_command(tmp_path):
    assert OZ0.exists(), "install the project (make test does pip install -e)"
    proc = subprocess.run([str(OZ0), "qzx", "validate", "-", "--profile", "mcp-2025-06-18", "--json"],
                          input=json.dumps(mcp(FAIL, is_error=None, result_type=None)).encode(),
                          capture_output=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr == b""
    doc = one_result(proc.stdout.decode())
    assert "$.result.isError: effective isError is false (absent)" in doc["details"]["violations"][0]
    assert doc["details"]["file"] == "<stdin>"


# oz0 qzx receipt

def pair(tmp_path, profile="core", tool=TOOL):
    mcp_profile = profile != "core"
    rt = "complete" if profile == "mcp-2026-07-28" else None
    ok = mcp(OK, result_type=rt) if mcp_profile else OK
    fail = mcp(FAIL, is_error=True, result_type=rt) if mcp_profile else FAIL
    args = ["--profile", profile, "--success", str(write(tmp_path / "success.json", ok)),
            "--failure", str(write(tmp_path / "failure.json", fail))]
    if mcp_profile and tool is not None:
        args += ["--tool-definition", str(write(tmp_path / "tool.json", tool))]
    return args


def sha256sum(path: Path) -> str:
    return subprocess.run(["sha256sum", str(path)], capture_output=True, text=True, check=True).stdout.split()[0]


@pytest.mark.parametrize("profile", ["core", "mcp-2025-06-18", "mcp-2025-11-25", "mcp-2026-07-28"])
def test_receipt_for_a_conforming_pair(tmp_path, capsys, profile):
    args = pair(tmp_path, profile)
    code, out, _ = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "r1.json"))
    assert code == 0 and out.startswith("PASS: ")
    code, _, _ = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "r2.json"))
    assert code == 0
    first, second = (tmp_path / "r1.json").read_bytes(), (tmp_path / "r2.json").read_bytes()
    assert first == second
    receipt = json.loads(first)
    assert RECEIPT_ORACLE.is_valid(receipt), list(RECEIPT_ORACLE.iter_errors(receipt))
    assert RESULT_ORACLE.is_valid(receipt) and check_core(receipt) == []
    assert receipt["success"] is True and "error_code" not in receipt
    details = receipt["details"]
    assert details["profile"] == profile and details["violations"] == []
    success, failure = details["cases"]
    assert success["sha256"] == sha256sum(tmp_path / "success.json")
    assert failure["sha256"] == sha256sum(tmp_path / "failure.json")
    assert (success["actual_success"], failure["actual_success"]) == (True, False)
    if profile == "core":
        assert details["tool_definition"] is None and details["mcp_specification"] is None
    else:
        assert details["tool_definition"] == {"file": str(tmp_path / "tool.json"),
                                              "sha256": sha256sum(tmp_path / "tool.json")}
        assert success["profile_facts"]["output_schema_mode"] == "canonical_ref"
        assert failure["profile_facts"]["mcp_is_error_effective"] is True
        assert "outputSchema mode canonical_ref" in receipt["message"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_receipt_records_a_swapped_pair_as_nonconforming(tmp_path, capsys):
    args = ["--profile", "core", "--success", str(write(tmp_path / "s.json", FAIL)),
            "--failure", str(write(tmp_path / "f.json", OK))]
    code, out, _ = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "r.json"))
    receipt = json.loads((tmp_path / "r.json").read_text())
    assert code == 1 and out.splitlines()[-2].startswith("FAIL: The evidence pair does not conform")
    assert out.splitlines()[-1] == f"Receipt written to {tmp_path / 'r.json'}."
    assert RECEIPT_ORACLE.is_valid(receipt) and RESULT_ORACLE.is_valid(receipt)
    assert receipt["success"] is False and receipt["error_code"] == "result_contract_nonconformant"
    assert receipt["details"]["violations"] == [
        "success: $.success: the success evidence must say success: true, found false",
        "failure: $.success: the failure evidence must say success: false, found true"]
    assert [c["conformant"] for c in receipt["details"]["cases"]] == [False, False]


def test_receipt_records_unreadable_and_non_json_evidence(tmp_path, capsys):
    args = ["--profile", "core", "--success", str(tmp_path / "gone.json"),
            "--failure", str(write(tmp_path / "f.json", None, raw="{not json"))]
    code, _, _ = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "r.json"))
    receipt = json.loads((tmp_path / "r.json").read_text())
    assert code == 1 and RECEIPT_ORACLE.is_valid(receipt)
    success, failure = receipt["details"]["cases"]
    assert success["sha256"] is None and success["actual_success"] is None
    assert success["violations"] == [f"$: cannot read {tmp_path / 'gone.json'}: No such file or directory"]
    assert failure["sha256"] == sha256sum(tmp_path / "f.json")
    assert "not valid JSON" in failure["violations"][0]


def test_receipt_mcp_failure_without_is_error_and_weak_output_schema(tmp_path, capsys):
    weak = {"name": "w", "outputSchema": {"type": "object"}}
    args = pair(tmp_path, "mcp-2025-11-25", tool=weak)
    write(tmp_path / "failure.json", mcp(FAIL, result_type=None))
    code, out, _ = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "r.json"))
    receipt = json.loads((tmp_path / "r.json").read_text())
    assert code == 1 and RECEIPT_ORACLE.is_valid(receipt)
    violations = receipt["details"]["violations"]
    assert any(v.startswith("tool definition.outputSchema: is weaker than the contract") for v in violations)
    assert any(v.startswith("failure: $.result.isError: effective isError is false (absent)") for v in violations)
    assert receipt["details"]["cases"][0]["conformant"] is True
    assert "violation: failure: $.result.isError" in out


def test_receipt_json_rpc_error_is_not_a_completed_result(tmp_path, capsys):
    args = pair(tmp_path, "mcp-2025-06-18")
    write(tmp_path / "failure.json", {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "nope"}})
    code, _, _ = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "r.json"))
    receipt = json.loads((tmp_path / "r.json").read_text())
    assert code == 1 and RECEIPT_ORACLE.is_valid(receipt)
    failure = receipt["details"]["cases"][1]
    assert failure["actual_success"] is None
    assert failure["violations"][0].startswith("$.error: a JSON-RPC error response is an MCP protocol error")


def test_receipt_mcp_profile_requires_a_tool_definition(tmp_path, capsys):
    code, out, err = run(capsys, "qzx", "receipt", *pair(tmp_path, "mcp-2026-07-28", tool=None),
                         "--report", str(tmp_path / "r.json"))
    assert code == 2 and out == "" and "requires --tool-definition" in err
    assert not (tmp_path / "r.json").exists()


def test_receipt_never_overwrites_evidence(tmp_path, capsys):
    args = pair(tmp_path)
    before = (tmp_path / "failure.json").read_bytes()
    code, _, err = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "sub" / ".." / "failure.json"))
    assert code == 2 and "never overwrites evidence" in err
    assert (tmp_path / "failure.json").read_bytes() == before


def test_receipt_replaces_an_old_report_whole(tmp_path, capsys):
    report = write(tmp_path / "r.json", None, raw="old" * 10000)
    code, _, _ = run(capsys, "qzx", "receipt", *pair(tmp_path), "--report", str(report))
    assert code == 0 and json.loads(report.read_text())["success"] is True
    code, _, err = run(capsys, "qzx", "receipt", *pair(tmp_path), "--report", str(tmp_path / "no" / "r.json"))
    assert code == 2 and "does not exist" in err


# emit_result: the runtime validates its own envelope

def emitted(**kw):
    stream = io.StringIO()
    code = emit_result(stream=stream, **kw)
    text = stream.getvalue()
    assert text.count("\n") >= 1 and json.loads(text) is not None
    return code, one_result(text)


def test_emit_result_success_and_failure():
    code, doc = emitted(command="run", success=True, message="Deploy started.", data={"run_id": "r1"},
                        started=time.monotonic())
    assert code == 0 and doc["run_id"] == "r1" and doc["meta"]["command"] == "run"
    assert doc["meta"]["duration_ms"] >= 0 and "error" not in doc
    code, doc = emitted(command="run", success=False, message="Deploy refused.", error_code="not_allowed")
    assert code == 1 and doc["error_code"] == "not_allowed"


@pytest.mark.parametrize("kw,words", [
    (dict(success=False, message="Broke."), "must carry `error` or `error_code`"),
    (dict(success=True, message="Done.", error="oops"), "a success (success: true) must not carry"),
    (dict(success=True, message="  "), "$.message: must contain a non-blank character"),
    (dict(success=True, message="Done.", error_code=None, warnings=[""]), "$.warnings[0]"),
    (dict(success=True, message="Done.", duration_ms=float("nan")), "$.meta.duration_ms"),
    (dict(success=True, message="Done.", data={"success": False}), "must not replace the core field 'success'"),
    (dict(success=True, message="Done.", data={"when": object()}), "cannot be written as JSON"),
    (dict(success="yes", message="Done."), "$.success: must be a boolean"),
])
def test_an_invalid_envelope_becomes_invalid_result_contract(kw, words):
    code, doc = emitted(command="plugin diff", **kw)
    assert code == 1
    assert doc["success"] is False and doc["error_code"] == "invalid_result_contract"
    assert doc["meta"]["command"] == "plugin diff"
    assert any(words in v for v in doc["details"]["violations"]), doc["details"]["violations"]


def test_usage_errors_exit_2():
    code, doc = emitted(command="run", success=False, message="Nothing run.", error="no agent given",
                        error_code="usage_error")
    assert code == 2 and doc["error_code"] == "usage_error"


def test_receipt_of_an_inline_schema_differing_only_in_a_description_is_structural_core(tmp_path, capsys):
    official = json.loads((SPEC / "result-contract-v1.schema.json").read_text())
    changed = json.loads(json.dumps(official))
    changed["properties"]["message"]["description"] = "What happened."
    for schema, mode in ((official, "canonical_inline"), (changed, "structural_core")):
        args = pair(tmp_path, "mcp-2025-06-18", tool={**TOOL, "outputSchema": schema})
        code, _out, _ = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "r.json"))
        receipt = json.loads((tmp_path / "r.json").read_text())
        assert code == 0 and RECEIPT_ORACLE.is_valid(receipt)
        assert [c["profile_facts"]["output_schema_mode"] for c in receipt["details"]["cases"]] == [mode, mode]
        assert f"outputSchema mode {mode}" in receipt["message"]
        assert any("mode structural_core" in w for w in receipt["warnings"]) is (mode == "structural_core")


def test_receipt_records_the_effective_error_state_of_a_non_boolean_is_error(tmp_path, capsys):
    args = pair(tmp_path, "mcp-2025-06-18")
    write(tmp_path / "failure.json", mcp(FAIL, is_error="true", result_type=None))
    code, _, _ = run(capsys, "qzx", "receipt", *args, "--report", str(tmp_path / "r.json"))
    receipt = json.loads((tmp_path / "r.json").read_text())
    assert code == 1 and RECEIPT_ORACLE.is_valid(receipt)
    facts = receipt["details"]["cases"][1]["profile_facts"]
    assert (facts["mcp_is_error_explicit"], facts["mcp_is_error_effective"]) == (True, False)
    assert "failure: $.result.isError: must be a boolean, got string" in receipt["details"]["violations"]
