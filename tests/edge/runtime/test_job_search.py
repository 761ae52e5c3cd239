"""Job search (edge.runtime.job_search) on a real SQLite file and a real Postgres: the filters, keyset
pages without duplicates or gaps while new jobs arrive, and bad parameters named in the error, on the
CLI, the API (400 QZX) and the console's Jobs page (a GET form, escaped)."""

from __future__ import annotations

import time

import httpx
import pytest
from sqlalchemy import insert

from oz0.edge.runtime.job_search import MAX_PAGE, SearchError, parse_query, search_jobs
from oz0.edge.runtime.store import Store, jobs

NOW = 1_800_000_000.0


def _row(i: int, *, created: float, agent: str = "echo", status: str = "succeeded", asker: str = "ana") -> dict:
    return dict(id=f"job{i:08d}", agent=agent, requester=asker, channel="cli", input="x", status=status,
                created=created, attempts=0)


def _fill(store: Store, rows: list[dict]) -> None:
    with store.engine.begin() as conn:
        conn.execute(insert(jobs), rows)


def _all(store: Store, **filters) -> list[str]:
    seen, cursor = [], None
    while True:
        page = search_jobs(store.engine, parse_query(**filters, cursor=cursor, now=NOW))
        seen += [r["id"] for r in page.rows]
        cursor = page.next_cursor
        if cursor is None:
            return seen


def test_filters_by_agent_status_asker_and_time(store):
    _fill(store, [_row(0, created=NOW - 60, agent="echo", status="failed", asker="ana"),
                  _row(1, created=NOW - 3 * 3600, agent="echo", status="succeeded", asker="bo"),
                  _row(2, created=NOW - 30, agent="sum", status="failed", asker="bo"),
                  _row(3, created=NOW - 10 * 86400, agent="echo", status="failed", asker="ana")])
    assert _all(store) == ["job00000002", "job00000000", "job00000001", "job00000003"]
    assert _all(store, agent="echo") == ["job00000000", "job00000001", "job00000003"]
    assert _all(store, status="failed", asker="ana") == ["job00000000", "job00000003"]
    assert _all(store, since="2h") == ["job00000002", "job00000000"]
    assert _all(store, agent="echo", until="1h") == ["job00000001", "job00000003"]
    assert _all(store, since="2027-01-15T06:00:00+06:00") == ["job00000002", "job00000000", "job00000001"]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(NOW - 90))
    assert _all(store, since=iso) == ["job00000002", "job00000000"]  # an ISO time without offset is UTC


