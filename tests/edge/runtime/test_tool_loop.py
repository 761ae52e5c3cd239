"""Model agents that use tools (edge.runtime.tool_loop), against scripted stand-ins of the OpenAI and
Anthropic wires on loopback, a real python agent as a tool (a child job) and real MCP servers over
stdio (tests/support/mcp_servers/ci_server.py, counting its calls, and mcp-server-time)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import yaml
from loop_kit import loop_plugin
from model_standins import ModelStandin, Turn

from oz0.edge.documents.compat import UpgradeRefused
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.documents.openapi import openapi_document
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.loop_trace import read_trace, trace_lines

KEY = "sk-test-loop-0123456789"
FINAL = Turn(text='{"verdict": "flaky", "run_id": 4411}')


@pytest.fixture(autouse=True)
def model_key(monkeypatch, tmp_path):
    monkeypatch.setenv("OZ0_TEST_MODEL_KEY", KEY)
    monkeypatch.setenv("OZ0_TEST_CALLS", str(tmp_path / "calls.txt"))


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def run(rt, text="why did main fail?", answer=None, **kw):
    """Run triage; `answer(job, question)` answers each question it asks (a channel that shows them)."""
    seen: list[str] = []

    async def main():
        job, _ = rt.submit("triage", text, **kw)
        task = asyncio.ensure_future(rt.execute(job.id, on_progress=lambda p: seen.append(p.message)))
        answered: set[str] = set()
        while not task.done():
            question = rt.question(job.id) if answer is not None else None
            if question is not None and question.step not in answered:
                answered.add(question.step)
                await answer(rt.job(job.id), question)
            await asyncio.sleep(0.02)
        return await task

    if answer is not None:
        rt.shows_questions("cli")
    return asyncio.run(main()), seen


def test_the_loop_calls_an_agent_and_mcp_tools_in_parallel_and_answers_under_its_contract(tmp_path):
    script = [Turn(calls=(("ci-runs", {"branch": "main"}),)),
              Turn(calls=(("ci_log", {"run_id": 4411}), ("ci_log", {"run_id": 4412}))), FINAL]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, seen = run(rt)
        trace = read_trace(rt.store, job.id)
        children = rt.children(job.id)
    assert (job.status, job.output) == ("succeeded", {"verdict": "flaky", "run_id": 4411})
    first = model.requests[0]
    assert first["headers"]["authorization"] == f"Bearer {KEY}"
    tools = {t["function"]["name"]: t["function"] for t in first["json"]["tools"]}
    assert set(tools) == {"ci-runs", "ci_log", "delete_branch", "ask_person"}
    assert tools["ci-runs"]["parameters"]["required"] == ["branch"]  # the agent's input contract
    assert tools["ci-runs"]["description"] == "The CI runs of a branch"
    assert tools["ci_log"]["parameters"]["properties"]["run_id"]["type"] == "integer"  # the MCP inputSchema
    assert first["json"]["response_format"]["json_schema"]["schema"]["required"] == ["verdict"]
    assert calls(tmp_path) == ["ci-runs main", 'ci_log {"run_id": 4411}', 'ci_log {"run_id": 4412}']
    assert [json.loads(r) for r in model.tool_results(2)[1:]][0]["run_id"] == 4411
    assert [c.agent for c in children] == ["ci-runs"] and children[0].status == "succeeded"
    assert seen[:4] == ["step 1 of ≤10: asking the model", 'step 1 of ≤10: calling ci-runs(branch="main")',
                        "step 2 of ≤10: asking the model", "step 2 of ≤10: calling ci_log(run_id=4411)"]
    assert [(t["kind"], t["name"]) for t in trace] == [
        ("model", "triage-1"), ("tool", "ci-runs"), ("model", "triage-1"), ("tool", "ci_log"), ("tool", "ci_log"),
        ("model", "triage-1")]
    assert trace[0]["detail"]["tokens"] == {"input": 11, "output": 7}
    assert trace[1]["detail"]["result"] == {"runs": [4411, 4412]}
    assert "ci_log({\"run_id\":4411}) -> {\"run_id\":4411" in "\n".join(trace_lines(trace))


def test_invalid_arguments_never_reach_the_tool_and_go_back_naming_the_path_and_rule(tmp_path):
    script = [Turn(calls=(("ci_log", {"run_id": "not-a-number"}),)), Turn(calls=(("ci_log", {"run_id": 7}),)), FINAL]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, _ = run(rt)
        trace = read_trace(rt.store, job.id)
    assert job.status == "succeeded"
    assert calls(tmp_path) == ['ci_log {"run_id": 7}']  # the bad call was never made
    back = json.dumps(model.tool_results(1))
    assert "$.run_id" in back and "type" in back and "integer" in back
    assert trace[1]["detail"]["error"].startswith("the arguments of ci_log at $.run_id")
    assert len(model.requests) == 3  # the refused call cost a step


def test_a_destructive_tool_waits_for_confirm_and_a_cancel_goes_back_as_declined(tmp_path):
    script = [Turn(calls=(("delete_branch", {"name": "old"}),)), Turn(calls=(("delete_branch", {"name": "tmp"}),)),
              FINAL]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        asked: list[tuple[str, list[str]]] = []

        async def answer(job, question):  # the asker's channel: the call has not been made when it asks
            asked.append((question.message, calls(tmp_path)))
            choice = "Confirm" if len(asked) == 1 else "Cancel"
            await asyncio.sleep(0.05)
            rt.answer(job.id, question.step, action="accept", content={"choice": choice}, by=job.requester)

        job, _ = run(rt, answer=answer)
    assert job.status == "succeeded"
    assert [before for _, before in asked] == [[], ['delete_branch {"name": "old"}']]
    assert "delete_branch" in asked[0][0] and "destructive" in asked[0][0] and '"old"' in asked[0][0]
    assert calls(tmp_path) == ['delete_branch {"name": "old"}']  # cancelled: never made
    assert "The person declined" in model.tool_results(2)[-1]


def test_ask_person_takes_the_models_question_and_schema_and_feeds_the_answer_back(tmp_path):
    schema = {"type": "object", "properties": {"rerun": {"type": "boolean"}}, "required": ["rerun"]}
    too_big = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(6)}}
    script = [Turn(calls=(("ask_person", {"question": "Rerun?", "answer_schema": too_big}),)),
              Turn(calls=(("ask_person", {"question": "Rerun 4411?", "answer_schema": schema}),)), FINAL]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        questions = []

        async def answer(job, question):
            questions.append(question)
            rt.answer(job.id, question.step, action="accept", content={"rerun": True}, by=job.requester)

        job, _ = run(rt, answer=answer)
        trace = read_trace(rt.store, job.id)
    assert job.status == "succeeded", (job.failure_kind, job.failure_reason)
    assert [q.message for q in questions] == ["Rerun 4411?"] and questions[0].answer_schema == schema
    assert "at most 5" in model.tool_results(1)[0]
    assert json.loads(model.tool_results(2)[-1]) == {"action": "accept", "answer": {"rerun": True}}
    assert [t["kind"] for t in trace].count("person") == 1


def test_a_wrong_final_answer_goes_back_at_most_twice(tmp_path):
    script = [Turn(text='{"verdict": "maybe"}')]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, _ = run(rt)
    assert (job.status, job.failure_kind) == ("failed", "InvalidOutput")
    assert len(model.requests) == 3
    assert "after 3 tries" in job.failure_reason and "$.verdict" in job.failure_reason


def test_max_steps_counts_model_requests(tmp_path):
    with ModelStandin([Turn(calls=(("ci_log", {"run_id": 1}),))]) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url, limits={"max_steps": 3})
        job, _ = run(rt)
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    assert "limits.max_steps is 3" in job.failure_reason
    assert len(model.requests) == 3 and len(calls(tmp_path)) == 3


def test_an_overspend_is_settled_at_the_report_and_the_next_reservation_is_refused(tmp_path):
    script = [Turn(calls=(("ci_log", {"run_id": 1}),), usage=(10, 9000)), FINAL]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url, budget={"tokens": 8000})
        job, _ = run(rt)
    assert (job.status, job.failure_kind) == ("failed", "BudgetExhausted")
    assert len(model.requests) == 1  # the provider overspent once; nothing after it was reserved


def test_secrets_are_redacted_from_tool_errors_fed_back_and_from_the_trace(tmp_path):
    script = [Turn(calls=(("ci-runs", {"branch": "leak"}),)), FINAL]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        (tmp_path / "p" / "impl.py").write_text(  # the installed copy is the one that runs
            "import os\ndef ci_runs(value):\n    raise RuntimeError('key=' + os.environ['OZ0_TEST_MODEL_KEY'])\n")
        installed = Path(rt.installed()[0].path) / "impl.py"
        installed.write_text((tmp_path / "p" / "impl.py").read_text())
        job, _ = run(rt)
        trace = read_trace(rt.store, job.id)
    assert job.status == "succeeded"
    sent = json.dumps([r["json"] for r in model.requests[1:]])
    assert "ci-runs failed" in sent and "[redacted]" in sent and KEY[:12] not in sent
    assert KEY[:12] not in json.dumps(trace)


def test_the_anthropic_wire(tmp_path):
    script = [Turn(calls=(("ci_log", {"run_id": 4411}),)), Turn(calls=(("final_result", {"verdict": "broken"}),))]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url.removesuffix("/v1"), provider="anthropic")
        job, _ = run(rt)
    assert (job.status, job.output) == ("succeeded", {"verdict": "broken"})
    assert [r["path"] for r in model.requests] == ["/v1/messages", "/v1/messages"]
    headers = model.requests[0]["headers"]  # the SDK's own way to send the key
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    sent = model.requests[1]["json"]["messages"]
    assert sent[-1]["content"][0]["type"] == "tool_result" and "4411" in json.dumps(sent[-1])
    assert calls(tmp_path) == ['ci_log {"run_id": 4411}']


def test_mcp_server_time_as_a_tool(tmp_path):
    script = [Turn(calls=(("get_current_time", {"timezone": "Etc/UTC"}),)), FINAL]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        root = tmp_path / "p"
        manifest = yaml.safe_load((root / "plugin.yaml").read_text())
        manifest["servers"]["time"] = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
        (root / "plugin.yaml").write_text(yaml.safe_dump(manifest))
        agent = yaml.safe_load((root / "agents" / "triage.yaml").read_text())
        agent["tools"] = [{"server": "time", "only": ["get_current_time"]}]
        (root / "agents" / "triage.yaml").write_text(yaml.safe_dump(agent))
        install_plugin(rt, load_plugin(root), allow_breaking=True, force=True)  # the same version, edited
        job, _ = run(rt)
    assert job.status == "succeeded"
    assert [t["function"]["name"] for t in model.requests[0]["json"]["tools"]] == ["get_current_time"]
    assert "Etc/UTC" in model.tool_results(1)[0]


# contracts --------------------------------------------------------------------------------------

def test_tools_are_part_of_the_contract_and_removing_one_is_breaking(tmp_path):
    rt = loop_plugin(tmp_path / "p", tmp_path / "h", "http://127.0.0.1:9/v1")
    spec = rt.agent("triage")
    assert spec.limits.max_steps == 10  # as its file gives it
    doc = openapi_document([spec], title="t", version="1")
    assert doc["paths"]["/agents/triage/runs"]["post"]["x-oz0-tools"] == [
        {"agent": "ci-runs"}, {"server": "ci", "tool_annotations": {"delete_branch": {"destructiveHint": True}}},
        {"ask_person": True}]
    root = tmp_path / "p"
    agent = yaml.safe_load((root / "agents" / "triage.yaml").read_text())
    agent["tools"] = [{"agent": "ci-runs"}, "ask_person"]
    (root / "agents" / "triage.yaml").write_text(yaml.safe_dump(agent))
    manifest = yaml.safe_load((root / "plugin.yaml").read_text())
    manifest["version"] = "0.1.1"
    (root / "plugin.yaml").write_text(yaml.safe_dump(manifest))
    narrower = load_plugin(root)
    assert contract_hash(narrower.agent("triage")) != contract_hash(spec)
    with pytest.raises(UpgradeRefused) as refused:
        install_plugin(rt, narrower)
    assert "triage: tools: every tool of server ci removed from its tools" in str(refused.value)


def test_loading_and_lint_refuse_unknown_servers_agents_and_duplicates(tmp_path):
    rt = loop_plugin(tmp_path / "p", tmp_path / "h", "http://127.0.0.1:9/v1")
    rt.close()
    root = tmp_path / "p"
    agent = yaml.safe_load((root / "agents" / "triage.yaml").read_text())
    agent["tools"] = [{"server": "github"}]
    (root / "agents" / "triage.yaml").write_text(yaml.safe_dump(agent))
    with pytest.raises(PluginError) as unknown:
        load_plugin(root)
    assert "tool server 'github' is not declared in plugin.yaml `servers:` (declared: ci)" in str(unknown.value)
    agent["tools"] = [{"agent": "ci-runs"}, {"agent": "ci-runs"}, {"agent": "nope"}]
    (root / "agents" / "triage.yaml").write_text(yaml.safe_dump(agent))
    with pytest.raises(PluginError, match="two tools are named 'ci-runs'"):
        load_plugin(root)
    agent["tools"] = [{"agent": "nope"}]
    agent.pop("limits", None)
    (root / "agents" / "triage.yaml").write_text(yaml.safe_dump(agent))
    report = lint_plugin(root, installed={})
    messages = [(f.severity, f.path, f.message) for f in report.findings]
    assert ("error", "$.tools[0].agent", "tool agent 'nope' is not an agent of this plugin nor an installed one") \
        in messages
    assert ("error", "$.limits.max_steps", "a model agent with tools must give limits.max_steps, the most model "
            "requests its loop makes") in messages


# where the trace is seen ----------------------------------------------------------------------

def test_jobs_show_plugin_list_and_the_console_show_the_loop(tmp_path, monkeypatch, capsys):

    from oz0.adapters.cli import main

    script = [Turn(calls=(("ci_log", {"run_id": 4411}),)), FINAL]
    with ModelStandin(script) as model:
        rt = loop_plugin(tmp_path / "p", tmp_path / "h", model.url)
        job, _ = run(rt)
        rt.close()
    monkeypatch.setenv("OZ0_HOME", str(tmp_path / "h"))
    monkeypatch.delenv("OZ0_DATABASE_URL", raising=False)
    assert main(["jobs", "show", job.id]) == 0
    shown = capsys.readouterr().out
    assert "Trace" in shown and "1. model  triage-1: 11 in / 7 out tokens, asked for ci_log" in shown
    assert '2. tool   ci_log({"run_id":4411}) -> {"run_id":4411' in shown
    assert main(["jobs", "show", job.id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["kind"] for t in data["trace"]] == ["model", "tool", "model"]
    assert data["trace"][1]["detail"]["arguments"] == {"run_id": 4411}
    assert main(["plugin", "list"]) == 0
    listed = capsys.readouterr().out
    assert "3 tools, ≤10" in listed and "steps" in listed  # the table wraps its cells
    assert main(["plugin", "list", "--json"]) == 0
    agents = {a["name"]: a for a in json.loads(capsys.readouterr().out)["plugins"][0]["agents"]}
    assert agents["triage"]["max_steps"] == 10 and agents["triage"]["tools"][2] == {"ask_person": True}
    assert "tools" not in agents["ci-runs"]


def test_install_refuses_a_tool_the_server_does_not_list(tmp_path):
    rt = loop_plugin(tmp_path / "p", tmp_path / "h", "http://127.0.0.1:9/v1")
    root = tmp_path / "p"
    agent = yaml.safe_load((root / "agents" / "triage.yaml").read_text())
    agent["tools"] = [{"server": "ci", "only": ["ci_log", "ci_rerun"]}]
    (root / "agents" / "triage.yaml").write_text(yaml.safe_dump(agent))
    with pytest.raises(PluginError) as refused:
        install_plugin(rt, load_plugin(root), allow_breaking=True, force=True)  # the same version, edited
    assert "server 'ci' lists no tool 'ci_rerun' (it lists: ci_log, delete_branch)" in str(refused.value)
