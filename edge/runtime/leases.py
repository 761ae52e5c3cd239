"""Replica leases on Postgres: each replica holds a session advisory lock on its replica id while it
lives; a replica that finds a peer's lock free for a lease hands that peer's pending workflows back to
the queues with DBOS's own recovery.

A mixin of edge.runtime.durable.Engine (which sets `runtime`, `replica`, `lease_s`, `_stop`,
`_lease_conn` and `_lease_engine`); a duplicate replica id is its EngineError.

The lease's sessions are its own, opened on demand, never drawn from the journal's pool: the jobs
running here can hold every pooled session (16 workers, a pool of 15), most of all right after a
database restart, and a lease that waited behind them would look free to a peer, which would then take
over a live replica's jobs.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from dbos import DBOS

from oz0.edge.runtime.engine_settings import EngineError

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["EngineError", "Leases"]

log = logging.getLogger("oz0.engine")

LEASE_CONNECT_TIMEOUT_S = 5   # a session that cannot be opened in this long counts as a failed look


def _lock_key(replica: str) -> int:
    return int.from_bytes(hashlib.sha256(b"oz0-replica:" + replica.encode()).digest()[:8], "big", signed=True)


class Leases:
    """The Engine's lease methods (Postgres only)."""

    runtime: Runtime
    replica: str
    lease_s: float
    _stop: threading.Event
    _lease_conn: Any
    _lease_engine: Any

    def _lease_session(self) -> Any:
        """A new session of the lease's own (no pool: see the module's docstring)."""
        import sqlalchemy as sa
        from sqlalchemy.pool import NullPool

        if self._lease_engine is None:
            self._lease_engine = sa.create_engine(self.runtime.store.url, poolclass=NullPool,
                                                  connect_args={"connect_timeout": LEASE_CONNECT_TIMEOUT_S})
        return self._lease_engine.connect()

    def _take_own_lease(self) -> None:
        """Hold the session lock on this replica id; wait (up to two leases) while a peer holds it to
        recover this replica's jobs, and refuse a duplicate replica id."""
        deadline = time.monotonic() + 2 * self.lease_s
        while not self._lock_own():
            if time.monotonic() > deadline:
                raise EngineError(f"replica id {self.replica!r} is held by another live process; give each "
                                  "replica its own OZ0_REPLICA_ID (the host name by default)")
            time.sleep(0.5)

    def _lock_own(self) -> bool:
        """Take this replica's lock on a session of its own (a new one: the old died with the server)."""
        import sqlalchemy as sa

        self._release_lease()
        conn = self._lease_session()
        try:
            got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": _lock_key(self.replica)}).scalar()
            conn.commit()
        except BaseException:
            conn.close()
            raise
        if got:
            self._lease_conn = conn
        else:
            conn.close()
        return bool(got)

    def _keep_own_lease(self) -> None:
        """The lease's session still answers; when it died (a database restart frees every session's
        locks), take the lock back at once, before a peer finds it free for a whole lease."""
        import sqlalchemy as sa

        try:
            if self._lease_conn is not None:
                self._lease_conn.execute(sa.text("SELECT 1")).scalar()
                self._lease_conn.commit()
                return
        except Exception as exc:
            log.warning("replica %s lost its lease's database session (%s); taking the lease back",
                        self.replica, type(exc).__name__)
        if self._lock_own():
            log.warning("replica %s holds its lease again", self.replica)
        else:
            log.error("replica %s could not take its lease back: a peer holds it (recovering this replica's "
                      "jobs?); trying again", self.replica)

    def _release_lease(self) -> None:
        if self._lease_conn is not None:
            try:
                self._lease_conn.close()  # the session ends, and its locks with it
            except Exception as exc:  # a session the server already closed holds no lock
                log.info("the lease's session was already gone (%s)", type(exc).__name__)
            finally:
                self._lease_conn = None

    def _watch_peers(self) -> None:
        """Every few seconds: keep this replica's own lease (retaken after a database restart); then a
        replica with pending workflows whose lock has been free for a lease is dead: take its lock and
        give its workflows back to the queues (DBOS's own recovery). Each look uses a session of its
        own, so a database restart costs one failed look, never a broken session."""
        free_since: dict[str, float] = {}
        period = max(0.2, min(self.lease_s / 4, 5.0))
        while not self._stop.wait(period):
            try:
                self._keep_own_lease()
                self._look_at_peers(free_since)
            except Exception as exc:
                free_since.clear()  # a peer's lock is judged free only from looks that worked
                log.warning("could not check the replicas' leases (%s: %s); trying again in %.1f s",
                            type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "", period)

    def _look_at_peers(self, free_since: dict[str, float]) -> None:
        import sqlalchemy as sa

        if self._lease_conn is None:
            return  # without its own lease this replica takes over nobody's jobs
        peers = {w.executor_id for w in DBOS.list_workflows(status="PENDING", load_input=False, load_output=False)}
        peers.discard(self.replica)
        with self._lease_session() as conn:
            for peer in sorted(p for p in peers if p):
                key = {"k": _lock_key(peer)}
                if not conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), key).scalar():
                    free_since.pop(peer, None)
                    conn.commit()
                    continue
                try:
                    since = free_since.setdefault(peer, time.monotonic())
                    if time.monotonic() - since >= self.lease_s:
                        handles = DBOS._recover_pending_workflows([peer])
                        free_since.pop(peer, None)
                        log.warning("replica %s stopped (its lease expired): %d job(s) handed to the "
                                    "live replicas", peer, len(handles))
                finally:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), key)
                    conn.commit()
