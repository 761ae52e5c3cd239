"""The tool loop's price: oz0's durable loop against the same loop run by the bare library.

A 6-step loop (3 model requests, 3 tool calls: one, then two in parallel, then the answer) against the
scripted OpenAI-compatible stand-in (tests/support/model_standins.py, 20 ms a model request), its tool the CI
MCP server over stdio (tests/support/mcp_servers/ci_server.py):

- oz0: a model agent with tools, each job run by the job engine `oz0 serve` launches (DBOS on SQLite,
  in this process): every model request and tool call a checkpointed step, journaled, contract-checked,
  budgeted and traced;
- bare: Pydantic AI alone, the same model and the same MCP server (its own MCPToolset), no durability;
- for scale, in a process of its own first, on a DBOS of its own on a SQLite file in WAL mode (as oz0's):
  - steps: the bare agent inside a DBOS workflow, its model's requests and its MCP calls wrapped in plain
    DBOS steps and nothing else (no journal, contract, budget, trace or card): the issue's checkpoint rule
    alone, the durable floor of a loop on this engine;
  - library: the same agent with Pydantic AI's own DBOS capability (`DBOSDurability`).

The jobs of each phase are taken in turns, so a busy machine slows both. Prints the medians and the
ratios (target: oz0 <= 1.3x the bare library).

    .venv/bin/python bench/agent_loop.py [--count 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support")]

from loop_kit import CI_SERVER, loop_plugin
from model_standins import ModelStandin, Turn

SCRIPT = [Turn(calls=(("ci_log", {"run_id": 1}),)), Turn(calls=(("ci_log", {"run_id": 2}), ("ci_log", {"run_id": 3}))),
          Turn(text='{"verdict": "flaky", "run_id": 3}')]
TARGET = 1.3


def _agent(url: str, *, durable: bool = False, stepped: bool = False) -> Any:
    """The bench's loop as a bare Pydantic AI agent; `durable`: with the library's own DBOS capability;
    `stepped`: its model and its toolset wrapped so each request and each call is a plain DBOS step."""
    from fastmcp.client.transports import StdioTransport
    from loop_kit import VERDICT
    from pydantic_ai import Agent, NativeOutput, StructuredDict
    from pydantic_ai.durable_exec.dbos import DBOSDurability
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model: Any = OpenAIChatModel("triage-1", provider=OpenAIProvider(base_url=url, api_key="sk-bench"))
    tools: Any = MCPToolset(StdioTransport(command=sys.executable, args=[CI_SERVER, ""]), id="ci")
    if stepped:
        model, tools = _step_wrappers(model, tools)
    return Agent(model, output_type=NativeOutput(StructuredDict(VERDICT, name="answer"), strict=False),
                 toolsets=[tools], instructions="You triage failing CI runs.",
                 name="bench_durable" if durable else "bench_bare", capabilities=[DBOSDurability()] if durable else [])


async def _turns(runs: dict[str, Callable[[str], Awaitable[Any]]], count: int) -> dict[str, float]:
    """The median seconds of each run, taken in turns (a warm-up each first)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        await run("warm up")
    for i in range(count):
        for name, run in runs.items():
            started = time.perf_counter()
            await run(f"why did run {i} fail?")
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) for name, t in times.items()}


def _step_wrappers(model: Any, tools: Any) -> tuple[Any, Any]:
    """`model` and `tools` with each model request and each tool call a plain DBOS step: the checkpoint
    rule and nothing else."""
    from dbos import DBOS
    from pydantic_ai.messages import ModelMessagesTypeAdapter
    from pydantic_ai.models.wrapper import WrapperModel
    from pydantic_ai.toolsets import WrapperToolset

    class StepModel(WrapperModel):
        async def request(self, *args: Any) -> Any:
            async def call() -> Any:
                return ModelMessagesTypeAdapter.dump_python([await self.wrapped.request(*args)], mode="json")[0]
            return ModelMessagesTypeAdapter.validate_python([await DBOS.run_step_async(None, call)])[0]

    class StepTools(WrapperToolset[Any]):
        async def call_tool(self, *args: Any) -> Any:
            async def call() -> Any:
                return await self.wrapped.call_tool(*args)
            return await DBOS.run_step_async(None, call)

    return StepModel(model), StepTools(tools)


