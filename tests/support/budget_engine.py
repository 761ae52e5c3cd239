"""A process with the job engine launched over OZ0_HOME (each job a durable DBOS workflow, a flow's steps
child workflows) that runs the given jobs to their end and prints each as JSON, for test_budgets.

    python budget_engine.py JOB_ID [JOB_ID ...]
"""

from __future__ import annotations

import asyncio
import json
import sys

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime


async def main(job_ids: list[str]) -> None:
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    await asyncio.to_thread(runtime.launch_engine)
    try:
        for job_id in job_ids:
            job = await runtime.execute(job_id)
            print(json.dumps({"status": job.status, "kind": job.failure_kind, "reason": job.failure_reason,
                              "steps": [c.failure_kind or c.status for c in runtime.children(job_id)]}), flush=True)
    finally:
        await asyncio.to_thread(runtime.close)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
