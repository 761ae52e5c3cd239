"""Replica leases on Postgres: each replica holds a session advisory lock on its replica id while it
lives; a replica that finds a peer's lock free for a lease hands that peer's pending workflows back to
the queues.

`Lease` is one replica's lease, a service of its own that the engine (edge.runtime.durable) holds. It
decides who is dead; what to do about it is passed in: `pending_replicas` (the replicas that have
pending workflows) and `recover` (hand one's workflows back), both the engine's, so that this module
never touches DBOS. A duplicate replica id is its EngineError.

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
from collections.abc import Callable
from typing import TYPE_CHECKING

from oz0.edge.runtime.engine_settings import EngineError

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = ["LEASE_CONNECT_TIMEOUT_S", "EngineError", "Lease", "lock_key"]

log = logging.getLogger("oz0.engine")

LEASE_CONNECT_TIMEOUT_S = 5   # a session that cannot be opened in this long counts as a failed look


def lock_key(replica: str) -> int:
    """The advisory lock key of a replica id (64 bits of its hash, as Postgres's bigint)."""
    return int.from_bytes(hashlib.sha256(b"oz0-replica:" + replica.encode()).digest()[:8], "big", signed=True)


class Lease:
    """One replica's lease over the Postgres at `url`, held for `lease_s` seconds at a time.
    `pending_replicas()` gives the ids of the replicas with pending workflows (none empty)."""

    def __init__(self, url: str, replica: str, lease_s: float, *, pending_replicas: Callable[[], set[str]],
                 recover: Callable[[str], int]) -> None:
        self.url = url
        self.replica = replica
        self.lease_s = lease_s
        self._pending_replicas = pending_replicas
        self._recover = recover
        self._conn: sa.Connection | None = None  # the session that holds this replica's lock
        self._engine: sa.Engine | None = None    # the lease's own sessions, made at their first use

    def _session(self) -> sa.Connection:
        """A new session of the lease's own (no pool: see the module's docstring)."""
        import sqlalchemy as sa  # defers a costly import: only a Postgres replica holds a lease
        from sqlalchemy.pool import NullPool

        if self._engine is None:
            self._engine = sa.create_engine(self.url, poolclass=NullPool,
                                            connect_args={"connect_timeout": LEASE_CONNECT_TIMEOUT_S})
        return self._engine.connect()

    def take(self) -> None:
        """Hold the session lock on this replica id; wait (up to two leases) while a peer holds it to
        recover this replica's jobs, and refuse a duplicate replica id."""
        deadline = time.monotonic() + 2 * self.lease_s
        while not self._lock():
            if time.monotonic() > deadline:
                raise EngineError(f"replica id {self.replica!r} is held by another live process; give each "
                                  "replica its own OZ0_REPLICA_ID (the host name by default)")
            time.sleep(0.5)

    def _lock(self) -> bool:
        """Take this replica's lock on a session of its own (a new one: the old died with the server)."""
        import sqlalchemy as sa  # defers a costly import (see `_session`)

        self.release()
        conn = self._session()
        try:
            got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": lock_key(self.replica)}).scalar()
            conn.commit()
        except BaseException:
            conn.close()
            raise
        if got:
            self._conn = conn
        else:
            conn.close()
        return bool(got)

    def keep(self) -> None:
        """The lease's session still answers; when it died (a database restart frees every session's
        locks), take the lock back at once, before a peer finds it free for a whole lease."""
        import sqlalchemy as sa  # defers a costly import (see `_session`)

        try:
            if self._conn is not None:
                self._conn.execute(sa.text("SELECT 1")).scalar()
                self._conn.commit()
                return
        except Exception as exc:
            log.warning("replica %s lost its lease's database session (%s); taking the lease back",
                        self.replica, type(exc).__name__)
        if self._lock():
            log.warning("replica %s holds its lease again", self.replica)
        else:
            log.error("replica %s could not take its lease back: a peer holds it (recovering this replica's "
                      "jobs?); trying again", self.replica)

    def release(self) -> None:
        """End the session that holds the lock, and the lock with it."""
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception as exc:  # a session the server already closed holds no lock
                log.info("the lease's session was already gone (%s)", type(exc).__name__)
            finally:
                self._conn = None

    def watch(self, stop: threading.Event) -> None:
        """Until `stop`, every few seconds: keep this replica's own lease (retaken after a database
        restart); then a replica with pending workflows whose lock has been free for a lease is dead:
        take its lock and hand its workflows back. Each look uses a session of its own, so a database
        restart costs one failed look, never a broken session."""
        free_since: dict[str, float] = {}
        period = max(0.2, min(self.lease_s / 4, 5.0))
        while not stop.wait(period):
            try:
                self.keep()
                self.look_at_peers(free_since)
            except Exception as exc:
                free_since.clear()  # a peer's lock is judged free only from looks that worked
                log.warning("could not check the replicas' leases (%s: %s); trying again in %.1f s",
                            type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "", period)

    def look_at_peers(self, free_since: dict[str, float]) -> None:
        """One look: each peer with pending workflows whose lock is free is noted in `free_since` (when
        it was first seen free); one free for a whole lease has its workflows recovered."""
        import sqlalchemy as sa  # defers a costly import (see `_session`)

        if self._conn is None:
            return  # without its own lease this replica takes over nobody's jobs
        peers = self._pending_replicas()
        peers.discard(self.replica)
        with self._session() as conn:
            for peer in sorted(peers):
                key = {"k": lock_key(peer)}
                if not conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), key).scalar():
                    free_since.pop(peer, None)
                    conn.commit()
                    continue
                try:
                    since = free_since.setdefault(peer, time.monotonic())
                    if time.monotonic() - since >= self.lease_s:
                        count = self._recover(peer)
                        free_since.pop(peer, None)
                        log.warning("replica %s stopped (its lease expired): %d job(s) handed to the "
                                    "live replicas", peer, count)
                finally:
                    conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), key)
                    conn.commit()
