"""The code checks: mypy --strict over edge/ and renderers/, and ruff over the repository, each as
configured in pyproject.toml (the suite runs them so a change that breaks a type or a rule fails here)."""

from __future__ import annotations

import re
import subprocess
import sys

from paths import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_mypy_strict_passes_on_edge_and_renderers():
    done = _run("mypy")  # packages, strictness and the oz0 mapping come from [tool.mypy]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout
    checked = int(re.search(r"in (\d+) source files", done.stdout).group(1))
    assert checked > 100, done.stdout  # oz0.edge and oz0.renderers resolved, not an empty run


def test_ruff_is_clean():
    done = _run("ruff", "check", ".")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
