"""A process for test_flows_durable: the job engine launched over OZ0_HOME, a flow started (`ask`) or
resumed after a kill (`resume JOB`). Prints `waiting JOB` once the flow waits, and the ended job as JSON."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime


def until(runtime: Runtime, job_id: str, statuses: tuple[str, ...], within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while runtime.job(job_id).status not in statuses:
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job_id} is {runtime.job(job_id).status}, not {statuses}")
        time.sleep(0.05)


def main() -> None:
    mode = sys.argv[1]
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    runtime.launch_engine()
    if mode == "ask":
        job, _ = runtime.submit("approval", '{"repo": "acme/api", "pr": 42}', requester="console:maria")

        async def run() -> None:
            task = asyncio.ensure_future(runtime.execute(job.id))
            while runtime.job(job.id).status != "waiting":
                await asyncio.sleep(0.05)
            print(f"waiting {job.id}", flush=True)
            await task

        asyncio.run(run())
        return
    job_id = sys.argv[2]
    until(runtime, job_id, ("waiting",))
    runtime.answer(job_id, "approve", action="accept", content={"approved": True}, by="console:maria")
    until(runtime, job_id, ("succeeded", "failed", "interrupted"))
    job = runtime.job(job_id)
    print(json.dumps({"status": job.status, "output": job.output, "reason": job.failure_reason,
                      "steps": [(c.agent, c.status) for c in runtime.children(job_id)]}), flush=True)
    runtime.close()


if __name__ == "__main__":
    main()
