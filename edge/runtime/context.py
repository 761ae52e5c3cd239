"""What an agent kind gets beside its input: the job, the attempt, where progress goes, and the runtime's
person steps, delegation and budgets it may use."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import JobFailure
from oz0.edge.model.progress import Progress
from oz0.edge.plugins.asks import declared_ask
from oz0.edge.runtime.questions import Question

if TYPE_CHECKING:
    from oz0.edge.runtime.budgets import Budgets
    from oz0.edge.runtime.delegation import Delegation
    from oz0.edge.runtime.events import TextDelta
    from oz0.edge.runtime.question_book import Questions
    from oz0.edge.runtime.questions import Answer

__all__ = ["RunContext"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunContext:
    """What an agent kind gets beside its input: the job, the attempt, and where progress goes."""

    job_id: str
    agent: AgentSpec
    attempt: int
    plugin_path: Path
    on_progress: Callable[[Progress], Any] | None = field(default=None, repr=False)
    questions: Questions | None = field(default=None, repr=False)
    delegate: Delegation | None = field(default=None, repr=False)
    budgets: Budgets | None = field(default=None, repr=False)  # reserves each call (edge.runtime.budgets)
    started: float = field(default_factory=time.monotonic, repr=False)  # the attempt's start (its time limit)
    # the conversation's earlier turns ({role, content}, oldest first): edge.runtime.conversations
    history: tuple[Mapping[str, str], ...] = ()
    # where a model's text goes while it is written (the job's event stream): edge.runtime.text_out
    on_text: Callable[[TextDelta], None] | None = field(default=None, repr=False)

    def progress(self, message: str, done: float | None = None, total: float | None = None) -> None:
        """Report what the job does now (a command's stderr line, a model's step, `done` of `total`
        items); never fails the job. Every sink gets one `Progress` (edge.runtime.progress)."""
        if self.on_progress is None:
            return
        try:
            self.on_progress(Progress.of(message, done, total))
        except Exception:  # a broken progress sink must not end the agent's work
            log.exception("progress callback failed for job %s", self.job_id)


    async def ask(self, agent: str, input: Any) -> Any:
        """Delegate: run `agent` on `input` (text, or JSON data) as a child job of this one, under this
        tree's limits, and return its output; raises JobFailure with the child's kind and reason."""
        if self.delegate is None:
            raise RuntimeError("this run has no runtime to delegate through")
        return await self.delegate.ask(agent, input)

    def ask_sync(self, agent: str, input: Any) -> Any:
        """`ask` for a sync agent (a python agent running in its own thread): blocks that thread."""
        if self.delegate is None:
            raise RuntimeError("this run has no runtime to delegate through")
        return self.delegate.ask_sync(agent, input)

    def can_ask_person(self) -> bool:
        """Whether a channel here draws this job's questions (MCP declares elicitation only then)."""
        return self.questions is not None and self.questions.can_ask_job(self.job_id)

    async def ask_person(self, message: str, answer_schema: Mapping[str, Any] | None = None, *,
                         step: str | None = None, answerers: Mapping[str, Any] | None = None,
                         timeout_s: float | None = None, source: str | None = None) -> Answer:
        """Pause the job to ask someone (a person step) and wait for the answer, in the job's own call:
        not durable, a restart ends the job interrupted. `answerers` default to the asker; `timeout_s`
        to the agent's limits.timeout_s (then the answer's action is "timeout"). A python agent asks
        only what its file declares under `asks:` (the step, and its answer schema when none is given)."""
        schema, step = self._declared(answer_schema, step)
        return await self.runtime_ask(message, schema, step=step, answerers=answerers, timeout_s=timeout_s,
                                      source=source)

    def ask_person_sync(self, message: str, answer_schema: Mapping[str, Any] | None = None, *,
                        step: str | None = None, answerers: Mapping[str, Any] | None = None,
                        timeout_s: float | None = None, source: str | None = None) -> Answer:
        """`ask_person` for a sync agent (a python agent running in its own thread): blocks that thread."""
        schema, step = self._declared(answer_schema, step)
        question, wait = self._question(message, schema, step, answerers, timeout_s, source)
        self._book().ask(question)
        return self._book().wait(self.job_id, question.step, timeout_s=wait)

    async def runtime_ask(self, message: str, answer_schema: Mapping[str, Any], *, step: str | None = None,
                          answerers: Mapping[str, Any] | None = None, timeout_s: float | None = None,
                          source: str | None = None) -> Answer:
        """A person step the runtime itself takes for the job (a budget's allowance, an MCP elicitation),
        which no agent file declares."""
        question, wait = self._question(message, answer_schema, step, answerers, timeout_s, source)
        self._book().ask(question)
        return await self._book().wait_async(self.job_id, question.step, timeout_s=wait)

    def _declared(self, answer_schema: Mapping[str, Any] | None,
                  step: str | None) -> tuple[Mapping[str, Any], str | None]:
        """The answer schema and step of an agent's ask: for a python agent, as its `asks:` declares
        (JobFailure Misconfigured naming the key to add otherwise)."""
        if self.agent.kind != "python":
            if answer_schema is None:
                raise JobFailure("Misconfigured", "ctx.ask_person needs an answer schema")
            return answer_schema, step
        ask = declared_ask(self.agent.name, self.agent.file, self.agent.asks, step, answer_schema)
        if isinstance(ask, str):
            raise JobFailure("Misconfigured", ask)
        return ask.answer_schema.schema, ask.step

    def _book(self) -> Questions:
        if self.questions is None:
            raise RuntimeError("this run has no runtime to ask a person through")
        return self.questions

    def _question(self, message: str, answer_schema: Mapping[str, Any], step: str | None,
                  answerers: Mapping[str, Any] | None, timeout_s: float | None,
                  source: str | None) -> tuple[Any, float]:
        import time

        wait = float(timeout_s if timeout_s is not None else self.agent.limits.timeout_s)
        step = step or f"ask-{self._book().count(self.job_id) + 1}"
        return Question(job_id=self.job_id, step=step, message=message, answer_schema=dict(answer_schema),
                        answerers=dict(answerers or {}), expires_at=time.time() + wait, source=source), wait
