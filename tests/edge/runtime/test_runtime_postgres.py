"""OZ0_DATABASE_URL=postgresql://... moves the journal, plugin store and audit log to a real Postgres,
started in a temporary folder (tests/support/postgres_server.py; skipped where the server binaries are missing)."""

from __future__ import annotations

import asyncio

from plugin_kit import make_plugin

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime


def test_the_journal_the_plugin_store_and_the_audit_log_live_in_postgres(tmp_path, postgres_url, monkeypatch):
    monkeypatch.setenv("OZ0_DATABASE_URL", postgres_url)
    root = make_plugin(tmp_path / "plugin", agents={"echo": {
        "kind": "python", "entry": "agent:echo", "input_schema": "schemas/in.json", "output": "text"}},
        files={"agent.py": "def echo(value):\n    return value['say']\n",
               "schemas/in.json": {"type": "object", "required": ["say"], "properties": {"say": {"type": "string"}}}})
    one = Runtime(tmp_path / "home-a", flow_engine=FLOW_ENGINE)
    install_plugin(one, load_plugin(root))
    job = asyncio.run(one.run("echo", '{"say": "from postgres"}', dedupe_key="evt-1", reply_to=ReplyRef("slack", 1, {"ts": "1.2"})))
    assert (job.status, job.output) == ("succeeded", "from postgres")
    # a second replica with its own OZ0_HOME sees the same journal, store and audit log
    two = Runtime(tmp_path / "home-b", flow_engine=FLOW_ENGINE)
    assert two.job(job.id) == job
    again, created = two.submit("echo", '{"say": "x"}', dedupe_key="evt-1")
    assert (again.id, created) == (job.id, False)
    assert [v.plugin for v in two.installed()] == ["testkit"]
    assert two.installed()[0].agents[0].input_schema["required"] == ["say"]
    assert two.audit_log()[0].action == "plugin.install"
    bad = asyncio.run(two.run("echo", '{"say": 1}'))
    assert bad.failure_kind == "InvalidInput"
    assert not (tmp_path / "home-a" / "oz0.db").exists()
    one.close()
    two.close()
