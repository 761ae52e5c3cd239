"""The `oz0` command line. Each command group lives in its own module, registered in COMMANDS."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from oz0.adapters.cli import db as cli_db
from oz0.adapters.cli import mcp as cli_mcp
from oz0.adapters.cli import plugin as cli_plugin
from oz0.adapters.cli import qzx as cli_qzx
from oz0.adapters.cli import render as cli_render
from oz0.adapters.cli import run as cli_run
from oz0.adapters.cli import serve
from oz0.adapters.cli.errors import CommandError

__all__ = ["COMMANDS", "CommandError", "build_parser", "main"]



COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {
    "render": cli_render.register_render,
    "demo": cli_render.register_demo,
    "qzx": cli_qzx.register,
    "serve": serve.register,
    "mcp": cli_mcp.register,
    "plugin": cli_plugin.register,
    "run": cli_run.register_run,
    "jobs": cli_run.register_jobs,
    "audit": cli_run.register_audit,
    "db": cli_db.register,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oz0",
        description="Ask AI agents and tools; read their structured results as safe chat cards.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in COMMANDS.values():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `oz0`: returns the exit code (0 ok, 1 failure, 2 usage or input error)."""
    from oz0.edge.contracts.schema import ContractError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except (CommandError, ContractError) as exc:
        print(f"oz0: error: {exc}", file=sys.stderr)
        code = getattr(exc, "code", 2)
    except KeyboardInterrupt:
        print("oz0: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        code = 0
    except Exception as exc:  # a bug: one line for the user, the traceback only when asked for
        if os.environ.get("OZ0_DEBUG"):
            raise
        print(f"oz0: internal error: {type(exc).__name__}: {exc} (set OZ0_DEBUG=1 for the traceback)",
              file=sys.stderr)
        code = 1
    return int(code or 0)


