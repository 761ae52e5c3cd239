"""The job event stream across replicas: Postgres LISTEN/NOTIFY (edge.runtime.event_stream).

Each replica delivers its own events to its readers at once (the in-process backend), and sends each
on the channel `oz0_job_events` with `pg_notify` in a transaction of its own. One connection per
replica LISTENs, in a thread of its own (psycopg's blocking `notifies()`: no coroutine runs there),
and delivers what the other replicas sent to this replica's readers.

- Why not DBOS's streams: they are written from inside a workflow only, and answers, progress from
  agents' threads and ends come from outside one; and `oz0 run` has no engine at all.
- A NOTIFY payload is at most 8,000 bytes: a question or an answer too big for one is sent as a
  reference (job and step) and read back from the journal by the listener; a text delta is cut into
  pieces that fit; progress is sent at most every PROGRESS_NOTIFY_S per job (the latest report wins).
- Notifications are not durable: when the listening connection drops, it reconnects with backoff and
  every reader on this replica reads its job's state again (the journal), so none misses an end or an
  open question. What a reader cannot get back is the progress and text sent while it was cut off; so
  a database fault while progress or text is sent drops that piece for the other replicas (a warning)
  and never fails the job that reported it. Any other event's fault is raised to its step, which the
  engine retries.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url

from oz0.edge.model.progress import Progress
from oz0.edge.runtime.event_stream import LocalEvents
from oz0.edge.runtime.events import JobEvent, TextDelta, decode, encode
from oz0.edge.runtime.transient import is_transient

__all__ = ["CHANNEL", "MAX_PAYLOAD_BYTES", "PROGRESS_NOTIFY_S", "PostgresEvents"]

log = logging.getLogger("oz0.events")

CHANNEL = "oz0_job_events"
MAX_PAYLOAD_BYTES = 7_900        # Postgres refuses a NOTIFY payload of 8,000 bytes or more
PROGRESS_NOTIFY_S = 0.25         # progress is sent to other replicas at most this often per job
RECONNECT_S = (0.1, 0.5, 1.0, 2.0, 5.0)
MAX_THROTTLED_JOBS = 10_000      # jobs whose last progress time is kept (the oldest forgotten first)

Resolve = Callable[[str, dict[str, Any]], "JobEvent | None"]  # a reference read back from the journal


class PostgresEvents(LocalEvents):
    """LocalEvents plus NOTIFY to, and LISTEN from, the other replicas over one Postgres."""

    def __init__(self, engine: Engine, url: str, *, resolve: Resolve) -> None:
        super().__init__()
        self.engine = engine
        self.origin = uuid.uuid4().hex[:12]  # this replica's own notifications are delivered already
        self._conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._resolve = resolve
        self._last_progress: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listening = threading.Event()
        self._connection: Any = None
        self._listener = threading.Thread(target=self._listen, name="oz0-events-listen", daemon=True)
        self._listener.start()

    def wait_listening(self, timeout: float) -> bool:
        """Whether the LISTEN connection is up (for tests and readiness), waiting up to `timeout`."""
        return self._listening.wait(timeout)

    def publish(self, job_id: str, event: JobEvent) -> None:
        self.deliver(job_id, event)
        if isinstance(event, Progress) and not self._progress_due(job_id):
            return
        try:
            with self.engine.begin() as conn:
                for payload in self._payloads(job_id, event):
                    conn.execute(text("SELECT pg_notify(:channel, :payload)"), {"channel": CHANNEL, "payload": payload})
        except Exception as exc:
            if not (isinstance(event, (Progress, TextDelta)) and is_transient(exc)):
                raise
            # live only, as a reader cut off loses them: the journal keeps the progress and the answer,
            # so a database fault here must not end the job that reported it
            log.warning("job %s: %s not sent to the other replicas (database fault: %s)", job_id,
                        type(event).__name__, type(exc).__name__)

    def _progress_due(self, job_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            if now - self._last_progress.get(job_id, -PROGRESS_NOTIFY_S) < PROGRESS_NOTIFY_S:
                return False
            self._last_progress.pop(job_id, None)
            self._last_progress[job_id] = now
            while len(self._last_progress) > MAX_THROTTLED_JOBS:
                self._last_progress.pop(next(iter(self._last_progress)))
        return True

    def _payloads(self, job_id: str, event: JobEvent) -> list[str]:
        whole = self._payload(job_id, encode(event))
        if len(whole.encode()) <= MAX_PAYLOAD_BYTES:
            return [whole]
        if isinstance(event, TextDelta):
            pieces, start, size = [], 0, max(1, len(event.text) // 2)
            while start < len(event.text):
                last = start + size >= len(event.text)
                pieces.extend(self._payloads(job_id, TextDelta(event.text[start:start + size], event.offset + start,
                                                               event.final and last)))
                start += size
            return pieces
        data = encode(event)
        step = data.get("step")
        if step is None:  # progress is cut to MAX_PROGRESS_CHARS; an end or a lag is small
            raise ValueError(f"a {data['type']} event of job {job_id} does not fit in a NOTIFY payload")
        return [self._payload(job_id, {"type": data["type"], "step": step, "ref": True})]

    def _payload(self, job_id: str, event: dict[str, Any]) -> str:
        return json.dumps({"o": self.origin, "j": job_id, "e": event}, ensure_ascii=False, separators=(",", ":"))

    # the listening side ------------------------------------------------------------------------

    def _listen(self) -> None:
        import psycopg  # the Postgres driver, present whenever the store is on Postgres

        failures = 0
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True) as conn:
                    self._connection = conn
                    conn.execute(f"LISTEN {CHANNEL}")
                    if failures:
                        self.all_stale()  # notifications sent while we were away are gone: read the journal
                    failures = 0
                    self._listening.set()
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._received(note.payload)
            except Exception as exc:
                self._listening.clear()
                if self._stop.is_set():
                    return
                pause = RECONNECT_S[min(failures, len(RECONNECT_S) - 1)]
                failures += 1
                log.warning("the job event listener lost Postgres (%s); reconnecting in %g s", type(exc).__name__,
                            pause)
                self._stop.wait(pause)
            finally:
                self._connection = None

    def _received(self, payload: str) -> None:
        try:
            note = json.loads(payload)
            if note.get("o") == self.origin:
                return
            job_id, data = str(note["j"]), dict(note["e"])
            event = self._resolve(job_id, data) if data.get("ref") else decode(data)
        except Exception as exc:  # one bad notification must not stop the listener
            log.warning("ignored a job event notification that cannot be read: %s", exc)
            return
        if event is not None:
            self.deliver(job_id, event)

    def close(self) -> None:
        self._stop.set()
        connection = self._connection
        if connection is not None:
            try:
                connection.cancel_safe(timeout=2)
            except Exception:  # closing: the thread ends at its next timeout anyway
                pass
        self._listener.join(timeout=5)
