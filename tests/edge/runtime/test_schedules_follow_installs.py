"""A schedule follows the installed plugins while the server runs: a plugin installed on a running `oz0
serve` (through the CLI, into the database every replica reads) has its schedule applied within a
second or two, ticking and posting to the Slack stand-in, without a restart; uninstalled, its schedule
stops. A real `oz0 serve`, the real CLI, a real SQLite journal."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from replica_harness import Replica, install_replica_plugin
from slack_standin import SlackStandIn

OZ0 = str(Path(sys.executable).with_name("oz0"))

TICKS = {"plugin.yaml": "name: ticks\nversion: 1.0.0\ndescription: a schedule installed while serving\n",
         "agents/tock.yaml": "description: Says tock\nkind: python\nentry: impl:tock\ninput: text\noutput: text\n",
         "impl.py": "def tock(text):\n    return 'tock: ' + text\n",
         "schedules/tock.yaml": 'cron: "*/2 * * * * *"\nagent: tock\ninput: hello\nslack: {channel: C0GENERAL}\n'}


def _tocks(slack: SlackStandIn) -> int:
    return len([c for c in slack.of("chat.postMessage") if "tock: hello" in json.dumps(c.args)])


def _oz0(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([OZ0, *args], capture_output=True, text=True, timeout=120,
                          env={"OZ0_HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_plugin_installed_on_a_running_server_ticks_and_stops_when_uninstalled(tmp_path: Path) -> None:
    folder = tmp_path / "ticks"
    for rel, text in TICKS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    home = tmp_path / "home"
    install_replica_plugin(home)

    async def main() -> None:
        async with SlackStandIn() as slack:
            solo = Replica.make("solo", home, api_url=slack.api_url,
                                runs_file=tmp_path / "runs.txt", OZ0_SHUTDOWN_S="1")
            try:
                await asyncio.to_thread(solo.start)
                await asyncio.to_thread(_oz0, home, "plugin", "install", str(folder))
                installed = time.monotonic()
                await slack.wait_for("chat.postMessage", 1, timeout=20)  # no restart: it ticks
                assert _tocks(slack) >= 1 and time.monotonic() - installed < 20
                await asyncio.to_thread(_oz0, home, "plugin", "uninstall", "ticks")
                await asyncio.sleep(3)  # the watch's poll, the scheduler's poll, a tick running already
                after = _tocks(slack)
                await asyncio.sleep(5)  # two ticks and more: none fires
                assert _tocks(slack) == after
            finally:
                solo.kill()
            posts = [c for c in slack.of("chat.postMessage") if "tock: hello" in json.dumps(c.args)]
            assert posts and all(c.args["channel"] == "C0GENERAL" for c in posts)
    asyncio.run(main())
