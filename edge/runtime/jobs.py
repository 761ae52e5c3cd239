"""The journal of jobs: a job journaled before it runs (so a crash never loses it), read back, and its
end written once.

The input a way in checked at submit is held here for the job's run (`input_of`), so one job's input
is checked once (edge.runtime.input_check). An end is held in memory until the journal takes it: on
a database fault `end` raises, the engine retries its step, and the step writes the held end instead
of running the agent again (edge.runtime.runs).
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from oz0.edge.contracts.json_data import JsonDataError, check_json_data
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import Job, UnknownAgent
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.budget_book import BudgetBook
from oz0.edge.runtime.cancel import CANCELLED, StopRequest
from oz0.edge.runtime.catalog import Catalog
from oz0.edge.runtime.event_stream import JobEvents
from oz0.edge.runtime.events import JobEnded
from oz0.edge.runtime.input_check import Checked, check_input
from oz0.edge.runtime.job_rows import job_from_row
from oz0.edge.runtime.job_search import JobQuery, search_jobs
from oz0.edge.runtime.job_traces import ask_trace
from oz0.edge.runtime.recovery import runner_id
from oz0.edge.runtime.store import Store

__all__ = ["LIMIT_EXCEEDED", "MAX_HELD_INPUTS", "MAX_REASON_CHARS", "Jobs", "new_job_id"]

LIMIT_EXCEEDED = "LimitExceeded"
MAX_REASON_CHARS = 2000
MAX_HELD_INPUTS = 1000  # inputs checked at submit held for their run (a job not run here lets its go)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def new_job_id() -> str:
    """A job's id: 12 hex digits of a random UUID."""
    return uuid.uuid4().hex[:12]


