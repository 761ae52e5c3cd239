"""Budgets shared by replicas over one real Postgres (tests/support/postgres_server.py): two jobs on two runtimes
racing for the last of a shared budget, exactly one of them gets it (and reaches the model); many
reservations at once never overspend; a call's budgets are reserved all or none."""

from __future__ import annotations

import asyncio
import threading

from budget_kit import model_server, plugin_runtime, reviewer

from oz0.edge.model.budget import Budget
from oz0.edge.runtime.budget_book import Amounts, BudgetRef


def test_two_jobs_on_two_runtimes_race_for_the_last_call_and_exactly_one_reaches_the_model(tmp_path, postgres_url):
    with model_server("done") as server:
        agent = reviewer(server.url, budget={"calls": 1, "per": "day"})
        one = plugin_runtime(tmp_path, {"reviewer": agent}, database_url=postgres_url, home="home-a")
        two = plugin_runtime(tmp_path, {"reviewer": agent}, database_url=postgres_url, home="home-b")
        jobs = [rt.submit("reviewer", f"review {i}")[0] for i, rt in enumerate((one, two))]
        start = threading.Barrier(2)
        ended: dict[str, object] = {}

        def go(rt, job_id: str) -> None:
            start.wait()
            ended[job_id] = asyncio.run(rt.execute(job_id))

        threads = [threading.Thread(target=go, args=(rt, job.id)) for rt, job in zip((one, two), jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    outcomes = sorted((j.status, j.failure_kind) for j in ended.values())  # type: ignore[attr-defined]
    assert outcomes == [("failed", "BudgetExhausted"), ("succeeded", None)]
    assert len(server.requests) == 1
    [state] = one.budgets.report(jobs[0])
    assert (state.spent.calls, state.reserved.calls, state.left("calls")) == (1, 0, 0)
    one.close()
    two.close()


def test_many_reservations_at_once_never_overspend_and_a_call_reserves_all_or_none(tmp_path, postgres_url):
    one = plugin_runtime(tmp_path, {}, database_url=postgres_url, home="home-a")
    two = plugin_runtime(tmp_path, {}, database_url=postgres_url, home="home-b")
    shared = BudgetRef("access:ops", "day:2026-12-01", "access.yaml budget ops, per day", Budget(calls=3, per="day"))
    start = threading.Barrier(12)
    won: list[str] = []

    def reserve(rt, n: int) -> None:
        start.wait()
        if rt.budgets.book.reserve([shared], Amounts(calls=1), hold=f"h{n}", job_id=f"j{n}", root_id=f"j{n}") is None:
            won.append(f"h{n}")

    threads = [threading.Thread(target=reserve, args=(one if n % 2 else two, n)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) == 3
    [state] = one.budgets.book.states([shared], root_id="none")
    assert (state.reserved.calls, state.left("calls")) == (3, 0)
    roomy = BudgetRef("agent:a", "job:j99", "agent a, per job", Budget(calls=10))
    refused = one.budgets.book.reserve([roomy, shared], Amounts(calls=1), hold="h99", job_id="j99", root_id="j99")
    assert refused is not None and refused.state.ref == shared
    assert one.budgets.book.states([roomy], root_id="j99")[0].reserved.calls == 0  # none, not half
    one.budgets.book.settle(won[0], Amounts(calls=1), agent="a", channel="cli")
    assert one.budgets.book.states([shared], root_id="none")[0].spent.calls == 1
    one.close()
    two.close()
