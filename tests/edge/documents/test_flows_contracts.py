"""Flows in the OpenAPI document and the upgrade check: their operations beside the agents', and the
rows a new version of a flow gives (a flow gone, an input that accepts less, an output that may hold
more, a new failure kind and a new person step break callers)."""

from __future__ import annotations

import copy
import json

import pytest
from flow_kit import RELEASE, flow_plugin
from openapi_spec_validator import validate

from oz0.edge.documents.compat import UpgradeRefused
from oz0.edge.documents.diff import compare_agents
from oz0.edge.documents.openapi import openapi_document
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

ASK = {"id": "approve", "ask": "Merge {input.repo}?", "answer_schema": "schemas/approve.json",
       "answerers": {"groups": ["S0ONCALL"]}, "timeout_s": 60}


def plugin(tmp_path, name, flow, *, version="0.1.0", files=None):
    root = flow_plugin(tmp_path / name, flows={"release": flow} if flow else {}, version=version)
    for rel, data in (files or {}).items():
        (root / rel).write_text(json.dumps(data))
    return load_plugin(root)


def everything(p):
    return (*p.agents, *p.flows)


def test_the_document_has_the_flows_operation_beside_the_agents(tmp_path):
    flow = copy.deepcopy(RELEASE)
    flow["steps"].insert(1, ASK)
    p = plugin(tmp_path, "a", flow)
    doc = openapi_document(everything(p), title="acme", version="0.1.0")
    validate(doc)
    op = doc["paths"]["/flows/release/runs"]["post"]
    assert (op["x-oz0-flow"], op["x-oz0-kind"], op["operationId"]) == ("release", "flow", "flow.release")
    assert op["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/release.input"}
    assert [s["step"] for s in op["x-oz0-person-steps"]] == ["approve"]
    assert op["x-oz0-person-steps"][0]["answer_schema"]["properties"] == {"approved": {"type": "boolean"}}
    kinds = [b["title"] for b in op["responses"]["502"]["content"]["application/json"]["schema"]["oneOf"]]
    assert {"NoAnswer", "Declined", "StepFailed"} <= set(kinds)
    assert "/agents/merger/runs" in doc["paths"] and "x-oz0-agent" in doc["paths"]["/agents/merger/runs"]["post"]


def rows(old, new):
    return [(c.agent, c.direction, c.what, c.breaking) for c in compare_agents(everything(old), everything(new))]


def test_a_flow_gone_is_breaking_and_a_new_one_is_not(tmp_path):
    with_flow, without = plugin(tmp_path, "a", RELEASE), plugin(tmp_path, "b", None)
    assert ("release", "agent", "flow removed", True) in rows(with_flow, without)
    assert ("release", "agent", "flow added", False) in rows(without, with_flow)


def test_an_input_that_accepts_less_is_breaking(tmp_path):
    old = plugin(tmp_path, "a", RELEASE)
    narrower = {"type": "object", "required": ["repo", "pr"], "additionalProperties": False,
                "properties": {"repo": {"type": "string", "maxLength": 20}, "pr": {"type": "integer"}}}
    new = plugin(tmp_path, "b", {**RELEASE, "input_schema": "schemas/narrow.json"},
                 files={"schemas/narrow.json": narrower})
    found = [r for r in rows(old, new) if r[0] == "release" and r[1] == "input"]
    assert len(found) == 1 and found[0][3] is True and "$.repo" in found[0][2], found


def test_an_output_that_may_hold_more_is_breaking(tmp_path):
    old = plugin(tmp_path, "a", RELEASE)
    wider = {"type": "object", "required": ["merged", "sha"], "properties": {
        "merged": {"type": ["boolean", "string"]}, "sha": {"type": "string"}, "note": {"type": "string"}}}
    new = plugin(tmp_path, "b", {**RELEASE, "output_schema": "schemas/wider.json"}, files={"schemas/wider.json": wider})
    assert ("release", "output", "type of $.merged widened from boolean to boolean or string", True) in rows(old, new)


def test_a_new_failure_kind_and_a_new_person_step_are_breaking(tmp_path):
    old = plugin(tmp_path, "a", RELEASE)
    flow = copy.deepcopy(RELEASE)
    flow["failures"] = {"Frozen": {"description": "The repository is frozen."}}
    new = plugin(tmp_path, "b", flow)
    assert ("release", "failure", "new failure kind Frozen", True) in rows(old, new)
    flow = copy.deepcopy(RELEASE)
    flow["steps"].insert(1, ASK)
    asks = plugin(tmp_path, "c", flow)
    found = rows(old, asks)
    assert ("release", "person", "new person step approve, which callers must now answer", True) in found
    assert ("release", "failure", "new failure kind NoAnswer", True) in found
    assert ("release", "person", "person step approve removed", False) in rows(asks, old)


def test_install_refuses_a_new_person_step_without_a_major_version_and_remembers_it(tmp_path):
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    try:
        flow = copy.deepcopy(RELEASE)
        install_plugin(runtime, plugin(tmp_path, "a", flow), actor="test")
        flow["steps"].insert(1, ASK)
        with pytest.raises(UpgradeRefused) as refused:
            install_plugin(runtime, plugin(tmp_path, "b", flow, version="0.1.1"), actor="test")
        assert "release: person: new person step approve, which callers must now answer" in str(refused.value)
        install_plugin(runtime, plugin(tmp_path, "c", flow, version="0.2.0"), actor="test")
        stored = next(a for a in runtime.installed()[0].agents if a.name == "release")
        assert stored.kind == "flow" and [s["step"] for s in stored.limits["person_steps"]] == ["approve"]
        flow["steps"].pop(1)  # the stored version's person step is what the next check compares with
        changes = install_plugin(runtime, plugin(tmp_path, "d", flow, version="0.2.1"), actor="test").changes
        assert ("release", "person", "person step approve removed", False) in [
            (c.agent, c.direction, c.what, c.breaking) for c in changes]
    finally:
        runtime.close()
