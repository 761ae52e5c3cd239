"""Each `oz0` command loads only what it uses: the import graph of fresh processes, not a time.

Every command runs in a new interpreter that notes which module imported which; a forbidden library
is reported with the chain of imports that brought it in. The figures
themselves are bench/startup.py's, never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from oz0.adapters.cli import COMMANDS, build_parser

EXAMPLES = ROOT / "edge" / "examples"
SMALL = str(EXAMPLES / "deploys.result.json")
SCHEMA = str(EXAMPLES / "deploys.schema.json")
QZX = str(EXAMPLES / "qzx-success.result.json")

# What the `oz0` console script runs (pyproject: oz0 = oz0.adapters.cli:main), after a meta path
# finder that notes, for each module imported from then on, the module whose code imported it.
ENTRY = """
import atexit, json, os, sys

importers = {}


class NoteImporter:
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                     or frame.f_globals.get("__name__", "").startswith("importlib")):
            frame = frame.f_back
        importers.setdefault(name, frame.f_globals.get("__name__", "?") if frame is not None else "?")
        return None


def dump():
    with open(os.environ["OZ0_TEST_IMPORTS"], "w") as out:
        json.dump({name: importers[name] for name in sys.modules if name in importers}, out)


sys.meta_path.insert(0, NoteImporter())
atexit.register(dump)
from oz0.adapters.cli import main
sys.exit(main())
"""

CHANNELS_DATABASES_SERVERS = ("discord", "slack_bolt", "sqlalchemy", "mcp", "aiohttp", "starlette", "uvicorn", "dbos")
NOT_FOR_HELP = (*CHANNELS_DATABASES_SERVERS, "slack_sdk", "httpx", "jsonschema_rs", "markdown_it", "rich")


def _run(argv: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run `oz0 argv` in a fresh interpreter: its result, and each module it loaded with its importer."""
    notes = cwd / ".imports.json"
    proc = subprocess.run([sys.executable, "-c", ENTRY, *argv], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, "OZ0_TEST_IMPORTS": str(notes)})
    return proc, json.loads(notes.read_text())


def _chain(importers: dict[str, str], name: str) -> list[str]:
    """`name` and, outwards, each module whose import brought it in, up to the command line's entry."""
    chain = [name]
    while chain[-1] in importers and importers[chain[-1]] not in chain:
        chain.append(importers[chain[-1]])
    return chain


def _offences(importers: dict[str, str], forbidden: tuple[str, ...]) -> list[str]:
    lines = []
    for top in forbidden:
        loaded = [name for name in importers if name == top or name.startswith(top + ".")]
        if loaded:
            # the first of the library's modules that something outside it imported
            entry = next((n for n in loaded if not importers[n].startswith(top)), loaded[0])
            lines.append(f"{top}: " + " <- imported by ".join(_chain(importers, entry)))
    return lines


def _assert_loads_none(argv: list[str], forbidden: tuple[str, ...], tmp_path: Path) -> None:
    proc, importers = _run(argv, tmp_path)
    assert proc.returncode == 0, f"oz0 {' '.join(argv)} exited {proc.returncode}: {proc.stderr[-2000:]}"
    assert importers.get("oz0.adapters.cli") == "__main__", "the importers were not noted"
    offences = _offences(importers, forbidden)
    assert not offences, f"`oz0 {' '.join(argv)}` loads what it does not use:\n" + "\n".join(offences)


def test_help_loads_no_command_library(tmp_path: Path) -> None:
    _assert_loads_none(["--help"], NOT_FOR_HELP, tmp_path)


@pytest.mark.parametrize("argv", [
    ["render", SMALL, "--to", "text"],
    ["render", SMALL, "--schema", SCHEMA, "--to", "text"],
    ["render", SMALL, "--schema", SCHEMA, "--to", "card"],
    ["render", SMALL, "--schema", SCHEMA, "--to", "html"],
    ["qzx", "validate", QZX],
    ["qzx", "validate", QZX, "--json"],
], ids=lambda argv: " ".join(a if not a.startswith("/") else Path(a).name for a in argv))
def test_render_and_validate_load_no_channel_database_or_server(argv: list[str], tmp_path: Path) -> None:
    _assert_loads_none(argv, CHANNELS_DATABASES_SERVERS, tmp_path)


def test_plugin_new_and_lint_load_no_channel_database_or_server(tmp_path: Path) -> None:
    _assert_loads_none(["plugin", "new", "demo-plugin", str(tmp_path / "demo-plugin")], NOT_FOR_HELP, tmp_path)
    _assert_loads_none(["plugin", "lint", str(tmp_path / "demo-plugin")], CHANNELS_DATABASES_SERVERS, tmp_path)


NOT_FOR_A_PLAIN_LINT = (
    "oz0.edge.plugins.schedules", "croniter", "zoneinfo",  # the schedule lint: for a plugin with schedules/
    "oz0.edge.plugins.flow_lint", "oz0.edge.model.flow", "jmespath",  # the flow lint: for a plugin with flows/
    "oz0.edge.model.agent",  # the agent model: lint reads the files, it builds no AgentSpec
    "oz0.edge.documents",  # contract hashes and OpenAPI: `plugin diff` and `plugin openapi`
    "oz0.edge.results.qzx",  # the QZX result document: only with --json
    "hashlib",  # OpenSSL: a contract's digest, which lint never reads
    "importlib.resources", "tempfile",  # the shipped manifest schemas are read beside the package
)


