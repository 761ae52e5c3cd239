"""A process with the job engine launched over OZ0_HOME, for tests/edge/runtime/test_tool_loop_durable.py: a tool loop
whose destructive call waits for Confirm, durably.

    python loop_engine.py ask            submit `triage`, print the job id once it waits, wait (to be killed)
    python loop_engine.py answer JOB_ID  relaunch (DBOS resumes the loop), Confirm, print the ended job
"""

from __future__ import annotations

import asyncio
import json
import sys

from oz0.edge.runtime.runner import Runtime


async def main(mode: str, job_id: str | None) -> None:
    runtime = Runtime()
    runtime.shows_questions("cli")  # a channel that draws questions: the job can ask
    await asyncio.to_thread(runtime.launch_engine)
    try:
        if mode == "ask":
            job, _ = runtime.submit("triage", "clean up the old branch", requester="cli:ana")
            task = asyncio.ensure_future(runtime.execute(job.id))
            while runtime.job(job.id).status != "waiting":
                await asyncio.sleep(0.05)
            print(job.id, flush=True)
            await task
            return
        assert job_id is not None
        while (question := runtime.question(job_id)) is None:
            await asyncio.sleep(0.05)
        runtime.answer(job_id, question.step, action="accept", content={"choice": "Confirm"}, by="cli:ana")
        while not runtime.job(job_id).finished:
            await asyncio.sleep(0.05)
        ended = runtime.job(job_id)
        print(json.dumps({"status": ended.status, "output": ended.output, "reason": ended.failure_reason,
                          "step": question.step, "message": question.message}), flush=True)
    finally:
        await asyncio.to_thread(runtime.close)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
