"""Conversations: the turns of one chat thread with an agent, in the journal so every replica sees them.

A conversation's id is platform + channel + thread (`conversation_id`). Its one table holds a row per
turn, numbered from 1: a turn is a job (linked to the previous turn's job) or a stop (`@oz0 stop`,
the Stop button). The latest row says where the conversation stands: its agent, when it last moved,
whether it was stopped. Two replicas adding a turn at once cannot both take the same number (the
primary key): the loser reads again, after a short random wait, and takes the next one. A burst of
replies in one thread (fifty at once on two replicas) is numbered in turn; a turn that still finds no
number after ADD_WITHIN_S seconds raises ConversationBusy (the chat flow then runs its job outside the
conversation rather than lose it).

A follow-up's agent is given the earlier turns (`history`): each ask and its final answer (a tool loop's
answer after a line naming the tools it called, edge.runtime.loop_trace.tool_summaries), the oldest
dropped past the agent's `conversation:` bounds (edge.model.agent.ConversationLimits), how many said
on the card (`dropped_note`). Revision 0015 makes the table.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Column, Float, Index, Integer, String, Table, insert, select
from sqlalchemy.exc import IntegrityError

from oz0.edge.errors import Oz0Error
from oz0.edge.model.agent import ConversationLimits
from oz0.edge.runtime.loop_trace import tool_summaries
from oz0.edge.runtime.store import jobs, metadata

if TYPE_CHECKING:
    from oz0.edge.runtime.store import Store

__all__ = ["ADD_WITHIN_S", "CHARS_PER_TOKEN", "Conversation", "ConversationBusy", "Conversations", "History",
           "conversation_id", "conversation_turns", "thread_in"]

CHARS_PER_TOKEN = 4        # the token estimate of a turn's text, without a provider's tokenizer
ADD_WITHIN_S = 10.0        # how long a turn waits for a number while other asks of its thread take theirs
_RETRY_WAIT_S = (0.005, 0.2)  # the first and the longest random wait between two tries
MAX_ID_CHARS = 300
MAX_SCAN = 500             # earlier rows read for a history (the bounds keep far fewer)

conversation_turns = Table(
    "conversation_turns", metadata,
    Column("conversation_id", String(MAX_ID_CHARS), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("kind", String(8), nullable=False),        # "turn" or "stop"
    Column("job_id", String(32), nullable=True),      # a turn's job
    Column("previous_job_id", String(32), nullable=True),
    Column("agent", String(64), nullable=True),
    Column("by", String(200), nullable=False),
    Column("at", Float, nullable=False),
    Index("ix_conversation_turns_job", "job_id"),
)


def conversation_id(platform: str, channel: str, thread: str) -> str:
    """The id of the conversation in `thread` of `channel` on `platform`."""
    return f"{platform}:{channel}:{thread}"[:MAX_ID_CHARS]


def thread_in(cid: str, platform: str, channel: str) -> str | None:
    """The thread of conversation `cid` when it is in `channel` of `platform` (`conversation_id` read back)."""
    prefix = f"{platform}:{channel}:"
    return cid[len(prefix):] or None if cid.startswith(prefix) else None


@dataclass(frozen=True)
class Conversation:
    """Where a conversation stands: its latest turn."""

    id: str
    agent: str | None
    last_job_id: str | None
    turns: int
    last_at: float
    stopped: bool

    def open(self, limits: ConversationLimits, *, now: float | None = None) -> bool:
        """Whether a follow-up still continues it: not stopped, and not idle past `limits.idle_hours`."""
        now = time.time() if now is None else now
        return not self.stopped and now - self.last_at <= limits.idle_hours * 3600


@dataclass(frozen=True)
class History:
    """The earlier turns a job is given, as messages (`{role, content}`), and how many were dropped."""

    messages: tuple[Mapping[str, str], ...] = ()
    dropped: int = 0
    limits: ConversationLimits = ConversationLimits()  # noqa: RUF009  (frozen: one shared default is safe)

    def as_list(self) -> list[dict[str, str]]:
        return [dict(m) for m in self.messages]


def dropped_note(history: History) -> str | None:
    """The card's note when earlier turns were left out."""
    if not history.dropped:
        return None
    limits = history.limits
    return (f"{history.dropped} earlier turn{'s' * (history.dropped != 1)} of this conversation "
            f"{'were' if history.dropped != 1 else 'was'} left out (the agent keeps the last "
            f"{limits.max_turns} turns, at most {limits.max_tokens:,} tokens).")


