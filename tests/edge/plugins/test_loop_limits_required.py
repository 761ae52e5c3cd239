"""A model agent with tools must bound its loop in its file: `oz0 plugin lint` and `oz0 plugin install`
refuse one without `limits.max_steps` (exit 1, naming the file and the key to add), and so does
install_plugin; with the key it installs."""

from __future__ import annotations

import yaml
from loop_kit import loop_plugin

from oz0.adapters.cli import main
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime


def test_a_loop_without_max_steps_is_refused_by_lint_and_install(tmp_path, monkeypatch, capsys):
    loop_plugin(tmp_path / "p", tmp_path / "h0", "http://127.0.0.1:9/v1").close()
    root = tmp_path / "p"
    file = root / "agents" / "triage.yaml"
    agent = yaml.safe_load(file.read_text())
    del agent["limits"]
    file.write_text(yaml.safe_dump(agent))
    monkeypatch.setenv("OZ0_HOME", str(tmp_path / "h"))
    monkeypatch.delenv("OZ0_DATABASE_URL", raising=False)
    for command in (["plugin", "lint", str(root)], ["plugin", "install", str(root)]):
        assert main(command) == 1, command
        seen = capsys.readouterr()
        said = seen.out + seen.err
        assert "error: agents/triage.yaml $.limits.max_steps: " in said, said
        assert "a model agent with tools must give limits.max_steps" in said, said
        assert "to mend: add `limits: {max_steps: 10}`" in said, said
    runtime = Runtime(tmp_path / "h")
    try:
        assert runtime.installed() == []
        try:
            install_plugin(runtime, load_plugin(root))
        except PluginError as exc:
            assert exc.file == str(file) and exc.location == "$.limits.max_steps", exc
        else:
            raise AssertionError("install_plugin took a loop without limits.max_steps")
        agent["limits"] = {"max_steps": 4}
        file.write_text(yaml.safe_dump(agent))
        install_plugin(runtime, load_plugin(root))
        assert runtime.agent("triage").limits.max_steps == 4
    finally:
        runtime.close()
