"""Flow lint: every bad reference is a finding naming the file and the JSON path, with a fix; what lint
cannot know is a warning, never a silent pass."""

from __future__ import annotations

import copy
import json

import pytest
from flow_kit import flow_plugin

from oz0.edge.plugins.lint import lint_plugin

APPROVE = {"id": "approve", "ask": "Merge {input.repo}#{input.pr}?", "answer_schema": "schemas/approve.json"}
CLEAN = {
    "description": "Review, ask, merge.",
    "input_schema": "schemas/release-input.json",
    "output_schema": "schemas/merge.json",
    "steps": [
        {"id": "review", "agent": "acme-reviewer"},
        APPROVE,
        {"id": "merge", "agent": "merger", "input": {"repo": "input.repo", "pr": "input.pr", "note": "'approved'"}},
    ],
}


NESTED = {"type": "object", "properties": {"who": {"type": "object", "properties": {"name": {"type": "string"}}}}}


def findings(tmp_path, flow, *, installed=None):
    root = flow_plugin(tmp_path / "acme", flows={"release": flow})
    (root / "schemas" / "nested.json").write_text(json.dumps(NESTED))
    report = lint_plugin(root, installed={} if installed is None else installed)
    return [(f.severity, f.file, f.path, f.message) for f in report.findings]


def with_step(i, **change):
    flow = copy.deepcopy(CLEAN)
    flow["steps"][i].update(change)
    for key in [k for k, v in change.items() if v is None]:
        del flow["steps"][i][key]
    return flow


def test_a_clean_flow_has_no_findings(tmp_path):
    assert findings(tmp_path, CLEAN) == []


@pytest.mark.parametrize(("flow", "path", "says"), [
    (with_step(2, input={"repo": "steps.reviw.output.repo", "pr": "input.pr"}), "$.steps[2].input.repo",
     "names step 'reviw', which this flow does not have (steps: review, approve, merge)"),
    (with_step(0, agent="acme-reviewer", input="steps.merge.output"), "$.steps[0].input",
     "names step 'merge', which has not run yet at this step"),
    (with_step(2, **{"if": "steps.approve.answr.approved"}), "$.steps[2].if",
     "reads 'answr' of step 'approve'; a step has `output`, `answer` and `runs`"),
    (with_step(1, ask="Merge {inputs.repo}?"), "$.steps[1].ask",
     "reads 'inputs'; expressions see `input` and `steps` only"),
    (with_step(2, **{"if": "steps.approve.answer.approved =="}), "$.steps[2].if", "is not a JMESPath expression"),
    (with_step(2, agent="nobody"), "$.steps[2].agent", "agent 'nobody' is neither in this plugin nor installed"),
    (with_step(2, input={"repo": "input.repo"}), "$.steps[2].input",
     "step merge (merger) requires 'pr', which the input mapping does not give"),
    (with_step(2, input={"repo": "input.pr", "pr": "input.pr"}), "$.steps[2].input.repo",
     "'input.pr' gives step merge (merger) its 'repo', which cannot always match what it meets: type of $.repo "
     "changed from integer to string"),
    (with_step(2, input={"repo": "input.repo", "pr": "'42'"}), "$.steps[2].input.pr",
     "\"'42'\" is refused by schemas/merge-input.json at $.pr"),
    (with_step(2, input={"repo": "input.repo", "pr": "input.pr", "branch": "'main'"}), None, None),
    (with_step(2, agent="summary", input=None), "$.output_schema",
     "step merge (summary) is the flow's output, and that is text where schemas/merge.json asks for JSON"),
    (with_step(1, answer_schema="schemas/nested.json"), "$.steps[1].answer_schema",
     "field 'who' of schemas/nested.json is object; an answer field is a string, number, integer, boolean or enum"),
    (with_step(1, answer_schema="schemas/missing.json"), "$.steps[1].answer_schema", "missing file 'schemas/missing.json'"),
    (with_step(1, timeout_s=5, on_timeout={"answer": {"approved": "yes"}}), "$.steps[1].on_timeout.answer",
     "the on_timeout answer breaks schemas/approve.json at $.approved"),
    (with_step(1, agent="merger"), "$.steps[1]", ""),
])
def test_each_bad_reference_is_an_error_at_its_path(tmp_path, flow, path, says):
    found = findings(tmp_path, flow)
    if path is None:  # merge-input.json allows more keys: not a finding
        assert found == []
        return
    errors = [f for f in found if f[0] == "error"]
    assert any(f[1] == "flows/release.yaml" and f[2] == path and says in f[3] for f in errors), found


def test_the_input_a_step_gets_from_the_previous_step_is_compared_with_its_contract(tmp_path):
    flow = copy.deepcopy(CLEAN)
    flow["steps"] = [{"id": "review", "agent": "acme-reviewer"}, {"id": "merge", "agent": "merger"},
                     {"id": "again", "agent": "acme-reviewer"}]
    flow["output_schema"] = "schemas/review.json"
    found = findings(tmp_path, flow)
    assert found == [("error", "flows/release.yaml", "$.steps[2]",
                      "step merge (merger) gives step again (acme-reviewer) its input, which cannot always match "
                      "schemas/release-input.json: $.merged is newly refused; $.sha is newly refused; $.repo "
                      "is newly required (and 2 more)")] or any(
        f[2] == "$.steps[2]" and "step merge (merger) gives step again (acme-reviewer) its input, which cannot "
                                 "always match schemas/release-input.json" in f[3] for f in found), found


def test_what_lint_cannot_know_is_a_warning(tmp_path):
    unknown = findings(tmp_path, with_step(2, agent="elsewhere"), installed=None)
    assert unknown  # with installed={} it is an error; with nothing to ask it is a warning
    report = lint_plugin(flow_plugin(tmp_path / "b", flows={"release": with_step(2, agent="elsewhere")}))
    assert [(f.severity, f.path) for f in report.findings if "elsewhere" in f.message] == [
        ("warning", "$.steps[2].agent"), ("warning", "$.output_schema")]
    assert report.ok
    computed = findings(tmp_path / "c", with_step(2, input={"repo": "input.repo", "pr": "length(input.repo)"}))
    assert [(s, p) for s, _, p, m in computed] == [("warning", "$.steps[2].input.pr")]


def test_an_installed_agent_counts_and_its_contract_is_used(tmp_path):
    from oz0.edge.plugins.manifest import load_plugin

    other = load_plugin(flow_plugin(tmp_path / "other", name="other"))
    installed = {a.name: a for a in other.agents}
    flow = with_step(2, agent="merger")
    root = flow_plugin(tmp_path / "acme", flows={"release": flow})
    (root / "agents" / "merger.yaml").unlink()
    report = lint_plugin(root, installed=installed)
    assert [f.describe() for f in report.findings] == []


def test_the_flow_file_shape_is_checked_by_its_schema(tmp_path):
    found = findings(tmp_path, {**CLEAN, "stepz": []})
    assert ("error", "flows/release.yaml", "$", "Additional properties are not allowed ('stepz' was unexpected)") \
        in found
    bad_id = findings(tmp_path / "x", with_step(0, id="my-step"))
    assert any(f[2] == "$.steps[0].id" for f in bad_id), bad_id


def test_the_release_fixture_lints_with_warnings_only(tmp_path):
    report = lint_plugin(flow_plugin(tmp_path / "acme"), installed={})
    assert report.ok, [f.describe() for f in report.errors]
    json.dumps([f.to_dict() for f in report.findings])
