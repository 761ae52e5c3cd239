"""Issue 19, "Results drawn wrongly": real producers' answers drawn by `oz0 render` as a user runs it.

The JSON-RPC responses are captured from the real test MCP server over stdio (the form MCP traffic is
logged in), not written by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_harness import SERVER
from paths import shared

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


def oz0(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OZ0, *args], capture_output=True, text=True, timeout=60)


def card_of(path: Path, *extra: str) -> dict:
    done = oz0("render", str(path), "--to", "card", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def exchange(*requests: dict) -> list[dict]:
    """Each request sent to the real MCP server over stdio, after the initialize handshake; the raw
    JSON-RPC responses, as logged."""
    hello = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    proc = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in [*hello, *requests]))
        proc.stdin.flush()
        by_id: dict = {}
        while not all(r["id"] in by_id for r in requests):
            line = proc.stdout.readline()
            assert line, "the MCP server closed its output before answering every request"
            answer = json.loads(line)
            by_id[answer.get("id")] = answer
    finally:
        proc.stdin.close()
        proc.wait(20)
    return [by_id[r["id"]] for r in requests]


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> dict[str, Path]:
    calls = {"fail": {"name": "fail", "arguments": {}}, "disk": {"name": "disk", "arguments": {"host": "db-1"}}}
    requests = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": p}
                for i, p in enumerate(calls.values(), start=1)]
    requests.append({"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {}})
    folder = tmp_path_factory.mktemp("logged")
    out = {}
    for name, answer in zip([*calls, "protocol_error"], exchange(*requests)):
        out[name] = folder / f"{name}.json"
        out[name].write_text(json.dumps(answer))
    return out


@pytest.mark.parametrize("flag", [(), ("--mcp",)], ids=["auto", "mcp"])
def test_a_logged_tools_call_failure_is_drawn_as_the_failure_inside(logged, flag):
    card = card_of(logged["fail"], *flag)
    assert card["status"]["success"] is False
    assert "Cannot read disk use: the backup volume is offline" in card["status"]["message"]
    assert card["form"] != "table"


@pytest.mark.parametrize("flag", [(), ("--mcp",)], ids=["auto", "mcp"])
def test_a_logged_tools_call_success_is_drawn_from_its_structured_content(logged, flag):
    card = card_of(logged["disk"], *flag)
    assert card["form"] == "key_values" and card["drawn"] is True
    assert dict(zip(card["keys"], card["values"]))["host"] == "db-1"


@pytest.mark.parametrize("flag", [(), ("--mcp",)], ids=["auto", "mcp"])
def test_a_json_rpc_error_is_a_protocol_error_never_a_success(logged, flag):
    answer = json.loads(logged["protocol_error"].read_text())
    assert "error" in answer
    card = card_of(logged["protocol_error"], *flag)
    assert card["status"]["success"] is False
    assert card["status"]["message"].startswith("MCP protocol error: ")
    assert answer["error"]["message"] in card["status"]["message"]
    assert f"JSON-RPC error {answer['error']['code']}" in card["status"]["error"]
    slack = json.loads(oz0("render", str(logged["protocol_error"]), "--to", "slack", *flag).stdout)
    assert slack["text"].startswith("Failed: MCP protocol error: ")


def write(folder: Path, name: str, value) -> Path:
    path = folder / name
    path.write_text(json.dumps(value))
    return path


@pytest.mark.parametrize("result,rule", [
    ({"success": True, "message": "Disk read.", "error": "none", "used": 41},
     "$.error: a success (success: true) must not carry this failure field"),
    ({"success": True, "message": "Disk read.", "details": None, "used": 41},
     "$.details: must be omitted when unavailable, never null"),
    ({"success": True, "message": "Disk read.", "meta": {"schema_version": 2}, "used": 41},
     "$.meta.schema_version: must be 1, got 2"),
    ({"success": False, "message": "Disk unreadable.", "used": 41},
     "a failure (success: false) must carry `error` or `error_code`"),
], ids=["success-with-error", "details-null", "schema-version-2", "failure-without-error"])
def test_a_result_that_breaks_the_qzx_contract_says_so_and_names_the_rule(tmp_path, result, rule):
    card = card_of(write(tmp_path, "r.json", result))
    status = card["status"]
    assert status["success"] is False and status["error_code"] == "invalid_result_contract"
    assert status["message"].startswith("The result breaks the QZX Result Contract v1 (")
    assert rule in status["message"] and result["message"] in status["message"]
    shown = card["text"] if card["form"] == "text" else dict(zip(card["keys"], card["values"]))["used"]
    assert shown in ("41", 41)  # the evidence is still shown
    text = " ".join(oz0("render", str(tmp_path / "r.json")).stdout.split())
    assert "breaks the QZX Result Contract v1" in text and rule in text


def test_a_conforming_qzx_result_keeps_its_own_header(tmp_path):
    card = card_of(write(tmp_path, "r.json", {"success": True, "message": "Disk read.", "used": 41,
                                              "meta": {"schema_version": 1, "command": "disk"}}))
    assert card["status"] == {"success": True, "message": "Disk read.", "command": "disk"}


@pytest.mark.parametrize("is_error,success,shown", [
    (True, True, "isError is true but success is true"),
    (False, False, "isError is false but success is false"),
    (None, False, "isError is absent, so false but success is false"),
    ("false", True, "isError is 'false', not a boolean but success is true"),
])
def test_is_error_that_disagrees_with_success_is_a_failure_naming_the_field(tmp_path, is_error, success, shown):
    structured = ({"success": True, "message": "Disk read.", "used": 41} if success else
                  {"success": False, "message": "Disk unreadable.", "error_code": "disk_offline"})
    result = {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured}
    if is_error is not None:
        result["isError"] = is_error
    card = card_of(write(tmp_path, "r.json", result), "--mcp")
    assert card["status"]["success"] is False
    assert card["status"]["message"].startswith("isError disagrees with structuredContent.success: " + shown)
    assert structured["message"] in card["status"]["message"]
    slack = json.loads(oz0("render", str(tmp_path / "r.json"), "--to", "slack").stdout)
    assert any(line.startswith("Failed: isError disagrees with structuredContent.success")
               for line in slack["text"].splitlines())


QZX_REF = {"$ref": "https://qzx.yumbale.com/schemas/result-contract-v1.schema.json"}


def test_the_canonical_qzx_ref_resolves_to_the_bundled_copy(tmp_path):
    schema = write(tmp_path, "schema.json", QZX_REF)
    good = {"content": [], "structuredContent": {"success": True, "message": "Disk read.", "used": 41}}
    card = card_of(write(tmp_path, "good.json", good), "--schema", str(schema), "--mcp")
    assert card["drawn"] is True and card["status"] == {"success": True, "message": "Disk read."}
    bad = {"content": [], "structuredContent": {"success": True, "message": "Disk read.", "error_code": "x"}}
    card = card_of(write(tmp_path, "bad.json", bad), "--schema", str(schema), "--mcp")
    assert card["drawn"] is False
    assert [v["schema_path"] for v in card["violations"]] == ["/allOf/1/then/not"]


def test_the_canonical_qzx_ref_gives_a_card_form_and_fetches_nothing():
    from oz0.edge.cards.choice import choose_card
    from oz0.edge.contracts.schema import load_contract
    from oz0.edge.mcp.cards import card_form
    from oz0.edge.mcp.spec import ToolInfo

    contract = load_contract({"allOf": [QZX_REF, {"properties": {"used": {"type": "integer"}}}]})
    assert contract.validate({"success": True, "message": "ok", "used": "x"})[0].json_path == "$.used"
    card = choose_card({"success": False, "message": "m", "error": "e", "used": 1}, contract)
    assert card.status is not None and card.status.success is False and card.drawn
    tool = ToolInfo(name="qzx", description="", input_schema={"type": "object"}, output_schema=QZX_REF)
    assert card_form(tool).startswith("status header")


PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489") + b"\0" * 30
B64 = __import__("base64").b64encode(PNG).decode()


def mcp_result(*blocks: dict, **extra) -> dict:
    """A CallToolResult, checked against MCP 2025-06-18's own schema so the test reads real shapes."""
    import jsonschema_rs

    result = {"content": list(blocks), **extra}
    schema = {**json.loads(shared("fixtures/mcp-spec/schema-2025-06-18.json").read_text()), "$ref": "#/definitions/CallToolResult"}
    jsonschema_rs.validate(schema, result)
    return result


