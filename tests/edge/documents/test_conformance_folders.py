"""Issue 28 item 4: `oz0 plugin openapi FOLDER` and `oz0 plugin diff OLD NEW` see an mcp agent's tool as
install does (its server started, under the agent's limits), or say in one line it cannot be reached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]
SERVER = '''
import os

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("oz0-test-disk")


class Used(BaseModel):
    host: str
    used: int


class UsedText(BaseModel):
    host: str
    used: str


def disk(host: str) -> Used:
    return Used(host=host, used=41)


def disk_text(host: str) -> UsedText:
    return UsedText(host=host, used="41%")


server.add_tool(disk_text if os.environ.get("USED") == "text" else disk, name="disk", description="Disk use",
                annotations=ToolAnnotations(title="Disk use", readOnlyHint=True))

if __name__ == "__main__":
    server.run()
'''


def _folder(root: Path, *, version: str, used: str = "int", command: str | None = None) -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "plugin.yaml").write_text(f"name: disks\nversion: {version}\n")
    (root / "disk_server.py").write_text(SERVER)
    python = command or sys.executable
    (root / "agents" / "disk.yaml").write_text(
        f"kind: mcp\nserver:\n  command: {json.dumps(python)}\n  args: [disk_server.py]\n"
        f"  env: {{USED: {used}}}\ntool: disk\nlimits: {{timeout_s: 20}}\n"
        "examples:\n  - description: the db host\n    input: {host: db-1}\n    output: {host: db-1, used: 41}\n")
    return root


def _oz0(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OZ0, *args], capture_output=True, text=True, timeout=120)


def test_plugin_openapi_of_a_folder_has_the_tools_schemas_annotations_and_examples(tmp_path: Path):
    done = _oz0("plugin", "openapi", str(_folder(tmp_path / "p", version="1.0.0")))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    op = document["paths"]["/agents/disk/runs"]["post"]
    request = op["requestBody"]["content"]
    assert "application/json" in request and "text/plain" not in request, request
    assert request["application/json"]["schema"] == {"$ref": "#/components/schemas/disk.input"}
    assert document["components"]["schemas"]["disk.input"]["properties"]["host"]["type"] == "string"
    assert op["x-annotations"] == {"title": "Disk use", "readOnlyHint": True}
    assert request["application/json"]["examples"]["example-0"]["value"] == {"host": "db-1"}
    answered = op["responses"]["200"]["content"]["application/json"]["examples"]["example-0"]["value"]
    assert answered == {"success": True, "output": {"host": "db-1", "used": 41}}


def test_plugin_diff_compares_the_tools_schemas(tmp_path: Path):
    old = _folder(tmp_path / "old", version="1.0.0")
    new = _folder(tmp_path / "new", version="1.0.1", used="text")
    done = _oz0("plugin", "diff", str(old), str(new), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {"agent": "disk", "direction": "output", "json_path": "$.used",
            "what": "type of $.used changed from integer to string", "breaking": True} in doc["changes"], doc
    assert doc["breaking"] is True


def test_a_server_that_cannot_be_reached_is_one_line(tmp_path: Path):
    folder = _folder(tmp_path / "p", version="1.0.0", command=str(tmp_path / "no-such-python"))
    for args in (("plugin", "openapi", str(folder)), ("plugin", "diff", str(folder), str(folder))):
        done = _oz0(*args)
        assert done.returncode == 2, done.stdout
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert lines[0].startswith("oz0: error: cannot load the plugin: ") and "'disk'" in lines[0], lines[0]
