"""Spec and CLI edges of issue 28: each test here failed before its fix (see the item number)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT, SUPPORT
from plugin_kit import make_plugin

from oz0.edge.contracts.json_data import MAX_JSON_DEPTH
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


def oz0(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*OZ0, *args], capture_output=True, text=True, timeout=60)


DEEP = '''
def deep(x):
    value = []
    for _ in range(300):
        value = [value]
    return value
'''


# 11. a deep answer is refused for its depth, not called "not JSON data" ----------------------------

def test_a_300_level_answer_is_refused_for_nesting_deeper_than_128_levels(tmp_path: Path):
    root = make_plugin(tmp_path / "plugin", agents={
        "deep": {"kind": "python", "entry": "answers:deep", "input": "text", "output_schema": "schemas/any.json"},
        "deep-command": {"kind": "command", "input": "text", "output_schema": "schemas/any.json",
                         "command": ["python", "-c", "print('[' * 300 + ']' * 300)"]},
    }, files={"answers.py": DEEP, "schemas/any.json": {}})
    runtime = Runtime(tmp_path / "home", backoff_s=0.01)
    try:
        install_plugin(runtime, load_plugin(root))
        for agent in ("deep", "deep-command"):
            job = asyncio.run(runtime.run(agent, "hi"))
            assert job.status == "failed" and job.failure_kind == "InvalidOutput", agent
            assert f"the answer nests deeper than {MAX_JSON_DEPTH} levels" in job.failure_reason, job.failure_reason
            assert "not JSON" not in job.failure_reason, job.failure_reason
    finally:
        runtime.close()


# 9. a JSON-RPC message holding both result and error is a protocol error --------------------------

BOTH = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "disk fine"}]},
        "error": {"code": -32000, "message": "boom"}}


@pytest.mark.parametrize("flag", [(), ("--mcp",)], ids=["auto", "mcp"])
def test_a_response_with_both_result_and_error_is_drawn_as_a_protocol_error(tmp_path: Path, flag):
    path = tmp_path / "both.json"
    path.write_text(json.dumps(BOTH))
    done = oz0("render", str(path), "--to", "card", *flag)
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    assert card["status"]["success"] is False
    assert card["status"]["message"] == ("MCP protocol error: the response holds both result and error, "
                                         "which JSON-RPC 2.0 forbids")
    assert card["form"] == "text"
    text = oz0("render", str(path), "--to", "text", *flag).stdout
    assert "MCP protocol error" in text
    assert "jsonrpc" not in text and "disk fine" not in text and "-32000" not in text
    slack = json.loads(oz0("render", str(path), "--to", "slack", *flag).stdout)
    assert slack["text"].startswith("Failed: MCP protocol error: ")


# 10. Discord: an internationalised host is never a live link --------------------------------------

@pytest.mark.parametrize("written", ["https://аррӏе.com/login", "see https://аррӏе.com/login now",
                                     "<https://аррӏе.com/login>", "[apple](https://аррӏе.com/login)"])
@pytest.mark.parametrize("form", ["text_markdown", "text_plain", "key_values", "table"])
def test_discord_never_makes_a_live_link_of_an_idn_host_and_shows_its_punycode(form: str, written: str):
    from hostile import CARDS
    from renderer_oracles import check_discord

    from oz0.renderers import RENDERERS

    rendered = RENDERERS["discord"](CARDS[form](written))
    check_discord(rendered)
    shown = json.dumps(rendered.payload, ensure_ascii=False)
    assert "xn--80ak6aa92e.com" in shown, shown[:400]
    assert "аррӏе.com" in shown  # what the data says is still there to see, as text


# 16. multi-line text keeps its lines everywhere; "* " in plain output is no bullet -----------------

GIT_LOG = ("Commit history:\nCommit: 'a1b2c3'\nAuthor: A U Thor\nDate: 2025-01-01 10:00:00+00:00\n"
           "Message: 'Add **bold** support'\n\nCommit: 'd4e5f6'\nAuthor: A U Thor\nDate: 2025-01-02\n"
           "Message: 'Fix the deploy script'\n")
BRANCHES = "* main\n  feature/login\n  release-1.2\n"


def _drawn(tmp_path: Path, value, to: str) -> str:
    path = tmp_path / "result.json"
    path.write_text(json.dumps(value))
    done = oz0("render", str(path), "--to", to)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("value", [GIT_LOG, {"content": [{"type": "text", "text": GIT_LOG}]}], ids=["text", "mcp"])
def test_a_multi_line_text_keeps_its_lines_on_every_platform(tmp_path: Path, value):
    lines = ["Commit: 'a1b2c3'", "Author: A U Thor", "Date: 2025-01-01 10:00:00+00:00"]
    terminal = _drawn(tmp_path, value, "text").splitlines()
    assert all(line in terminal for line in lines), terminal
    slack = json.loads(_drawn(tmp_path, value, "slack"))
    assert "\n".join(lines) in slack["text"], slack["text"]
    discord = json.loads(_drawn(tmp_path, value, "discord"))
    assert "Commit: 'a1b2c3'\nAuthor: A U Thor\n" in json.dumps(discord, ensure_ascii=False).replace("\\n", "\n")
    html = _drawn(tmp_path, value, "html")
    assert "Commit: &#x27;a1b2c3&#x27;<br>Author: A U Thor<br>" in html or "a1b2c3'<br>Author" in html, html


def test_a_star_line_in_plain_output_is_not_a_bullet(tmp_path: Path):
    card = json.loads(_drawn(tmp_path, BRANCHES, "card"))
    assert card["text_format"] == "plain"
    assert _drawn(tmp_path, BRANCHES, "text").splitlines()[:2] == ["* main", "  feature/login"]
    slack = _drawn(tmp_path, BRANCHES, "slack")
    assert "rich_text_list" not in slack and "* main" in json.loads(slack)["text"]
    discord = json.loads(_drawn(tmp_path, BRANCHES, "discord"))
    content = discord["components"][0]["components"][-1]["content"]
    assert "main" in content and "- main" not in content and "• main" not in content
    assert "<li>" not in _drawn(tmp_path, BRANCHES, "html")


# 17. format is asserted the same in every dialect --------------------------------------------------

DIALECT_URIS = ["http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema",
                "https://json-schema.org/draft/2020-12/schema"]
FORMAT_CASES = {  # format: (a value it accepts, a value it refuses)
    "date": ("2024-02-29", "2024-13-01"), "date-time": ("2024-02-29T10:00:00Z", "yesterday"),
    "time": ("10:00:00Z", "25:00:00Z"), "duration": ("P1Y2M3DT4H", "P1Y2W"),
    "email": ("ops@example.com", "nope"), "idn-email": ("ops@example.com", "nope"),
    "hostname": ("db-1.example.com", "-bad-.com"), "idn-hostname": ("db-1.example.com", "-bad-"),
    "ipv4": ("10.0.0.1", "999.1.1.1"), "ipv6": ("::1", "::zz"), "uri": ("https://example.com/a", "not a uri"),
    "uri-reference": ("/a/b", "\\\\bad"), "iri": ("https://example.com/ä", "not an iri"),
    "iri-reference": ("/ä", "\\\\bad"), "uri-template": ("/users/{id}", "{bad"),
    "json-pointer": ("/a/0", "no-slash"), "relative-json-pointer": ("1/a", "x/1"), "regex": ("^a+$", "("),
    "uuid": ("12345678-1234-1234-1234-123456789012", "1234"),
}


def test_the_checked_formats_are_the_documented_ones():
    from oz0.edge.contracts.formats import CHECKED_FORMATS

    assert set(CHECKED_FORMATS) == set(FORMAT_CASES)
    page = (ROOT / "docs" / "reference" / "conformance-notes.md").read_text()
    assert all(f"`{name}`" in page for name in CHECKED_FORMATS)


@pytest.mark.parametrize("dialect", DIALECT_URIS)
@pytest.mark.parametrize("name", sorted(FORMAT_CASES))
def test_format_is_asserted_alike_in_every_dialect(dialect: str, name: str):
    import jsonschema

    from oz0.edge.contracts.schema import load_contract

    good, bad = FORMAT_CASES[name]
    schema = {"$schema": dialect, "type": "object", "properties": {"v": {"type": "string", "format": name}}}
    contract = load_contract(schema)
    assert not contract.validate({"v": good})
    refused = contract.validate({"v": bad})
    assert [(v.json_path, v.keyword) for v in refused] == [("$.v", "format")], refused
    oracle = jsonschema.validators.validator_for(schema)
    if name in oracle.FORMAT_CHECKER.checkers:  # python-jsonschema, where it has a checker installed, agrees
        checked = oracle(schema, format_checker=oracle.FORMAT_CHECKER)
        assert checked.is_valid({"v": good}) and not checked.is_valid({"v": bad})


# 18. a $ref under an unknown keyword, or a meta-schema path that is no meta-schema, refused at load ---

EVIL = "https://evil.example/s.json"


@pytest.mark.parametrize("schema,location,said", [
    ({"x-hidden": {"$ref": EVIL}}, "/x-hidden/$ref", "under the unknown keyword 'x-hidden'"),
    ({"properties": {"a": {"x-doc": {"see": [{"$ref": EVIL}]}}}}, "/properties/a/x-doc/see/0/$ref",
     "under the unknown keyword 'x-doc'"),
    ({"x-hidden": {"$ref": "#/$defs/missing"}}, "/x-hidden/$ref", "points at nothing"),
    ({"$ref": "https://json-schema.org/draft/2020-12/meta/%2e%2e/%2e%2e/evil"}, "/$ref",
     "is not a meta-schema of 2020-12"),
    ({"items": {"$ref": "https://json-schema.org/draft/2020-12/meta/core?fetch=1"}}, "/items/$ref",
     "is not a meta-schema of 2020-12"),
    ({"$ref": "https://json-schema.org/draft/2020-12/meta/no-such-name"}, "/$ref", "is not a meta-schema"),
    ({"$ref": "https://json-schema.org/draft/2019-09/meta/core"}, "/$ref", "is a meta-schema of 2019-09"),
])
def test_a_hidden_or_odd_meta_schema_ref_is_refused_at_load_with_its_location(schema, location, said):
    from oz0.edge.contracts.schema import ContractError, load_contract

    with pytest.raises(ContractError) as info:
        load_contract(schema, source="tool.json")
    assert info.value.location == location, str(info.value)
    assert said in str(info.value) and "cannot compile" not in str(info.value), str(info.value)
    assert str(info.value).startswith(f"tool.json at {location}: ")


@pytest.mark.parametrize("schema", [
    {"x-hidden": {"$ref": "#/$defs/a"}, "$defs": {"a": {"type": "string"}}},  # local: harmless, kept
    {"examples": [{"$ref": EVIL}], "default": {"$ref": EVIL}, "const": {"$ref": EVIL}},  # data, not schemas
    {"$ref": "https://json-schema.org/draft/2020-12/meta/validation"},
    {"$schema": "https://json-schema.org/draft/2019-09/schema",
     "$ref": "https://json-schema.org/draft/2019-09/meta/format"},
])
def test_local_hidden_refs_data_and_real_meta_schemas_still_load(schema):
    from oz0.edge.contracts.schema import load_contract

    load_contract(schema)


# 5. a flow step whose agent is nowhere is an error in lint and install, with no store yet ----------

def test_a_flow_step_on_an_agent_neither_here_nor_installed_is_refused_by_lint_and_install(tmp_path: Path):
    import os

    from flow_kit import RELEASE, flow_plugin

    flow = {**RELEASE, "steps": [*RELEASE["steps"][:2], {**RELEASE["steps"][2], "agent": "elsewhere"}]}
    root = flow_plugin(tmp_path / "acme", flows={"release": flow})
    env = {**os.environ, "OZ0_HOME": str(tmp_path / "fresh-home")}
    env.pop("OZ0_DATABASE_URL", None)
    for command in ("lint", "install"):
        done = subprocess.run([*OZ0, "plugin", command, str(root)], capture_output=True, text=True, env=env,
                              timeout=60)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        said = done.stdout + done.stderr
        assert "$.steps[2].agent" in said and "agent 'elsewhere' is neither in this plugin nor installed" in said
    listed = subprocess.run([*OZ0, "plugin", "list", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(listed.stdout)["plugins"] == [], listed.stdout


# 7. the QZX CLI profile: a failure and the tool list are one conforming document each ------------

def test_jobs_show_nosuch_json_prints_one_conforming_failure(tmp_path: Path, monkeypatch, capsys):
    from test_qzx_cli import one_result

    from oz0.adapters.cli import main

    monkeypatch.setenv("OZ0_HOME", str(tmp_path / "home"))
    code = main(["jobs", "show", "NOSUCH", "--json"])
    out, err = capsys.readouterr()
    assert code == 1
    doc = one_result(out)
    assert doc["success"] is False and doc["error_code"] == "not_found"
    assert doc["meta"]["command"] == "jobs show"
    assert "no job 'NOSUCH'" in doc["error"] and "no job 'NOSUCH'" in err


def test_mcp_tools_json_prints_one_qzx_result_holding_the_list(capsys):
    import shlex

    from mcp_harness import SERVER
    from test_qzx_cli import one_result

    from oz0.adapters.cli import main
    from oz0.edge.mcp.pool import servers

    try:
        code = main(["mcp", "tools", "--json", "--command", shlex.join([sys.executable, str(SERVER)])])
    finally:
        servers().close()
    doc = one_result(capsys.readouterr().out)
    assert code == 0 and doc["success"] is True and doc["meta"]["command"] == "mcp tools"
    assert isinstance(doc["tools"], list) and {"name", "inputSchema", "card"} <= set(doc["tools"][0])
    assert doc["message"].startswith(f"{len(doc['tools'])} tools on ")


# 8. a command agent's QZX failure keeps its error_code; an invalid QZX envelope fails the job -------

DISK_FULL = {"success": False, "message": "The backup volume is full.", "error": "no space left on /backup",
             "error_code": "disk_full"}
BAD_ENVELOPE = {"success": True, "message": "Backed up.", "error": "but also this", "files": 3}


def _qzx_home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OZ0_HOME", str(tmp_path / "home"))
    command = lambda answer: {"kind": "command", "input": "text", "output_schema": "schemas/any.json",  # noqa: E731
                              "command": ["python", "-c", f"print({json.dumps(json.dumps(answer))})"]}
    root = make_plugin(tmp_path / "plugin", agents={"backup": command(DISK_FULL), "sloppy": command(BAD_ENVELOPE)},
                       files={"schemas/any.json": {"type": "object"}})
    runtime = Runtime(tmp_path / "home")
    try:
        install_plugin(runtime, load_plugin(root))
    finally:
        runtime.close()


def test_a_command_agents_qzx_failure_keeps_its_error_code(tmp_path: Path, monkeypatch, capsys):
    from test_qzx_cli import one_result

    from oz0.adapters.cli import main

    _qzx_home(tmp_path, monkeypatch)
    assert main(["run", "backup", "now", "--json"]) == 1
    doc = one_result(capsys.readouterr().out)
    assert doc["error_code"] == "disk_full", doc
    assert main(["run", "backup", "now", "--to", "card"]) == 1
    card = json.loads(capsys.readouterr().out)
    assert card["status"]["error_code"] == "disk_full" and card["status"]["message"] == DISK_FULL["message"]


def test_an_answer_whose_qzx_envelope_is_invalid_fails_the_job(tmp_path: Path, monkeypatch, capsys):
    from test_qzx_cli import one_result

    from oz0.adapters.cli import main

    _qzx_home(tmp_path, monkeypatch)
    assert main(["run", "sloppy", "now", "--json"]) == 1
    doc = one_result(capsys.readouterr().out)
    assert doc["error_code"] == "invalid_result_contract" and doc["job"]["status"] == "failed", doc
    assert "QZX Result Contract v1" in doc["error"] and "error" in doc["error"]
    assert main(["run", "sloppy", "now"]) == 1
    out, err = capsys.readouterr()
    assert "failed" in err and "QZX Result Contract v1" in out


# 3. an MCP tool's annotations are stored at install and shown before any job reaches the server ---

def test_mcp_annotations_listed_at_install_are_shown_before_any_job(tmp_path: Path):
    import os
    import shutil

    import httpx
    from console_plugin import ConsoleThread

    elicit = SUPPORT / "mcp_servers" / "elicit_server.py"
    plugin = tmp_path / "plugin"
    (plugin / "agents").mkdir(parents=True)
    shutil.copy(elicit, plugin / "elicit_server.py")
    (plugin / "plugin.yaml").write_text("name: hints\nversion: 1.0.0\n")
    server = f"server:\n  command: {json.dumps(sys.executable)}\n  args: [elicit_server.py]\n"
    (plugin / "agents" / "drop.yaml").write_text(f"kind: mcp\n{server}tool: drop_table\n")
    env = {**os.environ, "OZ0_HOME": str(tmp_path / "home")}
    done = subprocess.run([*OZ0, "plugin", "install", str(plugin)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    hints = {"title": "Drop table", "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}
    listed = subprocess.run([*OZ0, "plugin", "list", "--json"], capture_output=True, text=True, env=env, timeout=60)
    agents = {a["name"]: a for p in json.loads(listed.stdout)["plugins"] for a in p["agents"]}
    assert agents["drop"]["annotations"] == hints, listed.stdout
    runtime = Runtime(tmp_path / "home")  # a fresh process's view: nothing has listed the server here
    try:
        with ConsoleThread(runtime) as console, httpx.Client(base_url=console.url, timeout=30) as http:
            shown = {a["name"]: a for a in http.get("/v1/agents").json()["agents"]}
            assert shown["drop"]["annotations"] == hints
            doc = http.get("/openapi.json").json()
            assert doc["paths"]["/agents/drop/runs"]["post"]["x-annotations"] == hints
        assert runtime.jobs() == []
    finally:
        runtime.close()


def test_revision_0013_upgrades_a_0011_database_keeping_its_agents(tmp_path: Path):
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, text

    from oz0.edge.runtime import migrate
    from oz0.edge.runtime.store import Store

    url = f"sqlite:///{tmp_path / 'oz0.db'}"
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(migrate.MIGRATIONS))
    with engine.begin() as conn:  # the database a 0011 oz0 made, with an installed agent
        config.attributes["connection"] = conn
        command.upgrade(config, "0011")
        conn.execute(text("INSERT INTO plugins (name, current_version_id, installed_at) VALUES ('old', 1, 1.0)"))
        conn.execute(text("INSERT INTO plugin_versions (id, plugin, version, content_hash, path, description, "
                          "installed_at, installed_by) VALUES (1, 'old', '0.1.0', 'h', '/p', '', 1.0, 'ana')"))
        conn.execute(text("INSERT INTO agents (version_id, name, kind, description, failures, limits) "
                          "VALUES (1, 'drop', 'mcp', '', '{}', '{}')"))
    engine.dispose()
    store = Store(url)  # opening it upgrades it
    try:
        assert store.schema == migrate.SchemaChange("0011", migrate.HEAD)
        (agent,) = store.current_version("old").agents
        assert (agent.name, agent.kind, agent.annotations) == ("drop", "mcp", None)
    finally:
        store.close()
