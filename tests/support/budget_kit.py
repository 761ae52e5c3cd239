"""Shared by the budget tests: a plugin of a model, an http and an MCP agent under budgets, served by
real loopback servers (tests/support/loopback.py records every request the stand-in model receives)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from loopback import Loopback, chat
from plugin_kit import make_plugin

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

__all__ = ["COUNTER_SERVER", "USAGE", "Asker", "install_budget_plugin", "mcp_counter", "model_server", "plugin_runtime",
           "reviewer"]

USAGE = (120, 30)  # what the stand-in model reports: prompt and completion tokens

# An MCP server (stdio) whose one tool notes each call in calls.log beside it: what reached the server.
COUNTER_SERVER = """
from pathlib import Path
from mcp.server.mcpserver import MCPServer

server = MCPServer("counter")


@server.tool()
def count(note: str = "") -> str:
    with open(Path(__file__).with_name("calls.log"), "a") as log:
        log.write(note + "\\n")
    return "counted " + note


if __name__ == "__main__":
    server.run()
"""


def model_server(content: str = "fine", *, usage: tuple[int, int] | None = USAGE) -> Loopback:
    """The stand-in chat-completions endpoint, answering `content` and reporting `usage`."""
    return Loopback(lambda data, headers, path: (200, chat(content, usage=usage)))


def reviewer(url: str, **extra: Any) -> dict[str, Any]:
    """A model agent at `url` with a price and max_tokens; `extra` adds a budget or overrides."""
    return {"kind": "model", "base_url": url + "/v1", "model": "reviewer-1", "input": "text", "output": "text",
            "max_tokens": 100, "price": {"input_per_1k": 0.5, "output_per_1k": 1.5}, **extra}


def plugin_runtime(tmp_path: Path, agents: dict[str, Any], *, flows: dict[str, Any] | None = None,
                   mcp: bool = False, database_url: str | None = None, home: str = "home") -> Runtime:
    files: dict[str, Any] = {"counter_server.py": COUNTER_SERVER} if mcp else {}
    root = tmp_path / "plugin"
    if not (root / "plugin.yaml").exists():
        make_plugin(root, agents=agents, files=files)
        for name, body in (flows or {}).items():
            (root / "flows").mkdir(exist_ok=True)
            (root / "flows" / f"{name}.yaml").write_text(json.dumps(body))
    rt = Runtime(tmp_path / home, backoff_s=0.01, database_url=database_url, flow_engine=FLOW_ENGINE)
    if not rt.installed():
        install_plugin(rt, load_plugin(root))
    return rt


def install_budget_plugin(rt: Runtime, where: Path, url: str) -> None:
    """For the chat channels' tests: `reviewer`, a model agent at `url` whose 50-token budget is too small
    for its first call (`on_exhausted: ask`), so asking it from chat asks the asker to allow more."""
    make_plugin(where, name="budgettest", agents={"reviewer": reviewer(
        url, description="Reviews under a small budget", budget={"tokens": 50, "on_exhausted": "ask"},
        limits={"timeout_s": 30, "max_attempts": 1})})
    install_plugin(rt, load_plugin(where), actor="test")


def mcp_counter(**extra: Any) -> dict[str, Any]:
    return {"kind": "mcp", "server": {"command": sys.executable, "args": ["counter_server.py"]}, "tool": "count",
            "limits": {"timeout_s": 20}, **extra}


class Asker:
    """The asker at a channel (the terminal's, "cli"): runs jobs while reading their event streams,
    answers each question as `by`, yes or no as `allow` says at the time (None: never); `asked` keeps
    the questions."""

    def __init__(self, rt: Runtime, *, allow: bool | None, by: str = "cli:ana", platform: str = "cli") -> None:
        self.allow, self.by, self.rt = allow, by, rt
        self.asked: list[Any] = []
        rt.shows_questions(platform)

    def run(self, agent: str, text: str, **submit: Any) -> Any:
        """The job run to its end, its questions answered as they come."""
        async def scenario() -> Any:
            job, _ = self.rt.submit(agent, text, **submit)
            reader = asyncio.create_task(self._answer_all(job.id))
            await asyncio.sleep(0)
            ended = await self.rt.execute(job.id)
            await asyncio.wait_for(reader, 10)
            return ended
        return asyncio.run(scenario())

    async def _answer_all(self, job_id: str) -> None:
        from oz0.edge.runtime.events import QuestionAsked

        async for event in self.rt.events(job_id):
            if isinstance(event, QuestionAsked):
                self.asked.append(event.question)
                await asyncio.sleep(0.05)  # a person takes a moment
                if self.allow is not None:
                    self.rt.questions.answer(job_id, event.question.step, action="accept",
                                             content={"allow": self.allow}, by=self.by)