def render_all(tmp_path: Path, result: dict) -> dict:
    path = write(tmp_path, "r.json", result)
    out = {"card": card_of(path, "--mcp"), "text": oz0("render", str(path), "--mcp").stdout}
    for target in ("slack", "discord", "html"):
        done = oz0("render", str(path), "--mcp", "--to", target)
        assert done.returncode == 0, done.stderr
        out[target] = done.stdout
    return out


def test_resource_links_images_and_audio_beside_text_are_listed_and_attached(tmp_path):
    drawn = render_all(tmp_path, mcp_result(
        {"type": "text", "text": "Screenshot taken."},
        {"type": "image", "data": B64, "mimeType": "image/png"},
        {"type": "audio", "data": B64, "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///repo/README.md", "name": "README.md", "mimeType": "text/markdown"},
    ))
    card = drawn["card"]
    assert card["text"] == "Screenshot taken."
    assert card["notes"] == [
        f"image (image/png, {len(PNG)} bytes), attached as 2-image.png",
        f"audio (audio/wav, {len(PNG)} bytes), attached as 3-audio.wav",
        "resource link: README.md — file:///repo/README.md (text/markdown)",
    ]
    assert card["files"] == [{"filename": "2-image.png", "content_type": "image/png", "size": len(PNG)},
                             {"filename": "3-audio.wav", "content_type": "audio/wav", "size": len(PNG)}]
    for target in ("text", "slack", "discord", "html"):
        assert "file:///repo/README.md" in drawn[target] and "2-image.png" in drawn[target], target
    discord = json.loads(drawn["discord"])
    files = [c["file"]["url"] for c in discord["components"][0]["components"] if c["type"] == 13]
    assert files == ["attachment://2-image.png", "attachment://3-audio.wav"]