class Jobs:
    """Jobs in the store: submitted, read, searched, and ended (each end published on its stream)."""

    def __init__(self, store: Store, catalog: Catalog, stream: JobEvents, book: BudgetBook) -> None:
        self.store = store
        self.catalog = catalog
        self.stream = stream
        self.book = book  # an ended job's budget holds are released
        self._inputs: OrderedDict[str, Checked] = OrderedDict()  # job id -> its input, checked at submit
        self._held_ends: dict[str, dict[str, Any]] = {}  # job id -> an end the journal could not take yet

    # journaling --------------------------------------------------------------------------------

    def submit(self, agent: str, text: str, *, requester: str = "cli", channel: str = "cli",
               dedupe_key: str | None = None, reply_to: ReplyRef | None = None, workspace: str | None = None,
               channel_id: str | None = None, parent_id: str | None = None,
               checked: Checked | None = None, job_id: str | None = None) -> tuple[Job, bool]:
        """Journal a queued job. With a dedupe key already seen: (that job, False); it never runs twice.
        `checked`: its input as the way in checked it (edge.runtime.input_check), so it is not checked again.
        `job_id`: the id `new_job_id` gave before (a working message shown before the journal, with the
        job's Stop button), else a new one."""
        plugin = version = contract = contract_version = None
        try:
            spec, found = self.catalog.lookup(agent)
            plugin, version = found.name, found.version
            contract, contract_version = contract_hash(spec), spec.contract_version
        except UnknownAgent:
            pass  # journaled anyway; its run ends it with UnknownAgent
        parent = self.store.job(parent_id) if parent_id is not None else None
        row = {
            "id": job_id or new_job_id(), "agent": agent, "plugin": plugin, "plugin_version": version,
            "requester": requester, "channel": channel, "input": text, "status": "queued", "output": None,
            "failure_kind": None, "failure_reason": None, "created": time.time(), "started": None, "ended": None,
            "attempts": 0, "dedupe_key": dedupe_key, "reply_to": reply_to.to_json() if reply_to else None,
            "workspace": workspace, "channel_id": channel_id,
            "runner": runner_id(), "parent_id": parent_id, "contract_hash": contract,
            "contract_version": contract_version, "tree_steps": 0,
            "root_id": (parent.get("root_id") or parent["id"]) if parent is not None else None,
            "trace_context": ask_trace(),
        }
        stored, created = self.store.insert_job(row)
        if created and checked is not None and checked.ok:
            self._inputs[stored["id"]] = checked
            while len(self._inputs) > MAX_HELD_INPUTS:
                self._inputs.popitem(last=False)
        return job_from_row(stored), created

    def input_of(self, job: Job, spec: AgentSpec) -> Any:
        """The job's input as its agent gets it: checked when it was submitted here (`submit(checked=)`),
        else now. Raises JobFailure("InvalidInput")."""
        checked = self._inputs.pop(job.id, None)
        return (checked if checked is not None else check_input(spec, job.input)).value_or_raise()

    def set_reply_to(self, job_id: str, reply_to: ReplyRef) -> None:
        """Where the answer goes now (a channel named its working message)."""
        self.store.update_job(job_id, reply_to=reply_to.to_json())

    def set_question_shown(self, job_id: str, shown: Mapping[str, Any] | None) -> None:
        """Where the job's open question is shown, in its channel's words (to update it once answered)."""
        self.store.update_job(job_id, question_shown=dict(shown) if shown is not None else None)

    # reading -----------------------------------------------------------------------------------

    def job(self, job_id: str) -> Job | None:
        row = self.store.job(job_id)
        return job_from_row(row) if row else None

    def recent(self, *, limit: int = 50) -> list[Job]:
        """The latest jobs, newest first."""
        return [job_from_row(r) for r in self.store.jobs(limit=limit)]

    def search(self, query: JobQuery) -> tuple[list[Job], str | None]:
        """One page of a job search (edge.runtime.job_search) and the next page's cursor."""
        page = search_jobs(self.store.engine, query)
        return [job_from_row(r) for r in page.rows], page.next_cursor

    def children(self, job_id: str) -> list[Job]:
        """The jobs of a flow's steps (and a job's delegations), in the order they ran."""
        return [job_from_row(r) for r in self.store.children(job_id)]

    def tree_limit(self, job: Job) -> str | None:
        """Why the job's tree was ended by a limit, if it was: written once on its root (edge.runtime.tree)."""
        root = self.job(job.root_id or job.id)
        return root.limit_reached if root is not None else None

    # ending ------------------------------------------------------------------------------------

    def held_end(self, job_id: str) -> dict[str, Any] | None:
        """The end of a job the journal has not taken yet (a database fault), to write again."""
        return self._held_ends.get(job_id)

    def end(self, job_id: str, status: str, *, attempts: int, output: Any = None, kind: str | None = None,
            reason: str | None = None) -> Job:
        """Journal a job's end and publish it. Until it is written the end is held in memory (`held_end`).
        A success in a tree a limit ended is that limit's failure: an agent that caught it does not undo it."""
        self._held_ends[job_id] = {"status": status, "attempts": attempts, "output": output, "kind": kind,
                                   "reason": reason}
        if status == "succeeded":
            ending = self.job(job_id)
            limit = self.tree_limit(ending) if ending is not None else None
            if limit is not None:
                status, kind, reason = "failed", LIMIT_EXCEEDED, limit
        elif status == "failed" and (stop := self._stop_request(job_id)) is not None:
            status, kind, reason = "cancelled", CANCELLED, stop.reason  # a flow whose stopped step failed it
        try:
            check_json_data(output)
        except JsonDataError as exc:  # a partial answer the journal and every reader could not carry
            what = "could not be kept" if exc.too_deep else "is not JSON data"
            output, reason = None, f"{reason or 'the job failed'} (its partial answer {what}: {exc})"
        self.store.update_job(job_id, status=status, output=output, failure_kind=kind,
                              failure_reason=_clip(reason) if reason else None, ended=time.time(),
                              attempts=attempts)
        self.book.release_job(job_id)  # holds a call left behind (it was cut short)
        job = self.job(job_id)
        assert job is not None
        self._held_ends.pop(job_id, None)  # held until read back too: a fault before then writes it again
        self.stream.publish(job_id, JobEnded(job.status, job.failure_kind))
        return job

    def _stop_request(self, job_id: str) -> StopRequest | None:
        row = self.store.job(job_id)
        return StopRequest.of(row.get("stop_request")) if row is not None else None

    def end_interrupted(self, job_id: str, *, reason: str) -> Job:
        """End a job that cannot go on as interrupted, with a reason its asker can act on."""
        job = self.job(job_id)
        return self.end(job_id, "interrupted", attempts=job.attempts if job else 0, kind="Interrupted",
                        reason=reason)
