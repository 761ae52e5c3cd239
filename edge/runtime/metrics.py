"""Prometheus metrics of a runtime, in a registry of its own (never prometheus-client's global one).

Jobs by agent and status, their durations and the queue depth are read from the journal at each
scrape, so they survive restarts and are the same on every replica sharing a database: aggregate them
across replicas with `max`, not `sum`. Each scrape is two grouped queries over the `jobs` table (the
database does the counting; memory holds one row per agent and status). Channel errors are counted
in this process: a chat channel calls `count_channel_error("slack", "SlackApiError")` where it logs
a failure to deliver or receive, and they add up across replicas with `sum`.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.metrics_core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import case, func, select

from oz0.edge.runtime.store import ACTIVE_STATUSES, jobs

__all__ = [
    "CHANNEL_ERRORS",
    "DURATION_BUCKETS_S",
    "MAX_ERROR_SERIES",
    "JournalCollector",
    "count_channel_error",
    "metrics_registry",
]

DURATION_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
MAX_ERROR_SERIES = 200
MAX_LABEL_CHARS = 64

CHANNEL_ERRORS = Counter("oz0_channel_errors", "Errors of the chat channels (delivering, receiving), by channel "
                         "and kind, in this process.", ["channel", "kind"], registry=None)
_series: set[tuple[str, str]] = set()
_series_lock = threading.Lock()


def count_channel_error(channel: str, kind: str) -> None:
    """Count one error of `channel` (e.g. "slack") of `kind` (e.g. an exception's type name).

    Labels are cut to 64 characters of [A-Za-z0-9_.:-]; past 200 distinct (channel, kind) pairs a
    new kind is counted as "other", so a flood of distinct errors cannot grow the metrics without bound.
    """
    key = (_label(channel), _label(kind))
    with _series_lock:
        if key not in _series:
            if len(_series) >= MAX_ERROR_SERIES:
                key = (key[0], "other")
            _series.add(key)
    CHANNEL_ERRORS.labels(*key).inc()


def _label(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]", "_", str(value))[:MAX_LABEL_CHARS] or "unknown"


class JournalCollector(Collector):
    """Job counts, durations and queue depth read from the journal of `store` when scraped."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        with self.store.engine.connect() as conn:
            counts = conn.execute(select(jobs.c.agent, jobs.c.status, func.count())
                                  .group_by(jobs.c.agent, jobs.c.status)).all()
            took = (jobs.c.ended - jobs.c.started)
            timed = conn.execute(
                select(jobs.c.agent, func.count(), func.coalesce(func.sum(took), 0.0),
                       *(func.sum(case((took <= bound, 1), else_=0)) for bound in DURATION_BUCKETS_S))
                .where(jobs.c.ended.is_not(None), jobs.c.started.is_not(None))
                .group_by(jobs.c.agent)).all()
        by_status = GaugeMetricFamily("oz0_jobs", "Jobs in the journal by agent and status (journal-wide: "
                                      "every replica reports the same).", labels=["agent", "status"])
        queued = {status: 0 for status in ACTIVE_STATUSES}
        for agent, status, count in counts:
            by_status.add_metric([agent, status], count)
            if status in queued:
                queued[status] += count
        yield by_status
        depth = GaugeMetricFamily("oz0_queue_depth", "Jobs waiting or running (journal-wide).", labels=["status"])
        for status, count in queued.items():
            depth.add_metric([status], count)
        yield depth
        durations = HistogramMetricFamily("oz0_job_duration_seconds", "Time from start to end of finished "
                                          "jobs, by agent (journal-wide).", labels=["agent"])
        for agent, count, total, *within in timed:
            buckets = [(_bound(b), int(n or 0)) for b, n in zip(DURATION_BUCKETS_S, within)]
            durations.add_metric([agent], [*buckets, ("+Inf", int(count))], float(total))
        yield durations


def _bound(bound: float) -> str:
    return repr(float(bound))


def metrics_registry(runtime: Any) -> CollectorRegistry:
    """A registry for one console: the journal of `runtime` and this process's channel errors."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JournalCollector(runtime.store))
    registry.register(CHANNEL_ERRORS)
    return registry
