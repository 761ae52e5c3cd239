"""The GitHub Action's script (`python -m oz0.adapters.cli.action`, run by action.yml), against a fake
workspace: a real git repository holding a plugin committed at a tag and then changed, a real
GITHUB_STEP_SUMMARY file, and GITHUB_WORKSPACE. Judged by the summary text and the exit code."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from paths import ROOT
from test_compat import obj, write_plugin
from test_qzx_cli import FAIL, OK

SCHEMA = obj({"q": {"type": "string"}})


def git(repo: Path, *argv: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A repository whose plugin plugins/team 0.1.0 (agent helper: text in, text out) is tagged v0.1.0."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_plugin(repo / "plugins" / "team", version="0.1.0", agents={"helper": {}})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "team 0.1.0")
    git(repo, "tag", "v0.1.0")
    return repo


def set_version(plugin: Path, version: str) -> None:
    (plugin / "plugin.yaml").write_text(f"name: team\nversion: {version}\n")


def run_action(workspace: Path, summary: Path, **inputs: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env.update({"GITHUB_WORKSPACE": str(workspace), "GITHUB_STEP_SUMMARY": str(summary)})
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    proc = subprocess.run([sys.executable, "-m", "oz0.adapters.cli.action"], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def summary(tmp_path: Path) -> Path:
    path = tmp_path / "runner" / "step_summary.md"
    path.parent.mkdir()
    path.write_text("")
    return path


def test_a_clean_plugin_passes_every_check(workspace, summary):
    plugin = workspace / "plugins" / "team"
    (plugin / "agents" / "helper.yaml").write_text(
        (plugin / "agents" / "helper.yaml").read_text() + 'description: "Echoes the text it is given."\n')
    set_version(plugin, "0.1.1")
    code, out, err = run_action(workspace, summary, plugin="plugins/team", previous_ref="v0.1.0")
    assert (code, err) == (0, "")
    text = summary.read_text()
    assert text.startswith("## oz0 plugin checks: PASS\n")
    assert "| lint | PASS | plugins/team: no errors (0 errors, 0 warnings). |" in text
    assert "| upgrade check against v0.1.0 | PASS | 0.1.0 -&gt; 0.1.1: " in text
    assert "| QZX receipt | SKIP | no evidence given" in text
    assert "FAIL" not in text
    assert "PASS lint: plugins/team: no errors" in out
    assert git(workspace, "status", "--porcelain") == " M plugins/team/agents/helper.yaml\n M plugins/team/plugin.yaml\n"
    assert git(workspace, "worktree", "list").count("\n") == 1


def test_a_lint_error_fails_the_job_and_is_listed(workspace, summary):
    plugin = workspace / "plugins" / "team"
    (plugin / "agents" / "broken.yaml").write_text("kind: python\nentry: helper:run\ninput_schema: schemas/missing.json\n")
    code, out, _err = run_action(workspace, summary, plugin="plugins/team")
    assert code == 1
    text = summary.read_text()
    assert text.startswith("## oz0 plugin checks: FAIL\n")
    assert "| lint | FAIL | plugins/team: 1 error" in text
    assert "### lint: FAIL" in text
    assert "| error | agents/broken.yaml | $.input\\_schema | missing file 'schemas/missing.json' |" in text
    assert "| upgrade check | SKIP | no previous-ref given" in text
    assert "::error title=oz0 lint::lint: plugins/team: 1 error" in out
    lines = out.splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert len(token) == 32 and lines.index(f"::{token}::") > lines.index("FAIL lint: plugins/team: 1 error, 1 warning.")


def test_a_breaking_change_without_a_major_version_fails_naming_the_change(workspace, summary):
    plugin = workspace / "plugins" / "team"
    write_plugin(plugin, version="0.1.1", agents={"helper": {"input": SCHEMA}})
    code, _out, _err = run_action(workspace, summary, plugin="plugins/team", previous_ref="v0.1.0")
    assert code == 1
    text = summary.read_text()
    assert ("| upgrade check against v0.1.0 | FAIL | team 0.1.1 breaks the contracts of 0.1.0: helper: input: "
            "takes JSON that matches a schema instead of text; give it a new major version, or install it "
            "with --allow-breaking (needs 0.2.0 or later) |") in text
    assert "### upgrade check against v0.1.0: FAIL" in text
    assert "| helper | input | $ | takes JSON that matches a schema instead of text | breaking |" in text
    assert "| lint | PASS |" in text


def test_the_same_change_with_a_new_major_version_passes(workspace, summary):
    plugin = workspace / "plugins" / "team"
    write_plugin(plugin, version="0.2.0", agents={"helper": {"input": SCHEMA}})
    code, _out, err = run_action(workspace, summary, plugin="plugins/team", previous_ref="v0.1.0")
    assert (code, err) == (0, "")
    text = summary.read_text()
    assert "| upgrade check against v0.1.0 | PASS | 0.1.0 -&gt; 0.2.0: 1 change, 1 breaking. 0.2.0 is a new major version" in text
    assert "| helper | input | $ | takes JSON that matches a schema instead of text | breaking |" in text
    assert text.startswith("## oz0 plugin checks: PASS\n")


def test_an_unknown_previous_ref_fails_the_upgrade_check_naming_it(workspace, summary):
    code, _, _ = run_action(workspace, summary, plugin="plugins/team", previous_ref="v9.9.9")
    assert code == 1
    assert ("| upgrade check against v9.9.9 | FAIL | previous-ref 'v9.9.9' is not a commit in this repository"
            in summary.read_text())


def test_a_plugin_at_the_repository_root_is_checked_against_its_tag(tmp_path, summary):
    repo = write_plugin(tmp_path / "solo", version="1.0.0", agents={"helper": {}})
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "1.0.0")
    git(repo, "tag", "v1.0.0")
    write_plugin(repo, version="1.0.1", agents={"helper": {"input": SCHEMA}})
    code, _, _ = run_action(repo, summary, previous_ref="v1.0.0")
    assert code == 1
    assert "| upgrade check against v1.0.0 | FAIL | team 1.0.1 breaks the contracts of 1.0.0: helper: input:" in summary.read_text()


def test_a_receipt_is_written_inside_the_workspace(workspace, summary):
    evidence = workspace / "evidence"
    evidence.mkdir()
    (evidence / "ok.json").write_text(json.dumps(OK))
    (evidence / "fail.json").write_text(json.dumps(FAIL))
    code, _out, err = run_action(workspace, summary, plugin="plugins/team", success_evidence="evidence/ok.json",
                                failure_evidence="evidence/fail.json", receipt="evidence/receipt.json")
    assert (code, err) == (0, "")
    receipt = json.loads((workspace / "evidence" / "receipt.json").read_text())
    assert receipt["success"] is True
    text = summary.read_text()
    assert f"| QZX receipt (core) | PASS | {receipt['message']} Receipt written to evidence/receipt.json. |" in text


def test_a_swapped_evidence_pair_fails_and_the_receipt_says_why(workspace, summary):
    (workspace / "ok.json").write_text(json.dumps(OK))
    (workspace / "fail.json").write_text(json.dumps(FAIL))
    code, _, _ = run_action(workspace, summary, plugin="plugins/team", success_evidence="fail.json",
                            failure_evidence="ok.json")
    assert code == 1
    receipt = json.loads((workspace / "oz0-qzx-receipt.json").read_text())
    assert receipt["success"] is False
    text = summary.read_text()
    assert "| QZX receipt (core) | FAIL |" in text and "### QZX receipt (core): FAIL" in text
    assert f"| violation | {receipt['details']['violations'][0]}" in text


@pytest.mark.parametrize(("inputs", "words"), [
    ({"success_evidence": "../x", "failure_evidence": "fail.json"},
     "success-evidence '../x' is refused: '..' may not appear in it"),
    ({"success_evidence": "ok.json", "failure_evidence": "/etc/passwd"},
     "failure-evidence '/etc/passwd' is refused: an absolute path outside GITHUB_WORKSPACE"),
    ({"success_evidence": "ok.json", "failure_evidence": "fail.json", "receipt": "out/receipt.json"},
     "receipt 'out/receipt.json' is refused: a symlink leads it to"),
    ({"success_evidence": "ok.json", "failure_evidence": "fail.json", "receipt": "evidence/../../r.json"},
     "receipt 'evidence/../../r.json' is refused: '..' may not appear in it"),
    ({"plugin": "elsewhere"}, "plugin 'elsewhere' is refused: a symlink leads it to"),
    ({"success_evidence": "ok.json"}, "success-evidence and failure-evidence are given together, or neither"),
])
def test_paths_that_leave_the_workspace_are_refused_before_anything_runs(workspace, summary, tmp_path, inputs, words):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "out").symlink_to(outside)
    (workspace / "elsewhere").symlink_to(workspace / "plugins" / "team" / ".." / ".." / "..")
    (workspace / "ok.json").write_text(json.dumps(OK))
    (workspace / "fail.json").write_text(json.dumps(FAIL))
    code, _out, err = run_action(workspace, summary, **{"plugin": "plugins/team", **inputs})
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("oz0 action: error: ") and words in lines[0]
    assert f"| inputs | FAIL | {words}" in re.sub(r"\\(.)", r"\1", summary.read_text())  # markdown escapes undone
    assert list(outside.iterdir()) == []
    assert not (workspace / "oz0-qzx-receipt.json").exists()


def test_an_absolute_path_inside_the_workspace_is_accepted(workspace, summary):
    (workspace / "ok.json").write_text(json.dumps(OK))
    (workspace / "fail.json").write_text(json.dumps(FAIL))
    code, _, err = run_action(workspace, summary, plugin=str(workspace / "plugins" / "team"),
                              success_evidence=str(workspace / "ok.json"), failure_evidence="fail.json")
    assert (code, err) == (0, "")
    assert (workspace / "oz0-qzx-receipt.json").exists()


def test_action_yml_runs_the_script_with_inputs_passed_as_environment():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    script = "\n".join(step.get("run", "") for step in steps)
    assert "-m oz0.adapters.cli.action" in script
    assert "${{ inputs." not in script
    env = {k: v for step in steps for k, v in (step.get("env") or {}).items()}
    for name in action["inputs"]:
        assert env[f"INPUT_{name.upper().replace('-', '_')}"] == f"${{{{ inputs.{name} }}}}"


def test_the_docs_workflow_pins_the_action_to_a_commit_and_uses_only_its_inputs():
    page = (ROOT / "docs" / "how-to" / "ci.md").read_text()
    workflow = yaml.safe_load(page.split("```yaml\n# .github/workflows/plugin.yml", 1)[1].split("```", 1)[0])
    step = next(s for s in workflow["jobs"]["oz0"]["steps"] if "oz0-edge@" in s.get("uses", ""))
    sha = step["uses"].rsplit("@", 1)[1]
    assert len(sha) == 40 and all(c in "0123456789abcdef" for c in sha)
    assert set(step["with"]) <= set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])


HOSTILE = ("![x](https://evil.example/p.png) <img src=https://evil.example/q.png> [log in](https://evil.example/a) "
           "www.evil.example ops@evil.example **now** <!-- hidden -->")


def test_text_from_the_plugin_is_escaped_as_markdown_and_html_in_the_summary(workspace, summary):
    from markdown_it import MarkdownIt

    plugin = workspace / "plugins" / "team"
    (plugin / "plugin.yaml").write_text(f"name: team\nversion: {json.dumps(HOSTILE)}\n")
    code, _, _ = run_action(workspace, summary, plugin="plugins/team")
    assert code == 1
    text = summary.read_text()
    html = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable("table").render(text)
    assert "<a " not in html and "<img" not in html and "<strong>" not in html and "<!--" not in html
    assert "https://evil.example" not in text and "www.evil.example" not in text and "ops@evil" not in text
    visible = html.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert "![x](https://evil.example/p.png) <img src=https://evil.example/q.png>" in visible  # shown as written
