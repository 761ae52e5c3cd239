"""A child process for tests/edge/runtime/test_retention.py: launch the job engine over OZ0_HOME, print the retention
schedule DBOS holds, fire it once (as its daily tick would) and print what the prune removed and whether it
ran on an event loop (its log line, written where it runs, tells)."""

from __future__ import annotations

import asyncio
import json
import logging

from dbos import DBOS

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime


class _WhereItRan(logging.Handler):
    on_loop: bool | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.on_loop = False
        else:
            self.on_loop = True


def main() -> None:
    where = _WhereItRan()
    logging.getLogger("oz0.retention").addHandler(where)
    logging.getLogger("oz0.retention").setLevel(logging.INFO)
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    runtime.launch_engine()
    try:
        found = [(s["schedule_name"], s["schedule"]) for s in DBOS.list_schedules()]
        removed = DBOS.trigger_schedule("oz0.retention.prune").get_result()
        print(json.dumps({"schedules": found, "removed": removed, "pruned_on_an_event_loop": where.on_loop}), flush=True)
    finally:
        runtime.close()


if __name__ == "__main__":
    main()
