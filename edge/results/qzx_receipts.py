"""QZX conformance receipts: a success/failure evidence pair validated under one profile, recorded as
a deterministic QZX result (the same inputs give the same receipt, byte for byte)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oz0.edge.contracts.bundled import CONTRACT_SCHEMA_URL
from oz0.edge.results.qzx import Finding, InputError, parse_document
from oz0.edge.results.qzx_profiles import PROFILES, Verdict, blank_facts, validate_document

__all__ = [
    "RECEIPT_SCHEMA_URL",
    "Evidence",
    "build_receipt",
    "receipt_bytes",
]

RECEIPT_SCHEMA_URL = "https://qzx.yumbale.com/schemas/result-contract-conformance-receipt-v1.schema.json"


@dataclass(frozen=True)
class Evidence:
    """A file given to the pair validator: its name as given, and its exact bytes (None if unreadable)."""

    file: str
    data: bytes | None
    read_error: str | None = None


def _sha256(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _load(evidence: Evidence) -> tuple[Any, Finding | None]:
    if evidence.data is None:
        return None, Finding("$", f"cannot read {evidence.file}: {evidence.read_error or 'unreadable'}")
    try:
        return parse_document(evidence.data, source=evidence.file), None
    except InputError as exc:
        return None, Finding("$", str(exc))


def build_receipt(profile: str, success: Evidence, failure: Evidence, *,
                  tool_definition: Evidence | None = None) -> dict[str, Any]:
    """The conformance receipt of a success/failure evidence pair, as a QZX result.

    Deterministic: it depends only on the arguments (file names as given and their bytes), so the
    same inputs give the same receipt. Unreadable or non-JSON evidence is recorded, not raised.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    tool_doc: Any = None
    tool_problem: Finding | None = None
    if tool_definition is not None:
        tool_doc, tool_problem = _load(tool_definition)
    cases = []
    verdicts_facts: list[Mapping[str, Any]] = []
    all_violations: list[str] = []
    all_warnings: list[str] = []
    tool_findings_done = False
    for name, evidence, expected in (("success", success, True), ("failure", failure, False)):
        document, problem = _load(evidence)
        if problem is None:
            verdict = validate_document(document, profile=profile, tool_definition=tool_doc,
                                        tool_definition_given=tool_definition is not None and tool_problem is None)
        else:
            verdict = Verdict(profile, (problem,), (), None, blank_facts(profile))
        own = [f for f in verdict.violations if not f.path.startswith("tool definition")]
        tool_v = [f for f in verdict.violations if f.path.startswith("tool definition")]
        own_w = [f for f in verdict.warnings if not f.path.startswith("tool definition")]
        tool_w = [f for f in verdict.warnings if f.path.startswith("tool definition")]
        if problem is None and verdict.actual_success is not expected:
            shown = "absent" if verdict.actual_success is None else str(verdict.actual_success).lower()
            where = "$.success" if profile == "core" else "structuredContent.success"
            own.append(Finding(where, f"the {name} evidence must say success: {str(expected).lower()}, "
                                      f"found {shown}"))
        if not tool_findings_done:
            if tool_problem is not None:
                all_violations.append(f"tool definition: {tool_problem.message}")
            all_violations.extend(str(f) for f in tool_v)
            all_warnings.extend(str(f) for f in tool_w)
            tool_findings_done = True
        case_violations = [str(f) for f in own]
        case_warnings = [str(f) for f in own_w]
        all_violations.extend(f"{name}: {v}" for v in case_violations)
        all_warnings.extend(f"{name}: {w}" for w in case_warnings)
        verdicts_facts.append(verdict.facts)
        cases.append({
            "name": name,
            "file": evidence.file,
            "sha256": _sha256(evidence.data),
            "expected_success": expected,
            "actual_success": verdict.actual_success,
            "conformant": not case_violations,
            "violations": case_violations,
            "warnings": case_warnings,
            "profile_facts": verdict.facts,
        })
    if PROFILES[profile] is not None and tool_definition is None:
        all_violations.insert(0, f"tool definition: the {profile} profile requires the tool definition")
    ok = not all_violations
    label = f"QZX Result Contract v1 ({profile} profile)"
    if ok:
        mode = verdicts_facts[0].get("output_schema_mode")
        how = f"; outputSchema mode {mode}" if mode else ""
        message = f"The success and failure evidence conform to {label}{how}."
    else:
        count = len(all_violations)
        message = (f"The evidence pair does not conform to {label}: {count} violation"
                   f"{'s' if count != 1 else ''}; the first is {all_violations[0]}")
    receipt: dict[str, Any] = {"receipt_schema": RECEIPT_SCHEMA_URL, "success": ok, "message": message}
    if not ok:
        receipt["error_code"] = "result_contract_nonconformant"
    receipt["warnings"] = all_warnings
    receipt["details"] = {
        "report_schema_version": 1,
        "contract_version": "v1",
        "contract_schema": CONTRACT_SCHEMA_URL,
        "profile": profile,
        "mcp_specification": PROFILES[profile],
        "tool_definition": (None if tool_definition is None else
                            {"file": tool_definition.file, "sha256": _sha256(tool_definition.data)}),
        "violations": all_violations,
        "cases": cases,
    }
    return receipt


def receipt_bytes(receipt: Mapping[str, Any]) -> bytes:
    """The receipt as written: indented UTF-8 JSON with a final newline, no NaN, stable key order."""
    return (json.dumps(receipt, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
