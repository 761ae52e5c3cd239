"""QZX Result Contract v1: the core rules, the MCP profiles, tool definitions and conformance receipts.

Every check is a pure function that returns findings (a JSON path and a sentence) instead of raising,
so the same code serves `oz0 qzx validate`, the pair receipt and the runtime that validates its own
envelope before printing it (`result_envelope`). Hand-written rules rather than a schema engine,
because the contract asks for things a schema cannot say (a finite `duration_ms`, a present-but-null
failure field named as such) and users need a sentence per rule. The project's own schema of the
envelope (edge/schemas/qzx-result-v1.schema.json) is used to recognise an inlined canonical
`outputSchema`.

Input is read with Python's json, which accepts the non-standard NaN/Infinity tokens; they are not
JSON numbers, so every non-finite number is then reported as a violation where it stands.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    "CONTRACT_SCHEMA_URL",
    "MAX_INPUT_BYTES",
    "OUTPUT_SCHEMA_MODES",
    "PROFILES",
    "RECEIPT_SCHEMA_URL",
    "Evidence",
    "Finding",
    "InputError",
    "OutputSchemaVerdict",
    "Verdict",
    "build_receipt",
    "canonical_schema",
    "check_core",
    "check_output_schema",
    "parse_document",
    "receipt_bytes",
    "result_envelope",
    "same_json",
    "validate_document",
]

CONTRACT_SCHEMA_URL = "https://qzx.yumbale.com/schemas/result-contract-v1.schema.json"
RECEIPT_SCHEMA_URL = "https://qzx.yumbale.com/schemas/result-contract-conformance-receipt-v1.schema.json"
PROFILES: dict[str, str | None] = {
    "core": None,
    "mcp-2025-06-18": "2025-06-18",
    "mcp-2025-11-25": "2025-11-25",
    "mcp-2026-07-28": "2026-07-28",
}
OUTPUT_SCHEMA_MODES = ("canonical_ref", "canonical_inline", "canonical_allof", "structural_core")
MAX_INPUT_BYTES = 16 * 1024 * 1024

_ERROR_CODE = re.compile(r"[a-z][a-z0-9_]*")
_NON_BLANK = re.compile(r"\S")
_ANNOTATIONS = frozenset({"$id", "title", "description", "examples", "$comment"})
_OPTIONAL_CORE = ("error", "error_code", "details", "warnings", "meta")
_OPTIONAL_META = ("schema_version", "command", "duration_ms", "command_maturity")


@dataclass(frozen=True)
class Finding:
    """One violation or warning: where in the document (a JSONPath) and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InputError(ValueError):
    """Input that is not a JSON document at all (unreadable bytes, bad syntax, too large)."""


