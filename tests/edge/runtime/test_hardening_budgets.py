"""An endpoint that ignores `max_tokens` (issue 29 item 10): it reports 5,000 completion tokens per
call against a 1,000-token budget. Its usage is settled as reported, the next reservation is
refused, and however many jobs ask at once the budget is overspent by one call, never more."""

from __future__ import annotations

import asyncio
import threading
import time

from budget_kit import plugin_runtime, reviewer
from loopback import Loopback, chat


def slow_model(usage: tuple[int, int], seen: list[float]) -> Loopback:
    lock = threading.Lock()

    def answer(data, headers, path):
        with lock:
            seen.append(time.monotonic())
        time.sleep(0.3)
        return 200, chat("ok", usage=usage)
    return Loopback(answer)


def run_at_once(rt, n: int) -> list:
    async def all_of():
        return await asyncio.gather(*(rt.run("reviewer", f"review #{i}") for i in range(n)))
    return asyncio.run(all_of())


def test_concurrent_calls_to_an_endpoint_that_overruns_max_tokens_overspend_by_one_call_only(tmp_path):
    seen: list[float] = []
    with slow_model((20, 5000), seen) as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 1000, "per": "day"})})
        jobs = run_at_once(rt, 6)
    assert len(server.requests) == 1
    [state] = rt.budgets.report(jobs[0])
    assert (state.spent.tokens, state.spent.calls, state.reserved.tokens) == (5020, 1, 0)  # settled as reported
    assert sorted(j.status for j in jobs) == ["failed"] * 5 + ["succeeded"]
    refused = [j for j in jobs if j.status == "failed"]
    assert {j.failure_kind for j in refused} == {"BudgetExhausted"}
    assert all("5,020 tokens spent" in j.failure_reason and "the call was not made" in j.failure_reason
               for j in refused)
    rt.close()


def test_an_honest_endpoint_still_serves_concurrent_calls_after_the_first(tmp_path):
    seen: list[float] = []
    with slow_model((120, 30), seen) as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 100_000, "per": "day"})})
        jobs = run_at_once(rt, 6)
    assert [j.status for j in jobs] == ["succeeded"] * 6
    [state] = rt.budgets.report(jobs[0])
    assert (state.spent.tokens, state.reserved.tokens) == (6 * 150, 0)
    later = sorted(seen)[1:]
    assert later[-1] - later[0] < 0.3  # the five after the first were in flight together
    rt.close()


def test_after_an_overrun_each_call_reserves_what_calls_really_spent(tmp_path):
    seen: list[float] = []
    with slow_model((20, 5000), seen) as server:
        rt = plugin_runtime(tmp_path, {"reviewer": reviewer(server.url, budget={"tokens": 12_000, "per": "day"})})
        first = asyncio.run(rt.run("reviewer", "review #0"))
        jobs = run_at_once(rt, 4)
    assert first.status == "succeeded" and len(server.requests) == 2
    assert sorted(j.status for j in jobs) == ["failed"] * 3 + ["succeeded"]
    [state] = rt.budgets.report(first)
    assert (state.spent.tokens, state.reserved.tokens) == (10_040, 0)   # within the 12,000 limit
    rt.close()