def test_pages_never_repeat_or_skip_a_job_while_new_ones_arrive(store):
    rows = [_row(i, created=NOW - (i // 3)) for i in range(40)]  # three jobs share each creation time
    _fill(store, rows)
    seen, cursor, arrived = [], None, 100
    while True:
        page = search_jobs(store.engine, parse_query(limit=7, cursor=cursor, now=NOW))
        assert len(page.rows) <= 7
        seen += [r["id"] for r in page.rows]
        _fill(store, [_row(arrived, created=NOW + arrived)])  # newer than any page already read
        arrived += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(seen) == len(set(seen)) == 40
    assert set(seen) == {r["id"] for r in rows}
    created = [next(r["created"] for r in rows if r["id"] == i) for i in seen]
    assert created == sorted(created, reverse=True)


@pytest.mark.parametrize(("params", "param", "said"), [
    ({"since": "yesterday"}, "since", "since='yesterday' is neither a duration (90s, 30m, 2h, 7d, 1w)"),
    ({"until": "2h", "since": "1h"}, "until", "until (2h) is before since (1h)"),
    ({"status": "done"}, "status", "status='done' is not a job status; one of: queued, running"),
    ({"limit": "5000"}, "limit", f"limit=5000 is out of range: from 1 to {MAX_PAGE} jobs a page"),
    ({"limit": "ten"}, "limit", "limit='ten' is not a whole number"),
    ({"cursor": "not-a-cursor"}, "cursor", "cursor is not one this server gave"),
    ({"agent": "a" * 201}, "agent", "agent is 201 characters; the limit is 200"),
])
def test_a_bad_parameter_is_named(params, param, said):
    with pytest.raises(SearchError) as caught:
        parse_query(**params, now=NOW)
    assert caught.value.param == param
    assert str(caught.value).startswith(said)


def test_oz0_jobs_filters_and_names_the_bad_flag(oz0_home, capsys):
    from oz0.adapters.cli import main

    s = Store(f"sqlite:///{oz0_home}/oz0.db")
    _fill(s, [_row(0, created=time.time() - 60, agent="echo"), _row(1, created=time.time() - 30, agent="sum"),
              _row(2, created=time.time() - 7200, agent="echo")])
    s.close()
    assert main(["jobs", "--since", "soon"]) == 2
    assert "--since: since='soon' is neither a duration" in capsys.readouterr().err
    assert main(["jobs", "--agent", "echo", "--since", "1h", "--json"]) == 0
    import json
    out = json.loads(capsys.readouterr().out)
    assert [j["id"] for j in out["jobs"]] == ["job00000000"] and out["next_cursor"] is None
    assert main(["jobs", "--agent", "echo", "--limit", "1"]) == 0
    said = capsys.readouterr()
    assert "job00000000" in said.out and "job00000002" not in said.out and "--cursor " in said.err


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    from console_plugin import ConsoleThread, installed_runtime

    runtime = installed_runtime(tmp_path_factory.mktemp("search") / "home")
    _fill(runtime.store, [_row(i, created=time.time() - i, agent="echo" if i % 2 else "sum") for i in range(5)]
          + [_row(9, created=time.time() - 1, agent="other", asker="<script>alert(1)</script>")])
    with ConsoleThread(runtime) as server:
        yield server
    runtime.close()


def test_get_v1_jobs_pages_and_refuses_bad_parameters_with_400(console):
    with httpx.Client(base_url=console.url, timeout=20) as http:
        first = http.get("/v1/jobs", params={"agent": "echo", "limit": 1}).json()
        assert first["success"] and [j["id"] for j in first["jobs"]] == ["job00000001"]
        second = http.get("/v1/jobs", params={"agent": "echo", "limit": 1,
                                              "cursor": first["next_cursor"]}).json()
        assert [j["id"] for j in second["jobs"]] == ["job00000003"] and second["next_cursor"] is None
        bad = http.get("/v1/jobs", params={"since": "last week"})
        assert bad.status_code == 400
        body = bad.json()
        assert (body["success"], body["error_code"], body["details"]) == (False, "invalid_parameter",
                                                                          {"parameter": "since"})
        assert body["error"].startswith("since='last week' is neither a duration")


def test_the_console_jobs_page_filters_with_a_get_form_and_escapes(console):
    with httpx.Client(base_url=console.url, timeout=20) as http:
        page = http.get("/jobs", params={"agent": "sum"})
        assert page.status_code == 200 and '<form class="job-search" method="get" action="/jobs">' in page.text
        assert "job00000002" in page.text and "job00000001" not in page.text
        shown = http.get("/jobs", params={"asker": "<script>alert(1)</script>"})
        assert "job00000009" in shown.text and "<script>alert(1)" not in shown.text
        assert 'value="&lt;script&gt;alert(1)&lt;/script&gt;"' in shown.text
        bad = http.get("/jobs", params={"status": "<b>x</b>"})
        assert bad.status_code == 400 and "The filter status cannot be read" in bad.text
        assert "<b>x</b>" not in bad.text


def _rows_read(plan: dict) -> int:
    """Rows the scans of a Postgres JSON plan read from the jobs table or its indexes (kept or filtered out)."""
    own = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0) if "Scan" in plan["Node Type"] else 0
    return own * plan.get("Actual Loops", 1) + sum(_rows_read(p) for p in plan.get("Plans", ()))


@pytest.mark.parametrize("filters", [{"agent": "retired"}, {"agent": "retired", "status": "succeeded"},
                                     {"agent": "retired", "since": "400d"}, {"status": "cancelled"}],
                         ids=["agent", "agent+status", "agent+since", "status"])
def test_a_page_of_jobs_that_are_all_old_reads_one_page_of_the_index_on_postgres(postgres_url, filters):
    """20,000 recent jobs of other agents, then 2,000 months old: the search must not walk the recent ones."""
    from sqlalchemy import event, text

    store = Store(postgres_url)
    try:
        _fill(store, [_row(i, created=NOW - 86_400 * 200 - i, agent="retired",
                           status="cancelled" if i % 10 == 0 else "succeeded") for i in range(2_000)])
        _fill(store, [_row(2_000 + i, created=NOW - i, agent=f"a{i % 20}") for i in range(20_000)])
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE jobs"))
        sent: list[tuple[str, object]] = []
        event.listen(store.engine, "before_cursor_execute", lambda *a: sent.append((a[2], a[3])))
        page = search_jobs(store.engine, parse_query(**filters, limit=20, now=NOW))
        assert len(page.rows) == 20 and {r["agent"] for r in page.rows} == {"retired"}
        statement, params = sent[-1]
        with store.engine.raw_connection() as raw:
            cursor = raw.cursor()
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params)
            plan = cursor.fetchone()[0][0]["Plan"]
        assert _rows_read(plan) <= 3 * 21, plan
    finally:
        store.close()