@dataclass(frozen=True)
class OutputSchemaVerdict:
    """How a tool definition's `outputSchema` relates to the contract, and what that costs."""

    mode: str | None
    violations: tuple[Finding, ...] = ()
    warnings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The outcome of validating one document under one profile."""

    profile: str
    violations: tuple[Finding, ...]
    warnings: tuple[Finding, ...]
    actual_success: bool | None
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def conforms(self) -> bool:
        return not self.violations


@dataclass(frozen=True)
class Evidence:
    """A file given to the pair validator: its name as given, and its exact bytes (None if unreadable)."""

    file: str
    data: bytes | None
    read_error: str | None = None


def _path(base: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{base}[{key}]"
    if key.isidentifier():
        return f"{base}.{key}"
    return f"{base}[{json.dumps(key, ensure_ascii=False)}]"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _non_blank(value: Any) -> bool:
    return isinstance(value, str) and _NON_BLANK.search(value) is not None


def _text_findings(value: Any, path: str) -> list[Finding]:
    """What is wrong with a field that must be a string with a non-blank character (nothing when it is)."""
    if not isinstance(value, str):
        return [Finding(path, f"must be a string, got {_kind(value)}")]
    if not _non_blank(value):
        return [Finding(path, "must contain a non-blank character")]
    return []


def parse_document(data: bytes, *, source: str = "<input>") -> Any:
    """Parse UTF-8 JSON bytes; InputError names the source and the problem (line and column)."""
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{source}: {len(data):,} bytes; the limit is {MAX_INPUT_BYTES:,}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{source}: not usable JSON: nested too deeply") from None


def _non_finite(document: Any, base: str) -> list[Finding]:
    found: list[Finding] = []
    stack: list[tuple[Any, str]] = [(document, base)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found.append(Finding(where, f"{json.dumps(value)} is not a JSON number (NaN and Infinity are not JSON)"))
        elif isinstance(value, dict):
            stack.extend((v, _path(where, k)) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((v, _path(where, i)) for i, v in reversed(list(enumerate(value))))
    return found


def check_core(document: Any, *, base: str = "$") -> list[Finding]:
    """Every way `document` breaks the core contract; empty when it conforms. Paths start at `base`."""
    if not isinstance(document, dict):
        return [Finding(base, f"a QZX result must be a JSON object, got {_kind(document)}")]
    found: list[Finding] = []
    at = lambda key: _path(base, key)  # noqa: E731
    for key in _OPTIONAL_CORE:
        if key in document and document[key] is None:
            found.append(Finding(at(key), "must be omitted when unavailable, never null"))

    success = document.get("success")
    if "success" not in document:
        found.append(Finding(at("success"), "is required: true or false"))
    elif not isinstance(success, bool):
        found.append(Finding(at("success"), f"must be a boolean, got {_kind(success)}"))

    if "message" not in document:
        found.append(Finding(at("message"), "is required: a non-blank string summarising the outcome"))
    else:
        found.extend(_text_findings(document["message"], at("message")))

    if success is False and "error" not in document and "error_code" not in document:
        found.append(Finding(base, "a failure (success: false) must carry `error` or `error_code`"))
    if success is True:
        for key in ("error", "error_code"):
            if key in document:
                found.append(Finding(at(key), "a success (success: true) must not carry this failure field, "
                                              "not even as null"))

    if document.get("error") is not None:
        found.extend(_text_findings(document["error"], at("error")))
    if document.get("error_code") is not None:
        code = document["error_code"]
        if not isinstance(code, str):
            found.append(Finding(at("error_code"), f"must be a string, got {_kind(code)}"))
        elif not _ERROR_CODE.fullmatch(code):
            found.append(Finding(at("error_code"), f"{code!r} must match ^[a-z][a-z0-9_]*$ "
                                                   "(lower case letter, then lower case letters, digits, _)"))
    if document.get("details") is not None and not isinstance(document["details"], dict):
        found.append(Finding(at("details"), f"must be an object, got {_kind(document['details'])}"))
    if document.get("warnings") is not None:
        warnings = document["warnings"]
        if not isinstance(warnings, list):
            found.append(Finding(at("warnings"), f"must be an array of strings, got {_kind(warnings)}"))
        else:
            for i, item in enumerate(warnings):
                found.extend(_text_findings(item, _path(at("warnings"), i)))
    if document.get("meta") is not None:
        found.extend(_check_meta(document["meta"], at("meta")))
    reported = {f.path for f in found}
    found.extend(f for f in _non_finite(document, base) if f.path not in reported)
    return _unique(found)


def _check_meta(meta: Any, base: str) -> list[Finding]:
    if not isinstance(meta, dict):
        return [Finding(base, f"must be an object, got {_kind(meta)}")]
    found: list[Finding] = []
    at = lambda key: _path(base, key)  # noqa: E731
    for key in _OPTIONAL_META:
        if key in meta and meta[key] is None:
            found.append(Finding(at(key), "must be omitted when unavailable, never null"))
    version = meta.get("schema_version")
    if version is not None and (not _is_number(version) or version != 1):
        found.append(Finding(at("schema_version"), f"must be 1, got {json.dumps(version)}"))
    command = meta.get("command")
    if command is not None:
        found.extend(_text_findings(command, at("command")))
    duration = meta.get("duration_ms")
    if duration is not None:
        if not _is_number(duration):
            found.append(Finding(at("duration_ms"), f"must be a number of milliseconds, got {_kind(duration)}"))
        elif not math.isfinite(duration):
            found.append(Finding(at("duration_ms"), f"must be a finite number >= 0, got {json.dumps(duration)}"))
        elif duration < 0:
            found.append(Finding(at("duration_ms"), f"must be >= 0, got {duration!r}"))
    maturity = meta.get("command_maturity")
    if maturity is not None and not isinstance(maturity, dict):
        found.append(Finding(at("command_maturity"), f"must be an object, got {_kind(maturity)}"))
    return found


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    seen: dict[Finding, None] = {}
    for f in findings:
        seen.setdefault(f, None)
    return list(seen)


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: unlike Python's ==, true is not 1 and key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


_canonical: dict[str, Any] = {}


def canonical_schema() -> dict[str, Any]:
    """The project's own schema of the envelope, shipped as package data (a fresh copy each call)."""
    if "schema" not in _canonical:
        text = (resources.files("oz0.edge") / "schemas" / "qzx-result-v1.schema.json").read_text("utf-8")
        _canonical["schema"] = json.loads(text)
    return json.loads(json.dumps(_canonical["schema"]))


