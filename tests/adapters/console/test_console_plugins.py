"""The console's Plugins, plugin and Audit pages over real HTTP: versions, agents, the latest contract
changes and the audit, escaped, under the CSP; a version installed by another replica shows at once."""

from __future__ import annotations

import httpx
import pytest
from console_plugin import ConsoleThread
from test_compat import obj, write_plugin

from oz0.adapters.console.security import CSP
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture
def runtime(tmp_path):
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    folder = write_plugin(tmp_path / "team-0.1.0", version="0.1.0", agents={"helper": {"description": EVIL}})
    (folder / "plugin.yaml").write_text(f"name: team\nversion: 0.1.0\ndescription: {EVIL!r}\n")
    install_plugin(runtime, load_plugin(folder), actor="test")
    runtime.audit("note", actor=EVIL, detail={"plugin": "team", "why": EVIL})
    yield runtime
    runtime.close()


@pytest.fixture
def http(runtime):
    with ConsoleThread(runtime) as server, httpx.Client(base_url=server.url, timeout=20) as client:
        yield client


def test_the_plugins_page_lists_each_plugin_with_its_version_and_agents_escaped(http):
    r = http.get("/plugins")
    assert r.status_code == 200 and r.headers["content-security-policy"] == CSP
    assert '<a href="/plugins/team">team</a>' in r.text and '<span class="version">0.1.0</span>' in r.text
    assert '<a href="/agents/helper">helper</a>' in r.text
    assert "<script>alert" not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert 'href="/plugins" aria-current="page"' in r.text


def test_a_plugin_page_shows_versions_agents_latest_changes_and_audit(http, runtime, tmp_path):
    other = Runtime(runtime.home, flow_engine=FLOW_ENGINE)  # another replica installs 0.2.0; this console shows it at once
    try:
        new = write_plugin(tmp_path / "team-0.2.0", version="0.2.0",
                           agents={"helper": {"input": obj({"q": {"type": "string"}})}})
        install_plugin(other, load_plugin(new), actor="someone")
    finally:
        other.close()
    page = http.get("/plugins/team").text
    assert "<h1>Plugin <code>team</code> <span class=\"version\">0.2.0</span></h1>" in page
    versions = page.split('id="plugin-versions"')[1].split("</table>")[0]
    assert versions.index("0.2.0") < versions.index("0.1.0") and "<strong>current</strong>" in versions
    changes = page.split('id="plugin-changes"')[1].split("</table>")[0]
    assert "takes JSON that matches a schema instead of text" in changes and "<td>breaking</td>" in changes
    assert "schemas/helper.input.json" in page.split('id="plugin-agents"')[1]
    audit = page.split('id="audit"')[1]
    assert audit.count("<code>plugin.install</code>") == 2 and "<code>note</code>" in audit
    assert "<script>" not in page and "&lt;img src=x onerror=alert(2)&gt;" in page
    missing = http.get("/plugins/nope")
    assert missing.status_code == 404 and "No installed plugin is named &#39;nope&#39;" in missing.text


def test_the_audit_page_lists_every_record_newest_first_escaped(http):
    page = http.get("/audit").text
    rows = page.split('id="audit"')[1]
    assert rows.index("<code>note</code>") < rows.index("<code>plugin.install</code>")
    assert '<a href="/plugins/team">team</a>' in rows
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="/audit" aria-current="page"' in page
