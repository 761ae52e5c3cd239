"""The job engine's SQLite system database is in write-ahead-log mode, as the journal is: every job step
and every queue poll writes to it, and a rollback journal made, synced and deleted at each commit
doubled a tool loop's time under `oz0 serve` (bench/agent_loop.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

LAUNCH = """
import sys
from oz0.edge.runtime.runner import Runtime
runtime = Runtime(sys.argv[1])
runtime.launch_engine()
runtime.close()
"""


def test_the_engine_database_is_in_wal_mode(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.run([sys.executable, "-c", LAUNCH, str(home)], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "OZ0_REPLICA_ID": "wal-test", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    with closing(sqlite3.connect(home / "oz0-engine.db")) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with closing(sqlite3.connect(home / "oz0.db")) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