def test_renderers_upload_the_block_files():
    from oz0.edge.cards.choice import choose_card
    from oz0.renderers import RENDERERS

    card = choose_card(mcp_result({"type": "text", "text": "Chart."},
                                  {"type": "image", "data": B64, "mimeType": "image/png"}), source="mcp")
    for name, render in RENDERERS.items():
        uploads = render(card).uploads
        assert [(u.filename, u.content_type, u.data) for u in uploads] == [("2-image.png", "image/png", PNG)], name


def test_an_embedded_resource_shows_its_text_and_attaches_its_blob(tmp_path):
    drawn = render_all(tmp_path, mcp_result(
        {"type": "resource", "resource": {"uri": "file:///repo/notes.txt", "mimeType": "text/plain",
                                          "text": "line one\nline two"}},
        {"type": "resource", "resource": {"uri": "file:///repo/logo.png", "mimeType": "image/png", "blob": B64}},
    ))
    card = drawn["card"]
    assert card["form"] == "text" and "columns" not in card
    assert card["text"].splitlines() == [
        "resource: file:///repo/notes.txt (text/plain, 17 bytes of text)",
        f"resource: file:///repo/logo.png (image/png, {len(PNG)} bytes), attached as 2-logo.png",
        "", "line one", "line two"]
    assert card["files"] == [{"filename": "2-logo.png", "content_type": "image/png", "size": len(PNG)}]
    assert B64 not in drawn["text"] and B64 not in drawn["slack"] and B64 not in drawn["html"]


