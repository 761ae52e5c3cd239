"""A child process for tests/edge/runtime/test_retention.py: launch the job engine over OZ0_HOME, print the retention
schedule DBOS holds, fire it once (as its daily tick would) and print what the prune removed."""

from __future__ import annotations

import json

from dbos import DBOS

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime


def main() -> None:
    runtime = Runtime(flow_engine=FLOW_ENGINE)
    runtime.launch_engine()
    try:
        found = [(s["schedule_name"], s["schedule"]) for s in DBOS.list_schedules()]
        removed = DBOS.trigger_schedule("oz0.retention.prune").get_result()
        print(json.dumps({"schedules": found, "removed": removed}), flush=True)
    finally:
        runtime.close()


if __name__ == "__main__":
    main()
