"""Issue 28 item 1: a python agent's `ctx.ask_person` answer schemas declared under `asks:` in its file:
linted, in OpenAPI `x-oz0-person-steps` and the contract hash; an undeclared ask refused at run time."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from plugin_kit import make_plugin
from terminal import on_a_pty

from oz0.edge.documents.openapi import openapi_document
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

APPROVE = {"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}}}
IMPL = """
    async def declared(text, ctx):
        answer = await ctx.ask_person(f"Ship {text}?", step="approve")
        return f"{answer.action} {answer.content}"

    async def undeclared(text, ctx):
        answer = await ctx.ask_person(f"Ship {text}?", {"type": "object"}, step="sign-off")
        return answer.action

    def sync_other_schema(text, ctx):
        return ctx.ask_person_sync("Ship?", {"type": "object", "properties": {"x": {}}}, step="approve").action
"""


def _plugin(root: Path, *, asks=None) -> Path:
    python = lambda entry, **kw: {"kind": "python", "entry": f"impl:{entry}", "input": "text",  # noqa: E731
                                  "output": "text", "limits": {"timeout_s": 20}, **kw}
    declared = {"approve": {"answer_schema": "schemas/approve.json", "description": "Approve the release"}}
    return make_plugin(root, name="asking", agents={
        "declared": python("declared", asks=declared if asks is None else asks),
        "undeclared": python("undeclared"),
        "other-schema": python("sync_other_schema", asks=declared),
    }, files={"impl.py": IMPL, "schemas/approve.json": APPROVE})


def test_a_declared_ask_is_published_hashed_and_answered(tmp_path: Path):
    plugin = load_plugin(_plugin(tmp_path / "p"))
    agent = plugin.agent("declared")
    assert [(a.step, a.answer_schema.schema) for a in agent.asks] == [("approve", APPROVE)]
    op = openapi_document(plugin.agents, title="t", version="1")["paths"]["/agents/declared/runs"]["post"]
    assert op["x-oz0-person-steps"] == [{"step": "approve", "message": "Approve the release", "answer_schema": APPROVE,
                                          "answerers": {}, "timeout_s": None, "on_timeout": None}]
    other = load_plugin(_plugin(tmp_path / "q", asks={"approve": {"answer_schema": "schemas/approve.json",
                                                                 "description": "Approve the release"},
                                                     "later": {"answer_schema": "schemas/approve.json"}}))
    from oz0.edge.documents.contract_hash import contract_hash

    assert contract_hash(other.agent("declared")) != contract_hash(agent)
    runtime = Runtime(tmp_path / "home", backoff_s=0.01)
    try:
        install_plugin(runtime, plugin)
        async def scenario() -> None:
            job, _ = runtime.submit("declared", "v2", requester="ana", channel="api")
            run = asyncio.create_task(runtime.execute(job.id))
            for _ in range(400):
                question = runtime.question(job.id)
                if question is not None:
                    break
                await asyncio.sleep(0.01)
            assert question is not None and (question.step, question.answer_schema) == ("approve", APPROVE)
            runtime.answer(job.id, "approve", action="accept", content={"approved": True}, by="ana")
            done = await asyncio.wait_for(run, 20)
            assert done.output == "accept {'approved': True}", done.failure_reason

        asyncio.run(scenario())
    finally:
        runtime.close()


def test_an_undeclared_ask_is_refused_naming_the_key_to_add(tmp_path: Path):
    runtime = Runtime(tmp_path / "home", backoff_s=0.01)
    try:
        install_plugin(runtime, load_plugin(_plugin(tmp_path / "p")))
        job = asyncio.run(runtime.run("undeclared", "v2", channel="api"))
        assert job.status == "failed" and job.failure_kind == "Misconfigured"
        assert ("add to agents/undeclared.yaml: `asks: {sign-off: {answer_schema: schemas/sign-off.json}}`"
                in job.failure_reason), job.failure_reason
        job = asyncio.run(runtime.run("other-schema", "v2", channel="api"))
        assert job.status == "failed" and job.failure_kind == "Misconfigured"
        assert "asks.approve.answer_schema (schemas/approve.json)" in job.failure_reason, job.failure_reason
    finally:
        runtime.close()


def test_lint_checks_the_answer_schemas_and_the_kind(tmp_path: Path):
    root = _plugin(tmp_path / "p", asks={"approve": {"answer_schema": "schemas/missing.json"}})
    errors = [(f.file, f.path, f.message) for f in lint_plugin(root).errors]
    assert ("agents/declared.yaml", "$.asks.approve.answer_schema", "missing file 'schemas/missing.json'") in errors
    (root / "agents" / "cmd.yaml").write_text("kind: command\ncommand: [echo]\ninput: text\noutput: text\n"
                                             "asks: {approve: {answer_schema: schemas/approve.json}}\n")
    (root / "agents" / "odd.yaml").write_text("kind: python\nentry: impl:declared\ninput: text\noutput: text\n"
                                             "asks: {approve: {schema: schemas/approve.json}}\n")
    report = lint_plugin(root)
    said = [(f.file, f.path) for f in report.errors]
    assert ("agents/cmd.yaml", "$.asks") in said and any(f == "agents/odd.yaml" and "asks" in p for f, p in said), said
    done = subprocess.run([sys.executable, "-m", "oz0.adapters.cli", "plugin", "lint", str(root), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and json.loads(done.stdout)["error_code"] == "lint_errors"


# 2. a person step in `oz0 run`: asked on a terminal, parked off one, never a hang ----------------

def _flow_home(tmp_path: Path) -> dict:
    import os

    from flow_kit import approval, flow_plugin

    root = flow_plugin(tmp_path / "acme", flows={"ship": approval(timeout_s=600)})
    env = {**os.environ, "OZ0_HOME": str(tmp_path / "home"), "OZ0_DATABASE_URL": ""}
    done = subprocess.run([*OZ0, "plugin", "install", str(root)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return env


OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]
PR = '{"repo": "acme/api", "pr": 42}'


def test_off_a_terminal_the_job_waits_at_once_and_oz0_jobs_answer_resumes_it(tmp_path: Path):
    env = _flow_home(tmp_path)
    done = subprocess.run([*OZ0, "run", "ship", PR], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, timeout=60)  # a pipe: nobody can type; a hang would be this timeout
    assert done.returncode == 3, done.stderr
    waiting = [line for line in done.stderr.splitlines() if line.startswith("job ")][0]
    job_id = waiting.split()[1]
    assert waiting == (f"job {job_id} is waiting for an answer to step 'approve': "
                       "Merge acme/api#42? The review says approve.")
    assert f"oz0 jobs answer {job_id} '{{\"approved\": true}}' --step approve" in done.stderr
    assert f"POST /v1/jobs/{job_id}/answer?step=approve" in done.stderr
    shown = json.loads(subprocess.run([*OZ0, "jobs", "show", job_id, "--json"], capture_output=True, text=True,
                                      env=env, timeout=60).stdout)
    assert shown["job"]["status"] == "waiting"  # recovery did not take the parked job for a crashed one
    wrong = subprocess.run([*OZ0, "jobs", "answer", job_id, '{"approved": "yes"}'], capture_output=True, text=True,
                           env=env, timeout=60)
    assert wrong.returncode == 2 and "not taken: the answer at $.approved breaks the rule 'type'" in wrong.stderr
    answered = subprocess.run([*OZ0, "jobs", "answer", job_id, '{"approved": true}', "--json"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)
    assert answered.returncode == 0, answered.stderr
    doc = json.loads(answered.stdout)
    assert doc["success"] is True and doc["output"] == {"merged": True, "sha": "acme/api@42", "note": "approved"}
    assert doc["meta"]["command"] == "jobs answer"


def test_on_a_terminal_the_question_is_asked_there(tmp_path: Path):
    code, text = on_a_pty([*OZ0, "run", "ship", PR], _flow_home(tmp_path),
                          [(b"[y/N]", 1, b"maybe\n"),   # refused by the prompt: it asks again
                           (b"[y/N]", 2, b"y\n")], timeout_s=60)
    assert code == 0, text
    assert "? Merge acme/api#42? The review says approve." in text
    assert "answer y or n" in text
    assert "acme/api@42" in text and "approve answered by cli:" in text


def test_off_a_terminal_an_ask_a_resumed_job_could_not_find_again_is_cancelled_not_parked(tmp_path: Path):
    import os

    impl = """
        async def elicits(text, ctx):
            answer = await ctx.runtime_ask("Which region?", {"type": "object", "properties": {"r": {"type": "string"}}},
                                           step="elicit-1", source="a server")
            return answer.action
    """
    root = make_plugin(tmp_path / "p", name="eliciting", agents={"elicits": {
        "kind": "python", "entry": "impl:elicits", "input": "text", "output": "text"}}, files={"impl.py": impl})
    env = {**os.environ, "OZ0_HOME": str(tmp_path / "home"), "OZ0_DATABASE_URL": ""}
    installed = subprocess.run([*OZ0, "plugin", "install", str(root)], env=env, capture_output=True, timeout=60)
    assert installed.returncode == 0, installed.stderr
    done = subprocess.run([*OZ0, "run", "elicits", "x"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "cancel", (done.stdout, done.stderr)
    assert "asks a person (Which region?), and this command is not on a terminal: cancelled" in done.stderr
