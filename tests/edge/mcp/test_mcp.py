"""MCP tools drawn as cards, against real servers: the test MCPServer over stdio and over streamable
HTTP on loopback, and the PyPI package mcp-server-time."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_harness import SERVER, http_server
from ports import free_port

from oz0.edge.contracts.schema import ContractError
from oz0.edge.mcp.cards import card_form, result_card
from oz0.edge.mcp.pool import McpServers
from oz0.edge.mcp.spec import McpFailure, ServerSpec

STDIO = ServerSpec(command=(sys.executable, str(SERVER)))
TIME = ServerSpec(command=(sys.executable, "-m", "mcp_server_time", "--local-timezone", "Etc/UTC"))


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with http_server() as url:
        yield url


@pytest.fixture(scope="module")
def pool() -> Iterator[McpServers]:
    servers = McpServers(backoff_base_s=0.3)
    yield servers
    servers.close()


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> ServerSpec:
    if request.param == "stdio":
        return STDIO
    return ServerSpec.from_url(request.getfixturevalue("http_url"))


def call(pool: McpServers, server: ServerSpec, tool: str, args: dict[str, Any] | None = None, **kw: Any) -> Any:
    async def go() -> Any:
        info, result = await pool.call(server, tool, args or {}, **kw)
        return result_card(result, info)
    return asyncio.run(go())


# the cards -------------------------------------------------------------------------------------------

def test_a_list_result_comes_wrapped_and_is_drawn_as_a_table(pool: McpServers, server: ServerSpec) -> None:
    card = call(pool, server, "deploys", {"service": "billing"})
    assert card.drawn and card.form == "table"
    assert card.columns == ("service", "version", "ok")  # x-oz0-order from the row schema behind a $ref
    assert card.rows == (("billing", "1.4.2", True), ("billing", "1.4.3", False))


def test_an_object_is_drawn_as_key_values(pool: McpServers, server: ServerSpec) -> None:
    card = call(pool, server, "disk", {"host": "db-1"})
    assert (card.form, card.keys, card.values) == ("key_values", ("host", "mount", "used_percent"),
                                                   ("db-1", "/var", 71.5))


def test_a_schema_with_x_oz0_diff_is_drawn_as_a_diff(pool: McpServers, server: ServerSpec) -> None:
    card = call(pool, server, "config_change")
    assert card.form == "diff" and card.diff is not None and card.diff.kind == "lines"
    assert ("-", "workers = 2") in [(ln.op, ln.text) for ln in card.diff.lines]
    assert ("+", "workers = 4") in [(ln.op, ln.text) for ln in card.diff.lines]
    assert card.keys == ("file",)


def test_a_qzx_envelope_gets_the_status_header(pool: McpServers, server: ServerSpec) -> None:
    card = call(pool, server, "health")
    assert card.status is not None and card.status.success is True
    assert card.status.message == "All 2 checks passed"
    assert card.status.warnings == ("cache warming",) and card.status.command == "health"
    assert card.form == "table" and card.columns == ("name", "ok")


def test_is_error_is_a_failure_card_with_the_tools_text(pool: McpServers, server: ServerSpec) -> None:
    card = call(pool, server, "fail")
    assert card.status is not None and card.status.success is False
    assert "the backup volume is offline" in card.status.message


def test_a_result_that_breaks_its_schema_is_not_drawn_and_says_where(pool: McpServers, server: ServerSpec) -> None:
    card = call(pool, server, "broken")  # the SDK client would raise here; the edge's validator explains
    assert card.drawn is False
    v = card.violations[0]
    assert (v.json_path, v.keyword) == ("$.used_percent", "maximum")
    assert "$.used_percent" in (card.reason or "") and "'maximum'" in (card.reason or "")
    assert card.attachment is not None and b"140.5" in card.attachment.data


def test_text_without_output_schema_is_markdown_or_json(pool: McpServers, server: ServerSpec) -> None:
    notes = call(pool, server, "notes")
    assert (notes.form, notes.text_format) == ("text", "markdown") and notes.text.startswith("# Release 1.4")
    data = call(pool, server, "json_text")
    assert (data.form, data.keys, data.values) == ("key_values", ("queue", "depth"), ("mail", 12))


def test_a_result_that_is_not_complete_is_reported(pool: McpServers, server: ServerSpec) -> None:
    card = call(pool, server, "approve")
    assert card.drawn is False and "resultType 'input_required', not 'complete'" in (card.reason or "")


def test_a_remote_ref_in_an_output_schema_is_a_clear_error(pool: McpServers, server: ServerSpec) -> None:
    tools = asyncio.run(pool.tools(server))
    with pytest.raises(ContractError, match=r"https://schemas\.example\.com/host\.json"):
        tools["remote_ref"].output_contract()
    assert "https://schemas.example.com/host.json" in card_form(tools["remote_ref"])


def test_card_forms_are_read_from_output_schemas(pool: McpServers) -> None:
    tools = asyncio.run(pool.tools(STDIO))
    assert card_form(tools["deploys"]) == "table: service, version, ok"
    assert card_form(tools["disk"]) == "key-values: host, mount, used_percent"
    assert card_form(tools["config_change"]) == "diff of before -> after"
    assert card_form(tools["health"]).startswith("status header + table")
    assert card_form(tools["notes"]).startswith("from its text")


def test_an_unknown_tool_names_the_tools_there_are(pool: McpServers, server: ServerSpec) -> None:
    with pytest.raises(McpFailure, match="has no tool 'nope'; its tools: approve, broken, config_change") as info:
        call(pool, server, "nope")
    assert info.value.kind == "Misconfigured"


# the servers -----------------------------------------------------------------------------------------

def test_a_stdio_server_is_started_once_and_reused(pool: McpServers) -> None:
    for host in ("a", "b", "c"):
        assert call(pool, STDIO, "disk", {"host": host}).values[0] == host
    assert pool.stdio_starts(STDIO) == 1


def test_a_call_has_a_timeout_and_the_server_stays_usable(pool: McpServers) -> None:
    started = time.monotonic()
    with pytest.raises(McpFailure, match=r"no answer within 0\.3 s while calling tool 'sleep'") as info:
        call(pool, STDIO, "sleep", {"seconds": 5}, timeout_s=0.3)
    assert info.value.kind == "Timeout" and time.monotonic() - started < 3
    assert call(pool, STDIO, "disk", {"host": "after"}).values[0] == "after"


def test_a_crashed_server_is_a_typed_failure_with_its_stderr_and_is_restarted_with_backoff() -> None:
    pool = McpServers(backoff_base_s=0.4)
    try:
        assert call(pool, STDIO, "disk", {"host": "x"}).drawn
        with pytest.raises(McpFailure) as info:
            call(pool, STDIO, "crash")
        assert info.value.kind == "Crashed"
        assert "died during a call of tool 'crash'" in info.value.reason
        assert "crashing on purpose" in info.value.stderr_tail
        assert "crashing on purpose" in info.value.reason  # the job failure carries the tail too
        started = time.monotonic()
        assert call(pool, STDIO, "disk", {"host": "back"}).values[0] == "back"
        assert time.monotonic() - started >= 0.4  # waited out the backoff before restarting
        assert pool.stdio_starts(STDIO) == 2
    finally:
        pool.close()


def test_a_server_that_cannot_start_gives_its_stderr_tail(pool: McpServers) -> None:
    dying = ServerSpec(command=(sys.executable, "-c",
                                "import sys; sys.stderr.write('boom: no config file at /etc/x.toml\\n'); sys.exit(3)"))
    with pytest.raises(McpFailure, match="could not start: it exited before finishing the MCP handshake") as info:
        asyncio.run(pool.tools(dying))
    assert info.value.kind == "Unavailable"
    assert "boom: no config file at /etc/x.toml" in info.value.stderr_tail
    missing = ServerSpec.from_command_line("oz0-no-such-server --flag")
    with pytest.raises(McpFailure, match="'oz0-no-such-server' was not found"):
        asyncio.run(pool.tools(missing))


def test_an_unreachable_http_server_is_retried_a_bounded_number_of_times() -> None:
    pool = McpServers(http_attempts=2)
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(McpFailure, match=r"cannot connect to the MCP server .* \(2 attempts\)") as info:
        asyncio.run(pool.tools(ServerSpec.from_url(url)))
    assert info.value.kind == "Unavailable"


def test_http_headers_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, http_url: str) -> None:
    spec = ServerSpec.from_url(http_url, headers={"Authorization": "Bearer ${OZ0_TEST_MCP_TOKEN}"})
    with pytest.raises(McpFailure, match=r"\$\{OZ0_TEST_MCP_TOKEN\}, which is not set"):
        spec.resolved_headers()
    monkeypatch.setenv("OZ0_TEST_MCP_TOKEN", "s3cret")
    assert spec.resolved_headers() == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in spec.label()
    assert "disk" in asyncio.run(McpServers().tools(spec))


def test_a_command_is_one_shell_quoted_string() -> None:
    spec = ServerSpec.from_command_line("python 'my server.py' --verbose")
    assert spec.command == ("python", "my server.py", "--verbose")
    with pytest.raises(McpFailure, match="cannot split"):
        ServerSpec.from_command_line("python 'unclosed")


# mcp-server-time from PyPI ---------------------------------------------------------------------------

def test_mcp_server_time_tools_are_drawn_as_key_value_cards(pool: McpServers) -> None:
    tools = asyncio.run(pool.tools(TIME))
    assert "$defs" in tools["convert_time"].output_schema  # local $defs/$ref, resolved without fetching
    assert card_form(tools["get_current_time"]) == "key-values: timezone, datetime, day_of_week, is_dst"
    assert card_form(tools["convert_time"]) == "key-values: source, target, time_difference"
    now = call(pool, TIME, "get_current_time", {"timezone": "Europe/Warsaw"})
    assert now.drawn and now.form == "key_values"
    assert now.keys == ("timezone", "datetime", "day_of_week", "is_dst") and now.values[0] == "Europe/Warsaw"
    converted = call(pool, TIME, "convert_time", {"source_timezone": "Etc/UTC", "time": "12:00",
                                                  "target_timezone": "Asia/Tokyo"})
    assert converted.drawn and converted.form == "key_values"
    assert converted.keys == ("source", "target", "time_difference")
    assert converted.values[1]["datetime"].endswith("T21:00:00+09:00") and converted.values[2] == "+9.0h"
