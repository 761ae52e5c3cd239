"""Jobs a stopped process left behind: who runs a job (the runner id journaled with it), and at start
the jobs whose runner is gone, ended as interrupted with a reason.

The engine, when launched, carries some of those jobs on itself (their workflows resume): it says
which with `resumes`, passed in at the call because the engine starts after the runtime is built.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from oz0.edge.model.job import Job
from oz0.edge.runtime.store import ACTIVE_STATUSES

if TYPE_CHECKING:
    from oz0.edge.runtime.jobs import Jobs
    from oz0.edge.runtime.question_book import Questions
    from oz0.edge.runtime.store import Store

__all__ = ["Recovery", "runner_id"]

_PROCESS_TOKEN = uuid.uuid4().hex[:12]
_HOST = (os.environ.get("OZ0_REPLICA_ID") or "").strip() or socket.gethostname()  # the replica id (edge.runtime.durable)
_WHAT_IT_WAS = {"running": "running", "queued": "waiting to run", "waiting": "waiting for an answer"}


def runner_id() -> str:
    """Who runs a job, as journaled: `host:pid:token` (the token tells this process from a reused pid)."""
    return f"{_HOST}:{os.getpid()}:{_PROCESS_TOKEN}"


class Recovery:
    """The recovery of jobs a stopped process left queued or running."""

    def __init__(self, store: Store, jobs: Jobs, questions: Questions) -> None:
        self.store = store
        self.jobs = jobs
        self.questions = questions

    def recover_interrupted(self, resumes: Callable[[Mapping[str, Any]], bool] | None = None) -> list[Job]:
        """Jobs a crashed process left queued or running become 'interrupted' with a reason; returned
        (with their reply_to) so channels can say so in their threads. A job whose runner is still
        alive on this host is left alone; one from another host only once it is past any deadline, and
        one the engine resumes (`resumes`) too."""
        recovered = []
        now = time.time()
        for row in self.store.jobs(limit=10_000, statuses=ACTIVE_STATUSES):
            if not self._orphaned(row, now) or (resumes is not None and resumes(row)):
                continue
            reason = ("the bot stopped before this job ended (it was "
                      f"{_WHAT_IT_WAS.get(row['status'], 'running')}); ask again to rerun it")
            if self.store.update_job(row["id"], only_if_status=ACTIVE_STATUSES, status="interrupted",
                                     failure_kind="Interrupted", failure_reason=reason, ended=now):
                for step in self.questions.open_steps(row["id"]):  # its wait died with the process
                    self.questions.close(row["id"], step, action="cancel", by="interrupted")
                job = self.jobs.job(row["id"])
                if job is not None:
                    recovered.append(job)
        return recovered

    def _orphaned(self, row: Mapping[str, Any], now: float) -> bool:
        host, _, rest = (row.get("runner") or "::").partition(":")
        pid_text, _, token = rest.partition(":")
        if host == _HOST and pid_text.isdigit():
            pid = int(pid_text)
            if pid == os.getpid():
                return token != _PROCESS_TOKEN
            return not _alive(pid)
        since: float = row["started"] or row["created"]
        return now - since > 6 * 3600


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
