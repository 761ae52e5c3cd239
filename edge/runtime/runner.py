"""The runtime: installed plugins, journaled jobs, limits, retries and the audit log.

Its parts are mixins, one concern each: one attempt of an agent and the check of its answer
(edge.runtime.attempts), the card of a job (edge.runtime.job_cards), jobs a stopped process left
behind (edge.runtime.recovery), person steps (edge.runtime.questions).

One Runtime per process. A job is journaled before it runs (so a crash never loses it), its input is
checked before the agent starts (`InvalidInput`, never retried), the agent runs under its limits
(time, output size) and its retryable failures are retried with backoff, and its output is checked
against the output contract before anyone sees it. Agent failures never raise out of `execute`: they
end the job with a typed failure kind and a reason a person can act on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from oz0.edge.contracts.json_data import JsonDataError, check_json_data
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.mcp.kind import with_tool_contracts
from oz0.edge.mcp.tool_contracts import with_stored_contracts
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.flow import FLOW_KIND
from oz0.edge.model.installed import InstalledVersion
from oz0.edge.model.job import BUILTIN_FAILURES, Job, JobFailure, UnknownAgent
from oz0.edge.model.progress import ProgressSink
from oz0.edge.model.reply_ref import ReplyRef, ReplyRefError
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.manifest import Plugin, load_plugin
from oz0.edge.runtime.attempts import AgentAttempts
from oz0.edge.runtime.backlog import Backlog
from oz0.edge.runtime.budgets import Budgets
from oz0.edge.runtime.confirm import confirm_before_run
from oz0.edge.runtime.context import RunContext
from oz0.edge.runtime.conversations import Conversations
from oz0.edge.runtime.delegation import Delegation
from oz0.edge.runtime.event_stream import JobEvents, open_events
from oz0.edge.runtime.events import JobEnded, JobEvent
from oz0.edge.runtime.flow_engine import FlowEngine
from oz0.edge.runtime.input_check import MAX_INPUT_CHARS, Checked, check_input
from oz0.edge.runtime.installed_cache import InstalledCache
from oz0.edge.runtime.job_cards import JobCards
from oz0.edge.runtime.job_search import JobQuery, search_jobs
from oz0.edge.runtime.kinds import mcp_redacted
from oz0.edge.runtime.progress import JournalProgress
from oz0.edge.runtime.question_book import Questions
from oz0.edge.runtime.questions import PersonSteps
from oz0.edge.runtime.recovery import Recovery, runner_id
from oz0.edge.runtime.store import AuditRecord, Store
from oz0.edge.runtime.tool_refresh import unwatch_tools, watch_tools
from oz0.edge.runtime.tree import LIMIT_EXCEEDED, JobTree

__all__ = [
    "MAX_INPUT_CHARS",
    "AuditRecord",
    "Job",
    "JobFailure",
    "RunContext",
    "Runtime",
    "default_home",
]

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0
MAX_REASON_CHARS = 2000
MAX_HELD_INPUTS = 1000  # inputs checked at submit held for their run (a job not run here lets its go)


def default_home() -> Path:
    return Path(os.environ.get("OZ0_HOME") or Path.home() / ".oz0").expanduser()


def _now() -> float:
    return time.time()


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


class Runtime(AgentAttempts, JobCards, Recovery, PersonSteps, JobTree):
    """One per process: the store (journal, plugin store, audit log) and the agent kinds."""

    def __init__(self, home: str | Path | None = None, *, database_url: str | None = None,
                 backoff_s: float = 0.5, flow_engine: FlowEngine | None = None) -> None:
        self.home = Path(home).expanduser() if home is not None else default_home()
        self.home.mkdir(parents=True, exist_ok=True)
        url = database_url or os.environ.get("OZ0_DATABASE_URL") or f"sqlite:///{self.home / 'oz0.db'}"
        self.store = Store(url)
        self.backoff_s = backoff_s
        self.flow_engine = flow_engine  # runs flows (edge.flows.engine.FLOW_ENGINE); None: flows end Misconfigured
        self._plugins: dict[int, tuple[Any, Plugin]] = {}
        self._installed = InstalledCache(self.store)  # read again only when the installed state changes
        self._checked: OrderedDict[str, str] = OrderedDict()  # job id -> digest of the contract its answer met
        self._inputs: OrderedDict[str, Checked] = OrderedDict()  # job id -> its input, checked at submit
        self._deliverers: dict[str, Callable[[Job], Awaitable[None]]] = {}
        self._held_ends: dict[str, dict[str, Any]] = {}  # job id -> an end the journal could not take yet
        self.engine: Any = None  # edge.runtime.durable.Engine once launch_engine() ran
        self.stopping = False  # a stop began (drain): asks are turned away, running jobs finish
        self.questions = Questions(self)  # person steps (edge.runtime.questions)
        self.stream: JobEvents = open_events(self.store, self.questions, self.job)  # edge.runtime.event_stream
        self._tree_tasks: dict[str, asyncio.Task[Any]] = {}  # limits over the job tree (edge.runtime.tree)
        self.budgets = Budgets(self)  # reserved before each call (edge.runtime.budgets)
        self.conversations = Conversations(self.store)  # chat threads' turns (edge.runtime.conversations)
        self.backlog = Backlog(self.store)  # the queued jobs' bounds, checked before an ask is journaled
        watch_tools(self)

    def close(self) -> None:
        unwatch_tools(self)
        if self.engine is not None:
            self.engine.shutdown()
            self.engine = None
        self.stream.close()
        self.store.close()

    # what happens to a job --------------------------------------------------------------------

    def events(self, job_id: str) -> AsyncIterator[JobEvent]:
        """The job's events (edge.runtime.events), read on the caller's loop, from whichever replica
        publishes them: its open question first, then what happens, `JobEnded` last (at once for a job
        that has ended). KeyError for an unknown job."""
        return self.stream.events(job_id)

    # the job engine -----------------------------------------------------------------------------

    def launch_engine(self, *, env: Mapping[str, str] | None = None) -> None:
        """Run every job from now on as a durable DBOS workflow (edge.runtime.durable): `oz0 serve` does,
        before its event loop starts. Without it a job runs in this process, journaled, as before."""
        from oz0.edge.runtime.durable import Engine  # imports dbos: about a second, so only here

        engine = Engine(self, env=dict(env) if env is not None else None)
        engine.launch()
        self.engine = engine

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
        """A channel posts finished jobs of its platform (`reply_to["platform"]`) with `deliver(job)`.
        With the engine launched, the job's workflow calls it as a checkpointed step, on whichever
        replica runs the job, so a job recovered from a dead replica is still answered, once."""
        self._deliverers[platform] = deliver

    def deliverer(self, platform: str) -> Callable[[Job], Awaitable[None]] | None:
        """The delivery a channel registered for `platform` in this process, if any."""
        return self._deliverers.get(platform)

    def delivers(self, platform: str) -> bool:
        """Whether the engine posts this platform's cards (so the channel must not post them itself)."""
        return self.engine_launched and platform in self._deliverers

    @property
    def plugins_dir(self) -> Path:
        return self.home / "plugins"

    # plugins and agents -----------------------------------------------------------------------

    def installed(self) -> list[InstalledVersion]:
        """The current version of every installed plugin, with its agents and contracts as stored."""
        return self._installed.current()

    def _load_installed(self, version: InstalledVersion) -> Plugin | None:
        key = (version.id, tuple((a.name, a.input_hash, a.output_hash) for a in version.agents))
        cached = self._plugins.get(version.id)
        plugin = cached[1] if cached is not None and cached[0] == key else None
        if plugin is None:
            try:
                plugin = with_stored_contracts(load_plugin(version.path), version.agents)
            except PluginError as exc:
                log.error("installed plugin %s %s cannot be loaded from %s: %s", version.plugin,
                          version.version, version.path, exc)
                return None
            self._plugins[version.id] = (key, plugin)  # stored contracts that change load again
        return plugin

    def plugins(self) -> list[Plugin]:
        """The installed plugins (current versions), loaded from their stored copies."""
        return [p for v in self.installed() if (p := self._load_installed(v)) is not None]

    def agents(self) -> list[AgentSpec]:
        """Installed agents, the current version of each plugin, by name."""
        return sorted((a for p in self.plugins() for a in p.agents), key=lambda a: a.name)

    def flows(self) -> list[AgentSpec]:
        """Installed flows (edge.plugins.flow_manifest.FlowSpec, run by name like agents), by name."""
        return sorted((f for p in self.plugins() for f in p.flows), key=lambda f: f.name)

    def agent(self, name: str) -> AgentSpec:
        return self._lookup(name)[0]

    def _lookup(self, name: str) -> tuple[AgentSpec, Plugin]:
        """The agent of this name and the plugin it comes from, in one read of the installed plugins."""
        plugins = self.plugins()
        for plugin in plugins:
            for spec in (*plugin.agents, *plugin.flows):
                if spec.name == name:
                    return spec, plugin
        raise UnknownAgent(name, sorted(a.name for p in plugins for a in (*p.agents, *p.flows)))

    # jobs -------------------------------------------------------------------------------------

    def parse_input(self, spec: AgentSpec, text: str) -> Any:
        """The input an agent gets (edge.runtime.input_check). Raises JobFailure("InvalidInput") naming
        the path and the rule."""
        return check_input(spec, text).value_or_raise()

    def input_of(self, job: Job, spec: AgentSpec) -> Any:
        """The job's input as its agent gets it: checked when it was submitted here (`submit(checked=)`),
        else now. Raises JobFailure("InvalidInput")."""
        checked = self._inputs.pop(job.id, None)
        return (checked if checked is not None else check_input(spec, job.input)).value_or_raise()

    def submit(self, agent: str, text: str, *, requester: str = "cli", channel: str = "cli",
               dedupe_key: str | None = None, reply_to: ReplyRef | None = None, workspace: str | None = None,
               channel_id: str | None = None, parent_id: str | None = None,
               checked: Checked | None = None) -> tuple[Job, bool]:
        """Journal a queued job. With a dedupe key already seen: (that job, False); it never runs twice.
        `checked`: its input as the way in checked it (edge.runtime.input_check), so it is not checked again."""
        plugin = version = contract = contract_version = None
        try:
            spec, found = self._lookup(agent)
            plugin, version = found.name, found.version
            contract, contract_version = contract_hash(spec), spec.contract_version
        except UnknownAgent:
            pass  # journaled anyway; execute ends it with UnknownAgent
        parent = self.store.job(parent_id) if parent_id is not None else None
        row = {
            "id": uuid.uuid4().hex[:12], "agent": agent, "plugin": plugin, "plugin_version": version,
            "requester": requester, "channel": channel, "input": text, "status": "queued", "output": None,
            "failure_kind": None, "failure_reason": None, "created": _now(), "started": None, "ended": None,
            "attempts": 0, "dedupe_key": dedupe_key, "reply_to": reply_to.to_json() if reply_to else None,
            "workspace": workspace, "channel_id": channel_id,
            "runner": runner_id(), "parent_id": parent_id, "contract_hash": contract,
            "contract_version": contract_version, "tree_steps": 0,
            "root_id": (parent.get("root_id") or parent["id"]) if parent is not None else None,
        }
        stored, created = self.store.insert_job(row)
        if created and checked is not None and checked.ok:
            self._inputs[stored["id"]] = checked
            while len(self._inputs) > MAX_HELD_INPUTS:
                self._inputs.popitem(last=False)
        return _job(stored), created

    def set_reply_to(self, job_id: str, reply_to: ReplyRef) -> None:
        """Where the answer goes now (a channel named its working message)."""
        self.store.update_job(job_id, reply_to=reply_to.to_json())

    def set_question_shown(self, job_id: str, shown: Mapping[str, Any] | None) -> None:
        """Where the job's open question is shown, in its channel's words (to update it once answered)."""
        self.store.update_job(job_id, question_shown=dict(shown) if shown is not None else None)

    def job(self, job_id: str) -> Job | None:
        row = self.store.job(job_id)
        return _job(row) if row else None

    def jobs(self, *, limit: int = 50) -> list[Job]:
        return [_job(r) for r in self.store.jobs(limit=limit)]

    def search_jobs(self, query: JobQuery) -> tuple[list[Job], str | None]:
        """One page of a job search (edge.runtime.job_search) and the next page's cursor."""
        page = search_jobs(self.store.engine, query)
        return [_job(r) for r in page.rows], page.next_cursor

    def children(self, job_id: str) -> list[Job]:
        """The jobs of a flow's steps, in the order they ran."""
        return [_job(r) for r in self.store.children(job_id)]

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
            ran: Job = await self.engine.execute(job_id, on_progress=on_progress)
            return ran
        return await self.execute_here(job_id, on_progress=on_progress)

    async def execute_here(self, job_id: str, *, on_progress: ProgressSink | None = None,
                           resume: bool = False) -> Job:
        """Run the job in this process. `resume` (the engine's run step) also claims a job a stopped
        replica left running, and leaves a job cancelled by a stop running, for the engine to resume."""
        held = self._held_ends.get(job_id)
        if held is not None:  # the job ended, and a database fault kept its end out of the journal: write it now
            return self._end(job_id, **held)
        started = _now()
        claimable = ("queued", "running", "waiting") if resume else ("queued",)
        if not self.store.update_job(job_id, only_if_status=claimable, status="running", started=started,
                                     runner=runner_id()):
            job = self.job(job_id)
            if job is None:
                raise KeyError(f"no job {job_id!r}")
            return job
        job = self.job(job_id)
        assert job is not None
        on_progress = JournalProgress(self.store, job_id, on_progress, publish=self.stream.publish)
        return await self._watched(job, self._run_claimed(job, on_progress, resume))

    async def _run_claimed(self, job: Job, on_progress: ProgressSink | None, resume: bool) -> Job:
        """The claimed job's work: its input checked, its attempts under the tree's limits, its end."""
        job_id = job.id
        attempts = 0
        try:
            spec, plugin = self._lookup(job.agent)
            spec = await with_tool_contracts(  # an mcp agent's tool schemas, unless its file names its own
                spec, eliciting=self.questions.can_ask_job(job_id))
            value = self.input_of(job, spec)
            if spec.kind == FLOW_KIND:
                self.take_step(job, 1)
                attempts = 1  # a flow runs once; its steps retry
                return self._end(job_id, "succeeded", attempts=1, output=await self._run_flow(
                    job, spec, value, on_progress))
            await confirm_before_run(self, spec, value, job_id)  # a destructive tool asks its asker first
            plugin_path = Path(plugin.path)
            history = self.conversations.history(job_id, spec.conversation).messages
            while True:
                self.take_step(job, attempts + 1)
                attempts += 1
                self.store.update_job(job_id, attempts=attempts)
                try:
                    delegate = Delegation(self, job, attempts, asyncio.get_running_loop())
                    output = await self._attempt(spec, value, RunContext(job_id, spec, attempts, plugin_path,
                                                                         on_progress, self.questions, delegate,
                                                                         budgets=self.budgets,
                                                                         history=history,
                                                                         on_text=functools.partial(self.stream.publish, job_id)))
                    break
                except JobFailure as failure:
                    kind = self._failure_kind(spec, failure.kind)
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
            return self._end(job_id, "failed", attempts=attempts, kind="UnknownAgent", reason=str(exc))
        except JobFailure as failure:
            failure = mcp_redacted(spec, failure)
            if failure.kind not in BUILTIN_FAILURES and spec.failure(failure.kind) is None:
                reason = f"{failure.kind} (not a failure kind the agent declares): {failure.reason}"
                ended = "AgentError"
            else:
                reason, ended = failure.reason, failure.kind
            partial = failure.partial_output
            if ended == LIMIT_EXCEEDED and partial is None:
                partial = self.tree_partial(job_id)
            return self._end(job_id, "failed", attempts=attempts, kind=ended, reason=reason, output=partial)
        except asyncio.CancelledError:
            limit = self.tree_reason(job)
            if limit is not None:  # stopped because its tree reached a limit (edge.runtime.tree)
                self._end(job_id, "failed", attempts=attempts, kind=LIMIT_EXCEEDED, reason=limit,
                          output=self.tree_partial(job_id))
            elif not resume:
                self._end(job_id, "interrupted", attempts=attempts, kind="Interrupted",
                          reason="the bot stopped while the job was running")
            raise
        return self._end(job_id, "succeeded", attempts=attempts, output=output)

    def _end(self, job_id: str, status: str, *, attempts: int, output: Any = None, kind: str | None = None,
             reason: str | None = None) -> Job:
        """Journal a job's end. Until it is written the end is held in memory: on a database fault this
        raises, the engine retries the step, and the step writes the held end instead of running the
        agent again (execute_here)."""
        self._held_ends[job_id] = {"status": status, "attempts": attempts, "output": output, "kind": kind,
                                   "reason": reason}
        if status == "succeeded":
            ending = self.job(job_id)
            limit = self.tree_reason(ending) if ending is not None else None
            if limit is not None:  # a limit ended its tree: an agent that caught the failure does not undo it
                status, kind, reason = "failed", LIMIT_EXCEEDED, limit
        try:
            check_json_data(output)
        except JsonDataError as exc:  # a partial answer the journal and every reader could not carry
            what = "could not be kept" if exc.too_deep else "is not JSON data"
            output, reason = None, f"{reason or 'the job failed'} (its partial answer {what}: {exc})"
        self.store.update_job(job_id, status=status, output=output, failure_kind=kind,
                              failure_reason=_clip(reason) if reason else None, ended=_now(), attempts=attempts)
        self.budgets.book.release_job(job_id)  # holds a call left behind (it was cut short)
        self._held_ends.pop(job_id, None)
        job = self.job(job_id)
        assert job is not None
        self.stream.publish(job_id, JobEnded(job.status, job.failure_kind))
        return job

    def end_interrupted(self, job_id: str, *, reason: str) -> Job:
        """End a job that cannot go on as interrupted, with a reason its asker can act on."""
        job = self.job(job_id)
        return self._end(job_id, "interrupted", attempts=job.attempts if job else 0, kind="Interrupted",
                         reason=reason)

    # audit ----------------------------------------------------------------------------------

    def audit(self, action: str, *, actor: str, detail: Mapping[str, Any]) -> None:
        self.store.add_audit(action, actor=actor, detail=detail)

    def audit_log(self, *, limit: int = 100) -> list[AuditRecord]:
        return self.store.audit_log(limit=limit)

    def claim(self, key: str) -> bool:
        """True the first time `key` is claimed (a chat delivery answered, a result shared), False after."""
        return self.store.claim(key)