def answer_text(output: Any) -> str:
    """A turn's final answer as the next turn reads it: text as it is, anything else as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping) and isinstance(output.get("success"), bool) and "data" in output:
        output = output.get("data")   # a QZX result: its data, not its envelope
        if isinstance(output, str):
            return output
    return json.dumps(output, ensure_ascii=False, sort_keys=True)


class ConversationBusy(Oz0Error, RuntimeError):
    """A turn that found no free number for ADD_WITHIN_S seconds: so many asks in one thread at once."""

    def __init__(self, cid: str) -> None:
        self.conversation_id = cid
        super().__init__(f"conversation {cid}: so many asks in this thread at once that this one found no "
                         f"place in it within {ADD_WITHIN_S:g} s")


class Conversations:
    """The conversations of the journal (one `Store`)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, cid: str) -> Conversation | None:
        with self.store.engine.connect() as conn:
            row = conn.execute(select(conversation_turns).where(conversation_turns.c.conversation_id == cid)
                               .order_by(conversation_turns.c.seq.desc()).limit(1)).mappings().first()
            if row is None:
                return None
            last_job = conn.execute(select(conversation_turns.c.job_id).where(
                conversation_turns.c.conversation_id == cid, conversation_turns.c.kind == "turn")
                .order_by(conversation_turns.c.seq.desc()).limit(1)).scalar()
        return Conversation(cid, row["agent"], last_job, int(row["seq"]), float(row["at"]), row["kind"] == "stop")

    def of_job(self, job_id: str) -> str | None:
        """The conversation a job is a turn of, if any."""
        with self.store.engine.connect() as conn:
            return conn.execute(select(conversation_turns.c.conversation_id)
                                .where(conversation_turns.c.job_id == job_id).limit(1)).scalar()

    def of_delivery(self, delivery: str) -> str | None:
        """The conversation of the job asked by a chat delivery (its dedupe key), if that job is a turn."""
        with self.store.engine.connect() as conn:
            return conn.execute(select(conversation_turns.c.conversation_id)
                                .join(jobs, jobs.c.id == conversation_turns.c.job_id)
                                .where(jobs.c.dedupe_key == delivery).limit(1)).scalar()

    def turns(self, cid: str, *, limit: int = 200) -> list[dict[str, Any]]:
        """The conversation's rows, oldest first (the console's job page, the API)."""
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(conversation_turns).where(conversation_turns.c.conversation_id == cid)
                                .order_by(conversation_turns.c.seq.desc()).limit(limit)).mappings().all()
        return [dict(r) for r in reversed(rows)]

    def add_turn(self, cid: str, job_id: str, agent: str, *, by: str) -> int:
        """Journal `job_id` as the conversation's next turn, linked to the previous turn's job."""
        return self._add(cid, "turn", job_id=job_id, agent=agent, by=by)

    def stop(self, cid: str, *, by: str) -> bool:
        """End the conversation (False: there was none, or it was stopped already)."""
        current = self.get(cid)
        if current is None or current.stopped:
            return False
        self._add(cid, "stop", job_id=None, agent=current.agent, by=by)
        return True

    def _add(self, cid: str, kind: str, *, job_id: str | None, agent: str | None, by: str) -> int:
        deadline = time.monotonic() + ADD_WITHIN_S
        wait = _RETRY_WAIT_S[0]
        while True:
            current = self.get(cid)
            seq = (current.turns if current is not None else 0) + 1
            previous = current.last_job_id if current is not None and not current.stopped else None
            try:
                with self.store.engine.begin() as conn:
                    conn.execute(insert(conversation_turns).values(
                        conversation_id=cid, seq=seq, kind=kind, job_id=job_id, previous_job_id=previous,
                        agent=agent, by=by[:200], at=time.time()))
                return seq
            except IntegrityError:
                if time.monotonic() >= deadline:   # another ask of the thread took this number each time
                    raise ConversationBusy(cid) from None
            time.sleep(random.uniform(0, wait))   # apart, so that the asks of a burst take their numbers in turn
            wait = min(2 * wait, _RETRY_WAIT_S[1])

    def history(self, job_id: str, limits: ConversationLimits) -> History:
        """The turns before `job_id` in its conversation (since its last stop), within `limits`: the
        newest kept, the oldest dropped first."""
        with self.store.engine.connect() as conn:
            mine = conn.execute(select(conversation_turns).where(conversation_turns.c.job_id == job_id)
                                .limit(1)).mappings().first()
            if mine is None:
                return History(limits=limits)
            rows = conn.execute(select(conversation_turns).where(
                conversation_turns.c.conversation_id == mine["conversation_id"],
                conversation_turns.c.seq < mine["seq"]).order_by(conversation_turns.c.seq.desc())
                .limit(MAX_SCAN)).mappings().all()
        earlier: list[str] = []
        for row in rows:          # newest first, up to the last stop
            if row["kind"] == "stop":
                break
            earlier.append(str(row["job_id"]))
        done = [j for jid in earlier if (j := self.store.job(jid)) is not None and j["status"] == "succeeded"]
        tools = tool_summaries(self.store, [str(j["id"]) for j in done[:limits.max_turns]])
        kept: list[tuple[dict[str, str], dict[str, str]]] = []
        budget = limits.max_tokens * CHARS_PER_TOKEN
        for job in done:
            said = answer_text(job.get("output"))
            summary = tools.get(str(job["id"]))
            turn = ({"role": "user", "content": str(job["input"])},
                    {"role": "assistant", "content": f"{summary}\n{said}" if summary else said})
            size = len(turn[0]["content"]) + len(turn[1]["content"])
            if len(kept) >= limits.max_turns or size > budget:
                break
            budget -= size
            kept.append(turn)
        messages = tuple(m for turn in reversed(kept) for m in turn)
        return History(messages, dropped=len(done) - len(kept), limits=limits)
