"""A support script run as a process of its own (DBOS is one per process): its last line read as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["run_script", "run_script_logged"]


def run_script(script: Path, *args: str, env: dict[str, str], timeout_s: float = 240) -> Any:
    """Run `python script args...` to its end; it must exit 0 (else its stderr's end is the failure)."""
    return run_script_logged(script, *args, env=env, timeout_s=timeout_s)[0]


def run_script_logged(script: Path, *args: str, env: dict[str, str], timeout_s: float = 240) -> tuple[Any, str]:
    """`run_script`, and what the script logged (its stderr), for a test that reads its logs too."""
    done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                          timeout=timeout_s)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr
