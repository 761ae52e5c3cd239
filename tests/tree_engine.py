"""A process for test_tree_limits_durable: the job engine launched over OZ0_HOME, one job run (`run AGENT
INPUT`) as its durable workflow, or started and left to be killed (`start AGENT INPUT`) and resumed by
a new process (`resume JOB`); prints the ended job and its tree as JSON."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from oz0.edge.runtime.runner import Runtime


def tree(runtime: Runtime, job_id: str, depth: int = 0) -> list[list]:
    job = runtime.job(job_id)
    label = (job.dedupe_key or "").rsplit(":", 1)[-1] if job.parent_id else job.agent
    out = [[depth, label, job.status, job.failure_kind]]
    for child in runtime.children(job_id):
        out.extend(tree(runtime, child.id, depth + 1))
    return out


def main() -> None:
    runtime = Runtime()
    runtime.launch_engine()
    if sys.argv[1] == "start":  # prints the job id, then runs it (the test kills this process)
        job, _ = runtime.submit(sys.argv[2], sys.argv[3])
        print(f"job {job.id}", flush=True)
        asyncio.run(runtime.execute(job.id))
        return
    if sys.argv[1] == "resume":  # the engine resumes the job's workflow at launch
        deadline = time.monotonic() + 120
        while not runtime.job(sys.argv[2]).finished and time.monotonic() < deadline:
            time.sleep(0.1)
        job = runtime.job(sys.argv[2])
    else:
        job = asyncio.run(runtime.run(sys.argv[2], sys.argv[3]))
    print(json.dumps({"id": job.id, "status": job.status, "kind": job.failure_kind, "reason": job.failure_reason,
                      "output": job.output, "tree": tree(runtime, job.id)}), flush=True)
    runtime.close()


if __name__ == "__main__":
    main()
