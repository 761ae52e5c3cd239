"""A tool loop left waiting by `oz0 run` off a terminal and answered later with `oz0 jobs answer`, with no
`oz0 serve` anywhere: the answer resumes the job's workflow from its checkpoints, so the tool call and
the model requests made before the question are not made again (issue 24: a finished tool call is never
made twice). Real `oz0` processes, the stand-in model on loopback counting requests, the CI MCP server
over stdio counting its calls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from model_standins import ModelStandin, Turn
from test_loop_terminal import _calls, _home

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]
SCRIPT = [Turn(calls=(("ci_log", {"run_id": 4411}),)),
          Turn(calls=(("ask_person", {"question": "Which branch may I delete?",
                                      "answer_schema": {"type": "object", "required": ["branch"],
                                                        "properties": {"branch": {"type": "string"}}}}),)),
          Turn(calls=(("delete_branch", {"name": "old"}),)),
          Turn(text='{"verdict": "flaky", "run_id": 4411}')]


def _oz0(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*OZ0, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                          timeout=120)


def _waiting_step(stderr: str) -> tuple[str, str]:
    line = next(line for line in stderr.splitlines() if line.startswith("job ") and "is waiting" in line)
    return line.split()[1], line.split("step '")[1].split("'")[0]


def test_an_answer_given_from_the_cli_resumes_the_loop_without_making_a_call_twice(tmp_path: Path):
    with ModelStandin(SCRIPT) as model:
        env = _home(tmp_path, model.url)
        ran = _oz0(env, "run", "triage", "why did run 4411 fail?")
        assert ran.returncode == 3, ran.stderr
        job_id, step = _waiting_step(ran.stderr)
        assert step == "ask-4"
        assert _calls(tmp_path) == ['ci_log {"run_id": 4411}']
        assert len(model.requests) == 2

        first = _oz0(env, "jobs", "answer", job_id, json.dumps({"branch": "old"}), "--step", step)
        assert first.returncode == 3, first.stderr  # now the destructive tool asks for Confirm
        job_again, confirm = _waiting_step(first.stderr)
        assert (job_again, confirm) == (job_id, "confirm-6")
        assert _calls(tmp_path) == ['ci_log {"run_id": 4411}']  # the call before the question: not made again
        assert len(model.requests) == 3  # the two requests before the question were not asked again

        second = _oz0(env, "jobs", "answer", job_id, '{"choice": "Confirm"}', "--step", confirm)
        assert second.returncode == 0, second.stderr
        assert "verdict  flaky" in second.stdout and f"job {job_id} succeeded" in second.stderr
        assert _calls(tmp_path) == ['ci_log {"run_id": 4411}', 'delete_branch {"name": "old"}']
        assert len(model.requests) == 4  # each model request made once
        assert "old" in model.tool_results(2)[-1]  # the person's answer reached the model

        shown = _oz0(env, "jobs", "show", job_id, "--json")
    trace = json.loads(shown.stdout)["trace"]
    assert [(row["seq"], row["kind"], row["name"]) for row in trace] == [  # each call once, in order
        (1, "model", "triage-1"), (2, "tool", "ci_log"), (3, "model", "triage-1"), (4, "person", "ask-4"),
        (5, "model", "triage-1"), (6, "person", "confirm-6"), (7, "tool", "delete_branch"), (8, "model", "triage-1")]
    assert trace[3]["detail"]["answer"] == {"branch": "old"} and trace[5]["detail"]["answer"] == {"choice": "Confirm"}
