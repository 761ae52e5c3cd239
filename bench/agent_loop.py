"""The tool loop's price: oz0's durable loop against the same loop run by the bare library.

A 6-step loop (3 model requests, 3 tool calls: one, then two in parallel, then the answer) against the
scripted OpenAI-compatible stand-in (tests/support/model_standins.py, 20 ms a model request), its tool the CI
MCP server over stdio (tests/support/mcp_servers/ci_server.py):

- oz0: a model agent with tools, each job run by the job engine `oz0 serve` launches (DBOS on SQLite,
  in this process): every model request and tool call a checkpointed step, journaled, contract-checked,
  budgeted and traced;
- bare: Pydantic AI alone, the same model and the same MCP server (its own MCPToolset), no durability.

Jobs of the two are taken in turns, so a busy machine slows both. Prints both medians and the ratio
(target: oz0 <= 1.3x the bare library).

    .venv/bin/python bench/agent_loop.py [--count 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support")]

from loop_kit import CI_SERVER, loop_plugin
from model_standins import ModelStandin, Turn

SCRIPT = [Turn(calls=(("ci_log", {"run_id": 1}),)), Turn(calls=(("ci_log", {"run_id": 2}), ("ci_log", {"run_id": 3}))),
          Turn(text='{"verdict": "flaky", "run_id": 3}')]
TARGET = 1.3


async def main(count: int) -> None:
    os.environ.setdefault("OZ0_TEST_MODEL_KEY", "sk-bench-0123456789")
    with ModelStandin(SCRIPT, delay_s=0.020) as model, tempfile.TemporaryDirectory() as tmp:
        runtime = loop_plugin(Path(tmp) / "plugin", Path(tmp) / "home", model.url)
        await asyncio.to_thread(runtime.launch_engine)
        from fastmcp.client.transports import StdioTransport
        from loop_kit import VERDICT
        from pydantic_ai import Agent, NativeOutput, StructuredDict
        from pydantic_ai.mcp import MCPToolset
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        bare = Agent(OpenAIChatModel("triage-1", provider=OpenAIProvider(base_url=model.url, api_key="sk-bench")),
                     output_type=NativeOutput(StructuredDict(VERDICT, name="answer"), strict=False),
                     toolsets=[MCPToolset(StdioTransport(command=sys.executable, args=[CI_SERVER, ""]))],
                     instructions="You triage failing CI runs.")
        times: dict[str, list[float]] = {"oz0": [], "bare": []}
        try:
            async with bare:  # its MCP server started once, as oz0's pool keeps its session
                await bare.run("warm up")
                await runtime.run("triage", "warm up")
                for i in range(count * 2):
                    which = "oz0" if i % 2 else "bare"
                    started = time.perf_counter()
                    if which == "oz0":
                        job = await runtime.run("triage", f"why did run {i} fail?")
                        assert job.status == "succeeded", (job.failure_kind, job.failure_reason)
                    else:
                        await bare.run(f"why did run {i} fail?")
                    times[which].append(time.perf_counter() - started)
        finally:
            await asyncio.to_thread(runtime.close)
    oz0, lib = statistics.median(times["oz0"]), statistics.median(times["bare"])
    print(f"6-step loop (3 model requests at 20 ms, 3 MCP tool calls), {count} jobs each, medians:")
    print(f"  bare Pydantic AI, no durability:          {lib * 1000:7.1f} ms")
    print(f"  oz0 durable loop (job engine, SQLite):     {oz0 * 1000:7.1f} ms")
    ratio = oz0 / lib
    print(f"  ratio {ratio:.2f}x (target <= {TARGET}x): {'ok' if ratio <= TARGET else 'OVER'}")
    print("  load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) +
          f" on {os.cpu_count()} cores")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=15)
    asyncio.run(main(parser.parse_args().count))
