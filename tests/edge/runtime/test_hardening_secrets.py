"""An http or model agent's credential never shows, whole or any run of 8 of its characters, in what
a user sees or the journal keeps: reasons, progress, answers, cards, uploads. Real loopback servers
echo it back plainly, after 169 characters, base64-encoded, URL-encoded and inside a header echo."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any
from urllib.parse import quote

import pytest
from test_agent_kinds import REVIEW_SCHEMA, Loopback, chat, model_agent, run, runtime_with

from oz0.renderers import RENDERERS

KEY = "sk-live-Zq7/Hw+9xR2mKpL4vN8sTa3cYb6dEf1gJ0uW"


def leaks(text: str, secret: str = KEY) -> list[str]:
    """Every run of 8 characters of the secret found in `text`."""
    return [secret[i:i + 8] for i in range(len(secret) - 7) if secret[i:i + 8] in text]


def shown(rt: Any, job: Any) -> str:
    """Everything a user or the journal gets for this job: the row, the card, every platform's payload."""
    parts = [json.dumps(rt.job(job.id).to_dict(), default=str)]
    card = rt.card(rt.job(job.id))
    parts.append(json.dumps(card.to_dict(), default=str))
    for renderer in RENDERERS.values():
        parts.append(repr(renderer(card)))
    return "\n".join(parts)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OZ0_TEST_KEY", KEY)
    monkeypatch.setenv("OZ0_TEST_MODEL_KEY", KEY)


def http_agent(url: str, **kw: Any) -> dict[str, Any]:
    return {"kind": "http", "url": url, "headers": {"Authorization": "Bearer ${OZ0_TEST_KEY}"},
            "input": "text", **kw}


ECHOES = {
    "after 169 characters": lambda h: "x" * 169 + h["authorization"],
    "base64": lambda h: "debug: " + base64.b64encode(h["authorization"].encode()).decode(),
    "base64 of the key alone": lambda h: "k=" + base64.b64encode(KEY.encode()).decode(),
    "url-encoded": lambda h: "you sent /?auth=" + quote(h["authorization"], safe=""),
    "json-escaped": lambda h: '{"seen": "' + h["authorization"].replace("/", "\\/") + '"}',
}


@pytest.mark.parametrize("echo", list(ECHOES), ids=list(ECHOES))
def test_a_500_that_echoes_the_key_never_shows_it(tmp_path, key, echo):
    with Loopback(lambda data, headers, path: (500, ECHOES[echo](headers))) as server:
        rt = runtime_with(tmp_path, {"api": http_agent(server.url, output="text")})
        job = run(rt, "api", "hi")
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert (job.status, job.failure_kind) == ("failed", "Unavailable")
    assert "[redacted]" in job.failure_reason
    assert leaks(shown(rt, job)) == []


def test_a_successful_answer_echoing_the_headers_is_redacted_on_the_card_and_uploads(tmp_path, key):
    def answer(data, headers, path):
        return 200, {"success": True, "message": f"echo for {headers['authorization']}",
                     "headers": [{"name": k, "value": v} for k, v in headers.items()],
                     "encoded": base64.b64encode(headers["authorization"].encode()).decode()}

    with Loopback(answer) as server:
        rt = runtime_with(tmp_path, {"echo": http_agent(server.url, output_schema="schemas/any.json")},
                          {"schemas/any.json": {"type": "object"}})
        job = run(rt, "echo", "hi")
    assert job.status == "succeeded", job.failure_reason
    assert any(h["value"] == "Bearer [redacted]" for h in job.output["headers"])
    everything = shown(rt, job)
    assert "127.0.0.1" in everything  # the rest of the echo is kept
    assert leaks(everything) == []


def test_a_text_answer_quoting_the_key_is_redacted(tmp_path, key):
    with Loopback(lambda data, headers, path: (200, f"your token is {KEY[5:]}!")) as server:
        rt = runtime_with(tmp_path, {"api": http_agent(server.url, output="text")})
        job = run(rt, "api", "hi")
    assert job.status == "succeeded" and job.output == "your token is [redacted]!"


def test_a_model_whose_retry_progress_quotes_the_key_never_shows_it(tmp_path, key, caplog):
    leaky = json.dumps({"verdict": "approve", "risk": KEY})
    with Loopback(lambda data, headers, path: (200, chat(leaky))) as server:
        rt = runtime_with(tmp_path, {"reviewer": model_agent(server.url)}, {"schemas/review.json": REVIEW_SCHEMA})
        progress: list[str] = []
        with caplog.at_level(logging.DEBUG):
            job = run(rt, "reviewer", "review it", on_progress=lambda p: progress.append(p.message))
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert len(progress) == 3 and all("does not match the output schema" in p for p in progress)
    assert job.failure_kind == "InvalidOutput"
    assert leaks("\n".join(progress)) == []
    assert leaks(shown(rt, job)) == []
    assert leaks(caplog.text) == []


def test_a_model_error_body_with_the_key_after_169_characters(tmp_path, key):
    with Loopback(lambda data, headers, path: (500, "y" * 169 + KEY)) as server:
        rt = runtime_with(tmp_path, {"reviewer": model_agent(server.url)}, {"schemas/review.json": REVIEW_SCHEMA})
        job = run(rt, "reviewer", "review it")
    assert job.failure_kind == "Unavailable"
    assert leaks(shown(rt, job)) == []
