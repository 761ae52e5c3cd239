"""The one retry rule of a job's durable steps: a fault of the database or the disk is retried.

Every DBOS step of a job (its run, its card, a flow's bookkeeping, a tool loop's calls and its end)
takes these options, so a Postgres outage or a full disk mid-job delays the job and loses nothing:
the journal write that failed succeeds once the database is back. Any other error is the step's own
end, not retried here (the runtime's attempts and the tool loop's rules decide about those). A step
cut short by a fault runs again from its start: at least once, as after a crash.

Kept apart from edge.runtime.durable, which imports DBOS, so the tool loop's steps read the same rule.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from oz0.edge.runtime.transient import is_transient

if TYPE_CHECKING:
    from dbos import StepOptions

__all__ = ["STEP_RETRIES", "fault_waits", "retried", "step_options"]

log = logging.getLogger("oz0.engine")

T = TypeVar("T")


def _transient_step(error: BaseException) -> bool:
    """DBOS's `should_retry` of a job's steps: a fault of the database or the disk is retried (the
    journal write that failed succeeds once it is back); anything else is the step's own end."""
    transient = is_transient(error)
    if transient:
        log.warning("a job step met a database fault (%s); the engine retries it", type(error).__name__)
    return transient


# A job's steps retried through a database outage: at 1 s, then 1.3 times longer each time, about 40
# minutes in all; a 15 s outage is retried within 5 s of its end.
STEP_RETRIES: StepOptions = {"retries_allowed": True, "should_retry": _transient_step, "interval_seconds": 1.0,
                             "backoff_rate": 1.3, "max_attempts": 25}


def step_options(name: str) -> StepOptions:
    """A job step's options: its name, retried as STEP_RETRIES says."""
    options: StepOptions = {**STEP_RETRIES, "name": name}
    return options


def fault_waits(what: str) -> Iterator[Callable[[BaseException], float]]:
    """The one retry rule of a call made outside DBOS's step retries (a workflow body's own reads, a
    schedule re-apply on the plugin watch's thread), as a job's steps are retried: one item per attempt
    but the last, each a check of the attempt's error that raises it unless it is a fault of the
    database or the disk, and otherwise logs it and gives the wait before the next attempt (STEP_RETRIES:
    1 s, then 1.3 times longer each time). The caller sleeps (its own way) and makes the last attempt
    bare, so that fault is raised."""
    wait, attempts = STEP_RETRIES["interval_seconds"], STEP_RETRIES["max_attempts"]
    for attempt in range(1, attempts):
        def check(exc: BaseException, wait: float = wait, attempt: int = attempt) -> float:
            if not is_transient(exc):
                raise exc
            log.warning("%s met a database fault (%s); tried again in %.1f s (attempt %d of %d)", what,
                        type(exc).__name__, wait, attempt + 1, attempts)
            return wait
        yield check
        wait *= STEP_RETRIES["backoff_rate"]


def retried(what: str, call: Callable[[], T], *, go_on: Callable[[], bool] = lambda: True,
            sleep: Callable[[float], None] = time.sleep) -> T | None:
    """`call()` outside a workflow (a schedule re-apply on the plugin watch's thread), retried through a
    database fault as `fault_waits` says: a fault delays it, never leaves it undone until something else
    happens. None when `go_on()` turns False while it waits (the engine stopped)."""
    for check in fault_waits(what):
        try:
            return call()
        except Exception as exc:
            wait = check(exc)
        sleep(wait)
        if not go_on():
            return None
    return call()   # the last attempt: its fault is raised