def _constraints(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _constraints(v) for k, v in schema.items() if k not in _ANNOTATIONS}
    if isinstance(schema, list):
        return [_constraints(v) for v in schema]
    return schema


def _canonical_mode(schema: Any) -> str | None:
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        rest = set(schema) - {"$ref", "$schema"} - _ANNOTATIONS
        if not rest and schema["$ref"].rstrip("#") == CONTRACT_SCHEMA_URL:
            return "canonical_ref"
    if isinstance(schema, dict) and same_json(_constraints(schema), _constraints(canonical_schema())):
        return "canonical_inline"
    return None


def check_output_schema(tool_definition: Any, *, base: str = "$") -> OutputSchemaVerdict:
    """Classify a tool definition's `outputSchema`: canonical_ref, canonical_inline, canonical_allof,
    or structural_core (passes with a warning); anything weaker is a violation naming what is missing.
    """
    if not isinstance(tool_definition, dict):
        return OutputSchemaVerdict(None, (Finding(base, f"a tool definition must be a JSON object, got "
                                                        f"{_kind(tool_definition)}"),))
    where = _path(base, "outputSchema")
    if "outputSchema" not in tool_definition:
        return OutputSchemaVerdict(None, (Finding(where, "is required: the tool must declare the schema "
                                                         "of its structuredContent"),))
    schema = tool_definition["outputSchema"]
    mode = _canonical_mode(schema)
    if mode:
        return OutputSchemaVerdict(mode)
    if isinstance(schema, dict) and isinstance(schema.get("allOf"), list):
        if any(_canonical_mode(branch) for branch in schema["allOf"]):
            return OutputSchemaVerdict("canonical_allof")
    missing = _structural_gaps(schema)
    if missing:
        return OutputSchemaVerdict(None, tuple(Finding(where, gap) for gap in missing))
    return OutputSchemaVerdict("structural_core", warnings=(Finding(
        where, "matches only the structural core of the contract (mode structural_core); reference "
               f"{CONTRACT_SCHEMA_URL} to declare the full contract"),))


