"""A database fault while a job's live progress or text is sent to the other replicas does not fail
the job (issue 30): the piece is dropped for them with a warning, this replica's readers still get it;
an event the others must not miss (a job's end) still raises, so its step is retried."""

from __future__ import annotations

import logging
import socket

import pytest
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError

from oz0.edge.model.progress import Progress
from oz0.edge.runtime.event_postgres import PostgresEvents
from oz0.edge.runtime.events import JobEnded, TextDelta


def _dead_url() -> str:
    with socket.socket() as s:  # a loopback port nothing listens on: every connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"postgresql+psycopg://oz0@127.0.0.1:{port}/oz0?connect_timeout=2"


def test_progress_and_text_are_kept_here_and_dropped_for_the_others_when_postgres_is_down(caplog):
    url = _dead_url()
    events = PostgresEvents(create_engine(url), url, resolve=lambda job, ref: None)
    try:
        mine = events.subscribe("job-1")
        with caplog.at_level(logging.WARNING, logger="oz0.events"):
            events.publish("job-1", Progress("step 1 of 2"))
            events.publish("job-1", TextDelta("Hello"))
        seen, dropped, _ = mine.take()
        assert [type(e).__name__ for e in seen] == ["Progress", "TextDelta"] and dropped == 0
        said = [r.getMessage() for r in caplog.records if r.name == "oz0.events"]
        assert "job job-1: Progress not sent to the other replicas (database fault: OperationalError)" in said
        assert "job job-1: TextDelta not sent to the other replicas (database fault: OperationalError)" in said
        with pytest.raises(OperationalError):  # the end is not live only: its step is retried
            events.publish("job-1", JobEnded("succeeded"))
    finally:
        events.close()
