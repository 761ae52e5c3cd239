"""The runtime: the composition root of the services that run jobs, and the one face callers use.

One Runtime per process. It builds each service with the ones it needs passed in, in this order, so
no service reads another's state and each can be read (and tested) alone:

    Store          the journal, plugin store and audit log (edge.runtime.store)
    JobEvents      each job's event stream (edge.runtime.event_stream), over the store
    Catalog        installed plugins, agents and flows (edge.runtime.catalog)
    Jobs           the journal of jobs: submit, read, end (edge.runtime.jobs)
    Questions      person steps (edge.runtime.question_book)
    Budgets        reserved before each call (edge.runtime.budgets)
    JobTree        limits over a job's tree (edge.runtime.tree)
    Cards          a job drawn as a card (edge.runtime.job_cards)
    Runs           a claimed job's attempts, retries and end (edge.runtime.runs)
    Recovery       jobs a stopped process left behind (edge.runtime.recovery)

Its public methods are the faces of edge.runtime.api (what the CLI, console, API and chat type
against); most delegate to one service in a line. A job is journaled before it runs (so a crash never
loses it), its input is checked once, the agent runs under its limits, and its output is checked
against the output contract before anyone sees it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oz0.edge.cards.model import Card
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.installed import InstalledVersion
from oz0.edge.model.job import Job, JobFailure
from oz0.edge.model.progress import ProgressSink
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.plugins.manifest import Plugin
from oz0.edge.runtime.attempts import Attempts, CheckedAnswers
from oz0.edge.runtime.backlog import Backlog
from oz0.edge.runtime.budget_book import BudgetBook
from oz0.edge.runtime.budgets import Budgets
from oz0.edge.runtime.cancel import JobStops
from oz0.edge.runtime.catalog import Catalog
from oz0.edge.runtime.context import RunContext
from oz0.edge.runtime.conversations import Conversations
from oz0.edge.runtime.delegation import Delegation
from oz0.edge.runtime.event_stream import JobEvents, open_events
from oz0.edge.runtime.events import JobEvent
from oz0.edge.runtime.flow_engine import FlowEngine
from oz0.edge.runtime.input_check import MAX_INPUT_CHARS, Checked, check_input
from oz0.edge.runtime.job_cards import Cards, StepNote
from oz0.edge.runtime.job_search import JobQuery
from oz0.edge.runtime.jobs import Jobs
from oz0.edge.runtime.people import People
from oz0.edge.runtime.plugin_cache import PluginCache
from oz0.edge.runtime.plugin_store import PluginStore
from oz0.edge.runtime.question_book import Questions
from oz0.edge.runtime.questions import Answer, Question
from oz0.edge.runtime.recovery import Recovery
from oz0.edge.runtime.runs import FlowRun, Runs
from oz0.edge.runtime.schedules import Schedules
from oz0.edge.runtime.store import AuditRecord, Store
from oz0.edge.runtime.tool_refresh import unwatch_tools, watch_tools
from oz0.edge.runtime.tree import JobTree, TreeNode

if TYPE_CHECKING:
    from oz0.edge.runtime.durable import Engine

__all__ = [
    "MAX_INPUT_CHARS",
    "AuditRecord",
    "Job",
    "JobFailure",
    "RunContext",
    "Runtime",
    "default_home",
]


def default_home() -> Path:
    return Path(os.environ.get("OZ0_HOME") or Path.home() / ".oz0").expanduser()


class Runtime:
    """One per process: the services (built here, each with its dependencies) and the engine's life."""

    def __init__(self, home: str | Path | None = None, *, database_url: str | None = None,
                 backoff_s: float = 0.5, flow_engine: FlowEngine | None = None) -> None:
        self.home = Path(home).expanduser() if home is not None else default_home()
        self.home.mkdir(parents=True, exist_ok=True)
        url = database_url or os.environ.get("OZ0_DATABASE_URL") or f"sqlite:///{self.home / 'oz0.db'}"
        self.flow_engine = flow_engine  # runs flows (edge.flows.engine.FLOW_ENGINE); None: flows end Misconfigured
        self.engine: Engine | None = None  # edge.runtime.durable.Engine once launch_engine() ran
        self.stopping = False  # a stop began (drain): asks are turned away, running jobs finish
        self._deliverers: dict[str, Callable[[Job], Awaitable[None]]] = {}

        self.store = Store(url)
        self.stream: JobEvents = open_events(self.store)
        self.plugin_store = PluginStore(self.store)  # the installed plugins' archives, in the database
        self.plugin_cache = PluginCache(self.home / "cache", self.plugin_store)  # run from here, by content hash
        self.catalog = Catalog(self.store, self.plugin_cache)
        book = BudgetBook(self.store)
        self.journal = Jobs(self.store, self.catalog, self.stream, book)
        self.questions = Questions(self.store, self.journal, self.stream)
        self.budgets = Budgets(book, self.journal, self.catalog, self.home)
        self.tree = JobTree(self.store, self.journal, self.catalog, self.questions,
                            durable=lambda: self.engine is not None)
        self.conversations = Conversations(self.store)  # chat threads' turns
        self.backlog = Backlog(self.store)  # the queued jobs' bounds, checked before an ask is journaled
        checked = CheckedAnswers()
        self.attempts = Attempts(checked)
        self.cards = Cards(self.catalog, checked, self.conversations, self._step_note())
        self.people = People(self.store)  # display names the channels learned (edge.runtime.people)
        self.stops = JobStops(self)  # stop requests, obeyed where the job runs (edge.runtime.cancel)
        self.schedules = Schedules(self, self.job)  # the plugins' schedules (edge.runtime.schedules)
        self.runs = Runs(self.journal, self.catalog, self.tree, self.questions, self.conversations, self.budgets,
                         self.attempts, backoff_s=backoff_s, run_flow=self._flow_run(),
                         delegation=lambda job, attempt: Delegation(self, job, attempt, asyncio.get_running_loop()),
                         stops=self.stops)
        self.recovery = Recovery(self.store, self.journal, self.questions)
        self._tools_watcher = watch_tools(self.store, self.plugin_cache)

    def _step_note(self) -> StepNote | None:
        """A flow card's steps, read back by the flow engine over this runtime (edge.flows)."""
        engine = self.flow_engine
        return None if engine is None else (lambda spec, job: engine.step_note(self, spec, job))

    def _flow_run(self) -> FlowRun | None:
        """A flow's steps run here by the flow engine, over this runtime (its steps are jobs of it)."""
        engine = self.flow_engine
        if engine is None:
            return None
        return lambda job, spec, value, on_progress: engine.run_here(self, job, spec, value, on_progress=on_progress)

    def close(self) -> None:
        unwatch_tools(self._tools_watcher)
        if self.engine is not None:
            self.engine.shutdown()
            self.engine = None
        self.stream.close()
        self.store.close()

    @property
    def backoff_s(self) -> float:
        """The first retry's delay (doubling each retry, at most runs.MAX_BACKOFF_S)."""
        return self.runs.backoff_s

    @backoff_s.setter
    def backoff_s(self, seconds: float) -> None:
        self.runs.backoff_s = seconds

    @property
    def plugins_dir(self) -> Path:
        return self.home / "plugins"

    def events(self, job_id: str) -> AsyncIterator[JobEvent]:
        """The job's events (edge.runtime.events), read on the caller's loop, from whichever replica
        publishes them: its open question first, then what happens, `JobEnded` last (at once for a job
        that has ended). KeyError for an unknown job."""
        return self.stream.events(job_id)

    # the job engine and delivery ----------------------------------------------------------------

    def launch_engine(self, *, env: Mapping[str, str] | None = None, private: bool = False) -> None:
        """Run every job from now on as a durable DBOS workflow (edge.runtime.durable): `oz0 serve` does,
        before its event loop starts. Without it a job runs in this process, journaled, as before.
        `private`: a command's own engine, which runs only the jobs it is given (no queues, no schedules)."""
        from oz0.edge.runtime.durable import Engine  # imports dbos: about a second, so only here
        from oz0.edge.runtime.schedule_engine import apply_schedules  # dbos too; registers the tick workflow

        engine = Engine(self, env=dict(env) if env is not None else None, private=private)
        launching = datetime.now(UTC)
        engine.launch()
        self.engine = engine
        if not private:
            apply_schedules(engine, launched_at=launching)  # the plugins' schedules (edge.runtime.schedule_engine)

    def drain(self, timeout_s: float) -> None:
        """A stop: no more asks are taken (`stopping`), and the engine's running jobs may finish for up
        to `timeout_s`; the rest resume at the next start, or on another replica."""
        self.stopping = True
        if self.engine is not None:
            self.engine.drain(timeout_s)

    @property
    def engine_launched(self) -> bool:
        """Whether jobs run as durable workflows (for /readyz)."""
        return self.engine is not None and self.engine.launched

    def deliver_with(self, platform: str, deliver: Callable[[Job], Awaitable[None]]) -> None:
        """A channel posts finished jobs of its platform (`reply_to.platform`) with `deliver(job)`.
        With the engine launched, the job's workflow calls it as a checkpointed step, on whichever
        replica runs the job, so a job recovered from a dead replica is still answered, once."""
        self._deliverers[platform] = deliver

    def deliverer(self, platform: str) -> Callable[[Job], Awaitable[None]] | None:
        """The delivery a channel registered for `platform` in this process, if any."""
        return self._deliverers.get(platform)

    def delivers(self, platform: str) -> bool:
        """Whether the engine posts this platform's cards (so the channel must not post them itself)."""
        return self.engine_launched and platform in self._deliverers

    def recover_interrupted(self) -> list[Job]:
        """Jobs a stopped process left queued or running, ended interrupted (edge.runtime.recovery),
        except those the launched engine resumes."""
        return self.recovery.recover_interrupted(self.engine.resumes if self.engine is not None else None)

    # plugins and agents (edge.runtime.catalog) ---------------------------------------------------

    def installed(self) -> list[InstalledVersion]:
        return self.catalog.installed()

    def plugins(self) -> list[Plugin]:
        return self.catalog.plugins()

    def agents(self) -> list[AgentSpec]:
        return self.catalog.agents()

    def flows(self) -> list[AgentSpec]:
        return self.catalog.flows()

    def agent(self, name: str) -> AgentSpec:
        return self.catalog.agent(name)

    # jobs (edge.runtime.jobs, edge.runtime.runs) -------------------------------------------------

    def parse_input(self, spec: AgentSpec, text: str) -> Any:
        """The input an agent gets (edge.runtime.input_check). Raises JobFailure("InvalidInput") naming
        the path and the rule."""
        return check_input(spec, text).value_or_raise()

    def input_of(self, job: Job, spec: AgentSpec) -> Any:
        return self.journal.input_of(job, spec)

    def submit(self, agent: str, text: str, *, requester: str = "cli", channel: str = "cli",
               dedupe_key: str | None = None, reply_to: ReplyRef | None = None, workspace: str | None = None,
               channel_id: str | None = None, parent_id: str | None = None,
               checked: Checked | None = None) -> tuple[Job, bool]:
        """Journal a queued job (Jobs.submit): with a dedupe key already seen, (that job, False)."""
        return self.journal.submit(agent, text, requester=requester, channel=channel, dedupe_key=dedupe_key,
                                   reply_to=reply_to, workspace=workspace, channel_id=channel_id,
                                   parent_id=parent_id, checked=checked)

    def set_reply_to(self, job_id: str, reply_to: ReplyRef) -> None:
        self.journal.set_reply_to(job_id, reply_to)

    def set_question_shown(self, job_id: str, shown: Mapping[str, Any] | None) -> None:
        self.journal.set_question_shown(job_id, shown)

    def job(self, job_id: str) -> Job | None:
        return self.journal.job(job_id)

    def jobs(self, *, limit: int = 50) -> list[Job]:
        return self.journal.recent(limit=limit)

    def search_jobs(self, query: JobQuery) -> tuple[list[Job], str | None]:
        return self.journal.search(query)

    def children(self, job_id: str) -> list[Job]:
        return self.journal.children(job_id)

    async def run(self, agent: str, text: str, **submit_kwargs: Any) -> Job:
        """Submit and execute: the finished job (a deduplicated one is returned as it stands)."""
        on_progress = submit_kwargs.pop("on_progress", None)
        job, created = self.submit(agent, text, **submit_kwargs)
        if not created:
            return job
        return await self.execute(job.id, on_progress=on_progress)

    async def execute(self, job_id: str, *, on_progress: ProgressSink | None = None) -> Job:
        """Run a queued job to its end. Never raises for agent failures; a job already claimed by
        someone else (or finished) is returned as it stands. With the engine launched, the job runs as
        its durable workflow (on any replica) and this waits for its end."""
        if self.engine is not None:
            return await self.engine.execute(job_id, on_progress=on_progress)
        return await self.runs.execute_here(job_id, on_progress=on_progress)

    async def execute_here(self, job_id: str, *, on_progress: ProgressSink | None = None,
                           resume: bool = False) -> Job:
        return await self.runs.execute_here(job_id, on_progress=on_progress, resume=resume)

    def end(self, job_id: str, status: str, *, attempts: int, output: Any = None, kind: str | None = None,
            reason: str | None = None) -> Job:
        return self.journal.end(job_id, status, attempts=attempts, output=output, kind=kind, reason=reason)

    def holds_end(self, job_id: str) -> bool:
        """Whether the job ended and its end is still held, not yet journaled (a database fault)."""
        return self.journal.held_end(job_id) is not None

    def write_held_end(self, job_id: str) -> Job | None:
        """Journal the job's held end, if any (raises on a database fault, for the engine to retry)."""
        held = self.journal.held_end(job_id)
        return self.journal.end(job_id, **held) if held is not None else self.job(job_id)

    def end_interrupted(self, job_id: str, *, reason: str) -> Job:
        return self.journal.end_interrupted(job_id, reason=reason)

    def card(self, job: Job) -> Card:
        return self.cards.card(job)

    # the job tree (edge.runtime.tree) -----------------------------------------------------------

    def submit_child(self, parent: Job, agent: str, text: str, *, dedupe_key: str) -> Job:
        return self.tree.submit_child(parent, agent, text, dedupe_key=dedupe_key)

    def tree_chain(self, job: Job) -> list[TreeNode]:
        return self.tree.tree_chain(job)

    def tree_below(self, job: Job) -> tuple[list[tuple[int, Job]], int]:
        return self.tree.tree_below(job)

    def tree_reason(self, job: Job) -> str | None:
        return self.tree.tree_reason(job)

    def tree_partial(self, job_id: str) -> Any:
        return self.tree.tree_partial(job_id)

    # person steps (edge.runtime.question_book) --------------------------------------------------

    def ask(self, question: Question) -> None:
        """Pause the question's job to ask someone; the first ask of a (job, step) wins."""
        self.questions.ask(question)

    def question(self, job_id: str) -> Question | None:
        return self.questions.question(job_id)

    def answer(self, job_id: str, step: str, *, action: str, content: dict[str, Any] | None, by: str,
               groups: tuple[str, ...] = (), roles: tuple[str, ...] = (), via: str | None = None) -> Answer:
        """Answer a job's question once (Questions.answer); raises AnswerRefused."""
        return self.questions.answer(job_id, step, action=action, content=content, by=by, groups=groups,
                                     roles=roles, via=via)

    def wait_answer(self, job_id: str, step: str, *, timeout_s: float | None) -> Answer:
        """Block this thread for the answer (not durable; in a workflow use questions.wait_in_workflow)."""
        return self.questions.wait(job_id, step, timeout_s=timeout_s)

    async def wait_answer_async(self, job_id: str, step: str, *, timeout_s: float | None) -> Answer:
        return await self.questions.wait_async(job_id, step, timeout_s=timeout_s)

    def shows_questions(self, platform: str) -> None:
        """A channel of `platform` draws its jobs' questions (from their event streams) in this
        process: `can_ask` is then true for it (MCP elicitation and budgets check that)."""
        self.questions.shows(platform)

    def can_ask(self, platform: str) -> bool:
        return self.questions.can_ask(platform)

    # audit --------------------------------------------------------------------------------------

    def audit(self, action: str, *, actor: str, detail: Mapping[str, Any]) -> None:
        self.store.add_audit(action, actor=actor, detail=detail)

    def audit_log(self, *, limit: int = 100) -> list[AuditRecord]:
        return self.store.audit_log(limit=limit)

    def claim(self, key: str) -> bool:
        """True the first time `key` is claimed (a chat delivery answered, a result shared), False after."""
        return self.store.claim(key)
