"""One stream of events per job (edge.runtime.events), read on the reader's own loop, across replicas.

    async for event in runtime.events(job_id):
        ...   # Progress, QuestionAsked, Answered, TextDelta; JobEnded last

Why a stream and not callbacks: a channel, the console and the job's own person-step wait each read
the events of the jobs they care about, on their own loop or thread, without the runtime knowing who
they are or starting anything to reach them.

- **Backends.** `LocalEvents` carries events inside the process (SQLite: one process runs the jobs);
  `PostgresEvents` (edge.runtime.event_postgres) adds Postgres LISTEN/NOTIFY so a reader on one
  replica sees what another published.
- **State first.** A reader starts with the job's state as the journal has it (its open question; for
  an ended job its `JobEnded`), then the live events. It subscribes before it reads the state, so
  nothing in between is lost; a question seen twice is given once. A late reader of a finished job
  gets its `JobEnded` at once.
- **Bounded.** Each reader holds at most MAX_BUFFERED events it has not read; the publisher never
  waits and never grows. A reader that falls behind loses the oldest events: it is told so with
  `Lagged(dropped)` and given the job's state again (so it never misses the end or an open question).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from oz0.edge.runtime.events import Answered, JobEnded, JobEvent, Lagged, QuestionAsked
from oz0.edge.runtime.job_rows import job_from_row
from oz0.edge.runtime.question_book import asked_question, open_question

if TYPE_CHECKING:
    from oz0.edge.runtime.store import Store

__all__ = ["MAX_BUFFERED", "EventBackend", "EventReader", "JobEvents", "LocalEvents", "Subscription", "open_events"]

log = logging.getLogger("oz0.events")

MAX_BUFFERED = 256   # events held for one reader that has not read them yet; older ones are dropped

JobState = Callable[[str], "Sequence[JobEvent] | None"]  # the journal's view of a job: None when there is none


class Subscription:
    """One reader's buffer of a job's events: pushed from any thread, read on the reader's loop (or,
    made off any loop, by a blocking thread)."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._ready = asyncio.Event()
        self._blocking = threading.Event()
        self._events: collections.deque[JobEvent] = collections.deque()
        self._lock = threading.Lock()
        self._dropped = 0
        self._stale = False
        self._woken = False

    def push(self, event: JobEvent) -> None:
        with self._lock:
            if len(self._events) >= MAX_BUFFERED:
                self._events.popleft()
                self._dropped += 1
            self._events.append(event)
        self._wake()

    def stale(self) -> None:
        """Events may have been lost (a backend reconnected): the reader reads the job's state again."""
        with self._lock:
            self._stale = True
        self._wake()

    def _wake(self) -> None:
        with self._lock:
            if self._woken:
                return
            self._woken = True
        self._blocking.set()
        if self._loop is not None:
            try:
                self._loop.call_soon_threadsafe(self._ready.set)
            except RuntimeError:  # the reader's loop has closed: nobody reads this any more
                pass

    def take(self) -> tuple[list[JobEvent], int, bool]:
        """What arrived since the last take: the events, how many were dropped, whether to resync."""
        with self._lock:
            events, dropped, stale = list(self._events), self._dropped, self._stale
            self._events.clear()
            self._dropped, self._stale, self._woken = 0, False, False
            self._ready.clear()
            self._blocking.clear()
        return events, dropped, stale

    async def arrived(self, timeout: float | None) -> None:
        """Return once something arrived, or after `timeout` seconds."""
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            pass

    def arrived_blocking(self, timeout: float | None) -> None:
        self._blocking.wait(timeout)


class EventBackend(Protocol):
    """Carries a job's events to its subscriptions, in this process or across replicas."""

    def publish(self, job_id: str, event: JobEvent) -> None: ...

    def subscribe(self, job_id: str) -> Subscription: ...

    def unsubscribe(self, subscription: Subscription) -> None: ...

    def close(self) -> None: ...


