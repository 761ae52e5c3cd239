"""Limits over the job tree under the job engine (DBOS on SQLite, a real process): a flow's loop is
stopped by max_steps, its steps child workflows counted in the journal; a delegating agent is stopped
by max_depth, its children run inside its run step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine_script import run_script
from paths import SUPPORT
from tree_kit import tree_plugin

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

SCRIPT = SUPPORT / "tree_engine.py"


def env(home: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    out.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="tree-test", TREE_LOG=str(home.parent / "calls.log"))
    return out


def run_engine(home: Path, *args: str) -> dict:
    result: dict = run_script(SCRIPT, *(args if args[0] == "resume" else ("run", *args)), env=env(home))
    return result


def test_a_durable_flow_loop_is_stopped_by_max_steps_and_a_delegation_by_max_depth(tmp_path):
    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(tree_plugin(tmp_path / "trees")), actor="test")
    runtime.close()
    job = run_engine(home, "loop", '{"n": 0}')
    assert (job["status"], job["kind"]) == ("failed", "LimitExceeded")
    assert job["reason"] == (f"limits.max_steps is 5 (set by flow loop): reached at step bump#6 of job {job['id']}, "
                             "the 6th step of the tree")
    assert job["tree"] == [[0, "loop", "failed", "LimitExceeded"],
                           *[[1, k, "succeeded", None] for k in ("bump", "bump#2", "bump#3", "bump#4", "bump#5")],
                           [1, "bump#6", "failed", "LimitExceeded"]]
    assert job["output"] == {"steps": {"bump": {"n": 1}, "bump#2": {"n": 2}, "bump#3": {"n": 3},
                                       "bump#4": {"n": 4}, "bump#5": {"n": 5}}}
    deep = run_engine(home, "recurse", "go")
    assert (deep["status"], deep["kind"]) == ("failed", "LimitExceeded")
    assert deep["reason"].startswith("limits.max_depth is 3 (set by agent recurse): job ")
    assert deep["reason"].endswith("(recurse, depth 3) tried to start delegation 1 (recurse) at depth 4")
    assert [node[0] for node in deep["tree"]] == [0, 1, 2, 3]
    assert {node[3] for node in deep["tree"]} == {"LimitExceeded"}


def test_a_durable_loop_killed_midway_resumes_the_same_way(tmp_path):
    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(tree_plugin(tmp_path / "trees")), actor="test")
    first = subprocess.Popen([sys.executable, str(SCRIPT), "start", "loop-slow", '{"n": 0}'], env=env(home),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = first.stdout.readline().strip()
        assert line.startswith("job "), first.stderr.read() if first.poll() is not None else line
        job_id = line.split()[1]
        deadline = time.monotonic() + 120
        while sum(c.status == "succeeded" for c in runtime.children(job_id)) < 3:
            assert time.monotonic() < deadline and first.poll() is None, first.stderr.read()
            time.sleep(0.05)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    runtime.close()
    done = run_engine(home, "resume", job_id)
    assert (done["status"], done["output"]) == ("succeeded", {"n": 6}), done
    assert done["tree"] == [[0, "loop-slow", "succeeded", None],
                            *[[1, k, "succeeded", None] for k in ("bump", "bump#2", "bump#3", "bump#4", "bump#5",
                                                                  "bump#6")]]
    runs = (tmp_path / "calls.log").read_text().splitlines()
    assert [runs.count(f"slow {n}") for n in range(3)] == [1, 1, 1]  # the finished runs were not run again
    assert sorted(set(runs)) == [f"slow {n}" for n in range(6)]


def test_a_durable_flow_waiting_for_a_person_is_stopped_by_its_tree_time_when_waits_count(tmp_path):
    from tree_kit import FLOWS, waiting

    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    flows = {**FLOWS, "wait-counted": waiting(True)}
    install_plugin(runtime, load_plugin(tree_plugin(tmp_path / "trees", flows=flows)), actor="test")
    runtime.close()
    job = run_engine(home, "wait-counted", '{"n": 0}')
    assert (job["status"], job["kind"]) == ("failed", "LimitExceeded")
    assert job["reason"].startswith("limits.tree_timeout_s is 1 (set by flow wait-counted): the tree had run 1.")
    assert job["reason"].endswith(f"(waits for a person included) at person step ok of job {job['id']}")
    assert job["tree"] == [[0, "wait-counted", "failed", "LimitExceeded"], [1, "a", "succeeded", None]]
    assert job["output"] == {"steps": {"a": {"n": 1}}}


def test_a_durable_flow_past_its_tree_time_stops_its_running_step_at_the_deadline(tmp_path):
    from tree_kit import FLOWS, flow

    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    flows = {**FLOWS, "slow-3": flow([{"id": "a", "agent": "counter"}, {"id": "b", "agent": "sleeper"}],
                                     tree_timeout_s=3)}
    install_plugin(runtime, load_plugin(tree_plugin(tmp_path / "trees", flows=flows)), actor="test")
    runtime.close()
    job = run_engine(home, "slow-3", '{"n": 0}')
    assert (job["status"], job["kind"]) == ("failed", "LimitExceeded"), job
    assert job["reason"].startswith("limits.tree_timeout_s is 3 (set by flow slow-3): the tree had run 3."), job
    assert job["reason"].endswith(f"(waits for a person excluded) at step b of job {job['id']}")
    assert job["tree"] == [[0, "slow-3", "failed", "LimitExceeded"], [1, "a", "succeeded", None],
                           [1, "b", "failed", "LimitExceeded"]]
    assert job["output"] == {"steps": {"a": {"n": 1}}}
    assert job["elapsed"] < 8, job  # the sleeper sleeps 30 s
    assert_stopped_with_the_tree(home, job, deadline_s=3, started_before=True)


def test_a_durable_flow_past_its_tree_time_cancels_its_child_workflow_still_queued(tmp_path):
    home = tmp_path / "home"
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(tree_plugin(tmp_path / "trees")), actor="test")
    runtime.close()
    job = run_engine(home, "slow-queued", '{"n": 0}', "sleeper-one")  # step b waits behind another sleeper
    assert (job["status"], job["kind"]) == ("failed", "LimitExceeded"), job
    assert job["reason"].startswith("limits.tree_timeout_s is 2 (set by flow slow-queued): the tree had run 2."), job
    assert job["reason"].endswith(f"(waits for a person excluded) at step b of job {job['id']}")
    assert job["tree"] == [[0, "slow-queued", "failed", "LimitExceeded"], [1, "a", "succeeded", None],
                           [1, "b", "failed", "LimitExceeded"]]
    assert job["output"] == {"steps": {"a": {"n": 1}}}
    assert job["elapsed"] < 6, job  # the step ahead of b sleeps 30 s
    assert job["workflows"][f"flow:{job['id']}:b"] == "CANCELLED"
    assert job["workflows"][f"flow:{job['id']}:a"] == "SUCCESS"
    assert_stopped_with_the_tree(home, job, deadline_s=2)


def assert_stopped_with_the_tree(home: Path, job: dict, *, deadline_s: float, started_before: bool = False) -> None:
    """The stopped step ended at the tree's deadline with the tree's reason, and nothing of the tree is
    left running."""
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        stopped = runtime.children(job["id"])[-1]
        assert (stopped.status, stopped.failure_reason) == ("failed", job["reason"])
        began = runtime.job(job["id"]).started
        if started_before:  # the step ran when the deadline came
            assert stopped.started - began < deadline_s, stopped.started - began
        late = stopped.ended - began - deadline_s
        print(f"stopped {late:.2f} s after the deadline")
        assert late < 1.5, late
        active = [c for c in runtime.children(job["id"]) if not c.finished]
        assert active == [] and runtime.job(job["id"]).finished
    finally:
        runtime.close()
