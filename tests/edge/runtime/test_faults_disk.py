"""A full disk under a SQLite journal, as a user meets it: a real `oz0 serve` whose OZ0_HOME is a small
tmpfs, filled up while it runs. /readyz says so, a Slack mention is not acknowledged (Slack sends it
again), the API answers a QZX 503 `unavailable`; once space is back, the redelivered ask is answered once.
Skipped, saying why, where this machine refuses to mount a tmpfs (it needs root)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from pathlib import Path

import aiohttp
import pytest
from replica_harness import runs
from slack_standin import SlackStandIn
from test_replicas import cards, post_mention, replicas


@pytest.fixture
def small_disk(tmp_path):
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; this test fills a small disk under a real journal")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(folder)], capture_output=True,
                          text=True)
    if made.returncode != 0:
        pytest.skip(f"this machine refuses to mount a tmpfs: {made.stderr.strip()[:200]}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_is_not_ready_and_loses_no_ask(small_disk, tmp_path):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            (a,) = replicas(small_disk, slack, ["solo"], database_url=None)
            a.env["OZ0_TEST_RUNS"] = str(tmp_path / "runs.txt")   # off the full disk: the test's own record
            try:
                await asyncio.to_thread(a.start)
                console = re.search(r"console listening on (\S+)", a.wait_log(r"console listening on")).group(1)
                assert await post_mention(http, a, "echo warm", event_id="EvWarm") == 200
                await slack.wait_for("chat.update", 1, timeout=30)
                async with http.get(f"{console}/readyz") as resp:
                    assert resp.status == 200, await resp.text()
                filler = await asyncio.to_thread(_fill, small_disk)
                try:
                    async with http.get(f"{console}/readyz") as resp:
                        ready = await resp.json()
                        assert resp.status == 503 and not ready["checks"]["database"]["ok"], ready
                    assert await post_mention(http, a, "echo full?", event_id="EvFull") >= 500
                    async with http.post(f"{console}/v1/agents/echo/runs", json="api") as resp:
                        body = await resp.json(content_type=None)
                        assert resp.status == 503, body
                        assert body["success"] is False and body["error_code"] == "unavailable", body
                        assert resp.headers["Retry-After"].isdigit()
                finally:
                    filler.unlink()
                async with http.get(f"{console}/readyz") as resp:
                    assert resp.status == 200, await resp.text()
                assert await post_mention(http, a, "echo full?", event_id="EvFull") == 200
                await slack.wait_for("chat.update", 2, timeout=30)
            finally:
                a.stop()
            assert len(cards(slack, "echo: full?")) == 1
            assert [r[2] for r in runs(tmp_path / "runs.txt") if r[0] == "end"] == ["warm", "full?"]
    asyncio.run(main())
