"""Plugins stored in the database, across real `oz0 serve` replicas over one real Postgres, each with
its own OZ0_HOME: an install through one replica's management API is listed and run by the others
within 5 s (their caches filled from the database), a replica started with an empty OZ0_HOME serves
it, and an upgrade, a rollback and an uninstall made on any replica are seen by all of them."""

from __future__ import annotations

import io
import os
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from plugin_kit import make_plugin
from replica_harness import Replica

from oz0.edge.plugins.pack import content_hash

ADMIN = "admin-token-0123456789abcdef"
SEEN_WITHIN_S = 5.0


def team(root: Path, version: str, answer: str) -> Path:
    return make_plugin(root, name="team", version=version, agents={
        "greet": {"description": "Greets", "kind": "python", "entry": "impl:greet", "input": "text",
                  "output": "text"}}, files={"impl.py": f"def greet(text):\n    return {answer!r} + text\n"})


def tgz(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname="team")
    return buf.getvalue()


def replica(name: str, home: Path, database_url: str) -> Replica:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DISCORD_", "TEAMS_", "OZ0_"))}
    env.update(OZ0_HOME=str(home), OZ0_REPLICA_ID=name, OZ0_DATABASE_URL=database_url, OZ0_ADMIN_TOKEN=ADMIN,
               OZ0_CONSOLE_HOST="127.0.0.1", OZ0_CONSOLE_PORT="0")
    return Replica(name, home, env)


class Serving:
    """A started replica and an HTTP client on its console."""

    def __init__(self, r: Replica) -> None:
        self.replica = r
        line = r.start(ready=r"console listening on http://127\.0\.0\.1:\d+", timeout=90).wait_log(
            r"console listening on")
        url = line.split("console listening on ")[1].split()[0]
        self.http = httpx.Client(base_url=url, timeout=60, headers={"authorization": f"Bearer {ADMIN}"})

    def agents(self) -> list[str]:
        return [a["name"] for a in self.http.get("/v1/agents").json()["agents"]]

    def ask(self, text: str) -> str:
        answer = self.http.post("/v1/agents/greet/runs", json=text)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["output"])


