"""A process for test_tree_limits_durable: the job engine launched over OZ0_HOME, one job run (`run AGENT
INPUT [HOLD]`, HOLD an agent whose queue a job of it keeps busy meanwhile) as its durable workflow, or started and left to be killed (`start AGENT INPUT`) and resumed by
a new process (`resume JOB`); prints the ended job and its tree as JSON."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime


def tree(runtime: Runtime, job_id: str, depth: int = 0) -> list[list]:
    job = runtime.job(job_id)
    label = (job.dedupe_key or "").rsplit(":", 1)[-1] if job.parent_id else job.agent
    out = [[depth, label, job.status, job.failure_kind]]
    for child in runtime.children(job_id):
        out.extend(tree(runtime, child.id, depth + 1))
    return out


_HELD: set[asyncio.Future[object]] = set()


async def run(runtime: Runtime, agent: str, text: str, *, hold: str | None) -> object:
    """The job run to its end; with `hold`, a job of that agent runs first and keeps its queue busy."""
    if hold is not None:
        holder, _ = runtime.submit(hold, '{"n": 0}')
        _HELD.add(asyncio.ensure_future(runtime.execute(holder.id)))  # held: a loop keeps only weak references
        while runtime.job(holder.id).status != "running":
            await asyncio.sleep(0.05)
    return await runtime.run(agent, text)


def workflows(runtime: Runtime) -> dict[str, str]:
    from dbos import DBOS

    return {w.workflow_id: w.status for w in DBOS.list_workflows(load_input=False, load_output=False)}


def main() -> None:
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    runtime.launch_engine()
    if sys.argv[1] == "start":  # prints the job id, then runs it (the test kills this process)
        job, _ = runtime.submit(sys.argv[2], sys.argv[3])
        print(f"job {job.id}", flush=True)
        asyncio.run(runtime.execute(job.id))
        return
    elapsed = None
    if sys.argv[1] == "resume":  # the engine resumes the job's workflow at launch
        deadline = time.monotonic() + 120
        while not runtime.job(sys.argv[2]).finished and time.monotonic() < deadline:
            time.sleep(0.1)
        job = runtime.job(sys.argv[2])
    else:
        began = time.monotonic()
        job = asyncio.run(run(runtime, sys.argv[2], sys.argv[3], hold=sys.argv[4] if len(sys.argv) > 4 else None))
        elapsed = time.monotonic() - began
    print(json.dumps({"elapsed": elapsed, "id": job.id, "status": job.status, "kind": job.failure_kind, "reason": job.failure_reason,
                      "output": job.output, "tree": tree(runtime, job.id),
                      "workflows": workflows(runtime)}), flush=True)
    runtime.close()


if __name__ == "__main__":
    main()
