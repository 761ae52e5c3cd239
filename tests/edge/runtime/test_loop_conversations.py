"""A model agent with tools in a conversation: each follow-up's loop is given the earlier turns as
messages (the asks, the final answers, each after a line naming the tools that turn called), bounded by
the agent's `conversation:` as for a plain model agent. Through `POST /v1/jobs/{id}/follow-ups` of a
real console, against the stand-in model on loopback (the messages it received are what is asserted)
and the CI MCP server over stdio."""

from __future__ import annotations

import httpx
import pytest
from console_plugin import ConsoleThread
from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn

KEY = "sk-test-convo-0123456789"
FINAL = '{"verdict": "flaky", "run_id": 4411}'


@pytest.fixture(autouse=True)
def model_key(monkeypatch, tmp_path):
    monkeypatch.setenv("OZ0_TEST_MODEL_KEY", KEY)
    monkeypatch.setenv("OZ0_TEST_CALLS", str(tmp_path / "calls.txt"))


def _chat(request: dict) -> list[tuple[str, str]]:
    """The messages of one request to the stand-in, as (role, text), the system prompt left out."""
    out = []
    for m in request["json"]["messages"]:
        content = m.get("content")
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content or [])
        if m["role"] in ("user", "assistant") and text:
            out.append((m["role"], text))
    return out


def test_follow_ups_give_the_loop_the_earlier_turns_with_its_tool_calls_bounded_by_max_turns(tmp_path):
    # the stand-in answers by the number of assistant messages a request carries: a follow-up whose
    # history holds one earlier answer is at turn 1, its final answer
    script = [Turn(calls=(("ci_log", {"run_id": 4411}),)), Turn(text=FINAL)]
    with ModelStandin(script) as model:
        runtime = loop_plugin(tmp_path / "p", tmp_path / "h", model.url, conversation={"max_turns": 1})
        try:
            with ConsoleThread(runtime) as console, httpx.Client(base_url=console.url, timeout=60) as http:
                first = http.post("/v1/agents/triage/runs", content="why did main fail?",
                                  headers={"content-type": "text/plain"})
                assert first.status_code == 200, first.text
                first_id = first.json()["job"]["id"]
                asked_first = len(model.requests)
                second = http.post(f"/v1/jobs/{first_id}/follow-ups", json="and yesterday's?")
                assert second.status_code == 200, second.text
                asked_second = len(model.requests)
                third = http.post(f"/v1/jobs/{second.json()['job']['id']}/follow-ups", json="and last week's?")
                assert third.status_code == 200, third.text
        finally:
            runtime.close()
    assert asked_first == 2 and asked_second == 3 and len(model.requests) == 4
    assert _chat(model.requests[0]) == [("user", "why did main fail?")]
    told = _chat(model.requests[2])
    assert told[0] == ("user", "why did main fail?")
    assert told[1][0] == "assistant"
    assert told[1][1].startswith('[tools called: ci_log({"run_id":4411}) ok]\n'), told[1][1]
    assert '"verdict": "flaky"' in told[1][1] and '"run_id": 4411' in told[1][1]
    assert told[2:] == [("user", "and yesterday's?")]
    # max_turns 1: the third ask is given the second turn only (which called no tool)
    bounded = _chat(model.requests[3])
    assert [role for role, _ in bounded] == ["user", "assistant", "user"], bounded
    assert bounded[0] == ("user", "and yesterday's?") and bounded[2] == ("user", "and last week's?")
    assert not bounded[1][1].startswith("[tools called") and "why did main fail?" not in str(bounded)
