"""Retention (edge.runtime.retention) on a real SQLite file and a real Postgres: the dry run counts, the
real run removes old finished jobs with their questions and per-job budget rows in batches, keeps new
and still-active jobs, and keeps audit records past jobs_days until audit_days."""

from __future__ import annotations

import time

import pytest
from paths import SUPPORT
from sqlalchemy import event, func, insert, select

from oz0.edge.runtime.budget_tables import budget_holds, budgets
from oz0.edge.runtime.conversations import conversation_turns
from oz0.edge.runtime.loop_trace import job_trace
from oz0.edge.runtime.retention import DAY_S, Retention, RetentionError, count, prune
from oz0.edge.runtime.store import Store, audit, jobs, questions

NOW = 1_800_000_000.0


def _job(i: int, age_days: float, status: str = "succeeded") -> dict:
    return dict(id=f"job{i:08d}", agent="echo", requester="ana", channel="cli", input="x", status=status,
                created=NOW - age_days * DAY_S, attempts=0)


def _budget(job_id: str) -> dict:
    return dict(key="agent:echo", period=f"job:{job_id}", label="agent echo, per job", on_exhausted="fail",
                limit_tokens=10, limit_cost=None, limit_calls=None, reserved_tokens=0, reserved_cost=0,
                reserved_calls=0, spent_tokens=1, spent_cost=0, spent_calls=0, updated=NOW)


def _fill(store: Store, old: int = 25) -> None:
    rows = [_job(i, 100) for i in range(old)] + [_job(100, 10), _job(101, 200, status="running")]
    with store.engine.begin() as conn:
        conn.execute(insert(jobs), rows)
        conn.execute(insert(questions), [dict(job_id=r["id"], step="ok", message="?", answer_schema={},
                                              answerers=[], asked_at=r["created"]) for r in rows])
        conn.execute(insert(budgets), [_budget(r["id"]) for r in rows])
        conn.execute(insert(job_trace), [dict(job_id=r["id"], seq=1, kind="model", name="m", detail=None, ms=1,
                                              at=r["created"]) for r in rows])
        conn.execute(insert(conversation_turns), [dict(conversation_id=f"slack:C1:{r['id']}", seq=1, kind="turn",
                                                       job_id=r["id"], agent="echo", by="ana", at=r["created"])
                                                  for r in rows])
        ids = dict(conn.execute(select(budgets.c.period, budgets.c.id)).all())
        conn.execute(insert(budget_holds), [dict(hold="h", budget_id=ids[f"job:{r['id']}"], job_id=r["id"],
                                                 tokens=1, cost=0, calls=0, at=NOW) for r in rows])
        conn.execute(insert(audit), [dict(at=NOW - d * DAY_S, action="plugin.install", actor="ana", detail={})
                                     for d in (1, 100, 400)])


