"""QZX's MCP profiles: a QZX result carried as an MCP CallToolResult (bare, or in a JSON-RPC response),
validated under one MCP specification's rules, with the facts a receipt records."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from oz0.edge.contracts.bundled import CONTRACT_SCHEMA_URL
from oz0.edge.results.qzx import Finding, at_key, check_core, is_number, kind_of, non_finite, same_json, unique
from oz0.edge.results.qzx_tools import check_output_schema

__all__ = [
    "PROFILES",
    "Verdict",
    "blank_facts",
    "mcp_facts",
    "validate_document",
]

PROFILES: dict[str, str | None] = {
    "core": None,
    "mcp-2025-06-18": "2025-06-18",
    "mcp-2025-11-25": "2025-11-25",
    "mcp-2026-07-28": "2026-07-28",
}


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


def mcp_facts(profile: str) -> dict[str, Any]:
    """What a receipt records of an MCP profile: its specification, tools page and the contract."""
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
    facts: dict[str, Any] = {"contract": CONTRACT_SCHEMA_URL} if profile == "core" else mcp_facts(profile)
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
        return [Finding("$", f"an MCP result must be a JSON object, got {kind_of(document)}")], [], None
    found: list[Finding] = []
    base = "$"
    result = document
    if "jsonrpc" in document:
        if document["jsonrpc"] != "2.0":
            found.append(Finding("$.jsonrpc", f'must be "2.0", got {json.dumps(document["jsonrpc"])}'))
        ident = document.get("id")
        if "id" not in document:
            found.append(Finding("$.id", "is required: a string or an integer"))
        elif not (isinstance(ident, str) or (is_number(ident) and isinstance(ident, int))
                  or (isinstance(ident, float) and ident.is_integer())):
            found.append(Finding("$.id", f"must be a string or an integer, got {json.dumps(ident)}"))
        has_result, has_error = "result" in document, "error" in document
        if has_error:
            found.append(Finding("$.error", "a JSON-RPC error response is an MCP protocol error, not a "
                                            "completed tool result; there is no QZX result to validate"))
            if has_result:
                found.append(Finding("$", "a JSON-RPC response carries exactly one of `result` and `error`"))
            return found + non_finite(document, "$"), [], None
        if not has_result:
            found.append(Finding("$", "a JSON-RPC response carries exactly one of `result` and `error`; "
                                      "this one has neither"))
            return found + non_finite(document, "$"), [], None
        base, result = "$.result", document["result"]
        if not isinstance(result, dict):
            found.append(Finding(base, f"a CallToolResult must be a JSON object, got {kind_of(result)}"))
            return found + non_finite(document, "$"), [], None
    warned: list[Finding] = []
    at = functools.partial(at_key, base)
    content = result.get("content")
    if "content" not in result:
        found.append(Finding(at("content"), "is required: an array of content blocks"))
    elif not isinstance(content, list):
        found.append(Finding(at("content"), f"must be an array, got {kind_of(content)}"))
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
        found.append(Finding(at("isError"), f"must be a boolean, got {kind_of(is_error)}"))
        is_error = None
    facts["mcp_is_error_effective"] = is_error if isinstance(is_error, bool) else False  # MCP: not true is false
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
    others = non_finite({k: v for k, v in result.items() if k != "structuredContent"}, base)
    if base != "$":
        others += non_finite({k: v for k, v in document.items() if k != "result"}, "$")
    return unique(found + others), warned, success


def _text_holds(block: Any, structured: Any) -> bool:
    if not (isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)):
        return False
    try:
        return same_json(json.loads(block["text"]), structured)
    except (ValueError, RecursionError):
        return False


def blank_facts(profile: str) -> dict[str, Any]:
    """The facts of a profile for evidence that could not be read, so nothing was checked."""
    facts: dict[str, Any] = {"contract": CONTRACT_SCHEMA_URL} if profile == "core" else mcp_facts(profile)
    facts["output_schema_checked"] = False
    facts["output_schema_mode"] = None
    return facts
