"""Budgets against the real runtime, a real SQLite file and real loopback servers: reserved before each
call (a refused call never reaches the endpoint), settled with the reported usage, shown by `oz0 jobs
show`, asked about, shared per day by a channel (access.yaml), over a flow's steps, and in /metrics."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from budget_kit import USAGE, Asker, mcp_counter, model_server, plugin_runtime, reviewer
from loopback import Loopback
from paths import SUPPORT
from plugin_kit import make_plugin

from oz0.edge.mcp.pool import servers
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.runtime.metrics import metrics_registry


def run(rt, agent: str, text: str = "review acme/api#42", **kw):
    return asyncio.run(rt.run(agent, text, **kw))


def jobs_show(home: Path, job_id: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OZ0_HOME": str(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    env.pop("OZ0_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "oz0.adapters.cli", "jobs", "show", job_id, *extra],
                          capture_output=True, text=True, env=env, timeout=60)


# lint ---------------------------------------------------------------------------------------------

def test_lint_names_the_json_path_of_each_budget_problem(tmp_path):
    root = make_plugin(tmp_path / "p", agents={
        "model": {"kind": "model", "base_url": "http://x/v1", "model": "m", "input": "text", "output": "text",
                  "budget": {"cost": 0.0000001, "per": "week"}},
        "hook": {"kind": "http", "url": "http://x", "input": "text", "output": "text", "max_tokens": 5,
                 "price": {"input_per_1k": 1}, "budget": {"on_exhausted": "ask"}},
    })
    (root / "flows").mkdir()
    (root / "flows" / "both.yaml").write_text(yaml.safe_dump({
        "input": "text", "output": "text", "budget": {"tokens": 0, "cost": "1.5"},
        "steps": [{"id": "one", "agent": "hook"}]}))
    found = {(f.file, f.path): f.message for f in lint_plugin(root).errors}
    assert "6 decimal places" in found[("agents/model.yaml", "$.budget.cost")]
    assert ("agents/model.yaml", "$.budget.per") in found
    assert "no max_tokens" in found[("agents/model.yaml", "$.max_tokens")]
    assert "no price" in found[("agents/model.yaml", "$.price")]
    assert "only a model agent takes max_tokens" in found[("agents/hook.yaml", "$.max_tokens")]
    assert "token prices" in found[("agents/hook.yaml", "$.price")]
    assert ("agents/hook.yaml", "$.budget") in found  # limits nothing
    assert ("flows/both.yaml", "$.budget.tokens") in found


def test_a_broken_access_yaml_budget_is_refused_naming_where(tmp_path):
    from oz0.edge.runtime.access import AccessError, AccessPolicy

    (tmp_path / "access.yaml").write_text(yaml.safe_dump({"budgets": [{"channels": ["C1"], "calls": 5},
                                                                      {"cost": 0.0000001}]}))
    with pytest.raises(AccessError) as bad:
        AccessPolicy.load(tmp_path)
    assert str(bad.value) == (f"{tmp_path / 'access.yaml'}: budgets[1].cost: 1e-07 has more than 6 decimal places; "
                              "amounts are kept to a millionth")
    (tmp_path / "access.yaml").write_text(yaml.safe_dump({"budgets": [{"channels": ["C1"], "per": "week"}]}))
    with pytest.raises(AccessError, match=r"budgets\[0\]: a budget limits at least one of tokens, cost or calls"):
        AccessPolicy.load(tmp_path)


def test_a_token_budget_over_a_model_without_max_tokens_is_misconfigured_saying_what_to_declare(tmp_path):
    with model_server() as server:
        agent = {k: v for k, v in reviewer(server.url).items() if k != "max_tokens"}
        flow = {"input": "text", "output": "text", "budget": {"tokens": 1000}, "steps": [{"id": "one", "agent": "reviewer"}]}
        rt = plugin_runtime(tmp_path, {"reviewer": agent}, flows={"review-flow": flow})
        job = run(rt, "review-flow")
    assert server.requests == [] and job.failure_kind == "Misconfigured"
    assert ("the budget (flow review-flow, per job) limits tokens, but agent reviewer declares no `max_tokens: N`"
            in job.failure_reason)
    rt.close()


# reserve, refuse, settle --------------------------------------------------------------------------

def test_a_budget_too_small_for_the_call_is_refused_before_the_endpoint_hears_of_it(tmp_path):
    with model_server() as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 50})})
        job = run(rt, "reviewer")
    assert server.requests == []
    assert (job.status, job.failure_kind, job.attempts) == ("failed", "BudgetExhausted", 1)
    assert job.failure_reason.startswith("the 50 tokens budget (agent reviewer, per job) has no room for the next "
                                         "call: its tokens limit is 50 tokens, 0 tokens spent and 0 tokens reserved")
    assert "this call needs up to" in job.failure_reason and "the call was not made" in job.failure_reason
    rt.close()


def test_a_call_settles_the_reported_usage_and_jobs_show_says_reserved_spent_left(tmp_path):
    with model_server("looks good") as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 10_000, "cost": 1})})
        job = run(rt, "reviewer")
    assert (job.status, job.output) == ("succeeded", "looks good")
    assert server.requests[0]["json"]["max_tokens"] == 100
    [state] = rt.budgets.report(job)
    assert (state.spent.tokens, state.spent.calls, state.reserved.tokens) == (sum(USAGE), 1, 0)
    assert state.spent.cost == 60_000 + 45_000  # 120 * $0.5/1k + 30 * $1.5/1k, in micro-units, exactly
    assert state.left("tokens") == 10_000 - 150
    rt.close()
    shown = jobs_show(tmp_path / "home", job.id)
    assert shown.returncode == 0, shown.stderr
    assert "agent reviewer, per job (on_exhausted: fail)" in shown.stdout
    assert "tokens: limit 10,000 tokens, reserved 0 tokens, spent 150 tokens, left 9,850 tokens" in shown.stdout
    assert "cost: limit $1.00, reserved $0.00, spent $0.105, left $0.895" in shown.stdout
    data = json.loads(jobs_show(tmp_path / "home", job.id, "--json").stdout)
    assert data["budgets"][0]["cost"] == {"limit": "1", "granted": "0", "reserved": "0", "spent": "0.105",
                                          "left": "0.895"}


def test_without_reported_usage_the_reserved_maximum_is_spent(tmp_path):
    with model_server(usage=None) as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 100_000})})
        job = run(rt, "reviewer")
    request = {k: v for k, v in server.requests[0]["json"].items() if k not in ("stream", "stream_options")}
    sent = len(json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode())
    [state] = rt.budgets.report(job)
    assert job.status == "succeeded"
    # the request's bytes (not the fields asking for a stream: no prompt) + max_tokens
    assert (state.spent.tokens, state.reserved.tokens) == (sent + 100, 0)
    rt.close()


def test_each_output_schema_retry_is_a_call(tmp_path):
    schema = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
    with model_server("not json") as server:
        agent = {k: v for k, v in reviewer(server.url, budget={"calls": 2}).items() if k != "output"}
        make_plugin(tmp_path / "plugin", agents={"reviewer": {**agent, "output_schema": "schemas/ok.json"}},
                    files={"schemas/ok.json": schema})
        rt = plugin_runtime(tmp_path, {})  # the plugin just written
        job = run(rt, "reviewer")
    assert len(server.requests) == 2
    assert job.failure_kind == "BudgetExhausted" and "its calls limit is 2 calls, 2 calls spent" in job.failure_reason
    rt.close()


def test_a_failed_call_releases_its_reservation(tmp_path):
    with Loopback(lambda data, headers, path: (503, "overloaded")) as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"calls": 5}, limits={"max_attempts": 2},
                                                            failures={"Unavailable": {"retryable": True}})})
        job = run(rt, "reviewer")
    assert (job.failure_kind, len(server.requests)) == ("Unavailable", 2)
    [state] = rt.budgets.report(job)
    assert (state.spent.calls, state.reserved.calls, state.left("calls")) == (0, 0, 5)
    rt.close()


def test_calls_budgets_of_http_and_mcp_agents(tmp_path):
    with Loopback(lambda data, headers, path: (200, "ok")) as server:
        rt = plugin_runtime(tmp_path, {
            "hook": {"kind": "http", "url": server.url, "input": "text", "output": "text",
                     "budget": {"calls": 2, "per": "day"}, "price": {"per_call": "0.01"}},
            "counter": mcp_counter(budget={"calls": 1, "per": "day"})}, mcp=True)
        hooks = [run(rt, "hook", f"n{i}") for i in range(3)]
        counted = [run(rt, "counter", json.dumps({"note": f"c{i}"})) for i in range(2)]
    servers().close()
    assert counted[0].status == "succeeded", counted[0].failure_reason
    assert [j.status for j in hooks] == ["succeeded", "succeeded", "failed"] and len(server.requests) == 2
    assert "the 2 calls budget (agent hook, per day)" in hooks[2].failure_reason
    assert "its calls limit is 2 calls, 2 calls spent" in hooks[2].failure_reason
    assert rt.budgets.report(hooks[0])[0].spent.cost == 20_000  # 2 calls at $0.01
    assert [j.status for j in counted] == ["succeeded", "failed"] and counted[1].failure_kind == "BudgetExhausted"
    installed = Path(rt.installed()[0].path)  # the server runs from the installed copy of the plugin
    assert (installed / "calls.log").read_text() == "c0\n"  # the refused call never reached the tool
    rt.close()


def test_a_per_job_budget_is_each_jobs_own(tmp_path):
    with Loopback(lambda data, headers, path: (200, "ok")) as server:
        rt = plugin_runtime(tmp_path, {"hook": {"kind": "http", "url": server.url, "input": "text", "output": "text",
                                                "budget": {"calls": 1}}})
        jobs = [run(rt, "hook", f"n{i}") for i in range(3)]
    assert [j.status for j in jobs] == ["succeeded"] * 3 and len(server.requests) == 3
    assert [rt.budgets.report(j)[0].ref.period for j in jobs] == [f"job:{j.id}" for j in jobs]
    rt.close()


def test_a_flows_budget_covers_its_steps(tmp_path):
    with Loopback(lambda data, headers, path: (200, "ok")) as server:
        hook = {"kind": "http", "url": server.url, "input": "text", "output": "text"}
        flow = {"input": "text", "output": "text", "budget": {"calls": 1},
                "steps": [{"id": "first", "agent": "hook"}, {"id": "second", "agent": "hook"}]}
        rt = plugin_runtime(tmp_path, {"hook": hook}, flows={"twice": flow})
        job = run(rt, "twice", "go")
    assert len(server.requests) == 1
    assert (job.status, job.failure_kind) == ("failed", "BudgetExhausted")
    assert "step second" in job.failure_reason and "the 1 call budget (flow twice, per job)" in job.failure_reason
    first, second = rt.children(job.id)
    assert (first.status, second.failure_kind) == ("succeeded", "BudgetExhausted")
    [state] = rt.budgets.report(second)  # the step is covered by its flow's budget
    assert (state.ref.label, state.spent.calls, state.left("calls")) == ("flow twice, per job", 1, 0)
    rt.close()


def test_under_the_job_engine_a_flows_budget_covers_its_durable_steps(tmp_path):
    with Loopback(lambda data, headers, path: (200, "ok")) as server:
        hook = {"kind": "http", "url": server.url, "input": "text", "output": "text"}
        flow = {"input": "text", "output": "text", "budget": {"calls": 3, "per": "day"},
                "steps": [{"id": "first", "agent": "hook"}, {"id": "second", "agent": "hook"}]}
        rt = plugin_runtime(tmp_path, {"hook": hook}, flows={"twice": flow})
        jobs = [rt.submit("twice", f"go {i}")[0].id for i in range(2)]
        rt.close()
        env = {**os.environ, "OZ0_HOME": str(tmp_path / "home"), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        env.pop("OZ0_DATABASE_URL", None)
        done = subprocess.run([sys.executable, str(SUPPORT / "budget_engine.py"), *jobs],
                              capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert (first["status"], first["steps"]) == ("succeeded", ["succeeded", "succeeded"])
    assert (second["kind"], second["steps"]) == ("BudgetExhausted", ["succeeded", "BudgetExhausted"])
    assert "the 3 calls budget (flow twice, per day)" in second["reason"]
    assert len(server.requests) == 3


def test_an_access_yaml_channel_budget_is_shared_per_day(tmp_path):
    with Loopback(lambda data, headers, path: (200, "ok")) as server:
        rt = plugin_runtime(tmp_path, {"hook": {"kind": "http", "url": server.url, "input": "text", "output": "text"}})
        (tmp_path / "home" / "access.yaml").write_text(yaml.safe_dump({"budgets": [
            {"name": "ops-room", "platform": "slack", "channels": ["C0456"], "calls": 1}]}))

        def ask(channel: str):
            return run(rt, "hook", "hi", channel=f"slack:{channel}", requester="slack:U1",
                       reply_to=ReplyRef("slack", 1, {"team": "T1", "channel": channel, "user": "U1"}),
                       workspace="T1", channel_id=channel)

        first, second, elsewhere = ask("C0456"), ask("C0456"), ask("C0999")
    assert [j.status for j in (first, second, elsewhere)] == ["succeeded", "failed", "succeeded"]
    assert len(server.requests) == 2
    assert second.failure_reason.startswith("the 1 call budget (access.yaml budget ops-room, per day) has no room")
    [state] = rt.budgets.report(second)
    assert state.ref.period.startswith("day:") and (state.spent.calls, state.left("calls")) == (1, 0)
    assert rt.budgets.report(elsewhere) == []
    rt.close()


# on_exhausted: ask --------------------------------------------------------------------------------

def test_ask_approved_grants_this_tree_more_and_the_job_goes_on(tmp_path):
    with Loopback(lambda data, headers, path: (200, "ok")) as server:
        rt = plugin_runtime(tmp_path, {"hook": {"kind": "http", "url": server.url, "input": "text", "output": "text",
                                                "price": {"per_call": 0.12},
                                                "budget": {"cost": 1, "per": "day", "on_exhausted": "ask"}}})
        asker = Asker(rt, allow=True)
        spent = [asker.run("hook", f"n{i}", requester="cli:ana") for i in range(8)]  # $0.96 of $1.00
        ended = asker.run("hook", "ninth", requester="cli:ana")
        asker.allow = False
        other = asker.run("hook", "tenth", requester="cli:ana")  # another tree: the grant is not its
    assert all(j.status == "succeeded" for j in spent)
    first, second = asker.asked
    assert first.job_id == ended.id and first.message == (
        "this job needs up to $0.08 more of its $1.00 budget (agent hook, per day); allow?")
    assert first.answer_schema["properties"]["allow"]["type"] == "boolean"
    assert first.source == "Budget (agent hook, per day)"  # chat shows "Budget (agent hook, per day) asks"
    assert (ended.status, len(server.requests)) == ("succeeded", 9)
    [state] = rt.budgets.report(ended)
    assert (state.granted.cost, state.spent.cost, state.left("cost")) == (80_000, 1_080_000, 0)
    assert [(a.action, a.actor) for a in rt.audit_log(limit=50) if a.action == "budget.granted"] == [
        ("budget.granted", "cli:ana")]
    assert second.job_id == other.id and second.message.startswith("this job needs up to $0.20 more")
    assert other.failure_kind == "BudgetExhausted" and other.failure_reason.endswith(
        "(cli:ana said no when asked to allow more)")
    rt.close()
    shown = jobs_show(tmp_path / "home", ended.id).stdout
    day = datetime.datetime.fromtimestamp(ended.created, datetime.UTC).strftime("%Y-%m-%d")
    assert f"agent hook, per day ({day} UTC; on_exhausted: ask)" in shown
    assert "cost: limit $1.00 (+$0.08 granted), reserved $0.00, spent $1.08, left $0.00" in shown
    assert "granted $0.08 for this job by cli:ana" in shown


def test_ask_refused_ends_the_job_budget_exhausted_without_a_call(tmp_path):
    with model_server() as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 50, "on_exhausted": "ask"})})
        asker = Asker(rt, allow=False)
        ended = asker.run("reviewer", "review it", requester="cli:ana")
    assert server.requests == []
    [question] = asker.asked
    assert question.message.startswith("this job needs up to ") and question.message.endswith(
        " more of its 50 tokens budget (agent reviewer, per job); allow?")
    assert ended.failure_kind == "BudgetExhausted" and ended.failure_reason.endswith(
        "(cli:ana said no when asked to allow more)")
    rt.close()


def test_ask_unanswered_ends_the_job_before_its_time_limit(tmp_path):
    with model_server() as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 50, "on_exhausted": "ask"},
                                                            limits={"timeout_s": 3.5})})
        asker = Asker(rt, allow=None)
        ended = asker.run("reviewer", "review it", requester="cli:ana")
    assert server.requests == [] and len(asker.asked) == 1
    assert ended.failure_kind == "BudgetExhausted" and ended.failure_reason.endswith(
        "(nobody answered in time when asked to allow more)")
    rt.close()


def test_ask_where_no_channel_can_ask_ends_the_job_at_once(tmp_path):
    with model_server() as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 50, "on_exhausted": "ask"})})
        ended = run(rt, "reviewer", "review it")
    assert server.requests == [] and rt.questions.question(ended.id) is None
    assert ended.failure_kind == "BudgetExhausted" and ended.failure_reason.endswith(
        "(on_exhausted is ask, but no channel can ask where the job was asked; ask it from chat or the console)")
    rt.close()


def test_a_step_asks_through_its_flow_and_the_grant_covers_the_tree(tmp_path):
    with Loopback(lambda data, headers, path: (200, "ok")) as server:
        hook = {"kind": "http", "url": server.url, "input": "text", "output": "text"}
        flow = {"input": "text", "output": "text", "budget": {"calls": 1, "on_exhausted": "ask"},
                "steps": [{"id": "first", "agent": "hook"}, {"id": "second", "agent": "hook"}]}
        rt = plugin_runtime(tmp_path, {"hook": hook}, flows={"twice": flow})
        asker = Asker(rt, allow=True)
        job = asker.run("twice", "go", requester="cli:ana")
    assert (job.status, len(server.requests)) == ("succeeded", 2)
    [question] = asker.asked
    assert question.job_id == job.id  # asked on the flow's job, where its asker sees it
    assert question.message == "this job needs up to 1 call more of its 1 call budget (flow twice, per job); allow?"
    [state] = rt.budgets.report(job)
    assert (state.granted.calls, state.spent.calls) == (1, 2)
    rt.close()


# /metrics ----------------------------------------------------------------------------------------

def test_metrics_export_spend_by_agent_and_channel(tmp_path):
    from prometheus_client import generate_latest

    with model_server() as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url)})  # no budget: spend is still counted
        run(rt, "reviewer", channel="slack:C0456")
        run(rt, "reviewer", channel="slack:C0456")
    text = generate_latest(metrics_registry(rt)).decode()
    assert 'oz0_budget_spent_tokens_total{agent="reviewer",channel="slack:C0456"} 300.0' in text
    assert 'oz0_budget_spent_cost_total{agent="reviewer",channel="slack:C0456"} 0.21' in text
    assert 'oz0_budget_spent_calls_total{agent="reviewer",channel="slack:C0456"} 2.0' in text
    rt.close()


def test_the_job_page_and_the_api_show_the_budgets(tmp_path):
    import httpx
    from console_plugin import ConsoleThread

    with model_server() as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"cost": "0.50"})})
        job = run(rt, "reviewer")
    with ConsoleThread(rt) as console, httpx.Client(base_url=console.url, timeout=20) as http:
        api = http.get(f"/v1/jobs/{job.id}").json()
        page = http.get(f"/jobs/{job.id}").text
    assert api["job"]["budgets"][0]["budget"] == "agent reviewer, per job"
    assert api["job"]["budgets"][0]["cost"] == {"limit": "0.5", "granted": "0", "reserved": "0",
                                                "spent": "0.105", "left": "0.395"}
    assert "<h2>Budgets</h2>" in page and "agent reviewer, per job" in page
    assert "<td>$0.50</td><td>$0.00</td><td>$0.00</td><td>$0.105</td><td>$0.395</td>" in page
    rt.close()


# delegation ---------------------------------------------------------------------------------------

DELEGATOR = '''
async def triage(value, ctx):
    first = await ctx.ask("reviewer", "first look")
    second = await ctx.ask("reviewer", "second look")
    return first + " / " + second
'''


def test_a_delegating_agents_budget_covers_the_calls_of_the_jobs_it_delegates_to(tmp_path):
    with model_server("looks good") as server:
        agents = {"reviewer": reviewer(server.url),
                  "triage": {"kind": "python", "entry": "triage_agent:triage", "input": "text", "output": "text",
                             "budget": {"calls": 1}}}
        make_plugin(tmp_path / "plugin", agents=agents, files={"triage_agent.py": DELEGATOR})
        rt = plugin_runtime(tmp_path, agents)
        job = run(rt, "triage")
    assert [r["json"]["messages"][-1]["content"] for r in server.requests] == ["first look"]
    assert (job.status, job.failure_kind) == ("failed", "BudgetExhausted")
    assert "the 1 call budget (agent triage, per job) has no room for the next call" in job.failure_reason
    first, second = rt.children(job.id)
    assert (first.status, first.output, second.failure_kind) == ("succeeded", "looks good", "BudgetExhausted")
    rt.close()
