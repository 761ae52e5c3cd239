"""The one reader of MCP's CallToolResult envelope, for the card rules and for the `mcp` agent kind.

A result is read once into a frozen `ToolResult`: whether it is complete, its text blocks joined,
its `isError`, and its `structuredContent` (which may be present and null). What a job answers or
a card draws is then decided from these facts, the same way in both places.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from oz0.edge.contracts.json_data import loads_exact

__all__ = ["CALL_TOOL_RESULT_KEYS", "KEPT_KEYS", "ToolResult", "is_call_tool_result", "kept_value", "read_tool_result"]

CALL_TOOL_RESULT_KEYS = frozenset({"content", "structuredContent", "isError", "_meta", "resultType"})
KEPT_KEYS = ("content", "structuredContent", "isError")  # what a job keeps of a result with other blocks
_MISSING = object()


def is_call_tool_result(value: Any) -> bool:
    """An MCP CallToolResult: a `content` list of typed blocks and nothing but MCP's own fields."""
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return False
    if not set(value) <= CALL_TOOL_RESULT_KEYS:
        return False
    return all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in value["content"])


@dataclass(frozen=True)
class ToolResult:
    """A CallToolResult as facts: `result_type` ("complete" unless the tool asks for input), the text
    blocks joined by blank lines, `is_error` (only an explicit `true`), the `isError` field as sent
    (`is_error_given`, `is_error_value`), and the structured content."""

    result_type: Any
    text: str
    is_error: bool
    has_structured: bool
    structured: Any
    content: Any
    is_error_given: bool = False
    is_error_value: Any = None

    @property
    def complete(self) -> bool:
        return bool(self.result_type == "complete")

    @property
    def has_other_blocks(self) -> bool:
        """Content blocks other than text (images, audio, resource links, embedded resources): what
        the value alone would drop, so a job keeps the whole result for its card (edge.results.blocks)."""
        return isinstance(self.content, list) and any(
            not (isinstance(b, dict) and b.get("type") == "text") for b in self.content)

    def value(self) -> Any:
        """What the result means as a value: its structured content, else its text (parsed when JSON).
        The value a job's output contract (the tool's outputSchema) describes."""
        return self.structured if self.has_structured else self.text_value()

    def text_value(self) -> Any:
        """The text as the value it spells: parsed when it is JSON, else the text itself."""
        try:
            return loads_exact(self.text)
        except orjson.JSONDecodeError:
            return self.text


def read_tool_result(result: Mapping[str, Any]) -> ToolResult:
    """Read a wire-shaped (camelCase) CallToolResult."""
    text = "\n\n".join(b["text"] for b in result.get("content", ())
                       if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    structured = result.get("structuredContent", _MISSING)
    return ToolResult(result_type=result.get("resultType", "complete"), text=text,
                      is_error=result.get("isError") is True, has_structured=structured is not _MISSING,
                      structured=None if structured is _MISSING else structured,
                      content=result.get("content", []), is_error_given="isError" in result,
                      is_error_value=result.get("isError"))


def kept_value(output: Any) -> Any:
    """The value an `mcp` agent's output contract describes when its job kept the tool's whole result
    (edge.mcp.kind.tool_output: a result with blocks other than text): its structured content or text.
    Any other output is its own value."""
    return read_tool_result(output).value() if is_call_tool_result(output) else output
