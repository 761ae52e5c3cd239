"""Person steps through the runtime API and the console, over real HTTP on loopback: a job that asks
shows its question, is answered once (422 with the path and rule, 403 for others, 409 the second
time), the console's job page draws the answer form from the answer schema, and a question asked
before a restart is still there, and answerable, after it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from console_plugin import ConsoleThread, installed_runtime
from plugin_kit import make_plugin

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.questions import Question
from oz0.edge.runtime.runner import Runtime

IMPL = """
    SCHEMA = {"type": "object", "properties": {
        "approved": {"type": "boolean", "title": "Approved"},
        "count": {"type": "integer", "minimum": 1}}, "required": ["approved"]}

    async def approve(text, ctx):
        answer = await ctx.ask_person(f"Ship {text}?", SCHEMA, step="approve")
        return f"{answer.action}: {answer.content}"

    async def gated(text, ctx):
        answer = await ctx.ask_person("On-call only", SCHEMA, answerers={"users": ["U-ONCALL"]})
        return answer.action
    """

SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean", "title": "Approved"},
                                           "count": {"type": "integer", "minimum": 1}}, "required": ["approved"]}


def agent(entry: str, step: str) -> dict:
    return {"description": "asks a person", "kind": "python", "entry": f"impl:{entry}", "input": "text",
            "output": "text", "asks": {step: {"answer_schema": "schemas/approve.json"}}}


def with_asking_agents(runtime: Runtime, where: Path) -> Runtime:
    make_plugin(where, name="asking", agents={"approve": agent("approve", "approve"), "gated": agent("gated", "ask-1")},
                files={"impl.py": IMPL, "schemas/approve.json": SCHEMA})
    install_plugin(runtime, load_plugin(where), actor="test")
    return runtime


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    root = tmp_path_factory.mktemp("person")
    runtime = with_asking_agents(installed_runtime(root / "home"), root / "asking")
    with ConsoleThread(runtime) as server:
        yield server
    runtime.close()


@pytest.fixture
def http(console):
    with httpx.Client(base_url=console.url, timeout=20) as client:
        yield client


def settled(http: httpx.Client, job_id: str) -> dict:
    for _ in range(200):
        job = http.get(f"/v1/jobs/{job_id}").json()["job"]
        if job["status"] not in ("running", "queued"):
            return job
        time.sleep(0.02)
    raise AssertionError(f"job {job_id} is still {job['status']}")


def audited(runtime: Runtime, action: str, job_id: str) -> list:
    return [r for r in runtime.audit_log() if r.action == action and r.detail.get("job") == job_id]


def test_the_api_shows_the_question_and_takes_the_first_valid_answer_once(http, console):
    r = http.post("/v1/agents/approve/runs", json="v2")
    assert r.status_code == 202 and r.json()["message"].endswith("is waiting for an answer")
    job_id = r.json()["job"]["id"]
    assert r.headers["location"] == f"/v1/jobs/{job_id}"
    job = http.get(f"/v1/jobs/{job_id}").json()["job"]
    assert job["status"] == "waiting"
    question = job["question"]
    assert {k: question[k] for k in ("step", "message", "answer_schema", "answerers", "source")} == {
        "step": "approve", "message": "Ship v2?", "answer_schema": SCHEMA, "answerers": {}, "source": None}
    assert question["expires"] > time.time()

    bad = http.post(f"/v1/jobs/{job_id}/answer", json={"approved": True, "count": 0})
    assert bad.status_code == 422
    assert bad.json()["error_code"] == "invalid_answer"
    assert bad.json()["details"]["path"] == "$.count"
    assert bad.json()["details"]["violations"][0]["keyword"] == "minimum"
    assert "$.count" in bad.json()["error"]
    not_json = http.post(f"/v1/jobs/{job_id}/answer", content=b"{nope", headers={"content-type": "application/json"})
    assert not_json.status_code == 422 and not_json.json()["details"]["path"] == "$"

    ok = http.post(f"/v1/jobs/{job_id}/answer", json={"approved": True, "count": 2})
    assert ok.status_code == 202
    assert ok.json()["answer"]["action"] == "accept" and ok.json()["answer"]["by"] == "api-local"
    done = settled(http, job_id)
    assert done["status"] == "succeeded" and "question" not in done
    assert http.get(f"/v1/jobs/{job_id}").json()["output"] == "accept: {'approved': True, 'count': 2}"

    again = http.post(f"/v1/jobs/{job_id}/answer", json={"approved": False})
    assert again.status_code == 409 and again.json()["error_code"] == "already_answered"
    assert [r.detail["answer"] for r in audited(console.runtime, "flow.answered", job_id)] == [
        {"approved": True, "count": 2}]


def test_someone_not_among_the_answerers_is_refused_and_audited(http, console):
    job_id = http.post("/v1/agents/gated/runs", json="x").json()["job"]["id"]
    assert http.get(f"/v1/jobs/{job_id}").json()["job"]["question"]["answerers"] == {"users": ["U-ONCALL"]}
    r = http.post(f"/v1/jobs/{job_id}/answer", json={"approved": True})
    assert r.status_code == 403 and r.json()["error_code"] == "forbidden"
    assert "not among those who may answer" in r.json()["message"]
    assert audited(console.runtime, "access.denied", job_id)[0].actor == "api-local"
    assert http.get(f"/v1/jobs/{job_id}").json()["job"]["status"] == "waiting"
    console.runtime.questions.close(job_id, "ask-1", action="cancel", by="test")


def test_decline_takes_no_body_and_an_unknown_job_is_404(http):
    job_id = http.post("/v1/agents/approve/runs", json="v3").json()["job"]["id"]
    r = http.post(f"/v1/jobs/{job_id}/answer?action=decline")
    assert r.status_code == 202 and r.json()["answer"]["content"] is None
    assert settled(http, job_id)["status"] == "succeeded"
    assert http.post("/v1/jobs/nojob00000/answer", json={}).status_code == 404


def test_the_openapi_document_has_the_answer_operation(http):
    doc = http.get("/openapi.json").json()
    op = doc["paths"]["/jobs/{job_id}/answer"]["post"]
    assert sorted(op["responses"]) == ["202", "401", "403", "404", "409", "412", "415", "422"]
    assert "waiting" in doc["components"]["schemas"]["Job"]["properties"]["status"]["enum"]


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def test_the_job_page_draws_the_answer_form_and_takes_the_answer(console):
    with httpx.Client(base_url=console.url, timeout=20, follow_redirects=False) as browser:
        page = browser.get("/agents/approve")
        r = browser.post("/agents/approve/runs", data={"csrf": csrf_of(page.text), "f-text": "web"})
        assert r.status_code == 303
        job_page = browser.get(r.headers["location"])
        html = job_page.text
        assert "Waiting for an answer" in html and "Ship web?" in html
        assert 'type="checkbox" id="f-approved"' in html and 'type="number" step="1" id="f-count"' in html
        job_id = r.headers["location"].rsplit("/", 1)[1]
        form = {"csrf": csrf_of(html), "step": "approve", "action": "accept", "f-approved": "true"}
        bad = browser.post(f"/jobs/{job_id}/answer", data={**form, "f-count": "0"})
        assert bad.status_code == 422
        assert "$.count" in bad.text and "minimum" in bad.text and "Waiting for an answer" in bad.text
        ok = browser.post(f"/jobs/{job_id}/answer", data={**form, "f-count": "3"})
        assert ok.status_code == 303 and ok.headers["location"] == f"/jobs/{job_id}"
        for _ in range(200):
            if console.runtime.job(job_id).finished:
                break
            time.sleep(0.02)
        assert console.runtime.job(job_id).output == "accept: {'approved': True, 'count': 3}"
        late = browser.post(f"/jobs/{job_id}/answer", data={**form, "f-count": "3"})
        assert late.status_code == 409 and "not waiting for that answer" in late.text


def test_a_question_asked_before_a_restart_is_shown_and_answered_after_it(tmp_path):
    home = tmp_path / "home"
    before = with_asking_agents(Runtime(home, flow_engine=FLOW_ENGINE), tmp_path / "asking")
    job, _ = before.submit("approve", "v9", requester="api-local", channel="api")
    before.store.update_job(job.id, status="running")
    before.ask(Question(job.id, "approve", "Ship v9?", SCHEMA, {}, None))
    before.close()
    after = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        with ConsoleThread(after) as server, httpx.Client(base_url=server.url, timeout=20) as http:
            shown = http.get(f"/v1/jobs/{job.id}").json()["job"]
            assert shown["status"] == "waiting" and shown["question"]["message"] == "Ship v9?"
            r = http.post(f"/v1/jobs/{job.id}/answer", json={"approved": True})
            assert r.status_code == 202
            assert after.questions.asked(job.id, "approve")[1].content == {"approved": True}
    finally:
        after.close()
