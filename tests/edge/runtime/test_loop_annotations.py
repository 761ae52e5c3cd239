"""The annotations an MCP server lists for a tool loop's `tools: - server: ci` are stored at install:
shown by `oz0 plugin list --json` and OpenAPI `x-oz0-tools` from the store, and used by the confirmation
rule, so a tool the server listed as destructive at install asks its person before the call even when
the server, started afresh, no longer says so. A real MCP server over stdio, the stand-in model."""

from __future__ import annotations

import asyncio
import json

from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn

from oz0.adapters.cli import main
from oz0.edge.documents.openapi import openapi_document
from oz0.edge.mcp.pool import servers
from oz0.edge.runtime.runner import Runtime

KEY = "sk-test-hints-0123456789"
DESTRUCTIVE = {"delete_branch": {"destructiveHint": True}}


def test_listed_annotations_are_stored_shown_and_confirmed_before_any_job(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OZ0_TEST_MODEL_KEY", KEY)
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("OZ0_TEST_CALLS", str(calls))
    no_hints = tmp_path / "no-hints"
    script = [Turn(calls=(("delete_branch", {"name": "old"}),)), Turn(text='{"verdict": "broken"}')]
    with ModelStandin(script) as model:
        loop_plugin(tmp_path / "p", tmp_path / "h", model.url, server_args=(str(no_hints),)).close()
        servers().close()        # the listing of install is gone with its session
        no_hints.write_text("")  # the server, started again, lists no annotations
        monkeypatch.setenv("OZ0_HOME", str(tmp_path / "h"))
        monkeypatch.delenv("OZ0_DATABASE_URL", raising=False)
        assert main(["plugin", "list", "--json"]) == 0
        agents = {a["name"]: a for a in json.loads(capsys.readouterr().out)["plugins"][0]["agents"]}
        assert agents["triage"]["tools"][1] == {"server": "ci", "tool_annotations": DESTRUCTIVE}
        runtime = Runtime(tmp_path / "h")
        try:
            doc = openapi_document(runtime.agents(), title="t", version="1")
            assert doc["paths"]["/agents/triage/runs"]["post"]["x-oz0-tools"][1] == {
                "server": "ci", "tool_annotations": DESTRUCTIVE}
            assert not calls.exists()  # shown before any job reached the server
            runtime.shows_questions("cli")
            asked: list[str] = []

            async def ask() -> None:
                job, _ = runtime.submit("triage", "clean up", requester="cli:ana")
                task = asyncio.ensure_future(runtime.execute(job.id))
                while not task.done():
                    question = runtime.question(job.id)
                    if question is not None and question.step not in asked:
                        asked.append(question.step)
                        runtime.answer(job.id, question.step, action="accept", content={"choice": "Cancel"},
                                       by="cli:ana")
                    await asyncio.sleep(0.02)
                ended = await task
                assert ended.status == "succeeded", ended.failure_reason

            asyncio.run(ask())
        finally:
            runtime.close()
            servers().close()
    assert asked == ["confirm-2"]
    assert not calls.exists() or "delete_branch" not in calls.read_text()  # cancelled: never made
    assert "The person declined" in model.tool_results(1)[-1]
