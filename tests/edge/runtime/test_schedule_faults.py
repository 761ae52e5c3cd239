"""A tick's own steps meet a database fault (a full disk, a Postgres outage) and lose nothing: the step
that journals the tick's job takes the one retry rule of a job's steps (edge.runtime.step_retries), so
the tick whose journal write was refused still runs, once the database takes writes again. A real DBOS
engine in a process of its own, a real SQLite journal refusing writes at the SQLite layer."""

from __future__ import annotations

import os
from pathlib import Path

from engine_script import run_script
from paths import SUPPORT
from replica_harness import install_replica_plugin

SCRIPT = SUPPORT / "schedule_engine_script.py"

PULSE = {"schedules/pulse.yaml": 'cron: "*/2 * * * * *"\nagent: echo\ninput: pulse\nslack: {channel: C0GENERAL}\n'}


def test_a_tick_whose_job_meets_a_full_disk_runs_once_the_disk_takes_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    install_replica_plugin(home, extra=PULSE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OZ0_")}
    env.update(OZ0_HOME=str(home), OZ0_REPLICA_ID="schedule-faults", OZ0_TEST_RUNS=str(tmp_path / "runs.txt"),
               PYTHONPATH=os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]))
    ended = run_script(SCRIPT, env=env, timeout_s=120)
    assert ended["refused"] == 2 and ended["key"].startswith("schedule:pulse:"), ended
    assert ended["job"] == {"status": "succeeded", "output": "echo: pulse"}, ended
