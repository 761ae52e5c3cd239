"""Limits over the job tree: a job and its children (flow steps, loop runs, nested flows, delegations).

The tree's accounting lives in the journal (revision 0007), so
it holds across replicas: every job knows its tree's first job (`root_id`); a step taken below a job is
counted on that job's row and on each of its ancestors' rows by one conditional UPDATE each, in one
transaction (`tree_steps < max_steps`), so two replicas racing for the last step cannot both get it;
a reached limit is written once on the root (`limit_reached`), and every job of the tree that starts,
steps or ends afterwards ends with that reason. Each job's limits bound its own subtree, so the root's
bound the whole tree and a nested job's stricter ones bound its part; they are read from the installed
agents and flows only, never from an input.

Children of one job are started by the process running that job (a flow's workflow, an agent's run
step), so `max_children` is a count of the journal's rows at that moment. `tree_timeout_s` is watched
around every job of the tree while it runs (`watch`): the innermost running job stops first (its
parents GRACE_S later), so each parent still sees its child end and keeps what its
finished children gave (`partial`). A durable flow waits for each child workflow under the same
watch (`watch_child`), so a child still queued, or one whose own watch did not stop it, is stopped at
the deadline too (its workflow cancelled).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select, update

from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.job import Job, JobFailure
from oz0.edge.runtime.body_retries import read_out, waited_out
from oz0.edge.runtime.jobs import LIMIT_EXCEEDED
from oz0.edge.runtime.store import ACTIVE_STATUSES, jobs, questions

if TYPE_CHECKING:
    from oz0.edge.runtime.catalog import Catalog
    from oz0.edge.runtime.jobs import Jobs
    from oz0.edge.runtime.question_book import Questions
    from oz0.edge.runtime.store import Store

__all__ = ["GRACE_S", "LIMIT_EXCEEDED", "MAX_DEPTH", "JobTree", "TreeNode", "ordinal", "step_label"]

log = logging.getLogger(__name__)

GRACE_S = 0.5       # how much later a job's tree_timeout_s watch stops it than its running child's
POLL_S = 1.0        # how often a watch looks again (waits for a person extend the deadline)
STOP_WAIT_S = 5.0   # how long a stopped child's run may take to end (its workflow's result) before its parent goes on
MAX_DEPTH = 20      # the largest limits.max_depth a file may set (the agent and flow schemas' maximum)
MAX_CHAIN = 64      # ancestors read at most (max_depth is at most MAX_DEPTH: a longer chain is a broken journal)
MAX_LEFT_OUT = 1000  # jobs below MAX_DEPTH counted at most when a tree is drawn


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def step_label(job: Job | dict[str, Any]) -> str:
    """What a child is to its parent: a flow step's id (`deploy`, `deploy#2` for its 2nd run), a
    delegation's number; the dedupe key's last part."""
    key = job.dedupe_key if isinstance(job, Job) else job.get("dedupe_key")
    return (key or "").rsplit(":", 1)[-1]


def _where(job: Job) -> str:
    key = job.dedupe_key or ""
    if key.startswith("flow:"):
        return f"step {step_label(job)} of job {job.parent_id}"
    if key.startswith("delegate:"):
        return f"delegation {step_label(job)} ({job.agent}) of job {job.parent_id}"
    return f"job {job.id} ({job.agent})"


@dataclass(frozen=True)
class TreeNode:
    """A job of the chain from a job up to its root, with its installed spec (None: uninstalled)."""

    job: Job
    spec: AgentSpec | None
    depth: int

    @property
    def setter(self) -> str:
        kind = "flow" if self.spec is not None and self.spec.kind == "flow" else "agent"
        return f"{kind} {self.job.agent}"


class JobTree:
    """The limits over job trees, checked in the journal; the tasks of this process's running jobs.

    `durable` says whether the job engine is launched (a job of the tree may then run as a workflow
    on another replica, stopped by cancelling that workflow)."""

    def __init__(self, store: Store, jobs: Jobs, catalog: Catalog, questions: Questions,
                 durable: Callable[[], bool]) -> None:
        self.store = store
        self.jobs = jobs
        self.catalog = catalog
        self.questions = questions
        self.durable = durable
        self._tasks: dict[str, asyncio.Task[Any]] = {}  # job id -> the task running it in this process

    # reading the tree ----------------------------------------------------------------------------

    def tree_chain(self, job: Job) -> list[TreeNode]:
        """The job and its ancestors, the job first and the root last, each with its depth."""
        chain = [job]
        while chain[-1].parent_id is not None and len(chain) < MAX_CHAIN:
            parent = self.jobs.job(chain[-1].parent_id)
            if parent is None:
                break
            chain.append(parent)
        top = len(chain) - 1
        return [TreeNode(j, self.catalog.agent_or_none(j.agent), top - i) for i, j in enumerate(chain)]

    def tree_below(self, job: Job) -> tuple[list[tuple[int, Job]], int]:
        """The job and the jobs below it with their depth, depth first, down to MAX_DEPTH levels (as deep
        as any max_depth lets a tree go); and how many jobs lie deeper, which only a broken journal holds
        (counted up to MAX_LEFT_OUT, each once)."""
        drawn: list[tuple[int, Job]] = []
        deeper: list[Job] = []
        stack = [(0, job)]
        while stack:
            depth, node = stack.pop()
            drawn.append((depth, node))
            children = self.jobs.children(node.id)
            if depth == MAX_DEPTH:
                deeper.extend(children)
            else:
                stack.extend((depth + 1, c) for c in reversed(children))
        seen = {j.id for _, j in drawn}
        while deeper and len(seen) - len(drawn) < MAX_LEFT_OUT:
            node = deeper.pop()
            if node.id not in seen:
                seen.add(node.id)
                deeper.extend(self.jobs.children(node.id))
        return drawn, len(seen) - len(drawn)

    def tree_reason(self, job: Job) -> str | None:
        """Why the job's tree was ended by a limit, if it was."""
        return self.jobs.tree_limit(job)

    def tree_partial(self, job_id: str) -> Any:
        """What a job's finished children gave, by step: the `partial` output of a job a limit ended."""
        done = {step_label(c): c["output"] for c in self.store.children(job_id) if c["status"] == "succeeded"}
        return {"steps": done} if done else None

    # the checks --------------------------------------------------------------------------------

    def _refuse(self, job: Job, reason: str) -> JobFailure:
        """Record that the tree reached a limit (the first reason wins) and the failure to raise."""
        root_id = job.root_id or job.id
        with self.store.engine.begin() as conn:
            conn.execute(update(jobs).where(jobs.c.id == root_id, jobs.c.limit_reached.is_(None))
                         .values(limit_reached=reason))
        return JobFailure(LIMIT_EXCEEDED, reason)

    def _ended_tree(self, job: Job) -> None:
        reason = self.tree_reason(job)
        if reason is not None:
            raise JobFailure(LIMIT_EXCEEDED, reason)

    def submit_child(self, parent: Job, agent: str, text: str, *, dedupe_key: str) -> Job:
        """Journal a child of `parent` once (by its dedupe key: a replay gets the same child), within
        the tree's max_depth and max_children. Raises JobFailure("LimitExceeded") naming the limit."""
        existing = self.store.job_by_dedupe_key(dedupe_key)
        if existing is not None:
            found = self.jobs.job(existing["id"])
            assert found is not None
            return found
        self._ended_tree(parent)
        chain = self.tree_chain(parent)
        depth = chain[0].depth + 1
        label = dedupe_key.rsplit(":", 1)[-1]
        what = f"{'step' if dedupe_key.startswith('flow:') else 'delegation'} {label} ({agent})"
        for node in chain:
            limit = (node.spec.limits.max_depth if node.spec else 5)
            if depth - node.depth > limit:
                rel = "" if node.depth == 0 else f" below job {node.job.id}"
                raise self._refuse(parent, f"limits.max_depth is {limit} (set by {node.setter}): job {parent.id} "
                                           f"({parent.agent}, depth {chain[0].depth}) tried to start {what} at "
                                           f"depth {depth - node.depth}{rel}")
        strictest = min(chain, key=lambda n: n.spec.limits.max_children if n.spec else 50)
        limit = strictest.spec.limits.max_children if strictest.spec else 50
        with self.store.engine.connect() as conn:
            started = conn.execute(select(func.count()).select_from(jobs).where(
                jobs.c.parent_id == parent.id, jobs.c.status != "skipped")).scalar() or 0
        if started >= limit:
            raise self._refuse(parent, f"limits.max_children is {limit} (set by {strictest.setter}): job "
                                       f"{parent.id} ({parent.agent}) tried to start its {ordinal(started + 1)} "
                                       f"child, {what}")
        child, _ = self.jobs.submit(agent, text, requester=parent.requester, channel=parent.channel,
                                    dedupe_key=dedupe_key, parent_id=parent.id)
        return child

    def take_step(self, job: Job, attempt: int) -> None:
        """Count one step (a run or a retry of `job`) against max_steps of every job above it, in one
        transaction; also the tree's time at this boundary. Raises JobFailure("LimitExceeded")."""
        if job.parent_id is None:
            return
        self._ended_tree(job)
        chain = self.tree_chain(job)
        self._check_time(job, chain)
        where = _where(job) if attempt == 1 else f"attempt {attempt} of {_where(job)}"
        with self.store.engine.begin() as conn:
            for node in chain[1:]:
                limit = node.spec.limits.max_steps if node.spec else 100
                taken = jobs.c.tree_steps
                got = conn.execute(update(jobs).where(jobs.c.id == node.job.id, func.coalesce(taken, 0) < limit)
                                   .values(tree_steps=func.coalesce(taken, 0) + 1)).rowcount
                if got != 1:
                    conn.rollback()
                    scope = "the tree" if node.depth == 0 else f"the subtree of job {node.job.id}"
                    raise self._refuse(job, f"limits.max_steps is {limit} (set by {node.setter}): reached at "
                                            f"{where}, the {ordinal(limit + 1)} step of {scope}")

    # time ----------------------------------------------------------------------------------------

    def _waited(self, root_id: str, since: float, now: float) -> float:
        """Seconds the tree's jobs waited for a person since `since` (questions asked and answered)."""
        query = (select(questions.c.asked_at, questions.c.answered_at)
                 .join(jobs, jobs.c.id == questions.c.job_id)
                 .where((jobs.c.root_id == root_id) | (jobs.c.id == root_id)))
        with self.store.engine.connect() as conn:
            rows = conn.execute(query).all()
        return float(sum(max(0.0, (answered or now) - max(asked, since)) for asked, answered in rows))

    def _time_left(self, chain: list[TreeNode]) -> tuple[float, TreeNode, float] | None:
        """The least time left of any tree_timeout_s in the chain: (seconds, whose, seconds used)."""
        now = time.time()
        root_id = chain[-1].job.id
        best: tuple[float, TreeNode, float] | None = None
        for node in chain:
            limits = node.spec.limits if node.spec else None
            if limits is None or limits.tree_timeout_s is None:
                continue
            since = node.job.started or node.job.created
            used = now - since - (0.0 if limits.count_waits else self._waited(root_id, since, now))
            left = limits.tree_timeout_s - used
            if best is None or left < best[0]:
                best = (left, node, used)
        return best

    def _time_reason(self, job: Job, node: TreeNode, used: float, *, where: str | None = None) -> str:
        limits = node.spec.limits  # type: ignore[union-attr]
        waits = "waits for a person included" if limits.count_waits else "waits for a person excluded"
        scope = "the tree" if node.depth == 0 else f"the subtree of job {node.job.id}"
        return (f"limits.tree_timeout_s is {limits.tree_timeout_s:g} (set by {node.setter}): {scope} had run "
                f"{used:.1f} s ({waits}) at {where or _where(job)}")

    def time_left(self, job: Job) -> float | None:
        """Seconds left (0 once past) of the least tree_timeout_s over the job; None when none bounds it."""
        left = self._time_left(self.tree_chain(job))
        return max(0.0, left[0]) if left is not None else None

    def time_up(self, job: Job, *, where: str) -> str:
        """The tree's time ran out at `where` (a person step's wait): the reason, recorded on its root."""
        chain = self.tree_chain(job)
        left = self._time_left(chain)
        return self._refuse(job, self._time_reason(job, chain[-1], left[2] if left else 0.0, where=where)).reason

    def _check_time(self, job: Job, chain: list[TreeNode]) -> None:
        left = self._time_left(chain)
        if left is not None and left[0] <= 0:
            raise self._refuse(job, self._time_reason(job, left[1], left[2]))

    async def watch(self, job: Job, work: Coroutine[Any, Any, Job]) -> Job:
        """Run a job's work as its own task, stopped when its tree's time is up (tree_timeout_s), and
        registered so that the end of a tree a limit ended can cancel it."""
        task = asyncio.ensure_future(work)
        running = self._tasks
        running[job.id] = task
        overdue: float | None = None
        try:
            while True:
                left = await read_out("a tree's watch", self._watched_left, job)
                if left is None:
                    return await task
                delay = left[0]
                if delay <= 0 and await read_out("a tree's watch", self._running_child, job.id):
                    overdue = time.monotonic() if overdue is None else overdue  # its child's own watch stops it first
                    delay = overdue + GRACE_S - time.monotonic()
                if delay <= 0:
                    await read_out("a tree's limit", self._refuse, job, self._time_reason(job, left[1], left[2]))
                    task.cancel()
                    await asyncio.wait({task})
                    await read_out("a tree's stop", self._stop, job.id)  # a task cancelled before it ran has not ended the job
                    return await read_out("a job's read", self._read, job.id)
                done, _ = await asyncio.wait({task}, timeout=min(delay, POLL_S))
                if done:
                    return task.result()
        except asyncio.CancelledError:
            if task.done() and self.tree_reason(job) is not None:
                return self._read(job.id)
            task.cancel()
            raise
        finally:
            running.pop(job.id, None)
            if job.parent_id is None:
                await waited_out("a tree's end", self.end_tree, job.id)

    def _watched_left(self, job: Job) -> tuple[float, TreeNode, float] | None:
        return self._left_over(job) if job.parent_id or self._own_timeout(job) else None

    def _left_over(self, job: Job) -> tuple[float, TreeNode, float] | None:
        return self._time_left(self.tree_chain(job))

    def _read(self, job_id: str) -> Job:
        job = self.jobs.job(job_id)
        assert job is not None
        return job

    def _running_child(self, job_id: str) -> bool:
        with self.store.engine.connect() as conn:
            return conn.execute(select(jobs.c.id).where(jobs.c.parent_id == job_id,
                                                        jobs.c.status.in_(ACTIVE_STATUSES)).limit(1)).first() is not None

    def _own_timeout(self, job: Job) -> bool:
        spec = self.catalog.agent_or_none(job.agent)
        return spec is not None and spec.limits.tree_timeout_s is not None

    async def watch_child(self, parent: Job, child_id: str, wait: Coroutine[Any, Any, Any]) -> Any:
        """Wait for a child of `parent` that runs elsewhere (a durable flow's child workflow: `wait` is
        its result), but not past the tree's time: then the child is stopped where it runs (its
        workflow cancelled) and ends LimitExceeded. Returns or raises as `wait` does, or returns None
        if `wait` has not ended STOP_WAIT_S after the stop (the child's row says how it ended). The
        child's own watch, when it runs, stops it first; this one GRACE_S later, or at once for a
        child still queued."""
        task = asyncio.ensure_future(wait)
        overdue: float | None = None
        stopped: float | None = None
        try:
            while True:
                if stopped is None:
                    left = await read_out("a child's watch", self._left_over, parent)
                    if left is None:
                        return await task
                    delay = left[0]
                    child = await read_out("a child's watch", self.jobs.job, child_id)
                    if delay <= 0 and child is not None and child.status in ("running", "waiting"):
                        overdue = time.monotonic() if overdue is None else overdue
                        delay = overdue + GRACE_S - time.monotonic()
                    if delay <= 0:
                        if child is not None and not child.finished:
                            await read_out("a tree's limit", self._refuse, child, self._time_reason(child, left[1], left[2]))
                            await self._stop_elsewhere(child.id, child.dedupe_key)
                            await read_out("a tree's stop", self._stop, child.id)  # with the tree's reason (the first recorded)
                        stopped = time.monotonic()
                if stopped is not None:
                    delay = stopped + STOP_WAIT_S - time.monotonic()
                    if delay <= 0:
                        log.warning("job %s was stopped by its tree's limit, but its run did not end within %g s",
                                    child_id, STOP_WAIT_S)
                        return None
                done, _ = await asyncio.wait({task}, timeout=min(delay, POLL_S))
                if done:
                    return task.result()
        finally:
            task.cancel()

    async def _stop_elsewhere(self, job_id: str, dedupe_key: str | None) -> None:
        """Cancel a job of the tree running in this process (its task) or as a workflow of the engine
        (on any replica). The engine's cancel runs on a thread outside the caller's context, so it is
        never recorded as a step of the workflow that calls it (which would break that one's replay)."""
        task = self._tasks.get(job_id)
        if task is not None:
            task.cancel()
            await asyncio.wait({task})
        elif self.durable() and (dedupe_key or "").startswith("flow:"):
            from dbos import DBOS

            await asyncio.get_running_loop().run_in_executor(None, DBOS.cancel_workflow, dedupe_key or "")

    def _stop(self, job_id: str, reason: str | None = None) -> None:
        """End a job of a tree a limit ended, if it has not ended itself: its questions closed, failed
        with the tree's reason, keeping what its finished children gave."""
        if reason is None:
            ending = self.jobs.job(job_id)
            reason = self.tree_reason(ending) if ending is not None else None
        for step in self.questions.open_steps(job_id):
            self.questions.close(job_id, step, action="cancel", by="limit")
        self.store.update_job(job_id, only_if_status=ACTIVE_STATUSES, status="failed", failure_kind=LIMIT_EXCEEDED,
                              failure_reason=reason, output=self.tree_partial(job_id), ended=time.time())

    async def end_tree(self, root_id: str) -> None:
        """After a root a limit ended: its jobs still running are cancelled (a task here, a workflow of
        the engine elsewhere), their questions closed, and each ends failed with the tree's reason."""
        root = self.jobs.job(root_id)
        if root is None or root.limit_reached is None:
            return
        with self.store.engine.connect() as conn:
            active = [dict(r) for r in conn.execute(select(jobs).where(
                jobs.c.root_id == root_id, jobs.c.status.in_(ACTIVE_STATUSES))).mappings()]
        for row in active:
            await self._stop_elsewhere(row["id"], row["dedupe_key"])
            self._stop(row["id"], root.limit_reached)
