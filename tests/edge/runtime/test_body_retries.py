"""Outside a workflow's own code (an in-process `oz0 run`, a step, whose retries cover it) a journal
call is made once: its database fault is raised at once, not waited out (the fault inside a workflow
is tested with real DBOS in test_faults_reads.py and tests/edge/flows/test_flows_durable_faults.py)."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest
from sqlalchemy.exc import OperationalError

from oz0.edge.runtime.body_retries import in_workflow_body, read_out


def test_a_fault_outside_a_workflow_is_raised_at_once_and_the_call_made_once():
    made: list[str] = []

    def read() -> str:
        made.append("read")
        raise OperationalError("SELECT 1", {}, sqlite3.OperationalError("database is locked"))

    assert not in_workflow_body()
    started = time.monotonic()
    with pytest.raises(OperationalError, match="database is locked"):
        asyncio.run(read_out("a job's read", read))
    assert made == ["read"] and time.monotonic() - started < 0.5


def test_a_value_outside_a_workflow_is_returned_as_the_call_gave_it():
    assert asyncio.run(read_out("a job's read", dict, a=1)) == {"a": 1}
