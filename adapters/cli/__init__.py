"""The `oz0` command line. Each command lives in its own module, registered in the COMMANDS table.

The table names each command's one-line help and the function ("module:function") that fills in its
parser. Only the command being run is filled in (and so imported): `oz0 --help` loads no command
module, and `oz0 render ...` loads what rendering needs and nothing else. Each work function imports
the heavy parts (the runtime, SQLAlchemy, MCP, a renderer) it uses, when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple

from oz0.adapters.cli.errors import CommandError

__all__ = ["COMMANDS", "Command", "CommandError", "build_parser", "main"]


class Command(NamedTuple):
    """One `oz0` command: its line in `oz0 --help`, and "module:function" that adds its arguments."""

    help: str
    register: str


COMMANDS: dict[str, Command] = {
    "render": Command("draw a result as a card", "oz0.adapters.cli.render:register_render"),
    "demo": Command("draw every bundled example result", "oz0.adapters.cli.render:register_demo"),
    "qzx": Command("check results against QZX Result Contract v1", "oz0.adapters.cli.qzx:register"),
    "serve": Command("run the web console and the configured chat channels until Ctrl-C",
                     "oz0.adapters.cli.serve:register"),
    "mcp": Command("list and call the tools of an MCP server", "oz0.adapters.cli.mcp:register"),
    "plugin": Command("write, check, install and list plugins", "oz0.adapters.cli.plugin:register"),
    "run": Command("ask an installed agent and draw its answer as a card", "oz0.adapters.cli.run:register_run"),
    "jobs": Command("recent jobs from the journal; `oz0 jobs show ID` for one", "oz0.adapters.cli.run:register_jobs"),
    "schedules": Command("the plugins' schedules: next runs, last result; pause and resume them",
                         "oz0.adapters.cli.schedules:register"),
    "audit": Command("the audit log: installs and other changes, newest first", "oz0.adapters.cli.run:register_audit"),
    "db": Command("the database: `oz0 db upgrade` applies the schema migrations", "oz0.adapters.cli.db:register"),
    "teams": Command("the Microsoft Teams app: `oz0 teams package` writes the zip to upload",
                     "oz0.adapters.cli.teams:register"),
}


def _resolve(target: str) -> Callable[[argparse.ArgumentParser], None]:
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The `oz0` parser with every command filled in, or only those in `commands` (main passes the one
    about to run; the others keep their help line, which is all `oz0 --help` shows of them)."""
    parser = argparse.ArgumentParser(
        prog="oz0",
        description="Ask AI agents and tools; read their structured results as safe chat cards.",
        formatter_class=_CommandList,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, entry in COMMANDS.items():
        p = sub.add_parser(name, help=entry.help)
        if commands is None or name in commands:
            _resolve(entry.register)(p)
    return parser


class _CommandList(argparse.HelpFormatter):
    """`oz0 --help`'s command list: every name on the line of its help, the longest ("schedules") too.
    argparse measures the command names without the indent it then draws them at, so the longest one
    would wrap onto a line of its own; this counts the indent."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        subactions = list(self._iter_indented_subactions(action)) if action.help is not argparse.SUPPRESS else []
        if subactions:
            longest = max(len(self._format_action_invocation(a)) for a in subactions)
            self._action_max_length = max(self._action_max_length,
                                          longest + self._current_indent + self._indent_increment)


def _command_in(argv: Sequence[str]) -> str | None:
    """The command `argv` names: its first word that is not an option (`oz0` itself takes only -h)."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `oz0`: returns the exit code (0 ok, 1 failure, 2 usage or input error)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_in(argv)
    parser = build_parser([command] if command else [])
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except CommandError as exc:
        print(f"oz0: error: {exc}", file=sys.stderr)
        code = exc.code
        if getattr(args, "json", False):  # the QZX CLI profile: a failure is one conforming document too
            from oz0.adapters.cli.json_out import command_name, emit_result

            name = command_name(parser, argv)
            emit_result(name, False, f"{name} failed: {exc}", error=str(exc), error_code=exc.error_code)
    except KeyboardInterrupt:
        print("oz0: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as exc:
        from oz0.edge.contracts.schema import ContractError  # imported only here: most commands never load it

        if isinstance(exc, ContractError):  # an unusable schema or unreadable input: the user's to mend
            print(f"oz0: error: {exc}", file=sys.stderr)
            code = getattr(exc, "code", 2)
        elif os.environ.get("OZ0_DEBUG"):  # a bug: one line for the user, the traceback only when asked for
            raise
        else:
            print(f"oz0: internal error: {type(exc).__name__}: {exc} (set OZ0_DEBUG=1 for the traceback)",
                  file=sys.stderr)
            code = 1
    return int(code or 0)
