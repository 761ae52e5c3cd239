"""`oz0 mcp tools` and `oz0 mcp call`: an MCP server's tools, their contracts and cards, from a terminal."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import orjson

from oz0.adapters.cli.draw import render_payload, write_files
from oz0.adapters.cli.errors import CommandError
from oz0.adapters.cli.json_out import emit_result
from oz0.edge.contracts.schema import ContractError, violation_sentence
from oz0.edge.documents.summary import schema_summary
from oz0.edge.mcp.cards import card_form, result_card
from oz0.edge.mcp.pool import DEFAULT_CALL_TIMEOUT_S, servers
from oz0.edge.mcp.spec import McpFailure, ServerSpec, ToolInfo
from oz0.edge.results.tool_result import read_tool_result
from oz0.renderers import RENDERERS

__all__ = ["register"]

MAX_STDERR_LINES = 20


def register(p: argparse.ArgumentParser) -> None:
    p.description = "Reach an MCP server over stdio (--command) or streamable HTTP (--url)."
    group = p.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND", required=True)

    tools = group.add_parser(
        "tools", help="list a server's tools with their contracts and the card each would draw",
        description="List the tools of an MCP server: their input and output contracts (inputSchema, "
                    "outputSchema) and the card form each tool's output would be drawn as.",
        epilog="Exit codes: 0 listed, 1 the server could not be reached or failed, 2 bad arguments.")
    _server_args(tools)
    tools.add_argument("--json", action="store_true", help="print the tools as JSON (wire field names)")
    tools.set_defaults(func=_tools)

    targets = ["text", "card", *(t for t in RENDERERS if t != "text")]
    call = group.add_parser(
        "call", help="call one tool and draw its result as a card",
        description="Call one tool of an MCP server with a JSON object as input, check its result against "
                    "the tool's outputSchema with the edge's validator, and draw it. A result that breaks "
                    "the schema is not drawn: the card says which value at which path broke which rule.",
        epilog="A tool marked destructive asks before it is called, as `oz0 run` does: answer y at the prompt, "
               "or pass --yes. A tool that asks its user for answers (MCP elicitation) cannot be called here: "
               "run it as an agent from the console, Slack or Discord. "
               "Exit codes: 0 drawn (or explained why not drawn), 1 the tool reported an error (isError), "
               "the server failed, or the call was not confirmed, 2 bad arguments, input that breaks the "
               "tool's inputSchema, or a tool schema that cannot be used (for example a remote $ref).")
    _server_args(call)
    call.add_argument("tool", metavar="TOOL", help="the tool's name (see `oz0 mcp tools`)")
    call.add_argument("input", metavar="INPUT", nargs="?", default="{}",
                      help="the tool's arguments as a JSON object (default {}), or - to read them from stdin")
    call.add_argument("--to", choices=targets, default="text", metavar="|".join(targets),
                      help="text: the card for a terminal, its files (an image the tool answered) written to a "
                           "new temporary folder with their paths printed (default); card: the neutral card as "
                           "JSON; slack, discord, html: the payload that channel is sent")
    call.add_argument("--yes", action="store_true",
                      help="run a tool marked destructive (destructiveHint) without asking first; without it "
                           "such a tool is confirmed at a prompt, and off a terminal it is not called")
    call.set_defaults(func=_call)


def _server_args(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--command", metavar="'CMD ARGS...'",
                       help="start the server over stdio: one shell-quoted string, split as a shell would "
                            "(e.g. --command 'python server.py --verbose')")
    where.add_argument("--url", metavar="URL", help="a streamable HTTP server, e.g. http://127.0.0.1:8000/mcp")
    p.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="an HTTP header for --url (repeatable); write secrets as ${ENV_NAME} so they are read "
                        "from the environment, e.g. --header 'Authorization: Bearer ${MCP_TOKEN}'")
    p.add_argument("--timeout", type=float, default=DEFAULT_CALL_TIMEOUT_S, metavar="SECONDS",
                   help=f"how long to wait for each answer (default {DEFAULT_CALL_TIMEOUT_S:g})")


def _spec(args: argparse.Namespace) -> ServerSpec:
    if args.timeout <= 0:
        raise CommandError(f"--timeout must be more than 0 seconds, not {args.timeout:g}")
    if args.command is not None:
        if args.header:
            raise CommandError("--header is for --url servers; a --command server gets no HTTP headers")
        return ServerSpec.from_command_line(args.command)
    headers = {}
    for raw in args.header:
        name, sep, value = raw.partition(":")
        if not sep or not name.strip():
            raise CommandError(f"--header {raw!r} is not 'NAME: VALUE'")
        headers[name.strip()] = value.strip()
    return ServerSpec.from_url(args.url, headers=headers)


def _run(args: argparse.Namespace, work: Any) -> int:
    """Run `work(spec)` on the MCP pool; a failure is one line (and the server's stderr), never a traceback."""
    try:
        spec = _spec(args)
        return asyncio.run(work(spec))
    except McpFailure as exc:
        if exc.stderr_tail:
            lines = exc.stderr_tail.splitlines()[-MAX_STDERR_LINES:]
            print("the server's stderr (last lines):", file=sys.stderr)
            for line in lines:
                print(f"  | {line}", file=sys.stderr)
        code = 2 if exc.kind in ("Misconfigured", "InvalidInput") else 1
        raise CommandError(exc.summary, code=code) from None
    finally:
        servers().close()


def _tools(args: argparse.Namespace) -> int:
    async def work(spec: ServerSpec) -> int:
        tools = await servers().tools(spec, timeout_s=args.timeout)
        declared = _declared_examples(spec)
        if args.json:
            out = [{**t.to_dict(), "card": card_form(t),
                    **({"examples": [{"agent": agent, "description": e.description, "input": e.input,
                                      **({"output": e.output} if e.has_output else {})}
                                     for agent, e in declared[t.name]]} if t.name in declared else {})}
                   for t in tools.values()]
            count = f"{len(out)} tool{'s' if len(out) != 1 else ''}"
            return emit_result("mcp tools", True, f"{count} on {spec.label()}.", data={"tools": out})
        print(f"{len(tools)} tool{'s' if len(tools) != 1 else ''} on `{spec.label()}`")
        for tool in tools.values():
            print()
            print(_tool_text(tool))
            for agent, e in declared.get(tool.name, ()):
                said = f"{e.description}: " if e.description else ""
                answer = f" -> {orjson.dumps(e.output).decode()}" if e.has_output else ""
                print(f"  example (agent {agent}): {said}{e.input_text}{answer}")
        return 0

    return _run(args, work)


def _declared_examples(server: ServerSpec) -> dict[str, list[tuple[str, Any]]]:
    """The examples installed `mcp` agents declare for this server's tools, by tool name. Read only when
    OZ0_HOME exists (listing a server never creates one). An agent's server is this one when its command
    is the same argv as written (`--command 'python server.py'` in the plugin folder), or its URL the same."""
    from oz0.edge.mcp.kind import server_for_agent
    from oz0.edge.runtime.runner import default_home

    if not default_home().is_dir():
        return {}
    from oz0.adapters.cli.runtime import open_runtime

    runtime = open_runtime()
    try:
        agents = [a for a in runtime.agents() if a.kind == "mcp" and a.examples]
    finally:
        runtime.close()
    found: dict[str, list[tuple[str, Any]]] = {}
    for agent in agents:
        try:
            same = server_for_agent(agent).label() == server.label()
        except McpFailure:
            continue
        if same:
            found.setdefault(str(agent.config.get("tool")), []).extend((agent.name, e) for e in agent.examples)
    return found


def _tool_text(tool: ToolInfo) -> str:
    lines = [tool.name + (f" ({tool.title})" if tool.title and tool.title != tool.name else "")]
    description = " ".join(tool.description.split())
    if description:
        lines.append(f"  {description[:300]}")
    lines.append(f"  input:  {_contract_line(tool, 'input')}")
    lines.append(f"  output: {_contract_line(tool, 'output')}")
    lines.append(f"  card:   {card_form(tool)}")
    if tool.annotations:
        hints = ", ".join(f"{k}={json.dumps(v)}" for k, v in tool.annotations.items())
        lines.append(f"  hints:  {hints}")
    return "\n".join(lines)


def _contract_line(tool: ToolInfo, which: str) -> str:
    schema = tool.input_schema if which == "input" else tool.output_schema
    if schema is None:
        return "none: the tool answers content blocks (text)" if which == "output" else "none"
    try:
        tool.input_contract() if which == "input" else tool.output_contract()
    except ContractError as exc:
        return f"unusable: {exc.message}" + (f" at {exc.location}" if exc.location else "")
    return schema_summary(schema, legend=True)


def _call(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.input == "-" else args.input
    try:
        arguments = orjson.loads(text) if text.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise CommandError(f"INPUT is not JSON: {exc}; give the tool's arguments as a JSON object, "
                           "e.g. '{\"host\": \"db-1\"}'") from None
    if not isinstance(arguments, dict):
        raise CommandError(f"INPUT must be a JSON object (the tool's arguments), not {type(arguments).__name__}")

    async def work(spec: ServerSpec) -> int:
        pool = servers()
        tool = await pool.tool(spec, args.tool, timeout_s=args.timeout)
        try:
            contract = tool.input_contract()
            tool.output_contract()
        except ContractError as exc:
            raise CommandError(f"{exc}; the tool was not called") from None
        if contract is not None:
            violations = contract.validate(arguments)
            if violations:
                raise CommandError(f"the input breaks tool {tool.name!r}'s inputSchema: "
                                   f"{violation_sentence(violations)}; the tool was not called")
        _confirm(tool, arguments, yes=args.yes)
        from oz0.adapters.cli.progress_out import TerminalProgress

        progress = TerminalProgress()
        try:
            _, result = await pool.call(spec, args.tool, arguments, timeout_s=args.timeout, on_progress=progress)
        finally:
            progress.close()
        card = result_card(result, tool)
        sys.stdout.write(render_payload(card, args.to).rstrip("\n") + "\n")
        write_files(card, args.to)
        return 1 if read_tool_result(result).is_error else 0

    return _run(args, work)


def _confirm(tool: ToolInfo, arguments: dict[str, Any], *, yes: bool) -> None:
    """A tool marked destructive is called only once confirmed: `--yes`, or y at a terminal's prompt."""
    from oz0.edge.runtime.confirm import is_destructive

    if yes or not is_destructive(dict(tool.annotations or {})):
        return
    name = (tool.annotations or {}).get("title") or tool.name
    asked = f"Call {name} (tool {tool.name}) with {json.dumps(arguments, ensure_ascii=False, sort_keys=True)}? " \
            "It is marked destructive. [y/N] "
    if not sys.stdin.isatty():
        raise CommandError(f"{name} is marked destructive, so it is called only once confirmed, and there is no "
                           "terminal to ask; pass --yes to call it", code=1)
    print(asked, end="", file=sys.stderr, flush=True)
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise CommandError(f"{name} was not called: not confirmed", code=1)
