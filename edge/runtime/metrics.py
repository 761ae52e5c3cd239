"""Prometheus metrics of a runtime, in a registry of its own (never prometheus-client's global one).

Jobs by agent and status, their durations and the queue depth are read from the journal at each
scrape, so they survive restarts and are the same on every replica sharing a database: aggregate them
across replicas with `max`, not `sum`. A scrape costs one grouped query over an index and a read of
the jobs that ended since the previous scrape (memory: a row of buckets per agent, and the ids of the
jobs ended in the last 30 s). Channel errors are counted
in this process: a chat channel calls `count_channel_error("slack", "SlackApiError")` where it logs
a failure to deliver or receive, and they add up across replicas with `sum`.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from oz0.edge.model.budget import MICRO
from oz0.edge.runtime.api import RuntimeFace
from oz0.edge.runtime.feedback import FeedbackCollector
from oz0.edge.runtime.store import ACTIVE_STATUSES, jobs

__all__ = [
    "CHANNEL_ERRORS",
    "DURATION_BUCKETS_S",
    "MAX_ERROR_SERIES",
    "JournalCollector",
    "SpendCollector",
    "count_channel_error",
    "metrics_registry",
]

DURATION_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
MAX_ERROR_SERIES = 200
MAX_LABEL_CHARS = 64
MAX_ROWS_PER_SCRAPE = 20_000
LOOKBACK_S = 30.0

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
    """Job counts, durations and queue depth read from the journal of `store` when scraped.

    Counts are one grouped query over the (agent, status) index. Durations are tallied here: each
    scrape reads only the jobs that ended since the previous one (by the `ended` index, at most 20000
    a scrape, so a long journal is caught up over a few scrapes), looking back 30 s for jobs that
    another replica, with a clock a little behind, committed late; the ids of that window are kept so
    none is counted twice.
    """

    def __init__(self, store: Any) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._watermark: float | None = None
        self._full = False
        self._recent: dict[str, float] = {}  # ids of jobs ended within LOOKBACK_S of the watermark
        self._tally: dict[str, list[float]] = {}  # agent -> per-bucket counts (+Inf last), then the sum

    def collect(self) -> Iterator[Metric]:
        with self.store.engine.connect() as conn:
            counts = conn.execute(select(jobs.c.agent, jobs.c.status, func.count())
                                  .group_by(jobs.c.agent, jobs.c.status)).all()
            with self._lock:
                self._catch_up(conn)
                tally = {agent: list(row) for agent, row in self._tally.items()}
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
        for agent, row in sorted(tally.items()):
            cumulative, buckets = 0, []
            for bound, count in zip((*map(_bound, DURATION_BUCKETS_S), "+Inf"), row[:-1]):
                cumulative += int(count)
                buckets.append((bound, cumulative))
            durations.add_metric([agent], buckets, row[-1])
        yield durations

    def _catch_up(self, conn: Any) -> None:
        query = (select(jobs.c.id, jobs.c.agent, jobs.c.started, jobs.c.ended)
                 .where(jobs.c.ended.is_not(None)).order_by(jobs.c.ended, jobs.c.id).limit(MAX_ROWS_PER_SCRAPE))
        if self._watermark is not None:
            query = query.where(jobs.c.ended >= self._watermark - (0 if self._full else LOOKBACK_S))
        rows = conn.execute(query).all()
        for job_id, agent, started, ended in rows:
            if job_id in self._recent:
                continue
            self._recent[job_id] = ended
            if started is not None:
                self._observe(agent, max(0.0, ended - started))
        if rows:
            self._watermark = max(self._watermark or rows[-1].ended, rows[-1].ended)
            horizon = self._watermark - LOOKBACK_S
            self._recent = {i: e for i, e in self._recent.items() if e >= horizon}
        self._full = len(rows) == MAX_ROWS_PER_SCRAPE

    def _observe(self, agent: str, seconds: float) -> None:
        row = self._tally.setdefault(agent, [0.0] * (len(DURATION_BUCKETS_S) + 2))
        row[bisect.bisect_left(DURATION_BUCKETS_S, seconds)] += 1
        row[-1] += seconds


class SpendCollector(Collector):
    """What calls spent (edge.runtime.budgets), by agent and channel, read from the store when scraped:
    journal-wide like the job counts (aggregate replicas with `max`). Cost is in currency units."""

    def __init__(self, runtime: RuntimeFace) -> None:
        self.runtime = runtime  # its budget book is read at each scrape

    def collect(self) -> Iterator[Metric]:
        families = {d: CounterMetricFamily(f"oz0_budget_spent_{d}", f"{what}, by agent and channel "
                                           "(journal-wide).", labels=["agent", "channel"])
                    for d, what in (("tokens", "Model tokens spent (prompt and answer)"),
                                    ("cost", "Money spent, from the agents' prices"),
                                    ("calls", "Model, http and MCP calls made"))}
        for agent, channel, used in self.runtime.budgets.book.spend():
            labels = [_label(agent), _label(channel)]
            families["tokens"].add_metric(labels, used.tokens)
            families["cost"].add_metric(labels, used.cost / MICRO)
            families["calls"].add_metric(labels, used.calls)
        yield from families.values()


def _bound(bound: float) -> str:
    return repr(float(bound))


def metrics_registry(runtime: RuntimeFace) -> CollectorRegistry:
    """A registry for one console: the journal of `runtime`, its spend, and this process's channel errors."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JournalCollector(runtime.store))
    registry.register(SpendCollector(runtime))
    registry.register(CHANNEL_ERRORS)
    registry.register(FeedbackCollector(runtime.store))
    return registry
