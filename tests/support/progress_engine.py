"""A process for tests/edge/runtime/test_progress.py: the job engine launched over OZ0_HOME, one flow run as its
durable workflow with an `on_progress`; prints every progress message it got, as JSON, then the job."""

from __future__ import annotations

import asyncio
import json
import sys

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime


async def main(flow: str, text: str) -> None:
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    await asyncio.to_thread(runtime.launch_engine)
    try:
        seen: list[str] = []
        job = await runtime.run(flow, text, requester="cli", channel="cli", on_progress=lambda p: seen.append(p.message))
        print(json.dumps({"status": job.status, "reason": job.failure_reason, "progress": seen}), flush=True)
    finally:
        await asyncio.to_thread(runtime.close)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
