"""`oz0 plugin new|lint|install|list`, `oz0 run`, `oz0 jobs`, `oz0 audit` and the bundled example
plugin, judged by what a user sees: the lines printed, the cards drawn and the exit codes."""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from paths import ROOT
from plugin_kit import make_plugin

from oz0.adapters.cli import main
from oz0.adapters.cli.plugin import example_plugin_dir
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.lint import lint_plugin

TEXT_AGENT = {"kind": "python", "entry": "agent:echo", "input": "text", "output": "text"}
AGENT_PY = "def echo(text):\n    return text\n"


def oz0(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def findings(root: Path) -> list[str]:
    return [f.describe() for f in lint_plugin(root).findings]


# package data ----------------------------------------------------------------------------------

def test_the_example_plugin_is_package_data():
    pyproject = (ROOT / "pyproject.toml").read_text()
    import tomllib
    globs = tomllib.loads(pyproject)["tool"]["setuptools"]["package-data"]["oz0.edge"]
    folder = ROOT / "edge"
    for path in (folder / "example_plugin").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            rel = path.relative_to(folder).as_posix()
            assert any(fnmatch.fnmatch(rel, g) for g in globs), f"{rel} is not in package-data"


# lint ------------------------------------------------------------------------------------------

def test_a_clean_plugin_lints_clean(tmp_path, capsys):
    root = make_plugin(tmp_path / "p", agents={"echo": TEXT_AGENT}, files={"agent.py": AGENT_PY})
    assert oz0(capsys, "plugin", "lint", str(root)) == (0, f"{root}: 0 errors, 0 warnings\n", "")


def test_no_contract_warns_before_1_0_and_is_an_error_from_1_0(tmp_path, capsys):
    agent = {"kind": "python", "entry": "agent:echo"}
    young = make_plugin(tmp_path / "young", agents={"echo": agent}, files={"agent.py": AGENT_PY})
    code, out, _ = oz0(capsys, "plugin", "lint", str(young))
    assert code == 0
    assert ("warning: agents/echo.yaml $: agent 'echo' declares no contract for its input (a warning now; an "
            "error from plugin version 1.0.0 on); to mend: add `input: text`, or "
            "`input_schema: schemas/echo-input.json`") in out
    assert "declares no contract for its output" in out and "0 errors, 2 warnings" in out
    grown = make_plugin(tmp_path / "grown", version="1.0.0", agents={"echo": agent}, files={"agent.py": AGENT_PY})
    code, out, _ = oz0(capsys, "plugin", "lint", str(grown))
    assert code == 1
    assert "error: agents/echo.yaml $: agent 'echo' declares no contract for its input (an error from plugin " \
           "version 1.0.0 on)" in out
    assert "2 errors, 0 warnings" in out


def schema_plugin(tmp_path: Path, schema, *, name: str = "p", extra: dict | None = None) -> Path:
    agent = {"kind": "python", "entry": "agent:echo", "input": "text", "output_schema": "schemas/out.json"}
    return make_plugin(tmp_path / name, agents={"echo": agent},
                       files={"agent.py": AGENT_PY, "schemas/out.json": schema, **(extra or {})})


def test_a_schema_whose_root_is_not_an_object_warns(tmp_path):
    root = schema_plugin(tmp_path, {"type": "array", "items": {"type": "string"}})
    assert findings(root) == [
        "warning: schemas/out.json $: the schema's root is not an object (type 'array'); to mend: wrap it in an "
        "object, as MCP's tool schemas are: {\"type\": \"object\", \"properties\": {\"items\": <this schema>}}"]


class _Counter(BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_a_ref_that_leaves_its_file_is_refused_and_never_fetched(tmp_path, capsys):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/name.json"
    try:
        remote = schema_plugin(tmp_path, {"type": "object", "properties": {"name": {"$ref": url}}}, name="remote")
        code, out, _ = oz0(capsys, "plugin", "lint", str(remote))
        local = schema_plugin(tmp_path, {"type": "object", "properties": {"name": {"$ref": "other.json"}}},
                              name="local", extra={"schemas/other.json": {"type": "string"}})
        local_findings = findings(local)
    finally:
        server.shutdown()
        server.server_close()
    assert code == 1 and _Counter.hits == 0
    assert f"error: schemas/out.json $.properties.name[\"$ref\"]: $ref '{url}' points outside this document" in out
    assert "to mend: embed the schema it names under $defs and refer to it as '#/$defs/NAME'" in out
    assert len(local_findings) == 1 and local_findings[0].startswith(
        "error: schemas/out.json $.properties.name[\"$ref\"]: $ref 'other.json' does not resolve inside this document")


@pytest.mark.parametrize("diff, message", [
    ({"before": "old", "after": "old"}, "x-oz0-diff names 'old' twice; a diff needs two different properties"),
    ({"before": "old", "after": "newer"}, "x-oz0-diff names 'newer', not a property of this schema "
                                          "(properties: path, old, new)"),
    ({"before": "old"}, "x-oz0-diff must name a `before` and an `after` property"),
    (["old", "new"], "x-oz0-diff must name a `before` and an `after` property"),
])
def test_x_oz0_diff_must_name_two_different_properties(tmp_path, diff, message):
    schema = {"type": "object", "x-oz0-diff": diff, "properties": {
        "path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}}}
    found = findings(schema_plugin(tmp_path, schema))
    assert len(found) == 1
    assert found[0].startswith(f"error: schemas/out.json $[\"x-oz0-diff\"]: {message}; to mend: write")


def test_x_oz0_diff_through_a_ref_and_nested_is_checked(tmp_path):
    schema = {"type": "object", "properties": {"change": {"$ref": "#/$defs/change"}},
              "$defs": {"change": {"type": "object", "x-oz0-diff": {"before": "a", "after": "b"},
                                   "allOf": [{"properties": {"a": {"type": "string"}}}],
                                   "properties": {"c": {"type": "string"}}}}}
    found = findings(schema_plugin(tmp_path, schema))
    assert found == [
        "error: schemas/out.json $[\"$defs\"].change[\"x-oz0-diff\"]: x-oz0-diff names 'b', not a property of this "
        "schema (properties: a, c); to mend: write {\"before\": \"<property>\", \"after\": \"<another "
        "property>\"}, naming two different properties of this schema"]


def test_x_oz0_order_names_that_are_not_properties_warn(tmp_path, capsys):
    schema = {"type": "object", "x-oz0-order": ["id", "sevrity"], "properties": {
        "id": {"type": "string"}, "severity": {"type": "string"}}}
    root = schema_plugin(tmp_path, schema)
    code, out, _ = oz0(capsys, "plugin", "lint", str(root))
    assert code == 0
    assert ("warning: schemas/out.json $[\"x-oz0-order\"][1]: x-oz0-order names 'sevrity', which is not a property "
            "of this schema (properties: id, severity); to mend: remove it or fix its spelling") in out
    table = {"type": "object", "properties": {"rows": {"type": "array", "x-oz0-order": ["n"],
                                                       "items": {"type": "object", "properties": {"n": {}}}}}}
    assert findings(schema_plugin(tmp_path, table, name="table")) == []


def test_an_invalid_schema_is_refused(tmp_path):
    found = findings(schema_plugin(tmp_path, {"type": "object", "properties": {"n": {"type": "integr"}}}))
    assert len(found) == 1 and found[0].startswith("error: schemas/out.json $.properties.n.type: not a valid JSON Schema")
    assert "to mend: fix the schema at that location" in found[0]
    broken = schema_plugin(tmp_path, "{ not json", name="broken")
    assert findings(broken)[0].startswith("error: schemas/out.json $: not valid JSON")


def test_an_unknown_agent_kind_is_refused(tmp_path):
    root = make_plugin(tmp_path / "p", agents={"x": {"kind": "lambda", "input": "text", "output": "text"}})
    assert findings(root) == ["error: agents/x.yaml $.kind: unknown agent kind 'lambda'; to mend: use one of: "
                              "python, command, http, mcp, model"]


def test_missing_files_are_refused(tmp_path, capsys):
    root = make_plugin(tmp_path / "p", agents={
        "a": {"kind": "python", "entry": "helpers_gone:run", "input_schema": "schemas/in.json", "output": "text"},
        "b": {"kind": "command", "command": ["bin/tool.sh"], "input": "text", "output": "text"},
    })
    found = findings(root)
    assert "error: agents/a.yaml $.input_schema: missing file 'schemas/in.json'; to mend: create schemas/in.json " \
           "or fix the path" in found
    assert any(f.startswith("error: agents/a.yaml $.entry: missing file helpers_gone.py") for f in found)
    assert any(f.startswith("error: agents/b.yaml $.command[0]: missing file 'bin/tool.sh'") for f in found)
    (root / "plugin.yaml").unlink()
    code, out, _ = oz0(capsys, "plugin", "lint", str(root))
    assert code == 1 and "error: plugin.yaml: missing file: a plugin is a folder with plugin.yaml" in out
    code, out, _ = oz0(capsys, "plugin", "lint", str(tmp_path / "nowhere"))
    assert code == 1 and "not a folder" in out


def test_manifest_mistakes_name_the_key_and_the_mend(tmp_path):
    root = make_plugin(tmp_path / "p", version="one", agents={
        "a": {"kind": "python", "input": "text", "input_schema": "schemas/in.json", "output": "text", "colour": 1},
        "b": {"kind": "python", "entry": "agent:echo", "input_schema": "schemas/in.json", "output": "text",
              "example": {"n": "x"}},
    }, files={"agent.py": AGENT_PY, "schemas/in.json": {"type": "object", "properties": {"n": {"type": "integer"}}}})
    found = findings(root)
    assert any(f.startswith("error: plugin.yaml $.version:") and "MAJOR.MINOR.PATCH" in f for f in found)
    assert "error: agents/a.yaml $.input: declares both input: text and input_schema; to mend: keep `input: text` " \
           "or `input_schema:`, not both" in found
    assert any(f.startswith("error: agents/a.yaml $: \"entry\" is a required property; to mend: add `entry: "
                            "module:function`") for f in found)
    assert any(f.startswith("error: agents/a.yaml $: Additional properties are not allowed ('colour'") for f in found)
    assert "error: agents/b.yaml $.example: the example breaks the input schema at $.n: \"x\" is not of type " \
           "\"integer\"; to mend: change the example (or the schema) so they agree" in found


def test_lint_json_is_one_qzx_result(tmp_path, capsys):
    root = make_plugin(tmp_path / "p", agents={"x": {"kind": "lambda", "input": "text", "output": "text"}})
    code, out, _ = oz0(capsys, "plugin", "lint", str(root), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["success"] is False and doc["error_code"] == "lint_errors"
    assert doc["findings"][0] == {"severity": "error", "file": "agents/x.yaml", "path": "$.kind",
                                  "message": "unknown agent kind 'lambda'",
                                  "fix": "use one of: python, command, http, mcp, model"}


# new -------------------------------------------------------------------------------------------

def test_plugin_new_scaffolds_a_working_text_agent_with_a_passing_test(tmp_path, capsys, oz0_home):
    target = tmp_path / "greeter"
    code, out, _ = oz0(capsys, "plugin", "new", "greeter", str(target))
    assert code == 0 and f"Created plugin greeter in {target}" in out
    agent = yaml.safe_load((target / "agents" / "greeter.yaml").read_text())
    assert (agent["input"], agent["output"], agent["kind"]) == ("text", "text", "python")
    assert lint_plugin(target).findings == ()
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(target / "tests")],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "4 passed" in tests.stdout
    code, _, err = oz0(capsys, "plugin", "new", "greeter", str(target))
    assert code == 2 and "already exists and is not an empty folder" in err
    code, _, err = oz0(capsys, "plugin", "new", "Bad_Name")
    assert code == 2 and "'Bad_Name' is not a plugin name: use lower-case letters" in err


# install, list, run, jobs, audit ---------------------------------------------------------------

def test_install_refuses_a_plugin_with_errors_and_stores_nothing(tmp_path, capsys, oz0_home):
    root = make_plugin(tmp_path / "p", agents={"x": {"kind": "lambda", "input": "text", "output": "text"}})
    code, _out, err = oz0(capsys, "plugin", "install", str(root))
    assert code == 1
    assert "error: agents/x.yaml $.kind: unknown agent kind 'lambda'" in err
    assert f"oz0: error: not installed: {root} has 1 error, 0 warnings" in err
    assert oz0(capsys, "plugin", "list")[1] == "No plugins installed. Try: oz0 plugin install --example\n"


def test_install_records_the_plugin_its_agents_and_contracts(tmp_path, capsys, oz0_home):
    root = make_plugin(tmp_path / "p", name="acme", version="0.2.0", agents={
        "echo": TEXT_AGENT,
        "count": {"kind": "python", "entry": "agent:echo", "input_schema": "schemas/in.json", "output": "text"},
    }, files={"agent.py": AGENT_PY, "schemas/in.json": {"type": "object", "properties": {"n": {"type": "integer"}}}})
    code, out, _ = oz0(capsys, "plugin", "install", str(root))
    assert code == 0 and out == f"Installed acme 0.2.0: 2 agents (count, echo) into {oz0_home}\n"
    assert oz0(capsys, "plugin", "install", str(root)) == (
        0, "acme 0.2.0 is already installed with the same content; nothing to do.\n", "")
    assert oz0(capsys, "plugin", "install", "--quiet-if-current", str(root)) == (0, "", "")
    code, out, _ = oz0(capsys, "plugin", "list")
    assert code == 0 and "acme" in out and "0.2.0" in out and "count" in out and "schemas/in.json" in out
    code, out, _ = oz0(capsys, "plugin", "list", "--json")
    (plugin,) = json.loads(out)["plugins"]
    assert (plugin["name"], plugin["version"], len(plugin["content_hash"])) == ("acme", "0.2.0", 64)
    agents = {a["name"]: a for a in plugin["agents"]}
    assert agents["echo"]["input"] == "text" and agents["count"]["input"].startswith("schemas/in.json (sha256:")
    # the contracts themselves are stored, and agents run from the stored copy
    from oz0.edge.runtime.runner import Runtime
    rt = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    stored = rt.installed()[0]
    assert {a.name: a.input_schema for a in stored.agents}["count"] == {
        "type": "object", "properties": {"n": {"type": "integer"}}}
    assert Path(stored.path).is_relative_to(oz0_home) and (Path(stored.path) / "agent.py").is_file()
    assert rt.agent("echo").file.startswith(str(oz0_home))
    rt.close()


def test_an_agent_name_owned_by_another_plugin_is_refused(tmp_path, capsys, oz0_home):
    one = make_plugin(tmp_path / "one", name="one", agents={"echo": TEXT_AGENT}, files={"agent.py": AGENT_PY})
    two = make_plugin(tmp_path / "two", name="two", agents={"echo": TEXT_AGENT}, files={"agent.py": AGENT_PY})
    assert oz0(capsys, "plugin", "install", str(one))[0] == 0
    code, _, err = oz0(capsys, "plugin", "install", str(two))
    assert code == 1 and "agent 'echo' is already installed by plugin 'one'" in err


def test_run_text_json_and_invalid_input(tmp_path, capsys, oz0_home):
    assert oz0(capsys, "plugin", "install", "--example")[0] == 0
    code, out, err = oz0(capsys, "run", "acme-reviewer", '{"repo": "acme/api", "pr": 42}')
    assert code == 0
    assert out.splitlines()[0] == "acme-reviewer"
    assert out.splitlines()[1].split() == ["verdict", "comment"]
    assert "… reading acme/api#42" in err and " succeeded in " in err
    code, out, err = oz0(capsys, "run", "acme-reviewer", '{"repo": "acme/api", "pr": "42"}')
    assert code == 2
    assert "✘ failure: the input at $.pr breaks the rule 'type' of schemas/review-input.json" in out
    assert "error: invalid_input" in out and "… reading" not in err
    code, out, _ = oz0(capsys, "run", "acme-reviewer", '{"repo": "acme/api", "pr": 42}', "--json")
    doc = json.loads(out)
    assert code == 0 and doc["success"] is True and doc["output"]["verdict"] == "comment"
    assert doc["meta"]["command"] == "run" and doc["job"]["status"] == "succeeded"
    code, out, _ = oz0(capsys, "run", "acme-reviewer", "not json", "--json")
    doc = json.loads(out)
    assert code == 2 and doc["success"] is False and doc["error_code"] == "invalid_input"
    assert doc["error"].startswith("acme-reviewer takes JSON that matches schemas/review-input.json, and this is "
                                   "not JSON")
    code, _, err = oz0(capsys, "run", "nobody", "x")
    assert code == 2 and err.startswith("oz0: error: no agent named 'nobody'; installed agents: acme-reviewer, ")


EXPECTED_FORMS = {"deploys": "table", "incident": "key_values", "config-change": "diff",
                  "feature-flags": "diff", "release-notes": "text", "disk-usage": "table",
                  "acme-reviewer": "key_values"}


def test_every_example_agent_answers_its_example_with_its_card(oz0_home):
    import asyncio

    from oz0.edge.plugins.lint import lint_plugin as lint
    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin
    from oz0.edge.runtime.runner import Runtime

    assert lint(example_plugin_dir()).findings == ()
    rt = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    install_plugin(rt, load_plugin(example_plugin_dir()))
    assert {a.name for a in rt.agents()} == set(EXPECTED_FORMS)
    for spec in rt.agents():
        job = asyncio.run(rt.run(spec.name, spec.example or ""))
        assert job.status == "succeeded", (spec.name, job.failure_reason)
        card = rt.card(job)
        assert card.form == EXPECTED_FORMS[spec.name] and card.drawn, spec.name
    kinds = {a.name: a.kind for a in rt.agents()}
    assert kinds["disk-usage"] == "command" and rt.agent("acme-reviewer").input is not None
    diff = rt.card(asyncio.run(rt.run("config-change", "deploy/nginx.conf"))).diff
    flags = rt.card(asyncio.run(rt.run("feature-flags", "checkout"))).diff
    assert (diff.kind, flags.kind) == ("lines", "keys")
    disk = rt.card(asyncio.run(rt.run("disk-usage", "/")))
    assert disk.status.success and disk.columns[:2] == ("path", "used_pct")
    missing = asyncio.run(rt.run("disk-usage", "/no/such/path"))
    assert (missing.failure_kind, missing.failure_reason) == ("NotFound", "/no/such/path: no such file or directory")
    rt.close()


def test_jobs_list_and_show(tmp_path, capsys, oz0_home):
    root = make_plugin(tmp_path / "p", agents={"echo": TEXT_AGENT}, files={"agent.py": AGENT_PY})
    oz0(capsys, "plugin", "install", str(root))
    oz0(capsys, "run", "echo", "first words")
    code, out, _ = oz0(capsys, "jobs", "--json")
    (job,) = json.loads(out)["jobs"]
    assert code == 0 and (job["agent"], job["status"], job["input"]) == ("echo", "succeeded", "first words")
    code, out, _ = oz0(capsys, "jobs")
    assert code == 0 and job["id"] in out and "succeeded" in out
    code, out, _ = oz0(capsys, "jobs", "show", job["id"][:6])
    assert code == 0 and f"Job {job['id']}" in out and "first words" in out
    code, _, err = oz0(capsys, "jobs", "show", "zzzzzz")
    assert code == 1 and "no job 'zzzzzz'" in err


def test_an_interrupted_job_is_listed_as_failed_interrupted(tmp_path, capsys, oz0_home):
    from oz0.edge.runtime.runner import Runtime
    rt = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    job, _ = rt.submit("echo", "x")
    import socket
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    rt.store.update_job(job.id, status="running", started=job.created,
                        runner=f"{socket.gethostname()}:{gone.stdout.strip()}:token")
    rt.close()
    code, out, _ = oz0(capsys, "jobs")
    assert code == 0 and "failed-interrupted (Interrupted)" in out
    code, out, _ = oz0(capsys, "jobs", "show", job.id)
    assert "the bot stopped before this job ended (it was running)" in out


def test_a_database_that_cannot_open_is_one_line_naming_it(tmp_path, capsys, oz0_home, monkeypatch):
    monkeypatch.setenv("OZ0_DATABASE_URL", f"sqlite:///{tmp_path / 'no such dir' / 'oz0.db'}")
    code, out, err = oz0(capsys, "plugin", "list")
    assert code == 1 and out == ""
    assert err.startswith("oz0: error: cannot open the oz0 database: OperationalError: ")
    assert "unable to open database file" in err and err.count("\n") == 1, err


def test_audit_lists_installs(tmp_path, capsys, oz0_home):
    root = make_plugin(tmp_path / "p", agents={"echo": TEXT_AGENT}, files={"agent.py": AGENT_PY})
    oz0(capsys, "plugin", "install", str(root))
    _code, out, _ = oz0(capsys, "audit", "--json")
    (record,) = json.loads(out)["records"]
    assert (record["action"], record["detail"]["plugin"]) == ("plugin.install", "testkit")
    assert oz0(capsys, "audit")[1].count("plugin.install") == 1


def test_a_new_user_flow_from_a_shell(tmp_path):
    """The commands as a new user types them, each in a fresh process, with no traceback anywhere."""
    env = {"OZ0_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def sh(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "oz0.adapters.cli", *argv], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=60)

    steps = [sh("plugin", "new", "hello"), sh("plugin", "install", "hello"), sh("run", "hello", "good morning"),
             sh("run", "hello", " ")]
    assert [s.returncode for s in steps] == [0, 0, 0, 1]
    assert all("Traceback" not in s.stderr + s.stdout for s in steps)
    assert "Installed hello 0.1.0: 1 agent (hello)" in steps[1].stdout
    assert steps[2].stdout.splitlines() == ["hello", "hello heard 2 words: good morning"]
    assert steps[3].stdout.splitlines()[1:] == ["✘ failure: there is no text to answer; send a few words",
                                                "  error: empty_input"]
