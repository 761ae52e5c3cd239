"""Shared test helpers: paths to the public fixtures beside the project, and a clean OZ0_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"
SPEC = SHARED / "spec"


@pytest.fixture
def oz0_home(tmp_path, monkeypatch) -> Path:
    """A fresh OZ0_HOME for the test, so no test touches ~/.oz0."""
    home = tmp_path / "oz0home"
    home.mkdir()
    monkeypatch.setenv("OZ0_HOME", str(home))
    monkeypatch.delenv("OZ0_DATABASE_URL", raising=False)
    return home