def within(seconds: float, check: Callable[[], bool]) -> float:
    """How long `check` took to hold, failing past `seconds`."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > seconds:
            raise AssertionError(f"not seen within {seconds} s")
        time.sleep(0.1)
    return time.monotonic() - started


@pytest.fixture
def serving(tmp_path, postgres_url) -> Iterator[Callable[[str], Serving]]:
    started: list[Serving] = []

    def start(name: str) -> Serving:
        s = Serving(replica(name, tmp_path / f"home-{name}", postgres_url))
        started.append(s)
        return s

    yield start
    for s in started:
        s.http.close()
        s.replica.stop()


def test_an_install_on_one_replica_is_served_by_every_replica_and_so_are_rollback_and_uninstall(tmp_path, serving):
    one, two = serving("one"), serving("two")
    v1, v2 = team(tmp_path / "v1", "1.0.0", "hi "), team(tmp_path / "v2", "1.1.0", "hello ")

    installed = one.http.post("/v1/plugins", content=tgz(v1), headers={"content-type": "application/gzip"})
    assert installed.status_code == 201, installed.text
    took = within(SEEN_WITHIN_S, lambda: two.agents() == ["greet"])
    assert two.ask("Ana") == "hi Ana"
    digest = content_hash(v1)
    within(SEEN_WITHIN_S, lambda: (two.replica.home / "cache" / digest / "impl.py").is_file())
    assert not (two.replica.home / "plugins").exists()

    three = serving("three")  # an empty OZ0_HOME: everything comes from the database
    assert three.agents() == ["greet"] and three.ask("Bo") == "hi Bo"
    within(SEEN_WITHIN_S, lambda: (three.replica.home / "cache" / digest / "plugin.yaml").is_file())

    upgraded = two.http.post("/v1/plugins", content=tgz(v2), headers={"content-type": "application/gzip"})
    assert upgraded.status_code == 201, upgraded.text
    for r in (one, three):
        within(SEEN_WITHIN_S, lambda r=r: r.ask("Cy") == "hello Cy")
        within(SEEN_WITHIN_S, lambda r=r: (r.replica.home / "cache" / content_hash(v2)).is_dir())

    back = three.http.post("/v1/plugins/team/rollback")
    assert back.status_code == 200 and back.json()["message"] == "rolled team back to 1.0.0", back.text
    for r in (one, two):
        within(SEEN_WITHIN_S, lambda r=r: r.ask("Di") == "hi Di")

    gone = one.http.delete("/v1/plugins/team")
    assert gone.status_code == 200, gone.text
    for r in (two, three):
        within(SEEN_WITHIN_S, lambda r=r: r.agents() == [])
    missing = two.http.post("/v1/agents/greet/runs", json="Ed")
    assert missing.status_code == 404 and missing.json()["error_code"] == "unknown_agent"
    audit = [(a["action"], a["detail"].get("version")) for a in one.http.get("/v1/plugins/team").json()["plugin"]["audit"]]
    assert audit[:4] == [("plugin.uninstall", "1.0.0"), ("plugin.rollback", "1.0.0"), ("plugin.install", "1.1.0"),
                         ("plugin.install", "1.0.0")]
    print(f"replica two listed the new plugin {took:.2f} s after the install on replica one")


def test_a_sqlite_server_imports_old_installs_and_pre_installs_once_at_start(tmp_path):
    """The migration path of a 0.x user (files under OZ0_HOME/plugins only) and OZ0_PREINSTALL, on SQLite."""
    import shutil

    from sqlalchemy import delete, update

    from oz0.edge.flows.engine import FLOW_ENGINE
    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin
    from oz0.edge.runtime.plugin_store import plugin_archives
    from oz0.edge.runtime.runner import Runtime
    from oz0.edge.runtime.store import plugin_versions

    home, db = tmp_path / "home", f"sqlite:///{tmp_path / 'oz0.db'}"
    runtime = Runtime(home, database_url=db, flow_engine=FLOW_ENGINE)
    digest = install_plugin(runtime, load_plugin(team(tmp_path / "team", "1.0.0", "hi ")), actor="ana").version.content_hash
    legacy = home / "plugins" / "team" / f"1.0.0-{digest[:12]}"
    shutil.copytree(tmp_path / "team", legacy)
    with runtime.store.engine.begin() as conn:
        conn.execute(delete(plugin_archives))
        conn.execute(update(plugin_versions).values(path=str(legacy)))
    runtime.close()
    shutil.rmtree(home / "cache")
    make_plugin(tmp_path / "shelf" / "extra", name="extra", agents={
        "wave": {"kind": "python", "entry": "impl:wave", "input": "text", "output": "text"}},
        files={"impl.py": "def wave(text):\n    return 'o/ ' + text\n"})

    r = replica("solo", home, db)
    r.env["OZ0_PREINSTALL"] = str(tmp_path / "shelf")
    for _ in range(2):  # a restart installs nothing again
        solo = Serving(r)
        try:
            assert sorted(solo.agents()) == ["greet", "wave"]
        finally:
            solo.http.close()
            assert r.stop() == 0
    shutil.rmtree(legacy.parent.parent)
    fresh = Runtime(tmp_path / "fresh", database_url=db, flow_engine=FLOW_ENGINE)
    try:
        assert sorted(a.name for a in fresh.agents()) == ["greet", "wave"]
        actions = [(a.action, a.actor, a.detail.get("plugin")) for a in fresh.audit_log(limit=10)]
        assert actions.count(("plugin.install", "preinstall", "extra")) == 1
        assert actions.count(("plugin.imported", "import", "team")) == 1
    finally:
        fresh.close()