async def library_phase(count: int) -> dict[str, float]:
    """Bare against plain DBOS steps and against the library's own DBOS durability, in turns, on a DBOS
    of this process's own (their steps' values are Python objects, which need DBOS's default serializer,
    not the portable JSON one oz0's engine uses: so in a process of its own)."""
    with ModelStandin(SCRIPT, delay_s=0.020) as model, tempfile.TemporaryDirectory() as tmp:
        from dbos import DBOS

        from oz0.edge.runtime.engine_settings import write_ahead_log

        bare, library = _agent(model.url, durable=False), _agent(model.url, durable=True)
        stepped = _agent(model.url, stepped=True)

        @DBOS.workflow(name="bench.stepped_loop")
        async def stepped_loop(prompt: str) -> Any:
            return (await stepped.run(prompt)).output

        @DBOS.workflow(name="bench.library_loop")
        async def library_loop(prompt: str) -> Any:
            return (await library.run(prompt)).output

        url = f"sqlite:///{tmp}/engine.db"
        write_ahead_log(url)  # as oz0's engine file
        DBOS(config={"name": "oz0-bench", "system_database_url": url, "log_level": "WARNING"})
        DBOS.launch()
        try:
            async with bare, library, stepped:
                return await _turns({"bare": bare.run, "steps": stepped_loop, "library": library_loop}, count)
        finally:
            DBOS.destroy(workflow_completion_timeout_sec=0)


async def oz0_phase(count: int) -> dict[str, float]:
    """Bare against oz0's durable loop, in turns."""
    with ModelStandin(SCRIPT, delay_s=0.020) as model, tempfile.TemporaryDirectory() as tmp:
        runtime = loop_plugin(Path(tmp) / "plugin", Path(tmp) / "home", model.url)
        await asyncio.to_thread(runtime.launch_engine)
        bare = _agent(model.url, durable=False)

        async def oz0(prompt: str) -> None:
            job = await runtime.run("triage", prompt)
            assert job.status == "succeeded", (job.failure_kind, job.failure_reason)

        try:
            async with bare:  # its MCP server started once, as oz0's pool keeps its session
                return await _turns({"bare": bare.run, "oz0": oz0}, count)
        finally:
            await asyncio.to_thread(runtime.close)


def main(count: int) -> None:
    os.environ.setdefault("OZ0_TEST_MODEL_KEY", "sk-bench-0123456789")
    library = json.loads(subprocess.run([sys.executable, __file__, "--count", str(count), "--library-phase"],
                                        check=True, capture_output=True, text=True).stdout.splitlines()[-1])
    ours = asyncio.run(oz0_phase(count))
    print(f"6-step loop (3 model requests at 20 ms, 3 MCP tool calls), {count} jobs each, medians:")
    print(f"  bare Pydantic AI, no durability:                 {ours['bare'] * 1000:7.1f} ms")
    print(f"  oz0 durable loop (job engine, SQLite):           {ours['oz0'] * 1000:7.1f} ms")
    ratio = ours["oz0"] / ours["bare"]
    print(f"  ratio {ratio:.2f}x (target <= {TARGET}x): {'ok' if ratio <= TARGET else 'OVER'}")
    print(f"  for scale, in a process of its own just before (DBOS on SQLite, bare {library['bare'] * 1000:.1f} ms):")
    print(f"    plain DBOS steps, each model request and MCP call one, nothing else: "
          f"{library['steps'] * 1000:.1f} ms, {library['steps'] / library['bare']:.2f}x (the floor of the checkpoint rule)")
    print(f"    Pydantic AI's own DBOS durability (DBOSDurability):                 "
          f"{library['library'] * 1000:.1f} ms, {library['library'] / library['bare']:.2f}x")
    print(f"  oz0 against the plain-steps floor: {ours['oz0'] / ours['bare'] / (library['steps'] / library['bare']):.2f}x")
    print("  load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) +
          f" on {os.cpu_count()} cores")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=15)
    parser.add_argument("--library-phase", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.library_phase:
        print(json.dumps(asyncio.run(library_phase(args.count))))
    else:
        main(args.count)