class LocalEvents:
    """The in-process backend: each event pushed to the subscriptions of its job in this process."""

    def __init__(self) -> None:
        self._subscriptions: dict[str, set[Subscription]] = {}
        self._lock = threading.Lock()

    def publish(self, job_id: str, event: JobEvent) -> None:
        self.deliver(job_id, event)

    def deliver(self, job_id: str, event: JobEvent) -> None:
        with self._lock:
            readers = list(self._subscriptions.get(job_id, ()))
        for reader in readers:
            reader.push(event)

    def subscribe(self, job_id: str) -> Subscription:
        subscription = Subscription(job_id)
        with self._lock:
            self._subscriptions.setdefault(job_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            readers = self._subscriptions.get(subscription.job_id)
            if readers is not None:
                readers.discard(subscription)
                if not readers:
                    del self._subscriptions[subscription.job_id]

    def all_stale(self) -> None:
        """Tell every reader to read its job's state again (events may have been lost)."""
        with self._lock:
            readers = [r for rs in self._subscriptions.values() for r in rs]
        for reader in readers:
            reader.stale()

    def readers(self) -> int:
        with self._lock:
            return sum(len(r) for r in self._subscriptions.values())

    def close(self) -> None:
        return None


class EventReader:
    """A reader of one job's events: the job's state first, then what is published; `next` is safe to
    time out or cancel (nothing is lost by it). Use as a context manager so it unsubscribes."""

    def __init__(self, backend: EventBackend, job_id: str, state: JobState) -> None:
        self.job_id = job_id
        self._backend = backend
        self._state = state
        self._subscription = backend.subscribe(job_id)  # before the state is read: nothing falls between
        self._pending: collections.deque[JobEvent] = collections.deque()
        self._asked: set[str] = set()
        self.ended = False
        self._resync()

    def __enter__(self) -> EventReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._backend.unsubscribe(self._subscription)

    def _resync(self) -> None:
        state = self._state(self.job_id)
        if state is None:
            self.close()
            raise KeyError(f"no job {self.job_id!r}")
        self._pending.extend(state)

    def _given(self) -> JobEvent | None:
        """The next event to give, once each: a question already given is not given again."""
        while self._pending:
            event = self._pending.popleft()
            if isinstance(event, QuestionAsked):
                if event.question.step in self._asked:
                    continue
                self._asked.add(event.question.step)
            elif isinstance(event, JobEnded):
                self.ended = True
                self._pending.clear()
            return event
        return None

    def _arrived(self) -> JobEvent | None:
        """What came since the last look, then the next event to give, if any."""
        events, dropped, stale = self._subscription.take()
        if dropped:
            self._pending.append(Lagged(dropped))
        self._pending.extend(events)
        if dropped or stale:
            self._resync()
        return self._given()

    async def next(self, timeout: float | None = None) -> JobEvent | None:
        """The next event; None after `timeout` seconds without one, or once the job has ended."""
        if self.ended:
            return None
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while (event := self._arrived()) is None:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return None
            await self._subscription.arrived(left)
        return event

    def next_blocking(self, timeout: float | None) -> JobEvent | None:
        """`next` for a thread without a loop (a sync agent waiting for its answer)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        event: JobEvent | None = None
        while not self.ended and (event := self._arrived()) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            self._subscription.arrived_blocking(left)
        return event


class JobEvents:
    """The runtime's event stream service: `publish` what happens to a job, `events(job_id)` to read it.

    `state(job_id)` is the journal's view of a job as events (its open question, its end), the
    backend carries the rest."""

    def __init__(self, backend: EventBackend, *, state: JobState) -> None:
        self.backend = backend
        self._state = state

    def publish(self, job_id: str, event: JobEvent) -> None:
        """Tell the job's readers, wherever they are; never raises for a reader's sake."""
        try:
            self.backend.publish(job_id, event)
        except Exception as exc:  # a stream that cannot carry an event must not fail the job
            log.warning("could not publish a %s event of job %s: %s", type(event).__name__, job_id,
                        type(exc).__name__)

    def reader(self, job_id: str) -> EventReader:
        """A reader of the job's events (KeyError for an unknown job)."""
        return EventReader(self.backend, job_id, self._state)

    async def events(self, job_id: str) -> AsyncIterator[JobEvent]:
        """The job's events until its `JobEnded` (given last)."""
        with self.reader(job_id) as reader:
            while (event := await reader.next()) is not None:
                yield event

    def close(self) -> None:
        self.backend.close()



def open_events(store: Store) -> JobEvents:
    """The stream of a runtime over `store`: in process on SQLite, with LISTEN/NOTIFY on Postgres.
    The journal's state of a job (its open question, its end) is read from the store itself, so the
    stream needs no service built after it (the journal and the person steps publish on it)."""
    def state(job_id: str) -> list[JobEvent] | None:
        row = store.job(job_id)
        if row is None:
            return None
        job = job_from_row(row)
        if job.finished:
            return [JobEnded(job.status, job.failure_kind)]
        question = open_question(store, job_id) if job.status == "waiting" else None
        return [QuestionAsked(question)] if question is not None else []

    if not store.url.startswith("postgresql"):
        return JobEvents(LocalEvents(), state=state)

    def resolve(job_id: str, data: Mapping[str, Any]) -> JobEvent | None:
        found = asked_question(store, job_id, str(data.get("step")))
        if found is None:
            return None
        question, answer = found
        if data.get("type") == "answered":
            return Answered(question.step, answer) if answer is not None else None
        return QuestionAsked(question)

    from oz0.edge.runtime.event_postgres import PostgresEvents  # psycopg: only with a Postgres store

    return JobEvents(PostgresEvents(store.engine, store.url, resolve=resolve), state=state)