def _job(row: Mapping[str, Any]) -> Job:
    return Job(
        id=row["id"], agent=row["agent"], requester=row["requester"], channel=row["channel"],
        input=row["input"], status=row["status"], output=row.get("output"), failure_kind=row.get("failure_kind"),
        failure_reason=row.get("failure_reason"), created=row["created"], started=row.get("started"),
        ended=row.get("ended"), attempts=row.get("attempts") or 0, dedupe_key=row.get("dedupe_key"),
        reply_to=_reply_ref(row), plugin=row.get("plugin"), plugin_version=row.get("plugin_version"),
        parent_id=row.get("parent_id"), contract_hash=row.get("contract_hash"),
        contract_version=row.get("contract_version"), root_id=row.get("root_id"),
        limit_reached=row.get("limit_reached"), progress=row.get("progress"), workspace=row.get("workspace"),
        channel_id=row.get("channel_id"), question_shown=row.get("question_shown"),
    )


def _reply_ref(row: Mapping[str, Any]) -> ReplyRef | None:
    """The job's reply reference; one that cannot be read is logged and left out (its card then has
    nowhere to go, which the delivery says), never guessed at."""
    raw = row.get("reply_to")
    if raw is None:
        return None
    try:
        return ReplyRef.from_json(raw)
    except ReplyRefError as exc:
        log.error("job %s has a reply reference that cannot be read: %s", row.get("id"), exc)
        return None

