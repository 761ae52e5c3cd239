"""A process with the job engine launched and one DBOS workflow that asks a person and waits durably
(questions.wait_in_workflow), for tests/edge/runtime/test_questions_durable.py.

    python person_workflow.py ask JOB_ID      start the workflow, print "waiting", wait (to be killed)
    python person_workflow.py resume JOB_ID   relaunch (DBOS recovers the workflow), answer, print it
    python person_workflow.py expire JOB_ID   start a workflow whose question times out, print it
    python person_workflow.py job JOB_ID      run the job (an agent that asks in its step), print
                                              "waiting", wait (to be killed)
    python person_workflow.py relaunch JOB_ID relaunch the engine, print the job once it has ended
"""

from __future__ import annotations

import asyncio
import json
import sys

from dbos import DBOS, SetWorkflowID

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.questions import Question, wait_in_workflow
from oz0.edge.runtime.runner import Runtime

SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
RUNS = []


@DBOS.workflow(name="test.person")
async def person_workflow(job_id: str, timeout_s: float) -> dict:
    from oz0.edge.runtime.durable import current_runtime

    current_runtime().ask(Question(job_id, "approve", "Merge?", SCHEMA, {}, None))
    answer = await wait_in_workflow(job_id, "approve", timeout_s)
    return answer.to_dict()


async def main(mode: str, job_id: str) -> None:
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    await asyncio.to_thread(runtime.launch_engine)
    try:
        if mode == "job":
            task = asyncio.ensure_future(runtime.execute(job_id))
            while runtime.job(job_id).status != "waiting":
                await asyncio.sleep(0.05)
            print("waiting", flush=True)
            await task
            return
        if mode == "relaunch":
            while not runtime.job(job_id).finished:
                await asyncio.sleep(0.05)
            job = runtime.job(job_id)
            print(json.dumps({"status": job.status, "reason": job.failure_reason,
                              "open": runtime.questions.open_steps(job_id),
                              "closed": runtime.questions.asked(job_id, "ask-1")[1].to_dict()}), flush=True)
            return
        if mode == "resume":
            while runtime.job(job_id).status != "waiting":
                await asyncio.sleep(0.05)
            handle = await DBOS.retrieve_workflow_async(f"wf-{job_id}")
            runtime.answer(job_id, "approve", action="accept", content={"approved": True}, by="console:maria")
            print(json.dumps(await handle.get_result()), flush=True)
            return
        with SetWorkflowID(f"wf-{job_id}"):
            handle = await DBOS.start_workflow_async(person_workflow, job_id, 0.5 if mode == "expire" else 3600.0)
        if mode == "expire":
            print(json.dumps(await handle.get_result()), flush=True)
            return
        while runtime.question(job_id) is None:
            await asyncio.sleep(0.05)
        print("waiting", flush=True)
        await asyncio.sleep(3600)
    finally:
        await asyncio.to_thread(runtime.close)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
