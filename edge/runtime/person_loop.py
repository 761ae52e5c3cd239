"""Person steps inside a tool loop: a destructive tool confirmed before its call, and `ask_person`.

Both use the runtime's one person-step mechanism (edge.runtime.questions): the question is recorded
by a step, then waited for durably in the job's workflow (`wait_in_workflow`, so an answer given
after a restart resumes the loop) or, outside the engine, in the job's own call. The answer is
checked against its schema and audited by the question book; here it becomes what the model reads.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from oz0.edge.runtime.body_retries import read_out
from oz0.edge.runtime.confirm import CONFIRM, CONFIRM_SCHEMA, CONFIRM_TIMEOUT_S
from oz0.edge.runtime.questions import Answer, Question, wait_in_workflow

if TYPE_CHECKING:
    from oz0.edge.model.agent import AgentSpec
    from oz0.edge.model.job import Job
    from oz0.edge.runtime.loop_steps import Checkpoints
    from oz0.edge.runtime.loop_tools import LoopTool
    from oz0.edge.runtime.runner import Runtime

__all__ = ["LoopPerson"]

MAX_ARGUMENTS_SHOWN = 1_500


class LoopPerson:
    """The person steps of one loop run; `trace(seq, kind, name, detail, ms)` records each."""

    def __init__(self, runtime: Runtime, job: Job, steps: Checkpoints, spec: AgentSpec,
                 trace: Callable[[int, str, str, dict[str, Any], float], None]) -> None:
        self.runtime, self.job, self.steps, self.spec, self.trace = runtime, job, steps, spec, trace

    async def confirm(self, seq: int, tool: LoopTool, arguments: dict[str, Any]) -> bool:
        """Whether the asker confirmed this call of a destructive tool (a channel that cannot ask: no)."""
        step = f"confirm-{seq}"
        if not await read_out("a person step's read", self.runtime.questions.can_ask_job, self.job.id):
            await read_out("a person step's trace", self.trace, seq, "person", step,
                           {"question": f"confirm {tool.name}", "action": "cannot ask"}, 0)
            return False
        shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        if len(shown) > MAX_ARGUMENTS_SHOWN:
            shown = shown[: MAX_ARGUMENTS_SHOWN - 1] + "…"
        name = tool.annotations.get("title") or tool.name
        message = f"{self.spec.name} wants to run {name} with {shown}. It is marked destructive: run it?"
        answer = await self._ask(seq, step, message, CONFIRM_SCHEMA, CONFIRM_TIMEOUT_S)
        return answer.action == "accept" and (answer.content or {}).get("choice") == CONFIRM

    async def ask(self, seq: int, arguments: dict[str, Any]) -> str:
        """`ask_person`: the model's question with its answer schema (checked already); what the model reads."""
        step = f"ask-{seq}"
        if not await read_out("a person step's read", self.runtime.questions.can_ask_job, self.job.id):
            await read_out("a person step's trace", self.trace, seq, "person", step,
                           {"question": arguments["question"], "action": "cannot ask"}, 0)
            return "The person cannot be asked from this channel; go on without their answer."
        answer = await self._ask(seq, step, str(arguments["question"]), dict(arguments["answer_schema"]),
                                 float(self.spec.limits.timeout_s))
        if answer.action != "accept":
            return json.dumps({"action": answer.action, "answer": None,
                               "note": "the person did not answer; do not ask the same again"})
        return json.dumps({"action": "accept", "answer": answer.content}, ensure_ascii=False)

    async def _ask(self, seq: int, step: str, message: str, schema: dict[str, Any], timeout_s: float) -> Answer:
        started = time.monotonic()
        question = Question(self.job.id, step, message, schema, {}, time.time() + timeout_s, source=self.spec.name)
        if self.steps.durable:
            await self.steps.step("oz0.loop.ask", self._record, question)
            answer = await wait_in_workflow(self.job.id, step, timeout_s)
        else:
            self.runtime.ask(question)
            answer = await self.runtime.wait_answer_async(self.job.id, step, timeout_s=timeout_s)
        await read_out("a person step's trace", self.trace, seq, "person", step, {
            "question": message, "action": answer.action, "answer": answer.content, "by": answer.by},
            (time.monotonic() - started) * 1000)
        return answer

    async def _record(self, question: Question) -> dict[str, Any]:
        self.runtime.ask(question)
        return {}
