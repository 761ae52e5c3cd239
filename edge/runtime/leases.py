"""Replica leases on Postgres: each replica holds a session advisory lock on its replica id while it
lives; a replica that finds a peer's lock free for a lease hands that peer's pending workflows back to
the queues with DBOS's own recovery.

A mixin of edge.runtime.durable.Engine (which sets `runtime`, `replica`, `lease_s`, `_stop` and
`_lease_conn`); a duplicate replica id is its EngineError.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from dbos import DBOS

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["EngineError", "Leases"]

log = logging.getLogger("oz0.engine")


class EngineError(RuntimeError):
    """The engine cannot start as configured: names the setting and what to change."""


def _lock_key(replica: str) -> int:
    return int.from_bytes(hashlib.sha256(b"oz0-replica:" + replica.encode()).digest()[:8], "big", signed=True)


class Leases:
    """The Engine's lease methods (Postgres only)."""

    runtime: "Runtime"
    replica: str
    lease_s: float
    _stop: threading.Event
    _lease_conn: Any

    def _take_own_lease(self) -> None:
        """Hold the session lock on this replica id; wait (up to two leases) while a peer holds it to
        recover this replica's jobs, and refuse a duplicate replica id."""
        import sqlalchemy as sa

        self._lease_conn = self.runtime.store.engine.connect()
        deadline = time.monotonic() + 2 * self.lease_s
        while True:
            got = self._lease_conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"),
                                           {"k": _lock_key(self.replica)}).scalar()
            self._lease_conn.commit()
            if got:
                return
            if time.monotonic() > deadline:
                self._release_lease()
                raise EngineError(f"replica id {self.replica!r} is held by another live process; give each "
                                  "replica its own OZ0_REPLICA_ID (the host name by default)")
            time.sleep(0.5)

    def _release_lease(self) -> None:
        if self._lease_conn is not None:
            try:
                self._lease_conn.close()  # the session ends, and its locks with it
            finally:
                self._lease_conn = None

    def _watch_peers(self) -> None:
        """Every few seconds: a replica with pending workflows whose lock has been free for a lease is
        dead; take its lock and give its workflows back to the queues (DBOS's own recovery)."""
        import sqlalchemy as sa

        free_since: dict[str, float] = {}
        period = max(0.2, min(self.lease_s / 4, 5.0))
        with self.runtime.store.engine.connect() as conn:
            while not self._stop.wait(period):
                try:
                    peers = {w.executor_id for w in DBOS.list_workflows(status="PENDING", load_input=False,
                                                                        load_output=False)}
                    peers.discard(self.replica)
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
                except Exception:
                    log.exception("could not check the other replicas' leases; trying again")
