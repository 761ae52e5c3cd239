"""Budgets over the job tree: before each model, http or MCP call the runtime reserves the call's
maximum against every budget that covers the job, and settles it with what the call used.

Which budgets cover a job: the `budget:` of its own agent, of each job above it (a flow over its
steps, a job that delegated), walking `parent_id` to the root, and the access.yaml budgets of the
place the root job was asked. A per-job budget is one job's (its children included); a per-day
budget is shared by every job whose root was asked that UTC day.

What a call reserves (its most): a model call its prompt's tokens, bounded by the UTF-8 bytes of the
request (no tokenizer is installed; a token is at least one byte, so this is a true upper bound)
plus its `max_tokens`, their cost from its `price`, and 1 call; an http or MCP call 1 call and its
`price.per_call`. The call then settles with the provider's reported `usage` (a model answer without
one settles its reserved maximum); a call that failed releases what it held. A call reserves at least
what the budget's settled calls spent on average, and under a token or cost budget the first model
call settles before the next starts (budget_book.py says why: an endpoint that ignores `max_tokens`
overspends by one call, never more). A reservation that does
not fit is refused before the call: `on_exhausted: fail` ends the job BudgetExhausted, `ask` asks the
asker (a person step) and an approval grants that budget the shortfall for this job tree only.

Kinds use `budget_call(ctx, need)` around each call; store work is in edge.runtime.budget_book.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.budget import BUDGET_DIMENSIONS, Price, format_dimension
from oz0.edge.model.job import Job, JobFailure
from oz0.edge.runtime.access import AccessError, AccessPolicy, Asker
from oz0.edge.runtime.budget_book import Amounts, BudgetBook, BudgetRef, BudgetState, Refusal
from oz0.edge.runtime.context import RunContext

if TYPE_CHECKING:
    from oz0.edge.runtime.catalog import Catalog
    from oz0.edge.runtime.jobs import Jobs

__all__ = [
    "ALLOW_SCHEMA",
    "MAX_BUDGET_ASKS",
    "MAX_TREE_DEPTH",
    "Budgets",
    "CallNeed",
    "Meter",
    "ask_message",
    "asker_of",
    "budget_call",
    "call_need",
    "exhausted",
    "model_need",
    "request_token_bound",
]

log = logging.getLogger("oz0.budgets")

MAX_TREE_DEPTH = 64        # jobs walked up from a job to its root (a cycle cannot loop for ever)
MAX_BUDGET_ASKS = 3        # questions one call may ask before it ends BudgetExhausted
FIRST_CALL_POLL_S = 0.05   # how often a call waiting for a budget's first call to settle looks again
COVERING_MEMO = 1_024     # jobs whose covering budgets a runtime remembers (edge.runtime.budgets._covering_call)
ASK_MARGIN_S = 2.0         # a budget question closes this long before the attempt's time limit
ALLOW_SCHEMA = {"type": "object", "required": ["allow"],
                "properties": {"allow": {"type": "boolean", "title": "Allow", "description": "yes: allow it"}}}


@dataclass(frozen=True)
class CallNeed:
    """The most one call may spend. None: unbounded (a model without max_tokens, or without a price),
    which a budget limiting that dimension refuses to reserve, saying what to declare."""

    tokens: int | None = 0
    cost: int | None = 0
    calls: int = 1
    missing: str = ""  # what the agent must declare for the unbounded dimensions


def request_token_bound(request_bytes: int) -> int:
    """An upper bound of a request's prompt tokens: its UTF-8 bytes (every token is at least one byte)."""
    return request_bytes


def call_need(spec: AgentSpec) -> CallNeed:
    """What an http or MCP call may spend: 1 call, and its `price.per_call` (no price: it costs nothing)."""
    price: Price | None = getattr(spec, "price", None)
    return CallNeed(tokens=0, cost=price.per_call if price is not None else 0, calls=1)