def test_lint_of_a_plugin_without_flows_or_schedules_loads_neither_their_lint_nor_the_agent_model(
        tmp_path: Path) -> None:
    """`oz0 plugin lint` runs once per plugin in CI, so its start-up is most of its cost (bench/startup.py)."""
    _assert_loads_none(["plugin", "new", "demo-plugin", str(tmp_path / "demo-plugin")], NOT_FOR_HELP, tmp_path)
    _assert_loads_none(["plugin", "lint", str(tmp_path / "demo-plugin")], NOT_FOR_A_PLAIN_LINT, tmp_path)


def test_lint_of_a_plugin_with_a_flow_still_lints_it(tmp_path: Path) -> None:
    """The flow lint is imported when there is a flow to check, and its findings are printed."""
    folder = tmp_path / "demo-plugin"
    _assert_loads_none(["plugin", "new", "demo-plugin", str(folder), "--flow"], NOT_FOR_HELP, tmp_path)
    flow = next((folder / "flows").glob("*.yaml"))
    flow.write_text(flow.read_text() + "surprise: 1\n")
    proc, importers = _run(["plugin", "lint", str(folder)], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert f"error: flows/{flow.name} $: " in proc.stdout and "surprise" in proc.stdout
    assert "oz0.edge.plugins.flow_lint" in importers


@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_help_loads_no_channel_database_or_server(command: str, tmp_path: Path) -> None:
    _assert_loads_none([command, "--help"], CHANNELS_DATABASES_SERVERS, tmp_path)


def _help(parser_argv: list[str], parser, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(parser_argv)
    assert exit_.value.code == 0
    return capsys.readouterr().out


def _subcommands(command: str) -> list[list[str]]:
    """`command` and each of its subcommands, as the argv before --help."""
    import argparse

    full = build_parser()
    parser = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [[command], *([command, name] for group in nested for name in group.choices)]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_parser_main_builds_shows_the_same_help_as_the_whole_one(command: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """main fills in only the command it runs; its help (and its subcommands') is the whole parser's."""
    for argv in _subcommands(command):
        whole = _help([*argv, "--help"], build_parser(), capsys)
        assert whole.startswith(f"usage: oz0 {' '.join(argv)}")
        assert _help([*argv, "--help"], build_parser([command]), capsys) == whole
    top = _help(["--help"], build_parser(), capsys)
    assert _help(["--help"], build_parser([]), capsys) == top
    assert f"    {command} " in top


def test_an_unknown_command_is_a_usage_error_listing_the_commands(tmp_path: Path) -> None:
    proc, _ = _run(["rendr"], tmp_path)
    assert proc.returncode == 2
    assert "invalid choice: 'rendr'" in proc.stderr and "'render'" in proc.stderr


def test_render_to_slack_loads_no_platform_library(tmp_path: Path) -> None:
    _assert_loads_none(["render", SMALL, "--schema", SCHEMA, "--to", "slack"],
                       (*CHANNELS_DATABASES_SERVERS, "slack_sdk"), tmp_path)


def test_render_to_discord_loads_no_platform_library(tmp_path: Path) -> None:
    _assert_loads_none(["render", SMALL, "--schema", SCHEMA, "--to", "discord"], CHANNELS_DATABASES_SERVERS, tmp_path)


@pytest.mark.parametrize("to", ["text", "slack"])
def test_render_of_a_table_card_loads_neither_markdown_nor_rich(to: str, tmp_path: Path) -> None:
    """A table card has no markdown to parse, and the terminal draws a small ASCII table itself."""
    _assert_loads_none(["render", SMALL, "--to", to], ("markdown_it", "rich"), tmp_path)
    _assert_loads_none(["render", SMALL, "--schema", SCHEMA, "--to", to], ("markdown_it", "rich"), tmp_path)


@pytest.mark.parametrize("to", ["text", "slack"])
def test_render_of_a_table_card_loads_no_markdown_tree(to: str, tmp_path: Path) -> None:
    """The shared markdown tree (renderers.markdown_blocks, a dozen dataclasses) is the terminal's and
    Slack's only for a markdown text; a table card's start-up does without it (bench/startup.py)."""
    _assert_loads_none(["render", SMALL, "--to", to], ("oz0.renderers.markdown_blocks",), tmp_path)
    _assert_loads_none(["render", SMALL, "--schema", SCHEMA, "--to", to], ("oz0.renderers.markdown_blocks",),
                       tmp_path)


@pytest.mark.parametrize("to", ["text", "slack"])
def test_render_loads_neither_logging_nor_openssl(to: str, tmp_path: Path) -> None:
    """Logging is for a renderer's budget bug, OpenSSL for a contract's digest: a render needs neither."""
    _assert_loads_none(["render", SMALL, "--to", to], ("logging", "hashlib"), tmp_path)
    _assert_loads_none(["render", SMALL, "--schema", SCHEMA, "--to", to], ("logging", "hashlib"), tmp_path)
