"""A tool loop is durable call by call: a real `oz0 serve` on SQLite, killed with SIGKILL between two tool
calls of a 4-call loop, restarted; the job finishes once, every finished tool call was made exactly
once (counted at the MCP server), and one card is posted."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn
from replica_harness import Replica
from slack_standin import SlackStandIn, mention_event_body, signed_headers


def calls(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def verdicts(slack: SlackStandIn) -> list:
    """The cards that carry the loop's answer (progress lines are updates of the same message)."""
    return [c for c in slack.of("chat.update") if "flaky" in str(c.args) and "Working on" not in str(c.args)]


def test_a_loop_killed_between_two_tool_calls_resumes_without_repeating_a_finished_call(tmp_path, monkeypatch):
    script = [Turn(calls=(("ci_log", {"run_id": 1}),)), Turn(calls=(("ci_log", {"run_id": 2}),)),
              Turn(calls=(("ci_log", {"run_id": 3}),)), Turn(calls=(("ci_log", {"run_id": 4}),)),
              Turn(text='{"verdict": "flaky", "run_id": 4}')]
    calls_file = tmp_path / "calls.txt"
    monkeypatch.setenv("OZ0_TEST_CALLS", str(calls_file))  # the CI server's argument (tests/support/loop_kit.py)

    async def main() -> None:
        with ModelStandin(script, hold_turn=2) as model:
            home = tmp_path / "home"
            await asyncio.to_thread(lambda: loop_plugin(tmp_path / "plugin", home, model.url).close())
            async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
                serve = Replica.make("solo", home, api_url=slack.api_url,
                                     runs_file=tmp_path / "runs.txt", OZ0_TEST_MODEL_KEY="sk-test-crash-123456",
                                     OZ0_TEST_CALLS=str(calls_file))
                try:
                    await asyncio.to_thread(serve.start)
                    body = mention_event_body("triage why did run 4 fail?", event_id="EvLoop")
                    async with http.post(serve.events_url, data=body.encode(),
                                         headers=signed_headers(body, content_type="application/json")) as resp:
                        assert resp.status == 200
                    assert await asyncio.to_thread(model.held.wait, 60), "the third model request never came"
                    assert calls(calls_file) == ['ci_log {"run_id": 1}', 'ci_log {"run_id": 2}']
                    await asyncio.to_thread(serve.kill)  # between tool call 2 and tool call 3
                    model.release()
                    await asyncio.to_thread(serve.start)
                    deadline = time.monotonic() + 60
                    while not verdicts(slack) and time.monotonic() < deadline:
                        await asyncio.sleep(0.1)
                    await asyncio.sleep(1.5)  # a second card, if any, would come now
                finally:
                    serve.stop()
        assert calls(calls_file) == [f'ci_log {{"run_id": {n}}}' for n in (1, 2, 3, 4)]
        assert len(verdicts(slack)) == 1, "\n".join(serve.lines[-30:])
        assert len(slack.of("chat.postMessage")) == 1
        assert not any("Interrupted" in str(c.args) for c in slack.calls)
        # the model was asked turns 0, 1, 2 (cut short), then 2 again, 3, 4: never a finished one twice
        turns = [sum(1 for m in r["json"]["messages"] if m["role"] == "assistant") for r in model.requests]
        assert turns == [0, 1, 2, 2, 3, 4]

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 120
