"""The installed plugins are read once per installed state (edge.runtime.installed_cache), and a change
made by another process over the same database (an install, a stored contract following its tool) is
seen at the next lookup."""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_kit import make_plugin

from oz0.edge.model.job import UnknownAgent
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

IN = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
IN_WIDER = {"type": "object", "required": ["n"], "properties": {"n": {"type": "number"}}}


def _plugin(root: Path, version: str, agents: tuple[str, ...], schema: dict[str, object] = IN) -> Path:
    return make_plugin(root / version, name="cachekit", version=version, files={
        "agents.py": "def echo(value):\n    return value\n", "schemas/in.json": schema},
        agents={name: {"description": f"{name} echoes", "kind": "python", "entry": "agents:echo",
                       "input_schema": "schemas/in.json", "output_schema": "schemas/in.json"} for name in agents})


@pytest.fixture
def two(tmp_path: Path):
    """Two runtimes over one SQLite journal, as `oz0 serve` and an `oz0 plugin install` beside it."""
    home = tmp_path / "home"
    serve, other = Runtime(home), Runtime(home)
    install_plugin(other, load_plugin(_plugin(tmp_path, "0.1.0", ("alpha",))))
    yield serve, other, tmp_path
    serve.close()
    other.close()


def test_lookups_read_the_versions_once_per_installed_state(two, monkeypatch):
    serve, _, _ = two
    reads = []
    full_read = serve.store.current_versions
    monkeypatch.setattr(serve.store, "current_versions", lambda: reads.append(1) or full_read())
    for _ in range(20):
        assert serve.agent("alpha").name == "alpha"
    assert len(reads) == 1


def test_an_install_elsewhere_is_seen_at_the_next_lookup(two):
    serve, other, tmp = two
    assert [a.name for a in serve.agents()] == ["alpha"]
    with pytest.raises(UnknownAgent):
        serve.agent("beta")
    install_plugin(other, load_plugin(_plugin(tmp, "0.2.0", ("alpha", "beta"))))
    assert [a.name for a in serve.agents()] == ["alpha", "beta"]
    assert serve.installed()[0].version == "0.2.0"


def test_a_stored_contract_changed_elsewhere_is_seen_at_the_next_lookup(two):
    serve, other, _ = two
    (version,) = serve.installed()
    assert version.agents[0].input_schema == IN
    other.store.update_agent_contracts(version.id, "alpha", contracts={"input_schema": IN_WIDER, "input_hash": "0" * 64})
    (changed,) = serve.installed()[0].agents
    assert (changed.input_schema, changed.input_hash) == (IN_WIDER, "0" * 64)
