"""Issue 28 item 1: a python agent's `ctx.ask_person` answer schemas declared under `asks:` in its file:
linted, in OpenAPI `x-oz0-person-steps` and the contract hash; an undeclared ask refused at run time."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from oz0.edge.contracts.openapi import openapi_document
from oz0.edge.plugins.install import install_plugin
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.runner import Runtime
from plugin_kit import make_plugin

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
    assert other.agent("declared").contract_hash != agent.contract_hash
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
