"""A small plugin for the console, API and serve tests, written into a temporary folder and installed.

Agents: `deploys` (a schema input with x-oz0-order, an enum, an integer, a boolean; a table answer),
`echo` (text in, markdown out), `hostile` (answers rows made of naughty strings and markup),
`grumpy` (always ends with its declared failure kind `Upstream`), and `ex-NAME` answering the bundled
example results of edge/examples (a key-values, two diffs and a text card).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from paths import ROOT, SHARED

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

EXAMPLE_CARDS = {"incident": "key_values", "config-change": "diff", "feature-flags": "diff",
                 "release-notes": "text"}

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<img src=\"http://127.0.0.1:9/leak.png\">",
    "\"><svg onload=alert(1)>",
    "javascript:alert(1)",
    "[click](javascript:alert(1))",
    "![x](http://127.0.0.1:9/md.png)",
    "<iframe src=\"http://127.0.0.1:9/\"></iframe>",
    "<a href=\"http://127.0.0.1:9/\" style=\"position:fixed\">x</a>",
    "</pre></div><script src=\"http://127.0.0.1:9/x.js\"></script>",
    "<style>body{background:url(http://127.0.0.1:9/css.png)}</style>",
    "<meta http-equiv=\"refresh\" content=\"0;url=http://127.0.0.1:9/\">",
    "<form action=\"http://127.0.0.1:9/\"><button>go</button></form>",
    "{{7*7}} ${7*7} <%= 7*7 %>",
    "@everyone <!channel> <@U123>",
    "\u202eevil\u202c",
]

DEPLOYS_IN = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["service", "environment"],
    "x-oz0-order": ["environment", "service"],
    "properties": {
        "service": {"type": "string", "title": "Service", "description": "Which service to list."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 3},
        "environment": {"enum": ["staging", "production"]},
        "include_failed": {"type": "boolean"},
        "note": {"type": "string", "maxLength": 2000},
    },
    "additionalProperties": False,
}
DEPLOYS_OUT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "array",
    "items": {"$ref": "#/$defs/deploy"},
    "$defs": {"deploy": {
        "type": "object",
        "required": ["service", "version", "status"],
        "x-oz0-order": ["service", "status"],
        "properties": {"version": {"type": "string"}, "service": {"type": "string"},
                       "status": {"enum": ["ok", "failed", "rolling"]}, "environment": {"type": "string"}},
    }},
}
ROWS_OUT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "array",
    "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}},
}

AGENT_CODE = '''
import json
from pathlib import Path

def deploys(value):
    statuses = ["ok", "rolling", "failed"]
    rows = [{"version": f"1.{i}.0", "service": value["service"], "status": statuses[i % 3],
             "environment": value["environment"]} for i in range(value.get("limit", 3))]
    if not value.get("include_failed"):
        rows = [r for r in rows if r["status"] != "failed"]
    return rows

def echo(text):
    return "You said: **" + text.replace("*", "") + "**"

def hostile(text):
    strings = json.loads((Path(__file__).parent / "hostile.json").read_text(encoding="utf-8"))
    return [{"name": s, "value": s} for s in strings]

def example(text, ctx):
    name = ctx.agent.name.removeprefix("ex-")
    return json.loads((Path(__file__).parent / "examples" / f"{name}.result.json").read_text(encoding="utf-8"))

def grumpy(text):
    from oz0.edge.model.job import JobFailure
    raise JobFailure("Upstream", "the upstream service said no <b>twice</b>")
'''


def write_plugin(root: Path, *, blns: int = 40) -> Path:
    """The test plugin's folder under `root`; `blns` naughty strings join the hand-written hostile ones."""
    folder = root / "console-test"
    (folder / "agents").mkdir(parents=True, exist_ok=True)
    (folder / "schemas").mkdir(exist_ok=True)
    (folder / "plugin.yaml").write_text("name: console-test\nversion: 1.2.3\ndescription: Console test agents\n")
    (folder / "schemas" / "deploys.in.json").write_text(json.dumps(DEPLOYS_IN))
    (folder / "schemas" / "deploys.out.json").write_text(json.dumps(DEPLOYS_OUT))
    (folder / "schemas" / "rows.out.json").write_text(json.dumps(ROWS_OUT))
    (folder / "agent.py").write_text(AGENT_CODE)
    strings = list(HOSTILE)
    blns_file = SHARED / "fixtures" / "blns.json"
    if blns_file.is_file() and blns:
        strings += [s for s in json.loads(blns_file.read_text(encoding="utf-8")) if isinstance(s, str)][:blns]
    (folder / "hostile.json").write_text(json.dumps(strings))
    agents: dict[str, str] = {
        "deploys": """
            kind: python
            description: Recent deploys of a service
            entry: agent:deploys
            input_schema: schemas/deploys.in.json
            output_schema: schemas/deploys.out.json
            example: '{"service": "api", "environment": "staging", "limit": 3}'
            failures:
              Upstream: {retryable: true, description: The deploy service did not answer.}
            limits: {timeout_s: 10}
        """,
        "echo": """
            kind: python
            description: Says it back
            entry: agent:echo
            input: text
            output: text
        """,
        "hostile": """
            kind: python
            description: Answers with hostile strings
            entry: agent:hostile
            input: text
            output_schema: schemas/rows.out.json
        """,
        "grumpy": """
            kind: python
            description: Always fails
            entry: agent:grumpy
            input: text
            output: text
            failures:
              Upstream: {retryable: false, person: true, description: The upstream said no.}
            limits: {max_attempts: 1}
        """,
    }
    examples = ROOT / "edge" / "examples"
    (folder / "examples").mkdir(exist_ok=True)
    for name in EXAMPLE_CARDS:
        for suffix in (".result.json", ".schema.json"):
            (folder / "examples" / f"{name}{suffix}").write_bytes((examples / f"{name}{suffix}").read_bytes())
        agents[f"ex-{name}"] = f"""
            kind: python
            description: The bundled {name} example result
            entry: agent:example
            input: text
            output_schema: examples/{name}.schema.json
        """
    for name, text in agents.items():
        (folder / "agents" / f"{name}.yaml").write_text(textwrap.dedent(text).lstrip())
    return folder


def installed_runtime(home: Path, **kwargs: Any) -> Runtime:
    """A runtime under `home` with the test plugin installed."""
    runtime = Runtime(home, backoff_s=0.01, **kwargs, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(write_plugin(home.parent / f"{home.name}-src")), actor="test")
    return runtime


class ConsoleThread:
    """The real console (uvicorn on a free loopback port) in a background thread with its own loop."""

    def __init__(self, runtime: Runtime, *, host: str = "127.0.0.1", token: str | None = None,
                 admin_token: str | None = None) -> None:
        import asyncio
        import threading

        from oz0.adapters.console.app import ConsoleSettings
        from oz0.adapters.console.server import ConsoleServer

        self.settings = ConsoleSettings(host=host, port=0, token=token, admin_token=admin_token)
        self.runtime = runtime
        self.loop = asyncio.new_event_loop()
        self.server = ConsoleServer(runtime, self.settings)
        self.thread = threading.Thread(target=self.loop.run_forever, name="console-test", daemon=True)
        self.url = ""

    def __enter__(self) -> ConsoleThread:
        import asyncio

        self.thread.start()
        urls = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(timeout=10)
        self.url = urls[0]
        return self

    def __exit__(self, *exc: Any) -> None:
        import asyncio

        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()
