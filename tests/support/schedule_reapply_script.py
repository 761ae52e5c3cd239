"""A process for test_schedule_reapply_faults.py: the job engine launched over OZ0_HOME (SQLite) and the
plugin watch following the installs (edge.runtime.schedule_engine.follow_installs); then a plugin with
the schedule `tock` (every 2 s) is installed while the journal refuses the first FAULTS reads of the
re-apply the way a busy disk does ("disk I/O error", raised at the SQLite layer). Printed as JSON: the
reads refused, and the first job of a `tock` tick (None when the schedule was never applied).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import event

from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.plugin_watch import PluginWatch
from oz0.edge.runtime.runner import Runtime
from oz0.edge.runtime.schedule_engine import follow_installs

FAULTS = 2
TICKS = {"plugin.yaml": "name: ticks\nversion: 1.0.0\ndescription: a schedule installed while serving\n",
         "agents/tock.yaml": "description: Says tock\nkind: python\nentry: impl:tock\ninput: text\noutput: text\n",
         "impl.py": "def tock(text):\n    return 'tock: ' + text\n",
         "schedules/tock.yaml": 'cron: "*/2 * * * * *"\nagent: tock\ninput: hello\nslack: {channel: C0GENERAL}\n'}


class BusyDisk:
    """Once armed, refuses the first FAULTS statements the plugin watch's thread runs beyond its own
    poll of the installed state: the re-apply's reads."""

    def __init__(self) -> None:
        self.armed = False
        self.refused: list[str] = []

    def __call__(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if not self.armed or threading.current_thread().name != "oz0-plugin-watch":
            return
        if "plugins.current_version_id" in statement and "plugin_versions" not in statement:
            return   # the watch's poll (PluginStore.state): it must see the install
        if len(self.refused) >= FAULTS:
            return
        self.refused.append(" ".join(statement.split())[:80])
        raise sqlite3.OperationalError("disk I/O error")


async def main(folder: Path) -> None:
    for rel, text in TICKS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    runtime = Runtime()
    busy = BusyDisk()
    event.listen(runtime.store.engine, "before_cursor_execute", busy)
    await asyncio.to_thread(runtime.launch_engine)
    watch = PluginWatch(runtime.plugin_store.state, interval_s=0.2)
    follow_installs(watch, runtime.engine)
    watch.start()
    try:
        while watch.seen is None:
            await asyncio.sleep(0.05)
        busy.armed = True
        await asyncio.to_thread(install_plugin, runtime, load_plugin(folder), actor="test")
        deadline = time.monotonic() + 30
        job = None
        while time.monotonic() < deadline:
            found = [j for j in runtime.jobs(limit=100) if j.requester == "schedule:tock"]
            job = found[-1] if found else None
            if job is not None and job.status not in ("queued", "running"):
                break
            await asyncio.sleep(0.2)
        print(json.dumps({"refused": busy.refused,
                          "job": None if job is None else {"status": job.status, "output": job.output}}), flush=True)
    finally:
        watch.stop()
        await asyncio.to_thread(runtime.close)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