def test_a_result_that_is_only_a_resource_block_is_not_a_table_of_raw_blocks(tmp_path):
    card = render_all(tmp_path, mcp_result(
        {"type": "resource", "resource": {"uri": "file:///repo/logo.png", "mimeType": "image/png", "blob": B64}}))["card"]
    assert card["form"] == "text" and B64 not in json.dumps(card)
    assert card["text"] == f"resource: file:///repo/logo.png (image/png, {len(PNG)} bytes), attached as 1-logo.png"


def test_an_embedded_text_resource_beside_text_is_attached_as_a_text_file(tmp_path):
    card = render_all(tmp_path, mcp_result(
        {"type": "text", "text": "Read the file."},
        {"type": "resource", "resource": {"uri": "file:///repo/a.py", "mimeType": "text/x-python",
                                          "text": "print(1)\n"}}))["card"]
    assert card["text"] == "Read the file."
    assert card["notes"] == ["resource: file:///repo/a.py (text/x-python, 9 bytes of text), attached as 2-a.py"]
    assert card["files"] == [{"filename": "2-a.py", "content_type": "text/x-python", "size": 9}]


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
           "GIT_COMMITTER_EMAIL": "ada@example.com", "HOME": str(repo), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def git_outputs(tmp_path_factory) -> dict[str, str]:
    """Real git output, as mcp-server-git returns it in a text block."""
    repo = tmp_path_factory.mktemp("repo")
    _git(repo, "init", "-q", "-b", "main")
    (repo / "app.ini").write_text("[db]\nhost = db-1\nport = 5432\n")
    _git(repo, "add", "app.ini")
    _git(repo, "commit", "-q", "-m", "Add the config")
    (repo / "app.ini").write_text("[db]\nhost = db-2\nport = 5432\n")
    (repo / "new.txt").write_text("x\n")
    return {"status": _git(repo, "status"), "log": _git(repo, "log"), "diff": _git(repo, "diff")}


@pytest.mark.parametrize("kind", ["status", "log", "diff"])
def test_plain_tool_output_keeps_its_line_breaks_in_text_and_the_slack_fallback(tmp_path, git_outputs, kind):
    output = git_outputs[kind]
    path = write(tmp_path, "r.json", {"content": [{"type": "text", "text": output}]})
    wanted = [line.strip() for line in output.splitlines() if line.strip()]
    terminal = [line.strip() for line in oz0("render", str(path)).stdout.splitlines() if line.strip()]
    assert terminal == wanted
    fallback = json.loads(oz0("render", str(path), "--to", "slack").stdout)["text"]
    shown = [line.strip() for line in fallback.splitlines() if line.strip()]
    assert shown == [line.replace("<", "&lt;").replace(">", "&gt;") for line in wanted]


def test_markdown_prose_is_still_markdown(tmp_path):
    prose = "# Release 1.4\n\nThe search is *faster*\nand the login is fixed.\n\n- one\n- two"
    card = card_of(write(tmp_path, "r.json", {"content": [{"type": "text", "text": prose}]}))
    assert card["text_format"] == "markdown"
    text = oz0("render", str(tmp_path / "r.json")).stdout
    assert "The search is faster\nand the login is fixed." in text  # styled, its lines kept (issue 28, 16)
    assert "*faster*" not in text and "# Release" not in text


def test_an_agent_answer_checked_against_its_own_contract_is_not_read_as_json_rpc():
    from oz0.edge.cards.choice import choose_card

    answer = {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "logged"}}
    schema = {"type": "object", "properties": {"jsonrpc": {"type": "string"}}}
    card = choose_card(answer, schema, checked=True)
    assert card.status is None and card.form == "key_values" and card.keys == ("jsonrpc", "id", "error")
