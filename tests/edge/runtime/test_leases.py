"""A replica's lease on a real Postgres: it never waits behind its own jobs for a database session.

The jobs can hold every session of the journal's pool (16 workers, a pool of 15), most of all right
after a database restart; a lease taken from that pool waited up to the pool's 30 s, and a peer that
found the lock free for a lease meanwhile took over a live replica's jobs."""

from __future__ import annotations

import threading
import time
import uuid
from contextlib import ExitStack

import psycopg

from oz0.edge.runtime.durable import Engine
from oz0.edge.runtime.leases import lock_key
from oz0.edge.runtime.runner import Runtime


def _held_by_someone(url: str, replica: str) -> bool:
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn:
        got = conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(replica),)).fetchone()[0]
        if got:
            conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key(replica),))
        return not got


def test_a_replica_takes_its_lease_while_its_jobs_hold_every_pooled_session(tmp_path, postgres_url):
    runtime = Runtime(tmp_path / "home", database_url=postgres_url)
    replica = f"busy-{uuid.uuid4().hex[:8]}"
    engine = Engine(runtime, env={"OZ0_REPLICA_ID": replica, "OZ0_LEASE_S": "2"})
    assert engine.lease is not None and engine.lease.replica == replica
    assert not any(value is engine or value is runtime for value in vars(engine.lease).values())
    pool = runtime.store.engine.pool
    try:
        with ExitStack() as held:
            for _ in range(pool.size() + pool._max_overflow):   # type: ignore[attr-defined]
                held.enter_context(runtime.store.engine.connect())
            took: list[float] = []
            started = time.monotonic()
            taker = threading.Thread(target=lambda: (engine.lease.take(), took.append(time.monotonic() - started)),
                                     daemon=True)
            taker.start()
            taker.join(10)
            assert not taker.is_alive(), "the lease waited for a session of the jobs' pool"
            assert took and took[0] < 5, took
            assert _held_by_someone(runtime.store.url, replica)
    finally:
        engine.lease.release()
        runtime.close()
    assert not _held_by_someone(runtime.store.url, replica)   # its session ended, and the lock with it
