"""docs/shots.py still makes the docs' screenshots: a real Slack and Discord conversation, the console's
job pages of it in headless Chromium, one PNG for each image docs/images/ holds, 1,300 px wide."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="no chromium: `make test` installs Debian's chromium with apt-get")


def test_the_script_makes_every_docs_image_at_1300_px_wide(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "shots.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    made = sorted(p.name for p in tmp_path.glob("*.png"))
    assert made == sorted(p.name for p in (ROOT / "docs" / "images").glob("*.png"))
    for name in made:
        head = (tmp_path / name).read_bytes()[:24]
        width, height = struct.unpack(">II", head[16:24])   # the IHDR chunk's first fields
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and width == 1300 and height > 300, (name, width, height)
