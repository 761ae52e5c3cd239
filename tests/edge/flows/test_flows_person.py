"""A flow's person step answered through the runtime API over real HTTP: the flow waits with its
question, the first answer resumes it, a second is 409, someone not among the answerers 403 (audited),
an invalid answer 422 with the path and the rule; unanswered, it fails NoAnswer or takes on_timeout."""

from __future__ import annotations

import time

import httpx
import pytest
from console_plugin import ConsoleThread
from flow_kit import approval, flow_plugin

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

INPUT = {"repo": "acme/api", "pr": 42}


@pytest.fixture
def served(tmp_path):
    flows = {"approval": approval(), "oncall": approval(answerers={"users": ["slack:U0ONCALL"]}),
             "quick": approval(timeout_s=0.5), "fallback": approval(timeout_s=0.5, on_timeout={"answer": {"approved": False}})}
    runtime = Runtime(tmp_path / "home", backoff_s=0.01, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(flow_plugin(tmp_path / "acme", flows=flows)), actor="test")
    with ConsoleThread(runtime) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        yield runtime, client
    runtime.close()


def ended(client, job_id, *, within=20.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}").json()["job"]
        if job["status"] in ("succeeded", "failed", "interrupted"):
            return client.get(f"/v1/jobs/{job_id}").json()
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not end")


def start(client, flow):
    r = client.post(f"/v1/flows/{flow}/runs", json=INPUT)
    assert r.status_code == 202, r.text
    assert r.headers["location"] == f"/v1/jobs/{r.json()['job']['id']}"
    return r.json()["job"]


def test_the_flow_waits_with_its_question_and_the_first_answer_resumes_it(served):
    runtime, client = served
    job = start(client, "approval")
    assert job["status"] == "waiting"
    question = client.get(f"/v1/jobs/{job['id']}").json()["job"]["question"]
    assert question["step"] == "approve"
    assert question["message"] == "Merge acme/api#42? The review says approve."
    assert question["answer_schema"]["properties"] == {"approved": {"type": "boolean"}}
    r = client.post(f"/v1/jobs/{job['id']}/answer", json={"approved": True})
    assert r.status_code == 202, r.text
    body = ended(client, job["id"])
    assert body["job"]["status"] == "succeeded"
    assert body["output"] == {"merged": True, "sha": "acme/api@42", "note": "approved"}
    assert body["card"]["notes"][-1] == ("steps: review succeeded; approve answered by api-local; merge succeeded; "
                                         "done skipped")
    again = client.post(f"/v1/jobs/{job['id']}/answer", json={"approved": False})
    assert again.status_code == 409
    answered = [r for r in runtime.audit_log() if r.action == "flow.answered"]
    assert [(r.actor, r.detail["step"], r.detail["answer"]) for r in answered] == [
        ("api-local", "approve", {"approved": True})]


def test_no_is_an_answer_the_flow_follows(served):
    _, client = served
    job = start(client, "approval")
    assert client.post(f"/v1/jobs/{job['id']}/answer", json={"approved": False}).status_code == 202
    body = ended(client, job["id"])
    assert body["output"]["note"] == "not approved"
    assert [(s["step"], s["status"]) for s in body["job"]["steps"]] == [
        ("review", "succeeded"), ("merge", "skipped"), ("done", "succeeded")]


def test_an_invalid_answer_is_422_with_the_path_and_rule_and_the_flow_still_waits(served):
    _, client = served
    job = start(client, "approval")
    r = client.post(f"/v1/jobs/{job['id']}/answer", json={"approved": "yes"})
    assert r.status_code == 422
    assert r.json()["details"]["path"] == "$.approved"
    assert r.json()["details"]["violations"][0]["keyword"] == "type"
    assert client.get(f"/v1/jobs/{job['id']}").json()["job"]["status"] == "waiting"
    assert client.post(f"/v1/jobs/{job['id']}/answer", json={"approved": True}).status_code == 202
    assert ended(client, job["id"])["job"]["status"] == "succeeded"


def test_someone_not_among_the_answerers_is_403_and_audited(served):
    runtime, client = served
    job = start(client, "oncall")
    r = client.post(f"/v1/jobs/{job['id']}/answer", json={"approved": True})
    assert r.status_code == 403
    denied = [r for r in runtime.audit_log() if r.action == "access.denied"]
    assert denied and denied[0].detail["step"] == "approve" and denied[0].detail["job"] == job["id"]
    assert client.get(f"/v1/jobs/{job['id']}").json()["job"]["status"] == "waiting"
    answer = runtime.answer(job["id"], "approve", action="accept", content={"approved": True}, by="slack:U0ONCALL")
    assert answer.by == "slack:U0ONCALL"
    assert ended(client, job["id"])["card"]["notes"][-1].startswith(
        "steps: review succeeded; approve answered by slack:U0ONCALL; merge succeeded")


def test_a_decline_fails_the_flow_with_declined(served):
    _, client = served
    job = start(client, "approval")
    assert client.post(f"/v1/jobs/{job['id']}/answer?action=decline", content=b"").status_code == 202
    body = ended(client, job["id"])
    assert (body["job"]["failure_kind"], body["details"]["person"]) == ("Declined", True)
    assert "step approve: api-local declined" in body["job"]["failure_reason"]


def test_unanswered_it_fails_no_answer_or_takes_the_on_timeout_answer(served):
    _, client = served
    body = ended(client, start(client, "quick")["id"])
    assert (body["job"]["status"], body["job"]["failure_kind"]) == ("failed", "NoAnswer")
    assert body["job"]["failure_reason"] == "step approve: nobody answered within 0.5 s (its timeout_s)"
    assert body["card"]["notes"][-1] == "steps: review succeeded; approve timed out; merge not run; done not run"
    body = ended(client, start(client, "fallback")["id"])
    assert body["job"]["status"] == "succeeded" and body["output"]["note"] == "not approved"
