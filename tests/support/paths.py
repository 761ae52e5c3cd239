"""Where the tests find things: the repository (ROOT), this folder of stand-ins (SUPPORT), and the public
fixtures and spec beside the project (SHARED), which a clone may not have: `shared()` skips, naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parent
ROOT = SUPPORT.parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"
SPEC = SHARED / "spec"


def shared(relative: str) -> Path:
    """The file or folder `relative` under ../shared, or a skip of the calling module naming what is absent."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"{path} is absent: this test needs the public spec and fixtures in ../shared",
                    allow_module_level=True)
    return path
