"""GET /healthz, /readyz and /metrics on a real running console (uvicorn on loopback), as a probe,
a load balancer and Prometheus see them; /metrics is read back with prometheus_client's own parser."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable

import httpx
import prometheus_client
import pytest
from console_plugin import ConsoleThread, installed_runtime
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine

from oz0.adapters import readiness
from oz0.adapters.cli.serve import serve_channels
from oz0.edge.runtime.metrics import DURATION_BUCKETS_S, MAX_ERROR_SERIES, count_channel_error
from oz0.edge.runtime.migrate import HEAD

TOKEN = "probe-token-0123456789"


@pytest.fixture
def runtime(tmp_path):
    rt = installed_runtime(tmp_path / "home")
    yield EngineState(rt)
    rt.close()


class EngineState:
    """`runtime` as the console sees it, with the job engine launched or not (what `oz0 serve` decides)."""

    def __init__(self, runtime, *, launched: bool = True) -> None:
        self._runtime = runtime
        self.engine_launched = launched

    def __getattr__(self, name: str):
        return getattr(self._runtime, name)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    parsed = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            parsed[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return parsed


def value(parsed: dict, name: str, **labels: str) -> float | None:
    return parsed.get((name, tuple(sorted(labels.items()))))


def test_healthz_answers_without_a_login_and_says_nothing_else(runtime):
    with ConsoleThread(runtime, token=TOKEN) as console:
        r = httpx.get(f"{console.url}/healthz", timeout=10)
        assert (r.status_code, r.json()) == (200, {"ok": True})
        assert r.headers["content-security-policy"].startswith("default-src 'none'")
        assert httpx.get(f"{console.url}/jobs", timeout=10, headers={"accept": "application/json"}).status_code == 401


def test_readyz_is_200_when_the_database_channels_and_engine_are_up(runtime):
    with ConsoleThread(runtime, token=TOKEN) as console:
        r = httpx.get(f"{console.url}/readyz", timeout=10)
    assert r.status_code == 200
    assert r.json() == {"ok": True, "checks": {"database": {"ok": True}, "channels": {"ok": True, "states": {}},
                                                "engine": {"ok": True}}}


def test_readyz_is_503_naming_an_unreachable_database_without_its_message(runtime, tmp_path):
    working = runtime.store.engine
    runtime.store.engine = create_engine(f"sqlite:///{tmp_path}/no/such/folder/oz0.db")
    try:
        with ConsoleThread(runtime) as console:
            r = httpx.get(f"{console.url}/readyz", timeout=10)
            m = httpx.get(f"{console.url}/metrics", timeout=10)
    finally:
        runtime.store.engine.dispose()
        runtime.store.engine = working
    assert r.status_code == 503
    assert r.json()["checks"]["database"] == {"ok": False, "error": "OperationalError"}
    assert r.json()["checks"]["engine"] == {"ok": True}
    assert str(tmp_path) not in r.text
    assert (m.status_code, m.text) == (503, "the journal cannot be read (OperationalError)\n")


def test_readyz_is_503_while_the_engine_is_not_launched(runtime):
    runtime.engine_launched = False
    with ConsoleThread(runtime) as console:
        r = httpx.get(f"{console.url}/readyz", timeout=10)
        assert (r.status_code, r.json()["ok"]) == (503, False)
        assert r.json()["checks"]["engine"] == {"ok": False, "error": "the job engine is not launched"}
        runtime.engine_launched = True
        assert httpx.get(f"{console.url}/readyz", timeout=10).status_code == 200


CHANNEL = '''
import asyncio
from pathlib import Path
from oz0.adapters import readiness

GATES = Path({gates!r})

async def gate(name):
    while not (GATES / name).exists():
        await asyncio.sleep(0.02)

def configured(env):
    return True

async def serve(runtime, *, env, stop):
    readiness.disconnected(runtime, "{name}", "gateway connecting")
    await gate("connect")
    readiness.connected(runtime, "{name}")
    if {fail}:
        await gate("fail")
        raise RuntimeError("the gateway closed")
    await stop.wait()
'''


def test_readyz_follows_the_channels_of_serve_connecting_connected_failed_stopping(runtime, tmp_path, monkeypatch):
    gates = tmp_path / "gates"
    gates.mkdir()
    for name, fail in (("steady", False), ("flaky", True)):
        (tmp_path / f"oz0_probe_{name}.py").write_text(
            textwrap.dedent(CHANNEL.format(name=name, fail=fail, gates=str(gates))))
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple[int, dict]] = []

    async def readyz_when(client: httpx.AsyncClient, url: str, done: Callable[[dict], bool]) -> None:
        for _ in range(500):
            r = await client.get(f"{url}/readyz")
            states = r.json()["checks"]["channels"]["states"]
            if done(states):
                seen.append((r.status_code, states))
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"readyz never got there: {states}")

    async def scenario(url: str) -> int:
        async with httpx.AsyncClient(timeout=10) as client:
            serving = asyncio.create_task(serve_channels(
                runtime, env={}, channels={"steady": "oz0_probe_steady", "flaky": "oz0_probe_flaky"}))
            await readyz_when(client, url, lambda states: len(states) == 2)
            (gates / "connect").touch()
            await readyz_when(client, url, lambda states: set(states.values()) == {"connected"})
            (gates / "fail").touch()
            await readyz_when(client, url, lambda states: states["flaky"] == "failed")
            return await serving

    with ConsoleThread(runtime) as console:
        code = asyncio.run(scenario(console.url))
    assert code == 1  # flaky failed, so serve stopped the other channel and reports the failure
    assert seen[0] == (503, {"steady": "disconnected: gateway connecting", "flaky": "disconnected: gateway connecting"})
    assert seen[1] == (200, {"steady": "connected", "flaky": "connected"})
    assert seen[2][0] == 503 and seen[2][1]["steady"] in ("stopping", "ended")
    assert readiness.channel_states(runtime).snapshot() == {"steady": "ended", "flaky": "failed"}


def test_metrics_counts_jobs_by_agent_and_status_durations_and_queue_depth(runtime):
    async def jobs() -> None:
        for text in ("one", "two"):
            await runtime.run("echo", text)
        await runtime.run("grumpy", "x")

    asyncio.run(jobs())
    runtime.submit("echo", "waiting")  # journaled, not started: queued
    with ConsoleThread(runtime) as console:
        r = httpx.get(f"{console.url}/metrics", timeout=10)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=")
    parsed = samples(r.text)
    assert value(parsed, "oz0_jobs", agent="echo", status="succeeded") == 2
    assert value(parsed, "oz0_jobs", agent="echo", status="queued") == 1
    assert value(parsed, "oz0_jobs", agent="grumpy", status="failed") == 1
    assert value(parsed, "oz0_queue_depth", status="queued") == 1
    assert value(parsed, "oz0_queue_depth", status="running") == 0
    assert value(parsed, "oz0_job_duration_seconds_count", agent="echo") == 2
    assert value(parsed, "oz0_job_duration_seconds_bucket", agent="echo", le="+Inf") == 2
    finished = [j for j in runtime.jobs() if j.agent == "echo" and j.duration_s is not None]
    assert value(parsed, "oz0_job_duration_seconds_sum", agent="echo") == pytest.approx(
        sum(j.duration_s for j in finished))
    counts = [value(parsed, "oz0_job_duration_seconds_bucket", agent="echo", le=repr(b)) for b in DURATION_BUCKETS_S]
    assert counts == sorted(counts) and counts[-1] == 2  # cumulative; echo takes well under 600 s


def test_metrics_counts_channel_errors_reported_by_a_channel(runtime):
    with ConsoleThread(runtime) as console:
        before = value(samples(httpx.get(f"{console.url}/metrics", timeout=10).text),
                       "oz0_channel_errors_total", channel="slack", kind="SlackApiError") or 0
        count_channel_error("slack", "SlackApiError")
        count_channel_error("slack", "SlackApiError")
        count_channel_error("discord", "bad kind {with} \"quotes\"\n")
        parsed = samples(httpx.get(f"{console.url}/metrics", timeout=10).text)
    assert value(parsed, "oz0_channel_errors_total", channel="slack", kind="SlackApiError") == before + 2
    assert value(parsed, "oz0_channel_errors_total", channel="discord", kind="bad_kind__with___quotes__") == 1


def test_channel_error_series_are_bounded(monkeypatch):
    from oz0.edge.runtime import metrics

    monkeypatch.setattr(metrics, "_series", set())
    for i in range(MAX_ERROR_SERIES + 50):
        count_channel_error("bounded", f"Kind{i}")
    assert len(metrics._series) == MAX_ERROR_SERIES + 1  # the first 200, then "other"
    assert ("bounded", "other") in metrics._series


def test_metrics_use_their_own_registry_not_the_global_one(runtime):
    with ConsoleThread(runtime) as console:
        assert httpx.get(f"{console.url}/metrics", timeout=10).status_code == 200
    global_names = {m.name for m in prometheus_client.REGISTRY.collect()}
    assert not any(name.startswith("oz0_") for name in global_names)


def test_metrics_need_the_token_when_one_is_set_and_answer_401_not_a_login_page(runtime):
    with ConsoleThread(runtime, token=TOKEN) as console:
        refused = httpx.get(f"{console.url}/metrics", timeout=10, headers={"accept": "text/plain"})
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == 'Bearer realm="oz0"'
        ok = httpx.get(f"{console.url}/metrics", timeout=10, headers={"authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and "# TYPE oz0_jobs gauge" in ok.text
        assert httpx.get(f"{console.url}/readyz", timeout=10).status_code == 200


def test_oz0_serve_answers_its_probes_and_logs_the_schema_revision(tmp_path):
    import signal

    from test_serve import start

    installed_runtime(tmp_path / "home").close()
    proc, url, lines = start(tmp_path / "home")
    try:
        assert any(f"database schema at revision {HEAD}" in line for line in lines)
        assert httpx.get(f"{url}/healthz", timeout=10).json() == {"ok": True}
        ready = httpx.get(f"{url}/readyz", timeout=10)
        assert ready.status_code == 200 and ready.json()["checks"]["channels"]["states"] == {"console": "running"}
        assert "# TYPE oz0_job_duration_seconds histogram" in httpx.get(f"{url}/metrics", timeout=10).text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
        proc.stderr.close()


def finished_row(job_id: str, *, agent: str, ended: float, took: float) -> dict:
    return {"id": job_id, "agent": agent, "requester": "test", "channel": "cli", "input": "x", "status": "succeeded",
            "created": ended - took, "started": ended - took, "ended": ended, "attempts": 1}


def test_durations_are_tallied_once_each_including_a_late_commit_from_a_replica_whose_clock_lags(runtime):
    from oz0.edge.runtime.metrics import JournalCollector

    collector = JournalCollector(runtime.store)

    def histogram() -> dict:
        (family,) = [m for m in collector.collect() if m.name == "oz0_job_duration_seconds"]
        return {(s.name, s.labels.get("le")): s.value for s in family.samples if s.labels["agent"] == "late"}

    now = 1_800_000_000.0
    runtime.store.insert_job(finished_row("a" * 32, agent="late", ended=now, took=0.2))
    runtime.store.insert_job(finished_row("b" * 32, agent="late", ended=now + 1, took=3.0))
    first = histogram()
    assert first[("oz0_job_duration_seconds_count", None)] == 2
    assert histogram() == first  # a second scrape counts nothing twice
    runtime.store.insert_job(finished_row("c" * 32, agent="late", ended=now - 10, took=0.07))  # committed late
    after = histogram()
    assert after[("oz0_job_duration_seconds_count", None)] == 3
    assert after[("oz0_job_duration_seconds_bucket", "0.1")] == 1  # 0.07 s joins its bucket
    assert after[("oz0_job_duration_seconds_bucket", "0.25")] == 2
    assert after[("oz0_job_duration_seconds_bucket", "5.0")] == 3
    assert after[("oz0_job_duration_seconds_sum", None)] == pytest.approx(3.27)


def test_a_long_journal_is_caught_up_over_several_scrapes_without_counting_twice(runtime, monkeypatch):
    from oz0.edge.runtime import metrics

    monkeypatch.setattr(metrics, "MAX_ROWS_PER_SCRAPE", 3)
    for i in range(10):  # pairs of jobs ending at the same instant
        runtime.store.insert_job(finished_row(f"{i:032x}", agent="bulk", ended=1_800_000_000.0 + i // 2, took=1.0))
    collector = metrics.JournalCollector(runtime.store)
    seen = []
    for _ in range(8):
        (family,) = [m for m in collector.collect() if m.name == "oz0_job_duration_seconds"]
        seen.append(next(s.value for s in family.samples if s.name.endswith("_count") and s.labels["agent"] == "bulk"))
    assert seen[0] == 3 and seen == sorted(seen) and seen[-1] == 10