def model_need(spec: AgentSpec, request_bytes: int) -> CallNeed:
    """What a model call may spend at most: the prompt's bound plus `max_tokens`, costed by `price`."""
    max_tokens = spec.config.get("max_tokens")
    prompt = request_token_bound(request_bytes)
    missing = []
    if not isinstance(max_tokens, int):
        missing.append("`max_tokens: N`")
    price: Price | None = spec.price
    if price is None:
        missing.append("`price: {input_per_1k: ..., output_per_1k: ...}`")
    tokens = prompt + max_tokens if isinstance(max_tokens, int) else None
    cost = (price.cost(prompt_tokens=prompt, completion_tokens=max_tokens)
            if price is not None and isinstance(max_tokens, int) else None)
    return CallNeed(tokens=tokens, cost=cost, calls=1, missing=" and ".join(missing))


class Meter:
    """One call's reservation, given to the kind: `used(...)` records the provider's reported usage."""

    def __init__(self, budgets: Budgets | None, hold: str, job: Job | None, spec: AgentSpec | None,
                 need: CallNeed) -> None:
        self._budgets, self.hold, self._job, self._spec, self._need = budgets, hold, job, spec, need
        self._used: Amounts | None = None

    def used(self, *, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        """The provider's `usage` of this call: settled instead of the reserved maximum."""
        price: Price | None = getattr(self._spec, "price", None)
        cost = price.cost(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens) if price else 0
        self._used = Amounts(prompt_tokens + completion_tokens, cost, 1)

    def close(self, *, failed: bool) -> None:
        if self._budgets is None or self._job is None or self._spec is None:
            return
        used = self._used
        if used is None and not failed:  # no usage reported: what was reserved is taken as spent
            used = Amounts(self._need.tokens or 0, self._need.cost or 0, self._need.calls)
        self._budgets.book.settle(self.hold, used, agent=self._spec.name, channel=self._job.channel, job_id=self._job.id)


@asynccontextmanager
async def budget_call(ctx: RunContext | None, need: CallNeed) -> AsyncIterator[Meter]:
    """Around one model, http or MCP call: reserve `need` first (refused: JobFailure BudgetExhausted,
    the call is never made), then settle what the call used, or release it when the call failed."""
    budgets = getattr(ctx, "budgets", None)
    if ctx is None or budgets is None:
        yield Meter(None, "", None, ctx.agent if ctx is not None else None, need)
        return
    meter = await budgets.reserve(ctx, need)
    try:
        yield meter
    except BaseException:
        meter.close(failed=True)
        raise
    meter.close(failed=False)


class Budgets:
    """The budgets of one runtime: which cover a job, reserving with the asker's consent, and reading."""

    def __init__(self, book: BudgetBook, jobs: Jobs, catalog: Catalog, home: Path) -> None:
        self.book = book
        self.jobs = jobs
        self.catalog = catalog
        self.home = home  # where access.yaml (its budgets) lives
        self._policy: tuple[int | None, AccessPolicy] | None = None
        self._covered: dict[str, tuple[AccessPolicy, Any, Job, Job, list[BudgetRef]]] = {}
        self._covered_lock = threading.Lock()

    # which budgets cover a job --------------------------------------------------------------------

    def chain(self, job: Job) -> list[Job]:
        """The job and the jobs above it, up to its root."""
        out = [job]
        seen = {job.id}
        while out[-1].parent_id and len(out) < MAX_TREE_DEPTH:
            parent = self.jobs.job(out[-1].parent_id)
            if parent is None or parent.id in seen:
                break
            seen.add(parent.id)
            out.append(parent)
        return out

    def covering(self, job: Job, spec: AgentSpec | None = None) -> tuple[Job, list[BudgetRef]]:
        """The root of the job's tree and every budget that covers the job: its own, its parents', the
        place's (access.yaml). `spec`: the job's agent as it runs (else looked up by name)."""
        chain = self.chain(job)
        root = chain[-1]
        day = "day:" + datetime.datetime.fromtimestamp(root.created, datetime.UTC).strftime("%Y-%m-%d")
        refs: list[BudgetRef] = []
        for i, node in enumerate(chain):
            agent = spec if i == 0 and spec is not None else self._spec(node.agent)
            budget = getattr(agent, "budget", None)
            if budget is None:
                continue
            what = "flow" if agent.kind == "flow" else "agent"
            period = day if budget.per == "day" else f"job:{node.id}"
            refs.append(BudgetRef(f"{what}:{agent.name}", period, f"{what} {agent.name}, per {budget.per}", budget))
        asker = asker_of(root)
        for entry in self.policy().budgets:
            if entry.matches(asker):
                period = day if entry.budget.per == "day" else f"job:{root.id}"
                refs.append(BudgetRef(f"access:{entry.name}", period,
                                      f"access.yaml budget {entry.name}, per {entry.budget.per}", entry.budget))
        return root, refs

    def _spec(self, name: str) -> Any:
        try:
            return self.catalog.agent(name)
        except Exception:  # uninstalled since the job started: its budget no longer applies
            return None

    def policy(self) -> AccessPolicy:
        """access.yaml as it is now (read again when the file changes)."""
        path = Path(self.home) / "access.yaml"
        try:
            stamp: int | None = path.stat().st_mtime_ns
        except FileNotFoundError:
            stamp = None
        if self._policy is None or self._policy[0] != stamp:
            try:
                self._policy = (stamp, AccessPolicy.load(self.home))
            except AccessError as exc:
                raise JobFailure("Misconfigured", f"the budgets of access.yaml cannot be read: {exc}") from None
        return self._policy[1]

    # reserving ------------------------------------------------------------------------------------

    def _covering_call(self, ctx: RunContext) -> tuple[Job, Job, list[BudgetRef]]:
        """The job of a call, its root and the budgets covering it: read once per job while access.yaml
        and the agent as it runs stay the same (a job's tree and its day never change), not at each of
        a tool loop's calls. At most COVERING_MEMO jobs are remembered."""
        policy = self.policy()
        memo = self._covered.get(ctx.job_id)
        if memo is not None and memo[0] is policy and memo[1] is ctx.agent:
            return memo[2], memo[3], memo[4]
        job = self.jobs.job(ctx.job_id)
        if job is None:
            raise KeyError(f"no job {ctx.job_id!r}")
        root, refs = self.covering(job, ctx.agent)
        with self._covered_lock:
            if len(self._covered) >= COVERING_MEMO:
                self._covered.pop(next(iter(self._covered)))
            self._covered[ctx.job_id] = (policy, ctx.agent, job, root, refs)
        return job, root, refs

    async def reserve(self, ctx: RunContext, need: CallNeed) -> Meter:
        """Reserve `need` against every budget covering the job, asking the asker where a budget says
        so; a Meter for the call, or JobFailure BudgetExhausted (Misconfigured for an unbounded need)."""
        job, root, refs = self._covering_call(ctx)
        if not refs:  # no budget covers the job: nothing to hold, its spend is only counted (settle)
            return Meter(self, "", job, ctx.agent, need)
        hold = uuid.uuid4().hex
        meter = Meter(self, hold, job, ctx.agent, need)
        for ref in refs:
            unbounded = [d for d in ("tokens", "cost") if getattr(need, d) is None and ref.budget.limit(d) is not None]
            if unbounded:
                raise JobFailure("Misconfigured", f"the budget ({ref.label}) limits {' and '.join(unbounded)}, but agent "
                                                  f"{ctx.agent.name} declares no {need.missing}, so its calls have no "
                                                  "bound to reserve; declare it in the agent file")
        amounts = Amounts(need.tokens or 0, need.cost or 0, need.calls)
        asked = 0
        while True:
            refusal = self.book.reserve(refs, amounts, hold=hold, job_id=job.id, root_id=root.id)
            if refusal is None:
                return meter
            wait = ctx.agent.limits.timeout_s - (time.monotonic() - ctx.started) - ASK_MARGIN_S
            if refusal.waiting:  # the budget's first call is in flight: its usage decides what fits
                if wait < FIRST_CALL_POLL_S:
                    raise exhausted(refusal, why="the budget's first call had not reported what it used within "
                                                 "the job's time limit")
                await asyncio.sleep(FIRST_CALL_POLL_S)
                continue
            state = refusal.state
            if state.ref.budget.on_exhausted != "ask" or asked == MAX_BUDGET_ASKS:
                raise exhausted(refusal)
            asked += 1
            asking = dataclasses.replace(ctx, job_id=root.id)  # the root's person step: its asker sees it there
            if not asking.can_ask_person():
                raise exhausted(refusal, why="on_exhausted is ask, but no channel can ask where the job was "
                                             "asked; ask it from chat or the console")
            if wait < 1:
                raise exhausted(refusal, why="no time is left in the job's time limit to ask")
            answer = await asking.runtime_ask(ask_message(refusal), ALLOW_SCHEMA, step=f"budget-{uuid.uuid4().hex[:8]}",
                                              timeout_s=wait, source=f"Budget ({state.ref.label})"[:200])
            if answer.action != "accept" or not (answer.content or {}).get("allow"):
                said = {"accept": f"{answer.by} said no", "decline": f"{answer.by} declined",
                        "cancel": f"{answer.by} cancelled", "timeout": "nobody answered in time"}
                raise exhausted(refusal, why=f"{said.get(answer.action, answer.action)} when asked to allow more")
            assert state.id is not None
            short = refusal.short
            self.book.grant(state.id, root.id, short, by=answer.by, detail={
                "job": job.id, "root": root.id, "budget": state.ref.label,
                "granted": {d: short.get(d) for d in BUDGET_DIMENSIONS if short.get(d)}})
            ctx.progress(f"{answer.by} allowed {_amounts(short)} more of the budget ({state.ref.label})")

    # reading --------------------------------------------------------------------------------------

    def report(self, job: Job) -> list[BudgetState]:
        """Each budget covering the job as it stands (for `oz0 jobs show`, the job page, the API)."""
        try:
            root, refs = self.covering(job)
        except JobFailure as exc:
            log.warning("budgets of job %s cannot be shown: %s", job.id, exc.reason)
            return []
        return self.book.states(refs, root_id=root.id)


def asker_of(job: Job) -> Asker:
    """Where a job was asked, as access.yaml's conditions see it (its workspace and channel columns,
    else its channel name `platform:channel`)."""
    platform, _, channel = job.channel.partition(":")
    return Asker(platform=job.reply_to.platform if job.reply_to is not None else platform,
                 workspace=job.workspace, channel=job.channel_id or channel or None)


def _amounts(amounts: Amounts) -> str:
    return ", ".join(format_dimension(d, amounts.get(d)) for d in BUDGET_DIMENSIONS if amounts.get(d))


def ask_message(refusal: Refusal) -> str:
    """`this job needs up to $0.12 more of its $1.00 budget (agent X, per job); allow?`"""
    state = refusal.state
    return (f"this job needs up to {_amounts(refusal.short)} more of its {state.ref.budget.describe()} budget "
            f"({state.ref.label}); allow?")


def exhausted(refusal: Refusal, *, why: str = "") -> JobFailure:
    """BudgetExhausted naming the budget: whose, which limit and its number, spent, reserved, needed."""
    state = refusal.state
    parts = []
    for d in BUDGET_DIMENSIONS:
        limit = state.limit(d)
        if limit is None or not refusal.short.get(d):
            continue
        granted = state.granted.get(d)
        parts.append(f"its {d} limit is {format_dimension(d, limit)}"
                     + (f" (+{format_dimension(d, granted)} granted to this job)" if granted else "")
                     + f", {format_dimension(d, state.spent.get(d))} spent and "
                       f"{format_dimension(d, state.reserved.get(d))} reserved by calls in flight, and this call "
                       f"needs up to {format_dimension(d, refusal.need.get(d))}")
    reason = (f"the {state.ref.budget.describe()} budget ({state.ref.label}) has no room for the next call: "
              f"{'; '.join(parts)}; the call was not made")
    return JobFailure("BudgetExhausted", reason + (f" ({why})" if why else ""))