def _left(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {t.name: conn.execute(select(func.count()).select_from(t)).scalar()
                for t in (jobs, questions, job_trace, conversation_turns, budgets, budget_holds, audit)}


def test_the_dry_run_counts_and_the_real_run_removes_only_what_retention_no_longer_keeps(store):
    _fill(store)
    expected = {"jobs": 25, "questions": 25, "job_trace": 25, "conversation_turns": 25, "budget_holds": 25, "budget_grants": 0, "budgets": 25, "audit": 1}
    assert count(store.engine, Retention(), now=NOW) == expected
    assert _left(store) == {"jobs": 27, "questions": 27, "job_trace": 27, "conversation_turns": 27, "budgets": 27, "budget_holds": 27, "audit": 3}
    assert prune(store.engine, Retention(), now=NOW, batch=10) == expected  # three batches of jobs
    assert _left(store) == {"jobs": 2, "questions": 2, "job_trace": 2, "conversation_turns": 2, "budgets": 2, "budget_holds": 2, "audit": 2}
    with store.engine.connect() as conn:
        assert sorted(conn.execute(select(jobs.c.id)).scalars()) == ["job00000100", "job00000101"]  # new, running
        assert sorted(round((NOW - a) / DAY_S) for a in conn.execute(select(audit.c.at)).scalars()) == [1, 100]
    assert count(store.engine, Retention(), now=NOW) == dict.fromkeys(expected, 0)


def test_a_prune_deletes_inside_the_database_in_statements_whose_size_does_not_grow_with_the_batch(store):
    _fill(store, old=90)
    sent: list[tuple[str, int]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        sent.append((statement.lstrip().split()[0].upper(), len(parameters or ())))

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        removed = prune(store.engine, Retention(pause_ms=0), now=NOW, batch=40)
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    assert removed["jobs"] == removed["questions"] == removed["budgets"] == 90 and removed["audit"] == 1
    assert [verb for verb, _ in sent].count("DELETE") == 3 * 7 + 1  # three batches of seven tables, one of audit
    assert [verb for verb, _ in sent].count("SELECT") == 3  # one row each: where a batch ends
    assert max(n for _, n in sent) < 40  # no statement carries a batch's ids: they stay in the database
    assert _left(store) == {"jobs": 2, "questions": 2, "job_trace": 2, "conversation_turns": 2, "budgets": 2, "budget_holds": 2, "audit": 2}


def test_a_prune_pauses_between_batches_so_requests_beside_it_keep_their_pace(store):
    _fill(store, old=30)
    start = time.monotonic()
    assert prune(store.engine, Retention(pause_ms=150), now=NOW, batch=10)["jobs"] == 30
    assert time.monotonic() - start >= 3 * 0.150  # four batches of jobs (the last one empty), three pauses


def test_settings_come_from_the_server_environment_and_bad_ones_are_named():
    assert Retention.from_env({}) == Retention(90, 365, 100)
    assert Retention.from_env({"OZ0_RETENTION_PAUSE_MS": "0"}).pause_ms == 0
    with pytest.raises(RetentionError, match="OZ0_RETENTION_PAUSE_MS='soon' is not a number of milliseconds"):
        Retention.from_env({"OZ0_RETENTION_PAUSE_MS": "soon"})
    with pytest.raises(RetentionError, match="OZ0_RETENTION_PAUSE_MS='60000': a pause between batches is 0 to 10,000 ms"):
        Retention.from_env({"OZ0_RETENTION_PAUSE_MS": "60000"})
    assert Retention.from_env({"OZ0_RETENTION_JOBS_DAYS": "30", "OZ0_RETENTION_AUDIT_DAYS": "60"}) == Retention(30, 60)
    with pytest.raises(RetentionError, match="OZ0_RETENTION_JOBS_DAYS='soon' is not a number of days"):
        Retention.from_env({"OZ0_RETENTION_JOBS_DAYS": "soon"})
    with pytest.raises(RetentionError, match="OZ0_RETENTION_AUDIT_DAYS=30 is shorter than OZ0_RETENTION_JOBS_DAYS=90"):
        Retention.from_env({"OZ0_RETENTION_AUDIT_DAYS": "30"})
    with pytest.raises(RetentionError, match="keep at least 1 day"):
        Retention.from_env({"OZ0_RETENTION_JOBS_DAYS": "0"})


def test_oz0_db_prune_dry_run_then_prune(oz0_home, capsys, monkeypatch):
    from oz0.adapters.cli import main

    s = Store(f"sqlite:///{oz0_home}/oz0.db")
    now = time.time()
    with s.engine.begin() as conn:
        conn.execute(insert(jobs), [dict(_job(1, 0), created=now - 40 * DAY_S), dict(_job(2, 0), created=now)])
    s.close()
    monkeypatch.setenv("OZ0_RETENTION_JOBS_DAYS", "30")
    assert main(["db", "prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Retention: jobs 30 days, audit 365 days; would remove:" in out and "  jobs: 1 row\n" in out
    assert main(["db", "prune"]) == 0
    assert "removed:" in capsys.readouterr().out
    assert main(["db", "prune", "--dry-run"]) == 0
    assert "  jobs: 0 rows\n" in capsys.readouterr().out
    monkeypatch.setenv("OZ0_RETENTION_AUDIT_DAYS", "2")
    assert main(["db", "prune"]) == 2
    assert "OZ0_RETENTION_AUDIT_DAYS=2 is shorter" in capsys.readouterr().err


def test_the_engine_schedules_a_daily_prune_that_prunes(oz0_home, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from oz0.edge.runtime.retention import PRUNE_CRON

    s = Store(f"sqlite:///{oz0_home}/oz0.db")
    with s.engine.begin() as conn:
        conn.execute(insert(jobs), [dict(_job(1, 0), created=time.time() - 100 * DAY_S),
                                    dict(_job(2, 0), created=time.time())])
    s.close()
    tests = SUPPORT
    env = {**os.environ, "PYTHONPATH": str(tests)}
    done = subprocess.run([sys.executable, str(tests / "retention_engine.py")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["schedules"] == [["oz0.retention.prune", PRUNE_CRON]]
    assert said["removed"]["jobs"] == 1
    assert said["pruned_on_an_event_loop"] is False  # DBOS's thread pool: the loops serving requests run on


def test_a_batch_slower_than_batch_ms_makes_the_next_smaller_and_a_quick_one_grows_it_back():
    from oz0.edge.runtime.retention import BATCH, BATCH_MS, MIN_BATCH, _next_size

    assert _next_size(1_000, BATCH_MS * 4, BATCH) == 250  # four times too slow: a quarter the size
    assert _next_size(100, BATCH_MS * 100, BATCH) == MIN_BATCH  # never below MIN_BATCH
    assert _next_size(250, BATCH_MS / 10, BATCH) == 376  # quick: half again
    assert _next_size(900, 1.0, BATCH) == BATCH  # never above the batch asked for
    assert _next_size(10, BATCH_MS * 10, 10) == 10  # a batch asked below MIN_BATCH stays as asked


def test_a_batch_that_waits_on_a_locked_job_gives_up_and_leaves_it_for_the_next_prune_on_postgres(postgres_url):
    import threading

    from sqlalchemy import text

    store = Store(postgres_url)
    try:
        _fill(store)
        holder = store.engine.connect()
        holder.begin()
        holder.execute(text("SELECT id FROM jobs WHERE id = 'job00000003' FOR UPDATE"))  # a request mid-update
        done: dict[str, int] = {}
        pruning = threading.Thread(target=lambda: done.update(prune(store.engine, Retention(pause_ms=0),
                                                                    now=NOW, batch=10)))
        pruning.start()
        pruning.join(timeout=20)
        still_waiting = pruning.is_alive()
        holder.rollback()
        holder.close()
        pruning.join(timeout=60)
        assert not still_waiting, "the prune waited on the locked job instead of giving up after its lock timeout"
        assert done["jobs"] == 15  # the batch of ten holding job 3 is left whole; its questions too
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(questions)).scalar() == 12
        assert prune(store.engine, Retention(pause_ms=0), now=NOW, batch=10)["jobs"] == 10  # the next prune
    finally:
        store.close()
