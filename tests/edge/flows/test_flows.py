"""Flows end to end, without the engine: `oz0 run` and the runtime API over real HTTP run a real plugin's
flow (agent steps, `if:`, input mappings), journal each step as a child job, and answer with the card
of the output plus the steps' status; `oz0 jobs show` draws the tree."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from console_plugin import ConsoleThread
from flow_kit import RELEASE, flow_plugin
from openapi_spec_validator import validate

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


def oz0(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env["OZ0_HOME"] = str(home)
    return subprocess.run([*OZ0, *args], capture_output=True, text=True, timeout=120, env=env)


def installed(tmp_path: Path, **flows) -> Runtime:
    runtime = Runtime(tmp_path / "home", backoff_s=0.01, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(flow_plugin(tmp_path / "acme", **flows)), actor="test")
    return runtime


def test_oz0_run_runs_the_flow_and_jobs_show_draws_the_tree(tmp_path):
    home = tmp_path / "home"
    done = oz0("plugin", "install", str(flow_plugin(tmp_path / "acme")), home=home)
    assert done.returncode == 0, done.stderr
    run = oz0("run", "release", '{"repo": "acme/api", "pr": 42}', home=home)
    assert run.returncode == 0, run.stderr
    assert "acme/api@42" in run.stdout and "reviewed approve" in run.stdout
    assert "steps: review succeeded; merge succeeded; done skipped" in run.stderr
    job_id = run.stderr.strip().splitlines()[-1].split()[1]
    shown = oz0("jobs", "show", job_id, home=home)
    assert shown.returncode == 0, shown.stderr
    tree = [line for line in shown.stdout.splitlines() if "└ " in line]
    assert [line.split("└ ")[1].split("  ", 1)[1].split(",")[0] for line in tree] == [
        "review: acme-reviewer succeeded", "merge: merger succeeded", "done: merger skipped"]
    as_json = json.loads(oz0("jobs", "show", job_id, "--json", home=home).stdout)
    children = [n for n in as_json["tree"] if n["depth"] == 1]
    assert {n["parent_id"] for n in children} == {job_id}
    assert json.loads(children[1]["input"]) == {"repo": "acme/api", "pr": 42, "note": "reviewed approve"}


def test_oz0_run_refuses_input_that_breaks_the_flows_contract_before_any_step(tmp_path):
    home = tmp_path / "home"
    assert oz0("plugin", "install", str(flow_plugin(tmp_path / "acme")), home=home).returncode == 0
    run = oz0("run", "release", '{"repo": "acme/api"}', home=home)
    assert run.returncode == 2
    assert 'breaks the rule \'required\' of schemas/release-input.json: "pr" is a' in run.stdout
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        flow = runtime.jobs(limit=5)[0]
        assert flow.failure_kind == "InvalidInput" and runtime.children(flow.id) == []
    finally:
        runtime.close()


def test_the_if_takes_the_other_branch_and_mappings_feed_each_step(tmp_path):
    runtime = installed(tmp_path)
    try:
        job = asyncio.run(runtime.run("release", '{"repo": "acme/api", "pr": 7}'))
        assert job.status == "succeeded", job.failure_reason
        assert job.output == {"merged": True, "sha": "acme/api@7", "note": "not merged: the review rejects it"}
        steps = runtime.children(job.id)
        assert [(s.agent, s.status) for s in steps] == [("acme-reviewer", "succeeded"), ("merger", "skipped"),
                                                        ("merger", "succeeded")]
        assert steps[1].failure_reason == "its condition `steps.review.output.verdict == 'approve'` was false"
        card = runtime.card(job)
        assert card.form == "key_values" and card.keys[:2] == ("sha", "merged")  # the output contract's order
        assert card.notes[-1] == "steps: review succeeded; merge skipped; done succeeded"
    finally:
        runtime.close()


def test_a_failing_step_fails_the_flow_with_a_typed_kind_and_later_steps_never_run(tmp_path):
    flow = {**RELEASE, "steps": [RELEASE["steps"][0],
                                 {"id": "merge", "agent": "broken-merger", "input": {"repo": "input.repo", "pr": "input.pr"}},
                                 {"id": "after", "agent": "merger"}]}
    runtime = installed(tmp_path, flows={"release": flow})
    try:
        job = asyncio.run(runtime.run("release", '{"repo": "acme/api", "pr": 2}'))
        assert (job.status, job.failure_kind) == ("failed", "Crashed")
        assert job.failure_reason.startswith("step merge (broken-merger, job ")
        assert "the agent raised ValueError: the merger is broken" in job.failure_reason
        assert [(s.agent, s.status) for s in runtime.children(job.id)] == [("acme-reviewer", "succeeded"),
                                                                           ("broken-merger", "failed")]
        assert runtime.card(job).notes[-1] == "steps: review succeeded; merge failed; after not run"
    finally:
        runtime.close()


def test_an_output_that_breaks_the_flows_contract_is_invalid_output(tmp_path):
    flow = {**RELEASE, "steps": [RELEASE["steps"][0]]}  # ends with the review: not a merge.json object
    runtime = installed(tmp_path, flows={"release": flow})
    try:
        job = asyncio.run(runtime.run("release", '{"repo": "acme/api", "pr": 2}'))
        assert (job.status, job.failure_kind) == ("failed", "InvalidOutput")
        assert "schemas/merge.json" in job.failure_reason and '"merged" is a required property' in job.failure_reason
    finally:
        runtime.close()


def test_a_flow_may_not_share_a_name_with_an_agent(tmp_path):
    root = flow_plugin(tmp_path / "acme", flows={"merger": RELEASE})
    with pytest.raises(PluginError, match="a flow and an agent are both named 'merger'"):
        load_plugin(root)


@pytest.fixture
def api(tmp_path):
    runtime = installed(tmp_path)
    with ConsoleThread(runtime) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
    runtime.close()


def test_the_api_runs_a_flow_and_shows_its_steps(api):
    r = api.post("/v1/flows/release/runs", json={"repo": "acme/api", "pr": 42})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["meta"]["command"] == "flows.run"
    assert body["output"] == {"merged": True, "sha": "acme/api@42", "note": "reviewed approve"}
    assert body["card"]["notes"][-1] == "steps: review succeeded; merge succeeded; done skipped"
    job = api.get(f"/v1/jobs/{body['job']['id']}").json()["job"]
    assert [(s["step"], s["agent"], s["status"]) for s in job["steps"]] == [
        ("review", "acme-reviewer", "succeeded"), ("merge", "merger", "succeeded"), ("done", "merger", "skipped")]
    assert api.post("/v1/agents/release/runs", json={"repo": "a", "pr": 1}).status_code == 404
    assert "POST /v1/flows/release/runs" in api.post("/v1/agents/release/runs", json={}).json()["message"]
    r = api.post("/v1/flows/release/runs", json={"repo": "acme/api", "pr": "x"})
    assert r.status_code == 422 and r.json()["details"]["path"] == "$.pr"


def test_agents_lists_the_flow_and_openapi_has_its_operation(api):
    listed = {a["name"]: a for a in api.get("/v1/agents").json()["agents"]}
    assert listed["release"]["kind"] == "flow" and listed["merger"]["kind"] == "python"
    assert [s["id"] for s in listed["release"]["steps"]] == ["review", "merge", "done"]
    doc = api.get("/openapi.json").json()
    validate(doc)
    op = doc["paths"]["/flows/release/runs"]["post"]
    assert op["x-oz0-flow"] == "release" and op["operationId"] == "flow.release"
    assert "/agents/release/runs" not in doc["paths"] and "/agents/merger/runs" in doc["paths"]


def test_the_console_has_a_run_form_for_the_flow(api):
    page = api.get("/flows/release")
    assert page.status_code == 200
    assert 'action="/flows/release/runs"' in page.text and "runs acme-reviewer" in page.text
    assert 'href="/flows/release"' in api.get("/").text


def test_a_flow_is_asked_in_slack_like_an_agent(tmp_path, oz0_home):
    from slack_harness import answer_response, running_channel

    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(flow_plugin(tmp_path / "acme")), actor="test")
    runtime.close()

    async def main() -> None:
        async with running_channel(oz0_home) as h:
            await h.command('release {"repo": "acme/api", "pr": 42}', trigger_id="TR-FLOW")
            answer = await answer_response(h.slack)
            shown = json.dumps(answer.args["blocks"], ensure_ascii=False)
            assert "acme/api@42" in shown
            assert "steps: review succeeded; merge succeeded; done skipped" in shown

    asyncio.run(asyncio.wait_for(main(), 60))
