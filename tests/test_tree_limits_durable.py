"""Limits over the job tree under the job engine (DBOS on SQLite, a real process): a flow's loop is
stopped by max_steps, its steps child workflows counted in the journal; a delegating agent is stopped
by max_depth, its children run inside its run step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from oz0.edge.plugins.install import install_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.runner import Runtime
from tree_kit import tree_plugin

SCRIPT = Path(__file__).with_name("tree_engine.py")


def run_engine(home: Path, agent: str, text: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="tree-test")
    done = subprocess.run([sys.executable, str(SCRIPT), "run", agent, text], env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_durable_flow_loop_is_stopped_by_max_steps_and_a_delegation_by_max_depth(tmp_path):
    home = tmp_path / "home"
    runtime = Runtime(home)
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