def _structural_gaps(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return [f"must be a JSON Schema object, got {_kind(schema)}"]
    gaps: list[str] = []
    if schema.get("type") != "object":
        gaps.append('is weaker than the contract: needs "type": "object"')
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    for name in ("success", "message"):
        if name not in required:
            gaps.append(f'is weaker than the contract: "{name}" must be required')
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    success = props.get("success")
    if not (isinstance(success, dict) and success.get("type") == "boolean"):
        gaps.append('is weaker than the contract: properties.success needs "type": "boolean"')
    message = props.get("message")
    message = message if isinstance(message, dict) else {}
    min_length = message.get("minLength")
    if (message.get("type") != "string" or not _is_number(min_length) or min_length < 1
            or message.get("pattern") != r"\S"):
        gaps.append('is weaker than the contract: properties.message needs "type": "string", '
                    '"minLength" >= 1 and "pattern": "\\\\S"')
    code = props.get("error_code")
    if "error" not in props and not (isinstance(code, dict) and isinstance(code.get("pattern"), str)):
        gaps.append('is weaker than the contract: declare properties.error or a properties.error_code '
                    'with a "pattern"')
    return gaps


def _mcp_facts(profile: str) -> dict[str, Any]:
    spec = PROFILES[profile]
    return {"mcp_specification": spec,
            "mcp_tools_spec": f"https://modelcontextprotocol.io/specification/{spec}/server/tools",
            "contract": CONTRACT_SCHEMA_URL}


def validate_document(document: Any, *, profile: str = "core", tool_definition: Any = None,
                      tool_definition_given: bool | None = None) -> Verdict:
    """Validate one parsed document under `profile` (a key of PROFILES).

    A tool definition, when given, has its `outputSchema` classified; its findings are reported under
    `tool definition` so they are not confused with the document's own paths.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    given = tool_definition is not None if tool_definition_given is None else tool_definition_given
    violations: list[Finding] = []
    warnings: list[Finding] = []
    facts: dict[str, Any] = {"contract": CONTRACT_SCHEMA_URL} if profile == "core" else _mcp_facts(profile)
    facts["output_schema_checked"] = given
    facts["output_schema_mode"] = None
    if given:
        tool = check_output_schema(tool_definition, base="tool definition")
        facts["output_schema_mode"] = tool.mode
        violations.extend(tool.violations)
        warnings.extend(tool.warnings)
    if profile == "core":
        violations[:0] = check_core(document)
        success = document.get("success") if isinstance(document, dict) else None
        return Verdict(profile, tuple(violations), tuple(warnings),
                       success if isinstance(success, bool) else None, facts)
    found, warned, success = _check_mcp(document, profile, facts)
    return Verdict(profile, tuple(found + violations), tuple(warned + warnings), success, facts)


def _check_mcp(document: Any, profile: str, facts: dict[str, Any]
               ) -> tuple[list[Finding], list[Finding], bool | None]:
    if not isinstance(document, dict):
        return [Finding("$", f"an MCP result must be a JSON object, got {_kind(document)}")], [], None
    found: list[Finding] = []
    base = "$"
    result = document
    if "jsonrpc" in document:
        if document["jsonrpc"] != "2.0":
            found.append(Finding("$.jsonrpc", f'must be "2.0", got {json.dumps(document["jsonrpc"])}'))
        ident = document.get("id")
        if "id" not in document:
            found.append(Finding("$.id", "is required: a string or an integer"))
        elif not (isinstance(ident, str) or (_is_number(ident) and isinstance(ident, int))
                  or (isinstance(ident, float) and ident.is_integer())):
            found.append(Finding("$.id", f"must be a string or an integer, got {json.dumps(ident)}"))
        has_result, has_error = "result" in document, "error" in document
        if has_error:
            found.append(Finding("$.error", "a JSON-RPC error response is an MCP protocol error, not a "
                                            "completed tool result; there is no QZX result to validate"))
            if has_result:
                found.append(Finding("$", "a JSON-RPC response carries exactly one of `result` and `error`"))
            return found + _non_finite(document, "$"), [], None
        if not has_result:
            found.append(Finding("$", "a JSON-RPC response carries exactly one of `result` and `error`; "
                                      "this one has neither"))
            return found + _non_finite(document, "$"), [], None
        base, result = "$.result", document["result"]
        if not isinstance(result, dict):
            found.append(Finding(base, f"a CallToolResult must be a JSON object, got {_kind(result)}"))
            return found + _non_finite(document, "$"), [], None
    warned: list[Finding] = []
    at = lambda key: _path(base, key)  # noqa: E731
    content = result.get("content")
    if "content" not in result:
        found.append(Finding(at("content"), "is required: an array of content blocks"))
    elif not isinstance(content, list):
        found.append(Finding(at("content"), f"must be an array, got {_kind(content)}"))
    result_type = result.get("resultType")
    if "resultType" not in result:
        if profile == "mcp-2026-07-28":
            found.append(Finding(at("resultType"), 'is required by MCP 2026-07-28: "complete"'))
    elif result_type != "complete":
        found.append(Finding(at("resultType"), f'must be "complete" for a completed result, got '
                                               f"{json.dumps(result_type)}"))
    facts["mcp_is_error_explicit"] = "isError" in result
    is_error = result.get("isError", False)
    if "isError" in result and not isinstance(is_error, bool):
        found.append(Finding(at("isError"), f"must be a boolean, got {_kind(is_error)}"))
        is_error = None
    if isinstance(is_error, bool):
        facts["mcp_is_error_effective"] = is_error
    success: bool | None = None
    if "structuredContent" not in result:
        found.append(Finding(at("structuredContent"), "is required: the complete QZX result object"))
    else:
        structured = result["structuredContent"]
        core = check_core(structured, base=at("structuredContent"))
        found.extend(core)
        if isinstance(structured, dict) and isinstance(structured.get("success"), bool):
            success = structured["success"]
        if success is not None and isinstance(is_error, bool) and is_error != (not success):
            shown = "true" if is_error else "false (absent)" if "isError" not in result else "false"
            found.append(Finding(at("isError"), f"effective isError is {shown} but structuredContent.success "
                                                f"is {str(success).lower()}; it must equal !success"
                                                + (", so a failure must send isError: true" if not success else "")))
        matches = isinstance(content, list) and any(_text_holds(block, structured) for block in content)
        facts["backcompat_text_matches"] = matches
        if not matches:
            warned.append(Finding(at("content"), "no text content block holds the same JSON as "
                                                 "structuredContent; clients without structured output "
                                                 "will not see the result"))
    others = _non_finite({k: v for k, v in result.items() if k != "structuredContent"}, base)
    if base != "$":
        others += _non_finite({k: v for k, v in document.items() if k != "result"}, "$")
    return _unique(found + others), warned, success


def _text_holds(block: Any, structured: Any) -> bool:
    if not (isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)):
        return False
    try:
        return same_json(json.loads(block["text"]), structured)
    except (ValueError, RecursionError):
        return False


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
    all_violations: list[str] = []
    all_warnings: list[str] = []
    tool_findings_done = False
    for name, evidence, expected in (("success", success, True), ("failure", failure, False)):
        document, problem = _load(evidence)
        if problem is None:
            verdict = validate_document(document, profile=profile, tool_definition=tool_doc,
                                        tool_definition_given=tool_definition is not None and tool_problem is None)
        else:
            verdict = Verdict(profile, (problem,), (), None, _blank_facts(profile))
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
        mode = cases[0]["profile_facts"].get("output_schema_mode")
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


def _blank_facts(profile: str) -> dict[str, Any]:
    facts: dict[str, Any] = {"contract": CONTRACT_SCHEMA_URL} if profile == "core" else _mcp_facts(profile)
    facts["output_schema_checked"] = False
    facts["output_schema_mode"] = None
    return facts


def receipt_bytes(receipt: Mapping[str, Any]) -> bytes:
    """The receipt as written: indented UTF-8 JSON with a final newline, no NaN, stable key order."""
    return (json.dumps(receipt, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


_RESERVED = ("success", "message", "error", "error_code", "details", "warnings", "meta")


def result_envelope(command: str, success: bool, message: str, *, data: Mapping[str, Any] | None = None,
                    error: str | None = None, error_code: str | None = None,
                    details: Mapping[str, Any] | None = None, warnings: Sequence[str] = (),
                    duration_ms: float | None = None) -> dict[str, Any]:
    """Build one QZX result and validate it before anyone sees it.

    `data` holds command-specific fields, placed at the top level beside the core fields; a key that
    collides with a core field is a producer bug. Unavailable optional fields are omitted, never null.
    When the envelope breaks the contract (or cannot be written as JSON) the producer's result is
    replaced by an `invalid_result_contract` failure that keeps `command` in meta.command and lists
    what was wrong in details.violations, so a caller always gets a conforming document.
    """
    envelope: dict[str, Any] = {"success": success, "message": message}
    problems: list[str] = []
    for key, value in (data or {}).items():
        if key in _RESERVED:
            problems.append(f"$.{key}: command data must not replace the core field {key!r}")
        else:
            envelope[key] = value
    if error is not None:
        envelope["error"] = error
    if error_code is not None:
        envelope["error_code"] = error_code
    if details is not None:
        envelope["details"] = dict(details)
    if warnings:
        envelope["warnings"] = list(warnings)
    meta: dict[str, Any] = {"schema_version": 1, "command": command}
    if duration_ms is not None:
        meta["duration_ms"] = duration_ms
    envelope["meta"] = meta
    problems.extend(str(f) for f in check_core(envelope))
    if not problems:
        try:
            json.dumps(envelope, allow_nan=False)
        except (TypeError, ValueError) as exc:
            problems.append(f"$: cannot be written as JSON: {exc}")
    if not problems:
        return envelope
    name = command if _non_blank(command) else "oz0"
    fallback_meta: dict[str, Any] = {"schema_version": 1, "command": name}
    if _is_number(duration_ms) and math.isfinite(duration_ms) and duration_ms >= 0:
        fallback_meta["duration_ms"] = duration_ms
    return {
        "success": False,
        "message": f"The command {name!r} produced a result that breaks QZX Result Contract v1; "
                   "it was withheld.",
        "error": f"invalid result contract: {problems[0]}",
        "error_code": "invalid_result_contract",
        "details": {"violations": problems},
        "meta": fallback_meta,
    }
