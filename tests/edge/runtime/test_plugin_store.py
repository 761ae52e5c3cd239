"""Plugins stored in the journal's database (edge.runtime.plugin_store, plugin_cache, plugin_admin):
an install made from one OZ0_HOME runs from another that shares the database (an empty one too), from
`cache/<content hash>/`; uninstall and rollback from the CLI, the management API and the console's
buttons, audited; installs made before revision 0024 are imported; OZ0_PREINSTALL is idempotent.
SQLite here, one process or several; tests/test_plugin_replicas.py runs `oz0 serve` replicas on Postgres."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from console_plugin import ConsoleThread
from plugin_kit import make_plugin
from sqlalchemy import delete, update

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.plugins.pack import MAX_ARCHIVE_BYTES, content_hash, pack_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.plugin_store import plugin_archives
from oz0.edge.runtime.plugin_sync import preinstall
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.store import plugin_versions

ADMIN = "admin-token-0123456789abcdef"
OZ0 = str(Path(sys.executable).with_name("oz0"))


def team(root: Path, version: str, answer: str) -> Path:
    """Plugin `team` at `version`: agent `greet` answers `answer` followed by its input."""
    return make_plugin(root, name="team", version=version, agents={
        "greet": {"description": "Greets", "kind": "python", "entry": "impl:greet", "input": "text",
                  "output": "text"}}, files={"impl.py": f"def greet(text):\n    return {answer!r} + text\n"})


def run(runtime: Runtime, agent: str, text: str) -> str:
    job = asyncio.run(runtime.run(agent, text))
    assert job.status == "succeeded", (job.status, job.failure_reason)
    return str(job.output)


def oz0(*args: str, home: Path, db: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env.update(OZ0_HOME=str(home), OZ0_DATABASE_URL=db)
    return subprocess.run([OZ0, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def db(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'shared.db'}"


def test_the_archive_is_the_same_bytes_for_the_same_folder_and_unpacks_to_its_content(tmp_path):
    folder = team(tmp_path / "a", "1.0.0", "hi ")
    copy = shutil.copytree(folder, tmp_path / "b")
    os.utime(copy / "impl.py", (1, 1))
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "impl.cpython.pyc").write_bytes(b"x")
    assert pack_plugin(folder) == pack_plugin(copy)
    assert content_hash(folder) == content_hash(copy)


def test_an_install_from_one_home_runs_from_another_empty_home_out_of_its_cache(tmp_path, db):
    one = Runtime(tmp_path / "one", database_url=db, flow_engine=FLOW_ENGINE)
    result = install_plugin(one, load_plugin(team(tmp_path / "team", "1.0.0", "hi ")), actor="ana")
    one.close()
    shutil.rmtree(tmp_path / "team")  # the source folder is gone: only the database has the plugin
    two = Runtime(tmp_path / "two", database_url=db, flow_engine=FLOW_ENGINE)
    try:
        assert not (tmp_path / "two" / "cache").exists()
        assert [a.name for a in two.agents()] == ["greet"]
        assert run(two, "greet", "Ana") == "hi Ana"
        cached = tmp_path / "two" / "cache" / result.version.content_hash
        assert (cached / "impl.py").read_text().startswith("def greet")
        assert not (tmp_path / "two" / "plugins").exists()
    finally:
        two.close()


def test_a_damaged_archive_is_refused_and_never_run(tmp_path, db):
    one = Runtime(tmp_path / "one", database_url=db, flow_engine=FLOW_ENGINE)
    digest = install_plugin(one, load_plugin(team(tmp_path / "team", "1.0.0", "hi ")), actor="ana").version.content_hash
    other = pack_plugin(team(tmp_path / "evil", "1.0.0", "pwned "))
    with one.store.engine.begin() as conn:
        conn.execute(update(plugin_archives).values(archive=other))
    one.close()
    two = Runtime(tmp_path / "two", database_url=db, flow_engine=FLOW_ENGINE)
    try:
        with pytest.raises(PluginError) as refused:
            two.plugin_cache.folder(two.installed()[0])
        assert f"the stored archive of content {digest[:12]} unpacks to other content" in str(refused.value)
        assert two.agents() == [] and not (tmp_path / "two" / "cache" / digest).exists()
    finally:
        two.close()


def test_a_plugin_over_the_archive_limit_is_refused_naming_the_limit(tmp_path):
    folder = team(tmp_path / "team", "1.0.0", "hi ")
    (folder / "data.bin").write_bytes(os.urandom(MAX_ARCHIVE_BYTES + 1024))
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    try:
        with pytest.raises(PluginError, match=f"over the {MAX_ARCHIVE_BYTES:,} byte limit"):
            install_plugin(runtime, load_plugin(folder), actor="ana")
        assert runtime.installed() == []
    finally:
        runtime.close()


def test_uninstall_and_rollback_from_the_cli_are_seen_from_another_home_and_audited(tmp_path, db):
    one, two = tmp_path / "one", tmp_path / "two"
    for version, answer in (("1.0.0", "hi "), ("1.1.0", "hello ")):
        done = oz0("plugin", "install", str(team(tmp_path / version, version, answer)), home=one, db=db)
        assert done.returncode == 0, done.stderr
    runtime = Runtime(two, database_url=db, flow_engine=FLOW_ENGINE)
    try:
        assert run(runtime, "greet", "Ana") == "hello Ana"
        back = oz0("plugin", "rollback", "team", home=two, db=db)
        assert back.returncode == 0 and back.stdout.startswith("Rolled back team to 1.0.0 (was 1.1.0)"), back
        assert run(runtime, "greet", "Ana") == "hi Ana"
        again = oz0("plugin", "rollback", "team", home=one, db=db)
        assert again.returncode == 1
        assert "team 1.0.0 is the first version stored; there is no earlier version" in again.stderr
        gone = oz0("plugin", "uninstall", "team", home=one, db=db)
        assert gone.returncode == 0 and gone.stdout.startswith("Uninstalled team 1.0.0 (greet)"), gone
        assert runtime.agents() == [] and runtime.installed() == []
        twice = oz0("plugin", "uninstall", "team", home=two, db=db)
        assert twice.returncode == 1 and "no plugin named 'team' is installed (installed: none)" in twice.stderr
        actions = [(r.action, r.detail.get("version")) for r in runtime.audit_log(limit=10)]
        assert actions[:3] == [("plugin.uninstall", "1.0.0"), ("plugin.rollback", "1.0.0"), ("plugin.install", "1.1.0")]
        reinstall = oz0("plugin", "install", str(tmp_path / "1.1.0"), home=two, db=db)
        assert reinstall.returncode == 0 and run(runtime, "greet", "Ana") == "hello Ana"
    finally:
        runtime.close()


def test_a_rollback_is_upgrade_checked_and_allow_breaking_lets_it_through(tmp_path, db):
    home = tmp_path / "home"
    first = make_plugin(tmp_path / "v1", name="team", version="1.0.0", agents={
        "greet": {"kind": "python", "entry": "impl:greet", "input": "text", "output": "text"}},
        files={"impl.py": "def greet(text):\n    return text\n"})
    second = make_plugin(tmp_path / "v2", name="team", version="1.1.0", agents={
        "greet": {"kind": "python", "entry": "impl:greet", "input": "text", "output": "text"},
        "wave": {"kind": "python", "entry": "impl:greet", "input": "text", "output": "text"}},
        files={"impl.py": "def greet(text):\n    return text\n"})
    for folder in (first, second):
        assert oz0("plugin", "install", str(folder), home=home, db=db).returncode == 0
    refused = oz0("plugin", "rollback", "team", home=home, db=db)
    assert refused.returncode == 1 and "wave" in refused.stderr, refused
    through = oz0("plugin", "rollback", "team", "--allow-breaking", home=home, db=db)
    assert through.returncode == 0, through.stderr


@pytest.fixture
def console(tmp_path, db):
    runtime = Runtime(tmp_path / "home", database_url=db, flow_engine=FLOW_ENGINE)
    for version, answer in (("1.0.0", "hi "), ("1.1.0", "hello ")):
        install_plugin(runtime, load_plugin(team(tmp_path / version, version, answer)), actor="ana")
    with ConsoleThread(runtime, admin_token=ADMIN) as server:
        yield runtime, server
    runtime.close()


def test_the_api_uninstalls_and_rolls_back_with_the_admin_token_and_says_why_not(console):
    runtime, server = console
    with httpx.Client(base_url=server.url, timeout=30) as http:
        no = http.delete("/v1/plugins/team")
        assert no.status_code == 403 and no.json()["error_code"] == "admin_token_required"
        bad = http.post("/v1/plugins/team/rollback", params={"force": "maybe"},
                        headers={"authorization": f"Bearer {ADMIN}"})
        assert bad.status_code == 400 and bad.json()["details"] == {"parameter": "force"}
        back = http.post("/v1/plugins/team/rollback", headers={"authorization": f"Bearer {ADMIN}"})
        assert back.status_code == 200, back.text
        assert back.json()["message"] == "rolled team back to 1.0.0" and back.json()["previous_version"] == "1.1.0"
        first = http.post("/v1/plugins/team/rollback", headers={"authorization": f"Bearer {ADMIN}"})
        assert first.status_code == 409 and first.json()["error_code"] == "no_earlier_version"
        gone = http.delete("/v1/plugins/team", headers={"authorization": f"Bearer {ADMIN}"})
        assert gone.status_code == 200 and gone.json()["plugin"]["version"] == "1.0.0"
        assert http.get("/v1/plugins").json()["plugins"] == []
        detail = http.get("/v1/plugins/team").json()
        assert detail["message"] == "team 1.0.0 (uninstalled)" and detail["plugin"]["installed"] is False
        missing = http.delete("/v1/plugins/team", headers={"authorization": f"Bearer {ADMIN}"})
        assert missing.status_code == 404 and missing.json()["error_code"] == "unknown_plugin"
        doc = http.get("/openapi.json").json()["paths"]
        assert doc["/plugins/{name}"]["delete"]["operationId"] == "plugins.uninstall"
        assert doc["/plugins/{name}/rollback"]["post"]["security"] == [{"adminToken": []}]
    assert [r.actor for r in runtime.audit_log(limit=2)] == ["api-admin", "api-admin"]


def test_the_console_buttons_need_the_confirm_box_and_the_admin_token(console):
    runtime, server = console
    with httpx.Client(base_url=server.url, timeout=30) as http:
        page = http.get("/plugins/team")
        assert 'id="plugin-rollback"' in page.text and 'data-confirm="Uninstall team 1.1.0 on every replica?' in page.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        wrong = http.post("/plugins/team/rollback", data={"csrf": csrf, "admin_token": "nope", "confirm": "yes"})
        assert wrong.status_code == 403 and "type the admin token" in wrong.text
        unticked = http.post("/plugins/team/rollback", data={"csrf": csrf, "admin_token": ADMIN})
        assert unticked.status_code == 400 and "Tick the box" in unticked.text
        assert runtime.store.current_version("team").version == "1.1.0"
        done = http.post("/plugins/team/rollback", data={"csrf": csrf, "admin_token": ADMIN, "confirm": "yes"},
                         follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == "/plugins/team"
        assert runtime.store.current_version("team").version == "1.0.0"
        again = http.post("/plugins/team/rollback", data={"csrf": csrf, "admin_token": ADMIN, "confirm": "yes"})
        assert again.status_code == 409 and "is the first version stored" in again.text
        gone = http.post("/plugins/team/uninstall", data={"csrf": csrf, "admin_token": ADMIN, "confirm": "yes"},
                         follow_redirects=False)
        assert gone.status_code == 303 and runtime.installed() == []
        assert "(uninstalled)" in http.get("/plugins/team").text
    assert [(r.action, r.actor) for r in runtime.audit_log(limit=2)] == [
        ("plugin.uninstall", "console-admin"), ("plugin.rollback", "console-admin")]


def test_an_install_made_before_revision_0024_is_imported_and_then_runs_anywhere(tmp_path, db):
    """The state 0.x left: the files only under OZ0_HOME/plugins of the replica that installed them."""
    home = tmp_path / "old"
    runtime = Runtime(home, database_url=db, flow_engine=FLOW_ENGINE)
    version = install_plugin(runtime, load_plugin(team(tmp_path / "team", "1.0.0", "hi ")), actor="ana").version
    legacy = home / "plugins" / "team" / f"1.0.0-{version.content_hash[:12]}"
    shutil.copytree(tmp_path / "team", legacy)
    with runtime.store.engine.begin() as conn:
        conn.execute(delete(plugin_archives))
        conn.execute(update(plugin_versions).values(path=str(legacy)))
    runtime.close()
    shutil.rmtree(home / "cache")
    old = Runtime(home, database_url=db, flow_engine=FLOW_ENGINE)  # what `oz0 serve` does at start
    try:
        assert [v.plugin for v in old.plugin_cache.import_local()] == ["team"]
        assert old.plugin_cache.import_local() == []  # once
    finally:
        old.close()
    shutil.rmtree(home)  # the old replica is gone, its OZ0_HOME with it
    elsewhere = Runtime(tmp_path / "new", database_url=db, flow_engine=FLOW_ENGINE)
    try:
        assert run(elsewhere, "greet", "Ana") == "hi Ana"
    finally:
        elsewhere.close()


def test_without_the_import_a_replica_lacking_the_old_files_says_to_install_again(tmp_path, db, caplog):
    home = tmp_path / "old"
    runtime = Runtime(home, database_url=db, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(team(tmp_path / "team", "1.0.0", "hi ")), actor="ana")
    with runtime.store.engine.begin() as conn:
        conn.execute(delete(plugin_archives))
        conn.execute(update(plugin_versions).values(path=str(home / "plugins" / "team" / "1.0.0-gone")))
    runtime.close()
    elsewhere = Runtime(tmp_path / "new", database_url=db, flow_engine=FLOW_ENGINE)
    try:
        assert elsewhere.agents() == []
        assert "has no archive in the database and its files are not on this replica" in caplog.text
        assert "install it again" in caplog.text
    finally:
        elsewhere.close()


def test_preinstall_installs_each_folder_once_by_content_hash_and_skips_what_fails(tmp_path, db, caplog):
    shelf = tmp_path / "shelf"
    team(shelf / "team", "1.0.0", "hi ")
    make_plugin(shelf / "broken", name="broken", agents={"bad": {"kind": "python"}})
    runtime = Runtime(tmp_path / "home", database_url=db, flow_engine=FLOW_ENGINE)
    try:
        first = preinstall(runtime, shelf)
        assert first.installed == ("team 1.0.0",)
        assert [folder for folder, _ in first.refused] == [str(shelf / "broken")]
        assert "pre-install of" in caplog.text and "broken" in caplog.text
        assert preinstall(runtime, shelf).installed == ()
        runtime.plugin_store.uninstall("team", actor="ana", detail={"plugin": "team"})
        assert preinstall(runtime, shelf).installed == ()  # a later uninstall is not undone by a restart
        assert [r.actor for r in runtime.audit_log(limit=5) if r.action == "plugin.install"] == ["preinstall"]
    finally:
        runtime.close()


def test_an_uninstall_is_refused_while_another_plugins_flow_runs_one_of_its_agents(tmp_path, db):
    from oz0.edge.runtime.plugin_admin import PluginStateError, uninstall_plugin

    runtime = Runtime(tmp_path / "home", database_url=db, flow_engine=FLOW_ENGINE)
    try:
        install_plugin(runtime, load_plugin(team(tmp_path / "team", "1.0.0", "hi ")), actor="ana")
        ops = make_plugin(tmp_path / "ops", name="ops", files={"flows/welcome.yaml": (
            "description: Welcome someone\ninput: text\noutput: text\nsteps:\n  - id: hello\n    agent: greet\n")})
        install_plugin(runtime, load_plugin(ops), actor="ana")
        with pytest.raises(PluginStateError) as refused:
            uninstall_plugin(runtime, "team", actor="ana")
        assert refused.value.why == "in_use"
        assert str(refused.value) == ("team is not uninstalled: flow 'welcome' of plugin 'ops' runs agent 'greet'; "
                                      "uninstall or change that plugin first")
        assert [v.plugin for v in runtime.installed()] == ["ops", "team"]
        uninstall_plugin(runtime, "ops", actor="ana")
        assert uninstall_plugin(runtime, "team", actor="ana").version == "1.0.0"
    finally:
        runtime.close()
