"""The schedules re-applied when the installs change meet a database fault and are applied all the same:
the re-apply takes the one retry rule of a job's steps (edge.runtime.step_retries.retried), so a
plugin installed while the journal refuses the re-apply's reads ticks once they succeed, not at the
next install. A real DBOS engine and plugin watch in a process of their own, a real SQLite journal
refusing reads at the SQLite layer."""

from __future__ import annotations

import os
from pathlib import Path

from engine_script import run_script
from paths import SUPPORT
from replica_harness import install_replica_plugin

SCRIPT = SUPPORT / "schedule_reapply_script.py"


def test_a_schedule_installed_during_a_database_fault_is_applied_once_the_database_answers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    install_replica_plugin(home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="schedule-reapply", OZ0_TEST_RUNS=str(tmp_path / "runs.txt"),
               PYTHONPATH=os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]))
    ended = run_script(SCRIPT, str(tmp_path / "ticks"), env=env, timeout_s=120)
    assert len(ended["refused"]) == 2, ended   # the re-apply met the fault twice
    assert ended["job"] == {"status": "succeeded", "output": "tock: hello"}, ended
