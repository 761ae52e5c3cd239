"""`oz0 mcp call` in a terminal, as a real process, against real servers (server-everything from
tests/support/node, and the test elicitation server): an eliciting tool is told "this channel cannot ask" (never
a JSON-RPC code), a destructive tool is called only once confirmed (`--yes`), progress is shown, a file
the card says is attached is written with its path printed, and a failed call prints no false warning."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from mcp_harness import mcp_plugin
from node_tools import everything_argv
from paths import SUPPORT

ELICIT_SERVER = SUPPORT / "mcp_servers" / "elicit_server.py"
PNG = b"\x89PNG\r\n\x1a\n"


def oz0(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "oz0.adapters.cli", *argv], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, env={**os.environ, **(env or {})})


def everything() -> str:
    return shlex.join(everything_argv())


def test_an_eliciting_tool_is_told_this_channel_cannot_ask() -> None:
    offered = oz0("mcp", "call", "--command", everything(), "trigger-elicitation-request")
    assert offered.returncode == 1, offered.stderr
    assert "asks a person for answers (MCP elicitation), and this channel cannot ask" in offered.stderr
    assert "has no tool" not in offered.stderr and "Traceback" not in offered.stderr
    asking = oz0("mcp", "call", "--command", shlex.join([sys.executable, str(ELICIT_SERVER)]), "deploy",
                 '{"service": "web"}')
    assert asking.returncode == 1
    assert "asked a person for answers (MCP elicitation) and this channel cannot ask" in asking.stderr
    assert "-32600" not in asking.stderr and "back-channel" not in asking.stderr
    assert "cannot be listed again" not in asking.stderr + offered.stderr  # no false "tools changed" line


def test_a_destructive_tool_is_called_only_once_confirmed() -> None:
    server = shlex.join([sys.executable, str(ELICIT_SERVER)])
    refused = oz0("mcp", "call", "--command", server, "drop_table", '{"table": "users"}')
    assert refused.returncode == 1
    assert "Drop table is marked destructive, so it is called only once confirmed" in refused.stderr
    assert "pass --yes" in refused.stderr and "dropped" not in refused.stdout
    done = oz0("mcp", "call", "--command", server, "drop_table", '{"table": "users"}', "--yes")
    assert done.returncode == 0, done.stderr
    assert "dropped users" in done.stdout
    read = oz0("mcp", "call", "--command", server, "read_table", '{"table": "users"}')  # readOnlyHint wins
    assert read.returncode == 0 and "rows of users" in read.stdout
    assert "--yes" in oz0("mcp", "call", "--help").stdout


def test_progress_is_shown_while_the_tool_works() -> None:
    run = oz0("mcp", "call", "--command", everything(), "trigger-long-running-operation",
              '{"duration": 1, "steps": 2}')
    assert run.returncode == 0, run.stderr
    assert re.search(r"^… .*\(1/2\)$", run.stderr, re.M), run.stderr
    assert "Long running operation completed" in run.stdout


def test_an_attached_image_is_a_file_written_with_its_path_printed() -> None:
    run = oz0("mcp", "call", "--command", everything(), "get-tiny-image")
    assert run.returncode == 0, run.stderr
    assert "attached as 2-image.png" in run.stdout
    found = re.search(r"^wrote 2-image\.png \(4,033 bytes\) to (\S+)$", run.stderr, re.M)
    assert found, run.stderr
    path = Path(found.group(1))
    assert path.name == "2-image.png" and path.read_bytes().startswith(PNG)
    card = oz0("mcp", "call", "--command", everything(), "get-tiny-image", "--to", "card")
    assert "wrote" not in card.stderr  # the neutral card is printed, not drawn for a terminal


def test_oz0_run_of_an_image_tool_writes_the_image_it_says_is_attached(tmp_path: Path) -> None:
    plugin = mcp_plugin(tmp_path / "plugin", "everything", everything_argv(), {"tiny-image": "tool: get-tiny-image"})
    home = {"OZ0_HOME": str(tmp_path / "home")}
    installed = oz0("plugin", "install", str(plugin), env=home)
    assert installed.returncode == 0, installed.stderr
    run = oz0("run", "tiny-image", "{}", env=home)
    assert run.returncode == 0, run.stderr
    assert "The image above is the MCP logo." in run.stdout and "attached as 2-image.png" in run.stdout
    found = re.search(r"^wrote 2-image\.png \(4,033 bytes\) to (\S+)$", run.stderr, re.M)
    assert found and Path(found.group(1)).read_bytes().startswith(PNG), run.stderr
