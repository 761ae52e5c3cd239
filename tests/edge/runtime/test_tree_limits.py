"""Limits over the job tree, in this process: each limit reached ends the tree with LimitExceeded naming
the limit, its number and where; what finished is kept; children still running are stopped; nothing is
left running in the journal; `oz0 jobs show` draws the tree. Real plugin, real runtime, real SQLite."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tree_kit import FLOWS, tree_plugin, waiting

from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.delegation import Delegation
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.store import ACTIVE_STATUSES

OZ0 = [sys.executable, "-m", "oz0.adapters.cli"]


@pytest.fixture()
def runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("TREE_LOG", str(tmp_path / "calls.log"))
    rt = Runtime(tmp_path / "home", backoff_s=0.01, flow_engine=FLOW_ENGINE)
    flows = {**FLOWS, "wait-excluded": waiting(False), "wait-counted": waiting(True)}
    install_plugin(rt, load_plugin(tree_plugin(tmp_path / "trees", flows=flows)), actor="test")
    yield rt
    rt.close()


def tree(rt: Runtime, job_id: str) -> list[tuple[int, str, str, str | None]]:
    """(depth, step label or agent, status, failure kind) of every job of the tree, depth first."""
    out = []

    def walk(job, depth):
        label = (job.dedupe_key or "").rsplit(":", 1)[-1] if job.parent_id else job.agent
        out.append((depth, label, job.status, job.failure_kind))
        for child in rt.children(job.id):
            walk(child, depth + 1)

    walk(rt.job(job_id), 0)
    return out


def nothing_running(rt: Runtime, job_id: str) -> bool:
    return all(status not in ACTIVE_STATUSES for _, _, status, _ in tree(rt, job_id))


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_loop_in_a_flow_is_stopped_by_max_steps_and_jobs_show_draws_it(runtime, tmp_path):
    job = asyncio.run(runtime.run("loop", '{"n": 0}'))
    assert (job.status, job.failure_kind, job.attempts) == ("failed", "LimitExceeded", 1)
    assert job.failure_reason == (f"limits.max_steps is 5 (set by flow loop): reached at step bump#6 of job "
                                  f"{job.id}, the 6th step of the tree")
    assert tree(runtime, job.id) == [(0, "loop", "failed", "LimitExceeded"),
                                     *[(1, k, "succeeded", None) for k in ("bump", "bump#2", "bump#3", "bump#4",
                                                                           "bump#5")],
                                     (1, "bump#6", "failed", "LimitExceeded")]
    assert calls(tmp_path) == [f"count {n}" for n in range(5)]  # the 6th run never started
    assert job.output == {"steps": {"bump": {"n": 1}, "bump#2": {"n": 2}, "bump#3": {"n": 3}, "bump#4": {"n": 4},
                                    "bump#5": {"n": 5}}}  # partial: what finished
    card = runtime.card(job)
    assert "bump failed at run 6" in " ".join(card.notes)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env["OZ0_HOME"] = str(runtime.home)
    shown = subprocess.run([*OZ0, "jobs", "show", job.id], capture_output=True, text=True, timeout=120, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "limits.max_steps is 5 (set by flow loop): reached at step bump#6" in shown.stdout
    lines = [line.split("└ ")[1].split("  ", 1)[1] for line in shown.stdout.splitlines() if "└ " in line]
    assert [line.split(",")[0] for line in lines] == [
        *[f"{k}: counter succeeded" for k in ("bump", "bump#2", "bump#3", "bump#4", "bump#5")],
        "bump#6: counter failed (LimitExceeded)"]


def test_a_loop_ends_when_its_until_is_true(runtime):
    seen: list[str] = []
    job = asyncio.run(runtime.run("loop-done", '{"n": 0}', on_progress=lambda p: seen.append(p.message)))
    assert job.status == "succeeded", job.failure_reason
    assert seen == ["step 1 of 1: bump (counter)", "step 1 of 1: bump (counter), run 2",
                    "step 1 of 1: bump (counter), run 3"]
    assert job.output == {"n": 3}
    assert [label for _, label, _, _ in tree(runtime, job.id)] == ["loop-done", "bump", "bump#2", "bump#3"]
    assert "bump succeeded after 3 runs" in " ".join(runtime.card(job).notes)


def test_an_input_cannot_raise_a_limit(runtime):
    job = asyncio.run(runtime.run("loop", '{"n": 0, "limits": {"max_steps": 1000}, "max_steps": 1000}'))
    assert job.failure_kind == "LimitExceeded"
    assert job.failure_reason.startswith("limits.max_steps is 5 (set by flow loop)")
    assert len(runtime.children(job.id)) == 6


def test_max_children_stops_the_third_step(runtime):
    job = asyncio.run(runtime.run("three", '{"n": 0}'))
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    assert job.failure_reason == (f"limits.max_children is 2 (set by flow three): job {job.id} (three) tried to "
                                  "start its 3rd child, step c (counter)")
    assert tree(runtime, job.id) == [(0, "three", "failed", "LimitExceeded"), (1, "a", "succeeded", None),
                                     (1, "b", "succeeded", None)]
    assert job.output == {"steps": {"a": {"n": 1}, "b": {"n": 2}}}


def test_a_retry_counts_as_a_step(runtime, tmp_path):
    job = asyncio.run(runtime.run("retry", '{"n": 0}'))
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    step = runtime.children(job.id)[0]
    assert job.failure_reason == (f"limits.max_steps is 2 (set by flow retry): reached at attempt 3 of step "
                                  f"first of job {job.id}, the 3rd step of the tree")
    assert (step.status, step.failure_kind, step.attempts) == ("failed", "LimitExceeded", 2)
    assert calls(tmp_path) == ["flaky", "flaky"]  # max_attempts 3, but the tree allowed two


def test_a_nested_flow_counts_its_steps_in_the_whole_tree(runtime):
    job = asyncio.run(runtime.run("outer", '{"n": 0}'))
    assert job.failure_kind == "LimitExceeded", job.failure_reason
    assert job.failure_reason == (f"limits.max_steps is 4 (set by flow outer): reached at step again of job "
                                  f"{job.id}, the 5th step of the tree")
    assert tree(runtime, job.id) == [(0, "outer", "failed", "LimitExceeded"), (1, "inner", "succeeded", None),
                                     (2, "bump", "succeeded", None), (2, "bump#2", "succeeded", None),
                                     (2, "bump#3", "succeeded", None), (1, "again", "failed", "LimitExceeded")]


def test_an_agent_that_delegates_to_itself_is_stopped_by_max_depth(runtime):
    job = asyncio.run(runtime.run("recurse", "go"))
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    deepest = runtime.children(runtime.children(runtime.children(job.id)[0].id)[0].id)[0]
    assert job.failure_reason == (f"limits.max_depth is 3 (set by agent recurse): job {deepest.id} (recurse, "
                                  "depth 3) tried to start delegation 1 (recurse) at depth 4")
    assert tree(runtime, job.id) == [(0, "recurse", "failed", "LimitExceeded"),
                                     (1, "1", "failed", "LimitExceeded"), (2, "1", "failed", "LimitExceeded"),
                                     (3, "1", "failed", "LimitExceeded")]
    assert [j.input for j in (runtime.children(job.id)[0], deepest)] == ["go.", "go..."]


def test_an_agent_that_catches_the_limit_does_not_undo_it(runtime):
    job = asyncio.run(runtime.run("swallower", "go"))
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    assert job.failure_reason.startswith("limits.max_depth is 2 (set by agent swallower): job ")
    assert job.failure_reason.endswith("(recurse, depth 2) tried to start delegation 1 (recurse) at depth 3")
    assert job.output == "caught LimitExceeded"  # what it answered is kept, as partial


def test_delegation_returns_the_childs_output_and_a_rerun_reuses_the_children(runtime, tmp_path):
    job = asyncio.run(runtime.run("delegator", '{"n": 5}'))
    assert job.status == "succeeded", job.failure_reason
    assert job.output == {"n": 7}
    children = runtime.children(job.id)
    assert [(c.agent, c.dedupe_key, c.status, c.output) for c in children] == [
        ("counter", f"delegate:{job.id}:1", "succeeded", {"n": 6}),
        ("counter", f"delegate:{job.id}:2", "succeeded", {"n": 7})]
    assert calls(tmp_path) == ["count 5", "count 6"]

    async def rerun():  # the parent's step run again (a crash): the same asks find the same children
        again = Delegation(runtime, job, 1, asyncio.get_running_loop())
        return [await again.ask("counter", {"n": 5}), await again.ask("counter", {"n": 6})]

    assert asyncio.run(rerun()) == [{"n": 6}, {"n": 7}]
    assert len(runtime.children(job.id)) == 2 and calls(tmp_path) == ["count 5", "count 6"]


def test_tree_timeout_stops_a_running_child_and_keeps_what_finished(runtime):
    job = asyncio.run(runtime.run("slow", '{"n": 0}'))
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    assert job.failure_reason.startswith("limits.tree_timeout_s is 1 (set by flow slow): the tree had run 1.")
    assert "(waits for a person excluded) at step b of job" in job.failure_reason
    assert job.output == {"steps": {"a": {"n": 1}}}
    assert tree(runtime, job.id) == [(0, "slow", "failed", "LimitExceeded"), (1, "a", "succeeded", None),
                                     (1, "b", "failed", "LimitExceeded")]
    assert job.duration_s < 10  # the sleeper's 30 s were cut short
    assert nothing_running(runtime, job.id)


def test_a_limit_reached_in_one_branch_stops_the_children_still_running(runtime):
    job = asyncio.run(runtime.run("fanout", '{"n": 0}'))
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    assert job.failure_reason.startswith("limits.max_children is 2 (set by flow three): job ")
    sleeper, three = runtime.children(job.id)
    assert (sleeper.agent, sleeper.status, sleeper.failure_kind) == ("sleeper", "failed", "LimitExceeded")
    assert sleeper.failure_reason == job.failure_reason
    assert three.output == {"steps": {"a": {"n": 1}, "b": {"n": 2}}}
    assert job.duration_s < 10  # the sleeper's 30 s were cut short
    assert nothing_running(runtime, job.id)


async def _answer_after(rt: Runtime, flow: str, delay: float):
    job, _ = rt.submit(flow, '{"n": 0}')
    task = asyncio.ensure_future(rt.execute(job.id))
    while rt.job(job.id).status != "waiting":
        if task.done():
            return task.result()
        await asyncio.sleep(0.05)
    await asyncio.sleep(delay)
    if not task.done():
        rt.answer(job.id, "ok", action="accept", content={"ok": True}, by="cli")
    return await task


def test_tree_timeout_leaves_out_the_wait_for_a_person(runtime):
    job = asyncio.run(_answer_after(runtime, "wait-excluded", 1.6))
    assert job.status == "succeeded", job.failure_reason
    assert job.output == {"n": 2}


def test_tree_timeout_with_count_waits_stops_the_wait(runtime):
    job = asyncio.run(_answer_after(runtime, "wait-counted", 4.0))
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    assert job.failure_reason.startswith("limits.tree_timeout_s is 1 (set by flow wait-counted): the tree had run ")
    assert "(waits for a person included)" in job.failure_reason
    assert job.output == {"steps": {"a": {"n": 1}}}
    assert runtime.question(job.id) is None or runtime.questions.open_steps(job.id) == []
    assert nothing_running(runtime, job.id)


def test_lint_names_a_bad_until_and_an_out_of_range_limit_at_their_paths(tmp_path):
    bad = {**FLOWS["loop"], "steps": [{**FLOWS["loop"]["steps"][0], "until": "steps.bump.output.n >="}]}
    deep = {**FLOWS["loop-done"], "limits": {"max_depth": 99}}
    root = tree_plugin(tmp_path / "bad", flows={"loop": bad, "deep": deep})
    agent = root / "agents" / "counter.yaml"
    agent.write_text(agent.read_text() + "limits:\n  max_steps: 0\n")
    report = lint_plugin(root)
    errors = {(f.file, f.path): f.message for f in report.errors}
    assert "is not a JMESPath expression" in errors[("flows/loop.yaml", "$.steps[0].until")]
    assert "99" in errors[("flows/deep.yaml", "$.limits.max_depth")]
    assert "0" in errors[("agents/counter.yaml", "$.limits.max_steps")]


def test_tree_limits_enter_the_contract_hash_only_when_set(tmp_path):
    plain = load_plugin(tree_plugin(tmp_path / "a", flows={"loop": FLOWS["loop-done"]})).flow("loop")
    same = load_plugin(tree_plugin(tmp_path / "b", flows={"loop": {**FLOWS["loop-done"], "limits": {
        "max_steps": 100, "max_depth": 5, "max_children": 50, "count_waits": False}}})).flow("loop")
    bounded = load_plugin(tree_plugin(tmp_path / "c", flows={"loop": {**FLOWS["loop-done"], "limits": {
        "max_steps": 7}}})).flow("loop")
    assert contract_hash(plain) == contract_hash(same) != contract_hash(bounded)
    assert json.dumps(plain.limits.max_steps) == "100"


def test_get_job_shows_the_limit_and_the_steps(runtime):
    import httpx
    from console_plugin import ConsoleThread

    job = asyncio.run(runtime.run("three", '{"n": 0}'))
    with ConsoleThread(runtime) as server, httpx.Client(base_url=server.url, timeout=30) as api:
        r = api.get(f"/v1/jobs/{job.id}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is False and body["message"] == "three failed: LimitExceeded"
    assert body["job"]["failure_reason"] == job.failure_reason
    assert body["card"]["status"]["error_code"] == "limit_exceeded"
    assert "steps: a succeeded; b succeeded; c not run" in body["card"]["notes"]
    assert [(s["step"], s["status"]) for s in body["job"]["steps"]] == [("a", "succeeded"), ("b", "succeeded")]
    assert body["output"] == {"steps": {"a": {"n": 1}, "b": {"n": 2}}}


def _show(rt: Runtime, job_id: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env["OZ0_HOME"] = str(rt.home)
    return subprocess.run([*OZ0, "jobs", "show", job_id, *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_jobs_show_draws_a_delegation_chain_deeper_than_eight(runtime):
    job = asyncio.run(runtime.run("recurse-deep", "go"))
    assert (job.status, job.failure_kind) == ("failed", "LimitExceeded")
    assert job.failure_reason.endswith("(recurse-deep, depth 12) tried to start delegation 1 (recurse-deep) at "
                                       "depth 13")
    shown = _show(runtime, job.id)
    assert shown.returncode == 0, shown.stderr
    drawn = [line for line in shown.stdout.splitlines() if "recurse-deep failed (LimitExceeded)" in line]
    assert [len(line) - len(line.lstrip()) for line in drawn] == [0, *[2 * d for d in range(1, 13)]]
    assert drawn[-1].strip().startswith("└ ") and ": recurse-deep failed" in drawn[-1]
    assert "not drawn" not in shown.stdout


def test_jobs_show_says_how_many_jobs_of_a_broken_chain_it_leaves_out(runtime):
    root, _ = runtime.submit("counter", '{"n": 0}')
    parent = root
    for _ in range(25):  # a chain deeper than any max_depth (at most 20): only a broken journal holds one
        parent, _ = runtime.submit("counter", '{"n": 0}', dedupe_key=f"delegate:{parent.id}:1", parent_id=parent.id)
    shown = _show(runtime, root.id)
    assert shown.returncode == 0, shown.stderr
    assert sum(": counter " in line for line in shown.stdout.splitlines()) == 21  # depths 0 to 20
    assert f"{' ' * 42}└ … 5 jobs below depth 20 not drawn (deeper than any limits.max_depth allows: the journal's " \
           "parent links are broken)" in shown.stdout
    data = json.loads(_show(runtime, root.id, "--json").stdout)  # data fields sit at the top level
    assert [node["depth"] for node in data["tree"]] == list(range(21))
    assert data["tree_left_out"] == 5


def test_a_child_started_past_its_trees_time_ends_limit_exceeded_not_left_running(runtime):
    root, _ = runtime.submit("slow", '{"n": 0}')
    runtime.store.update_job(root.id, status="running", started=root.created - 5)  # its 1 s are long gone
    child = runtime.submit_child(runtime.job(root.id), "sleeper", '{"n": 0}', dedupe_key=f"flow:{root.id}:b")
    ended = asyncio.run(asyncio.wait_for(runtime.execute_here(child.id), 10))
    assert (ended.status, ended.failure_kind) == ("failed", "LimitExceeded")
    assert ended.failure_reason.startswith("limits.tree_timeout_s is 1 (set by flow slow): the tree had run 5.")
    assert ended.failure_reason.endswith(f"(waits for a person excluded) at step b of job {root.id}")
    assert runtime.job(root.id).limit_reached == ended.failure_reason


def test_a_run_stopped_before_it_began_leaves_no_coroutine_unawaited(runtime):
    """Its tree's time was up before the child's run started: the run is closed, not left to the
    garbage collector's "coroutine ... was never awaited"."""
    import gc
    import warnings

    root, _ = runtime.submit("slow", '{"n": 0}')
    runtime.store.update_job(root.id, status="running", started=root.created - 5)
    child = runtime.submit_child(runtime.job(root.id), "sleeper", '{"n": 0}', dedupe_key=f"flow:{root.id}:b")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ended = asyncio.run(asyncio.wait_for(runtime.execute_here(child.id), 10))
        gc.collect()
    assert ended.failure_kind == "LimitExceeded"
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
