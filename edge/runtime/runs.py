"""Running a job in this process: claimed in the journal, its input checked, its agent's attempts
retried with backoff under its tree's limits, and its end journaled.

Agent failures never raise out of `execute_here`: they end the job with a typed failure kind and a
reason a person can act on. A flow's steps and an agent's delegations are run by the code above this
floor (edge.flows, edge.runtime.delegation over the whole runtime), so the composition root hands
them in as `run_flow` and `delegation`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from oz0.edge.mcp.kind import with_tool_contracts
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.flow import FLOW_KIND
from oz0.edge.model.job import BUILTIN_FAILURES, Job, JobFailure, UnknownAgent
from oz0.edge.model.progress import ProgressSink
from oz0.edge.runtime.attempts import Attempts, failure_kind
from oz0.edge.runtime.body_retries import read_out, waited_out
from oz0.edge.runtime.budgets import Budgets
from oz0.edge.runtime.cancel import CANCELLED, JobStops
from oz0.edge.runtime.catalog import Catalog
from oz0.edge.runtime.confirm import confirm_before_run
from oz0.edge.runtime.context import RunContext
from oz0.edge.runtime.conversations import Conversations
from oz0.edge.runtime.delegation import Delegation
from oz0.edge.runtime.flow_engine import NO_FLOW_ENGINE
from oz0.edge.runtime.job_traces import job_span
from oz0.edge.runtime.jobs import Jobs
from oz0.edge.runtime.kinds import mcp_redacted
from oz0.edge.runtime.progress import JournalProgress
from oz0.edge.runtime.question_book import Questions
from oz0.edge.runtime.recovery import runner_id
from oz0.edge.runtime.tree import LIMIT_EXCEEDED, JobTree

__all__ = ["MAX_BACKOFF_S", "FlowRun", "Runs"]

MAX_BACKOFF_S = 30.0

FlowRun = Callable[[Job, AgentSpec, Any, ProgressSink | None], Awaitable[Any]]  # a flow's steps run here


class Runs:
    """The run of a claimed job in this process (the engine's run step calls it too)."""

    def __init__(self, jobs: Jobs, catalog: Catalog, tree: JobTree, questions: Questions,
                 conversations: Conversations, budgets: Budgets, attempts: Attempts, *,
                 backoff_s: float, run_flow: FlowRun | None,
                 delegation: Callable[[Job, int], Delegation], stops: JobStops) -> None:
        self.jobs = jobs
        self.catalog = catalog
        self.tree = tree
        self.questions = questions
        self.conversations = conversations
        self.budgets = budgets
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.run_flow = run_flow  # None: a runtime built without a flow engine ends flows Misconfigured
        self.delegation = delegation  # an attempt's `ctx.ask` (edge.runtime.delegation)
        self.stops = stops  # a stop request cancels the run where it runs (edge.runtime.cancel)

    async def execute_here(self, job_id: str, *, on_progress: ProgressSink | None = None,
                           resume: bool = False) -> Job:
        """Run the job in this process. `resume` (the engine's run step) also claims a job a stopped
        replica left running, and leaves a job cancelled by a stop running, for the engine to resume."""
        held = self.jobs.held_end(job_id)
        if held is not None:  # the job ended, and a database fault kept its end out of the journal: write it now
            return self.jobs.end(job_id, **held)
        claimable = ("queued", "running", "waiting") if resume else ("queued",)
        if not await read_out("a job's claim", self.jobs.store.update_job, job_id, only_if_status=claimable,
                              status="running", started=time.time(), runner=runner_id(), attempts=1):
            job = await read_out("a job's read", self.jobs.job, job_id)
            if job is None:
                raise KeyError(f"no job {job_id!r}")
            return job
        job = await read_out("a job's read", self.jobs.job, job_id)
        assert job is not None
        journal = JournalProgress(self.jobs.store, job_id, on_progress, publish=self.jobs.stream.publish)
        work = self._run_claimed(job, journal, resume)
        try:
            with job_span(job) as span:
                ended = await self.tree.watch(job, self.stops.guard(job_id, work))
                span.set(status=ended.status, failure_kind=ended.failure_kind)
                return ended
        finally:
            journal.close()
            if inspect.getcoroutinestate(work) == inspect.CORO_CREATED:  # stopped before it began (its tree's time was up)
                work.close()

    async def _run_claimed(self, job: Job, on_progress: ProgressSink | None, resume: bool) -> Job:
        """The claimed job's work: its input checked, its attempts under the tree's limits, its end."""
        job_id = job.id
        attempts = 0
        end = self.jobs.end
        try:
            spec, plugin = await read_out("an agent's lookup", self.catalog.lookup, job.agent)
            spec = await waited_out("an agent's tool contracts", self._with_contracts, spec, job_id)
            value = self.jobs.input_of(job, spec)
            if spec.kind == FLOW_KIND:
                await read_out("a tree's step", self.tree.take_step, job, 1)
                attempts = 1  # a flow runs once; its steps retry
                return end(job_id, "succeeded", attempts=1, output=await self._flow(job, spec, value, on_progress))
            # a destructive tool asks its asker first (once: made again, it waits for the answer asked for)
            await waited_out("a confirmation", confirm_before_run, self.questions, spec, value, job_id)
            plugin_path = Path(plugin.path)
            history = (await read_out("a conversation's history", self.conversations.history, job_id,
                                      spec.conversation)).messages
            while True:
                await read_out("a tree's step", self.tree.take_step, job, attempts + 1)
                attempts += 1
                if attempts > 1:  # the claim wrote the first
                    await read_out("a job's attempts", self.jobs.store.update_job, job_id, attempts=attempts)
                try:
                    output = await self.attempts.attempt(spec, value, RunContext(
                        job_id, spec, attempts, plugin_path, on_progress, self.questions,
                        self.delegation(job, attempts), budgets=self.budgets, history=history,
                        on_text=functools.partial(self.jobs.stream.publish, job_id)))
                    break
                except JobFailure as failure:
                    kind = failure_kind(spec, failure.kind)
                    # a tool loop is not rerun whole: its calls made would be made again
                    if not kind.retryable or attempts >= spec.limits.max_attempts or spec.loops:
                        raise
                    delay = min(self.backoff_s * 2 ** (attempts - 1), MAX_BACKOFF_S)
                    if on_progress:
                        RunContext(job_id, spec, attempts, plugin_path, on_progress).progress(
                            f"{failure.kind}: {failure.reason} — retrying in {delay:g}s "
                            f"(attempt {attempts + 1} of {spec.limits.max_attempts})")
                    await asyncio.sleep(delay)
        except UnknownAgent as exc:
            return end(job_id, "failed", attempts=attempts, kind="UnknownAgent", reason=str(exc))
        except JobFailure as failure:
            failure = mcp_redacted(spec, failure)
            if failure.kind not in BUILTIN_FAILURES and spec.failure(failure.kind) is None:
                reason = f"{failure.kind} (not a failure kind the agent declares): {failure.reason}"
                ended = "AgentError"
            else:
                reason, ended = failure.reason, failure.kind
            partial = failure.partial_output
            if ended == LIMIT_EXCEEDED and partial is None:
                partial = await read_out("a tree's partial output", self.tree.tree_partial, job_id)
            return end(job_id, "failed", attempts=attempts, kind=ended, reason=reason, output=partial)
        except asyncio.CancelledError:  # its reads and its end waited out through a fault, as between its steps
            limit = await read_out("a tree's reason", self.tree.tree_reason, job)
            stop = await read_out("a job's stop request", self.stops.requested, job_id)
            if stop is not None:  # someone stopped it (edge.runtime.cancel)
                await read_out("a job's end", end, job_id, "cancelled", attempts=attempts, kind=CANCELLED,
                               reason=stop.reason)
            elif limit is not None:  # stopped because its tree reached a limit (edge.runtime.tree)
                partial = await read_out("a tree's partial output", self.tree.tree_partial, job_id)
                await read_out("a job's end", end, job_id, "failed", attempts=attempts, kind=LIMIT_EXCEEDED,
                               reason=limit, output=partial)
            elif not resume:
                end(job_id, "interrupted", attempts=attempts, kind="Interrupted",
                    reason="the bot stopped while the job was running")
            raise
        return end(job_id, "succeeded", attempts=attempts, output=output)

    async def _with_contracts(self, spec: AgentSpec, job_id: str) -> AgentSpec:
        """An mcp agent's tool schemas, unless its file names its own."""
        contracted: AgentSpec = await with_tool_contracts(spec, eliciting=self.questions.can_ask_job(job_id))
        return contracted

    async def _flow(self, job: Job, spec: AgentSpec, value: Any, on_progress: ProgressSink | None) -> Any:
        """A flow's steps in this process (edge.flows.runner), its output checked like an agent's."""
        if self.run_flow is None:
            raise JobFailure("Misconfigured", NO_FLOW_ENGINE)
        output = await self.run_flow(job, spec, value, on_progress)
        return self.attempts.checked_output(job.id, spec, output)
