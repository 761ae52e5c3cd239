"""Hostile answers to a job's question, over real HTTP on loopback (issue 29): a body nested past the
JSON depth rule, a deep value the schema lets through, a stale `If-Match`, a body that is not
application/json, and the same depth rule in a chat modal's JSON input. Each is refused with one line,
and the job still waits for a good answer."""

from __future__ import annotations

import httpx
import pytest
from test_person_console import console, http, settled  # noqa: F401  (the person-step console and client)

from oz0.adapters.chat import asking
from oz0.edge.contracts.json_data import MAX_JSON_DEPTH

DEPTH_RULE = f"the data nests deeper than {MAX_JSON_DEPTH} levels (the limit for JSON data)"


def waiting(http: httpx.Client) -> str:
    r = http.post("/v1/agents/approve/runs", json="v9")
    assert r.status_code == 202, r.text
    return r.json()["job"]["id"]


def answer(http: httpx.Client, job_id: str, body: bytes, **headers: str) -> httpx.Response:
    return http.post(f"/v1/jobs/{job_id}/answer", content=body,
                     headers={"content-type": "application/json", **headers})


def still_answerable(http: httpx.Client, job_id: str) -> None:
    assert http.get(f"/v1/jobs/{job_id}").json()["job"]["status"] == "waiting"
    assert answer(http, job_id, b'{"approved": true}').status_code == 202
    assert settled(http, job_id)["status"] == "succeeded"


def test_a_100000_level_answer_body_is_a_422_naming_the_depth_rule(http):
    job_id = waiting(http)
    r = answer(http, job_id, b"[" * 100_000 + b"]" * 100_000)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == f"the answer is not JSON data: {DEPTH_RULE}"
    still_answerable(http, job_id)


def test_a_900_level_value_the_schema_allows_is_refused_before_it_is_stored(http):
    job_id = waiting(http)
    r = answer(http, job_id, b'{"approved": true, "note": ' + b"[" * 900 + b"]" * 900 + b"}")
    assert r.status_code == 422, r.text
    assert r.json()["error_code"] == "invalid_answer"
    assert r.json()["error"].startswith(f"the answer is not JSON data: {DEPTH_RULE}")
    still_answerable(http, job_id)


def test_if_match_with_a_stale_contract_hash_is_412_and_the_jobs_own_hash_is_taken(http):
    job_id = waiting(http)
    job = http.get(f"/v1/jobs/{job_id}").json()["job"]
    assert job["contract_hash"]
    r = answer(http, job_id, b'{"approved": true}', **{"if-match": '"0123stale"'})
    assert r.status_code == 412, r.text
    assert r.json()["error_code"] == "contract_changed"
    assert r.json()["details"] == {"agent": "approve", "pinned": ["0123stale"], "installed": job["contract_hash"],
                                   "contract_version": job["contract_version"]}
    assert f"not the pinned 0123stale; read it at GET /v1/jobs/{job_id}" in r.json()["error"]
    assert http.get(f"/v1/jobs/{job_id}").json()["job"]["status"] == "waiting"
    ok = answer(http, job_id, b'{"approved": true}', **{"if-match": f'W/"{job["contract_hash"]}"'})
    assert ok.status_code == 202, ok.text


@pytest.mark.parametrize("media", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_an_answer_that_is_not_application_json_is_415(http, media):
    job_id = waiting(http)
    r = http.post(f"/v1/jobs/{job_id}/answer", content=b'{"approved": true}', headers={"content-type": media})
    assert r.status_code == 415, r.text
    assert r.json()["error"] == f"send the answer as application/json, not {media}"
    r = http.post(f"/v1/jobs/{job_id}/answer?action=decline", headers={"content-type": media})
    assert r.status_code == 415
    still_answerable(http, job_id)


def test_a_body_without_content_type_is_415_and_a_bodiless_decline_still_works(http):
    job_id = waiting(http)
    r = http.post(f"/v1/jobs/{job_id}/answer", content=b'{"approved": true}', headers={"content-type": ""})
    assert r.status_code == 415 and "not a body without Content-Type" in r.json()["error"]
    assert http.post(f"/v1/jobs/{job_id}/answer?action=decline").status_code == 202


def test_a_deep_json_run_input_is_a_422_not_a_500(http):
    r = http.post("/v1/agents/approve/runs", content=b"[" * 100_000 + b"]" * 100_000,
                  headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text


def test_a_chat_modals_json_input_nested_past_the_rule_is_refused_not_a_recursion_error():
    schema = {"type": "object", "properties": {"tags": {"type": "array"}}, "additionalProperties": False}
    deep = "[" * 2000 + "]" * 2000   # within a Discord paragraph input's 4,000 characters
    assert asking.content_from(schema, {"": deep}) == {"": f"not JSON: {DEPTH_RULE}"}
    assert asking.content_from(schema, {"": '{"tags": ' + deep + "}"}) == {"": f"not JSON: {DEPTH_RULE}"}
    assert asking.content_from(schema, {"tags": deep}) == {"tags": deep}   # the validator names the field
