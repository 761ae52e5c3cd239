"""The runtime API over real HTTP on loopback: runs, jobs, agents, the OpenAPI document, and its guards."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from console_plugin import ConsoleThread, installed_runtime
from openapi_spec_validator import validate

from oz0.adapters.console.security import CSP
from oz0.edge.model.reply_ref import ReplyRef


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    runtime = installed_runtime(tmp_path_factory.mktemp("api") / "home")
    with ConsoleThread(runtime) as server:
        yield server
    runtime.close()


@pytest.fixture
def http(console):
    with httpx.Client(base_url=console.url, timeout=20) as client:
        yield client


def test_a_run_answers_a_qzx_result_with_the_card_and_the_raw_output(http):
    r = http.post("/v1/agents/deploys/runs", json={"service": "api", "environment": "staging", "limit": 4,
                                                   "include_failed": True})
    assert r.status_code == 200
    body = r.json()
    assert body["success"] is True and body["message"] == "deploys answered"
    assert body["meta"] == {"schema_version": 1, "command": "agents.run"}
    assert body["card"]["form"] == "table"
    assert body["card"]["columns"] == ["service", "status", "version", "environment"]
    assert body["output"][0] == {"version": "1.0.0", "service": "api", "status": "ok", "environment": "staging"}
    assert len(body["output"]) == 4 and len(body["card"]["rows"]) == 4
    assert body["job"]["status"] == "succeeded" and body["job"]["channel"] == "api"
    assert r.headers["content-security-policy"] == CSP


def test_input_that_breaks_the_contract_is_422_invalid_input_with_the_path_and_no_job(http, console):
    before = len(console.runtime.jobs(limit=1000))
    r = http.post("/v1/agents/deploys/runs", json={"service": "api", "environment": "moon"})
    assert r.status_code == 422
    body = r.json()
    assert body["success"] is False and body["error_code"] == "invalid_input"
    assert body["details"]["kind"] == "InvalidInput"
    assert body["details"]["path"] == "$.environment"
    assert body["details"]["violations"][0]["keyword"] == "enum"
    assert "$.environment" in body["error"]
    assert len(console.runtime.jobs(limit=1000)) == before


def test_a_body_that_is_not_json_is_422_at_the_root(http):
    r = http.post("/v1/agents/deploys/runs", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["details"]["path"] == "$"


def test_a_text_agent_takes_text_plain_or_a_json_string(http):
    r = http.post("/v1/agents/echo/runs", content="hi there", headers={"content-type": "text/plain"})
    assert r.status_code == 200 and r.json()["output"] == "You said: **hi there**"
    r = http.post("/v1/agents/echo/runs", json="json hi")
    assert r.status_code == 200 and r.json()["card"]["text"] == "You said: **json hi**"
    r = http.post("/v1/agents/echo/runs", json={"text": "x"})
    assert r.status_code == 422 and "takes text" in r.json()["message"]


def test_other_media_types_are_415_and_unknown_agents_404(http):
    r = http.post("/v1/agents/deploys/runs", content="service=api", headers={"content-type": "text/plain"})
    assert r.status_code == 415 and "application/json" in r.json()["message"]
    r = http.post("/v1/agents/nobody/runs", json={})
    assert r.status_code == 404
    assert r.json()["error_code"] == "unknown_agent" and "deploys" in r.json()["message"]


def test_a_declared_failure_is_502_with_its_kind_and_reason(http):
    r = http.post("/v1/agents/grumpy/runs", json="please")
    assert r.status_code == 502
    body = r.json()
    assert body["success"] is False and body["error_code"] == "upstream"
    assert body["details"] == {"kind": "Upstream", "reason": "the upstream service said no <b>twice</b>",
                               "retryable": False, "partial": False, "person": True}
    assert body["card"]["status"]["success"] is False
    job = http.get(f"/v1/jobs/{body['job']['id']}").json()
    assert job["job"]["failure_kind"] == "Upstream" and job["success"] is False


def test_a_job_reads_back_with_its_card_and_output(http):
    run = http.post("/v1/agents/echo/runs", json="again").json()
    r = http.get(f"/v1/jobs/{run['job']['id']}")
    assert r.status_code == 200
    body = r.json()
    assert body["meta"]["command"] == "jobs.get"
    assert body["job"]["input"] == "again" and body["output"] == "You said: **again**"
    assert body["card"] == run["card"]
    missing = http.get("/v1/jobs/not-a-job")
    assert missing.status_code == 404 and missing.json()["error_code"] == "unknown_job"


def test_wait_false_answers_202_and_the_job_finishes_in_the_background(http):
    r = http.post("/v1/agents/echo/runs?wait=false", json="later")
    assert r.status_code == 202
    location = r.headers["location"]
    assert location == f"/v1/jobs/{r.json()['job']['id']}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        job = http.get(location).json()
        if job["job"]["status"] == "succeeded":
            break
        time.sleep(0.05)
    assert job["output"] == "You said: **later**"


def test_agents_lists_contracts_versions_and_failure_kinds(http):
    body = http.get("/v1/agents").json()
    agents = {a["name"]: a for a in body["agents"]}
    assert {"deploys", "echo", "grumpy", "hostile", "ex-incident"} <= set(agents)
    assert agents["deploys"]["plugin"] == "console-test" and agents["deploys"]["version"] == "1.2.3"
    assert agents["deploys"]["input"]["x-oz0-order"] == ["environment", "service"]
    assert agents["echo"]["input"] == "text"
    assert [f["name"] for f in agents["grumpy"]["failures"]] == ["InvalidInput", "Upstream"]


def test_openapi_document_is_valid_and_describes_the_served_api(http):
    doc = http.get("/openapi.json").json()
    validate(doc)  # openapi-spec-validator: raises on an invalid document
    assert doc["openapi"].startswith("3.1")
    assert doc["servers"] == [{"url": "/v1", "description": "this console"}]
    run = doc["paths"]["/agents/deploys/runs"]["post"]
    assert set(run["responses"]) >= {"200", "422", "502", "404", "415"}
    assert "400" not in run["responses"]
    schema_ref = run["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert schema_ref == "#/components/schemas/deploys.input"
    assert doc["components"]["schemas"]["deploys.input"]["x-oz0-order"] == ["environment", "service"]
    assert set(doc["paths"]["/agents/echo/runs"]["post"]["requestBody"]["content"]) == {"text/plain",
                                                                                       "application/json"}
    assert "/jobs/{job_id}" in doc["paths"] and "/agents" in doc["paths"]


def test_a_cross_site_post_is_refused(http):
    r = http.post("/v1/agents/echo/runs", content="x", headers={"content-type": "text/plain",
                                                                "origin": "http://evil.example"})
    assert r.status_code == 403
    r = http.post("/v1/agents/echo/runs", content="x", headers={"content-type": "text/plain",
                                                                "sec-fetch-site": "cross-site"})
    assert r.status_code == 403


def test_on_loopback_only_loopback_host_names_are_answered(http, console):
    assert http.get("/v1/agents", headers={"host": "attacker.example"}).status_code == 400
    port = console.url.rsplit(":", 1)[1]
    assert http.get("/v1/agents", headers={"host": f"localhost:{port}"}).status_code == 200


def test_a_body_over_the_limit_is_413(http):
    r = http.post("/v1/agents/echo/runs", content="x" * 1_048_577, headers={"content-type": "text/plain"})
    assert r.status_code == 413 and "1,048,576" in r.json()["message"]


TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    runtime = installed_runtime(tmp_path_factory.mktemp("guarded") / "home")
    with ConsoleThread(runtime, host="0.0.0.0", token=TOKEN) as server:
        yield server.url.replace("0.0.0.0", "127.0.0.1")
    runtime.close()


class TestOffLoopback:
    """Bound to any other address the API needs OZ0_CONSOLE_TOKEN, as a bearer token."""

    def test_without_a_token_it_refuses_to_start(self, tmp_path):
        from oz0.adapters.console.security import ConsoleConfigError, Guard

        with pytest.raises(ConsoleConfigError, match=re.escape("OZ0_CONSOLE_HOST=0.0.0.0 is not a loopback address")):
            Guard("0.0.0.0", None)

    def test_requests_without_the_bearer_token_are_401(self, guarded):
        r = httpx.get(f"{guarded}/v1/agents")
        assert r.status_code == 401 and r.json()["error_code"] == "unauthorized"
        assert httpx.get(f"{guarded}/openapi.json").status_code == 401
        assert httpx.get(f"{guarded}/v1/agents", headers={"authorization": "Bearer wrong"}).status_code == 401

    def test_the_bearer_token_opens_the_api(self, guarded):
        r = httpx.post(f"{guarded}/v1/agents/echo/runs", json="ok",
                       headers={"authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200 and r.json()["job"]["requester"] == "api-token"


def test_access_rules_apply_to_the_console_and_api(http, console):
    rules = console.runtime.home / "access.yaml"
    rules.write_text("rules:\n  - deny: [grumpy]\n    platform: console\n")
    try:
        r = http.post("/v1/agents/grumpy/runs", json="x")
        assert r.status_code == 403 and r.json()["error_code"] == "forbidden"
        assert "grumpy" in r.json()["message"]
        assert http.post("/v1/agents/echo/runs", json="x").status_code == 200
    finally:
        rules.unlink()


def test_a_job_shows_where_its_answer_went_but_never_the_channels_credentials(console, http):
    secret_token = "aW50ZXJhY3Rpb246MTIzNDU2Nzg5OnNlY3JldC10b2tlbg"
    hook = "https://hooks.slack.com/commands/T1/123/SeCrEtHoOk"
    discord_job, _ = console.runtime.submit("echo", "hi", requester="discord:42", channel="discord:7",
                                            reply_to=ReplyRef("discord", 1, {
                                                "application_id": "99", "token": secret_token, "channel": "7",
                                                "user": "42"}), workspace="G1", channel_id="7")
    slack_job, _ = console.runtime.submit("echo", "hi", requester="slack:U1", channel="slack:C1",
                                          reply_to=ReplyRef("slack", 1, {"channel": "C1", "user": "U1",
                                                                         "response_url": hook}),
                                          workspace="T1", channel_id="C1")
    shown = http.get(f"/v1/jobs/{discord_job.id}")
    assert shown.status_code == 200
    assert shown.json()["job"]["reply_to"] == {"platform": "discord", "workspace": "G1", "channel": "7"}
    assert secret_token not in shown.text
    shown = http.get(f"/v1/jobs/{slack_job.id}")
    assert shown.json()["job"]["reply_to"] == {"platform": "slack", "workspace": "T1", "channel": "C1"}
    assert "SeCrEtHoOk" not in shown.text
    for job in (discord_job, slack_job):
        page = http.get(f"/jobs/{job.id}")
        assert page.status_code == 200 and secret_token not in page.text and "SeCrEtHoOk" not in page.text
