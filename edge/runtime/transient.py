"""Which failures of the journal are faults of the database or the disk, not of the job.

A Postgres that stops or restarts, a connection the server closed, a pool with no free connection, a
SQLite file on a full disk or locked by a writer: the same write succeeds once the database is back.
Such an error inside a job is retried (the engine's step retries, edge.runtime.durable) or leaves the
job for recovery; at the door (a chat ask, an API call) it is answered "could not start: ask again"
or an HTTP 503, never recorded as the job's failure and never a plain 500.
"""

from __future__ import annotations

import errno

from sqlalchemy import exc as sa_exc

__all__ = ["RETRY_AFTER_S", "UNAVAILABLE", "is_transient", "unavailable_reason"]

UNAVAILABLE = "unavailable"   # the QZX error code and the failure card's code of a journal that cannot be written
RETRY_AFTER_S = 30            # the Retry-After of an HTTP 503 (or 429) the bot answers while it cannot take work

_SQLITE_TRANSIENT = ("database or disk is full", "disk i/o error", "database is locked", "unable to open database")


def is_transient(error: BaseException, _depth: int = 0) -> bool:
    """Whether `error` is the database's or the disk's, and the same call may succeed later (also when
    it is the cause of the error raised)."""
    if isinstance(error, (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.DisconnectionError,
                          sa_exc.PendingRollbackError, sa_exc.TimeoutError, sa_exc.ResourceClosedError)):
        return True
    if isinstance(error, sa_exc.DBAPIError):
        if error.connection_invalidated:
            return True
        text = str(error.orig).lower()
        return any(marker in text for marker in _SQLITE_TRANSIENT)
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO)
    cause = error.__cause__ or error.__context__
    return cause is not None and _depth < 5 and is_transient(cause, _depth + 1)


def unavailable_reason(error: BaseException) -> str:
    """What a person is told: the error's kind only (its message may carry a host or a path)."""
    return f"the bot's database cannot be written right now ({type(error).__name__})"
