"""Where a declared budget and price are shown before any job runs: `oz0 plugin list` (its JSON and
its table), `GET /v1/agents`, the console's agent page and the OpenAPI documents (`/openapi.json`
and `oz0 plugin openapi`). Money is a decimal string, exact as declared, as `oz0 jobs show --json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from budget_kit import plugin_runtime, reviewer
from openapi_spec_validator import validate

from oz0.edge.flows.engine import FLOW_ENGINE

URL = "http://127.0.0.1:9"  # never called: nothing here runs a job
REVIEWER_BUDGET = {"tokens": 20000, "cost": "0.5", "per": "job", "on_exhausted": "ask"}
REVIEWER_PRICE = {"input_per_1k": "0.5", "output_per_1k": "1.5", "per_call": "0"}
HOOK_PRICE = {"input_per_1k": "0", "output_per_1k": "0", "per_call": "0.000125"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    agents = {"reviewer": reviewer(URL, budget={"tokens": 20000, "cost": 0.5, "on_exhausted": "ask"}),
              "hook": {"kind": "http", "url": URL, "input": "text", "output": "text",
                       "price": {"per_call": "0.000125"}, "budget": {"calls": 3, "per": "day"}},
              "plain": {"kind": "http", "url": URL, "input": "text", "output": "text"}}
    flows = {"twice": {"input": "text", "output": "text", "budget": {"calls": 2},
                       "steps": [{"id": "first", "agent": "hook"}, {"id": "second", "agent": "hook"}]}}
    plugin_runtime(tmp_path, agents, flows=flows).close()
    return tmp_path / "home"


def oz0(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OZ0_HOME": str(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    env.pop("OZ0_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "oz0.adapters.cli", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def test_plugin_list_shows_each_agents_budget_and_price(home):
    done = oz0(home, "plugin", "list", "--json")
    assert done.returncode == 0, done.stderr
    [plugin] = json.loads(done.stdout)["plugins"]
    agents = {a["name"]: a for a in plugin["agents"]}
    assert (agents["reviewer"]["budget"], agents["reviewer"]["price"]) == (REVIEWER_BUDGET, REVIEWER_PRICE)
    assert agents["hook"]["budget"] == {"calls": 3, "per": "day", "on_exhausted": "fail"}
    assert agents["hook"]["price"] == HOOK_PRICE
    assert (agents["plain"]["budget"], agents["plain"]["price"]) == (None, None)

    table = oz0(home, "plugin", "list")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert "budget" in lines[2]
    [hook] = [line for line in lines if "│ hook " in line]
    assert "3 calls per day" in hook
    reviewer_lines = "".join(line for line in lines if "reviewer" in line or "per job (ask)" in line)
    assert "20,000 tokens," in reviewer_lines and "$0.50 per job (ask)" in reviewer_lines
    [plain] = [line for line in lines if "│ plain " in line]
    assert plain.rstrip(" │").endswith("-")


def test_a_plugin_list_without_budgets_has_no_budget_column(tmp_path):
    plugin_runtime(tmp_path, {"plain": {"kind": "http", "url": URL, "input": "text", "output": "text"}}).close()
    done = oz0(tmp_path / "home", "plugin", "list")
    assert done.returncode == 0, done.stderr
    assert "contract" in done.stdout and "budget" not in done.stdout


def test_the_api_the_agent_page_and_the_openapi_document_show_the_budget_and_price(home):
    from console_plugin import ConsoleThread

    from oz0.edge.runtime.runner import Runtime

    rt = Runtime(home, flow_engine=FLOW_ENGINE)
    with ConsoleThread(rt) as console, httpx.Client(base_url=console.url, timeout=20) as http:
        listed = http.get("/v1/agents").json()
        page = http.get("/agents/reviewer").text
        hook_page = http.get("/agents/hook").text
        plain_page = http.get("/agents/plain").text
        flow_page = http.get("/flows/twice").text
        doc = http.get("/openapi.json").json()
    rt.close()
    agents = {a["name"]: a for a in listed["agents"]}
    assert (agents["reviewer"]["budget"], agents["reviewer"]["price"]) == (REVIEWER_BUDGET, REVIEWER_PRICE)
    assert agents["twice"]["budget"] == {"calls": 2, "per": "job", "on_exhausted": "fail"}
    assert (agents["plain"]["budget"], agents["plain"]["price"]) == (None, None)

    assert ('<p class="muted budget" id="budget">Budget: 20,000 tokens, $0.50 per job (on_exhausted: ask) · '
            "Price: $0.50 per 1k prompt tokens, $1.50 per 1k answer tokens</p>") in page
    assert "Budget: 3 calls per day (on_exhausted: fail) · Price: $0.000125 a call</p>" in hook_page
    assert "Budget: 2 calls per job (on_exhausted: fail)</p>" in flow_page
    assert 'id="budget"' not in plain_page

    validate(doc)
    review = doc["paths"]["/agents/reviewer/runs"]["post"]
    assert (review["x-budget"], review["x-price"]) == (REVIEWER_BUDGET, REVIEWER_PRICE)
    assert review["x-contract-hash"] == agents["reviewer"]["contract_hash"]
    assert doc["paths"]["/flows/twice/runs"]["post"]["x-budget"] == {"calls": 2, "per": "job", "on_exhausted": "fail"}
    plain = doc["paths"]["/agents/plain/runs"]["post"]
    assert "x-budget" not in plain and "x-price" not in plain
    listed_schema = doc["components"]["schemas"]["AgentList"]["properties"]["agents"]["items"]["properties"]
    assert {"budget", "price"} <= set(listed_schema)


def test_plugin_openapi_shows_the_budget_and_price(tmp_path, home):
    done = oz0(home, "plugin", "openapi", str(tmp_path / "plugin"))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    hook = doc["paths"]["/agents/hook/runs"]["post"]
    assert (hook["x-budget"], hook["x-price"]) == ({"calls": 3, "per": "day", "on_exhausted": "fail"}, HOOK_PRICE)
