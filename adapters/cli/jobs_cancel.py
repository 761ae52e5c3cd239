"""`oz0 jobs cancel ID`: stop a job wherever it runs (edge.runtime.cancel).

The terminal's user is the machine's operator (they hold the journal itself), so they may stop any
job. Exit codes: 0 the job ended `cancelled`, 1 no such job or it had already ended.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from oz0.adapters.cli.errors import CommandError
from oz0.adapters.cli.json_out import emit_result
from oz0.adapters.cli.runtime import open_runtime

__all__ = ["register_cancel"]

REFUSED_CODES = {"unknown": "not_found", "finished": "already_ended", "forbidden": "forbidden"}


def register_cancel(p: argparse.ArgumentParser) -> None:
    p.description = ("Stop a job: its running step is stopped where it runs (a command's process group, an MCP "
                     "call, a model request), on any replica, its children too; it ends cancelled, and the chat "
                     "message it was asked from says who stopped it.")
    p.epilog = "Exit codes: 0 the job was stopped, 1 no such job, or it had already ended."
    p.add_argument("id", metavar="ID", help="the job id (or its first characters)")
    p.add_argument("--json", action="store_true", help="print one QZX result")
    p.set_defaults(func=_cancel)


def _cancel(args: argparse.Namespace) -> int:
    from oz0.edge.runtime.access import local_user
    from oz0.edge.runtime.cancel import CancelRefused

    started = time.monotonic()
    runtime = open_runtime()
    try:
        job = runtime.job(args.id)
        by = local_user()
        try:
            ended = asyncio.run(runtime.stops.cancel(job.id if job is not None else args.id, by=by, admin=True))
        except CancelRefused as refused:
            raise CommandError(refused.message, code=1, error_code=REFUSED_CODES[refused.why]) from None
    finally:
        runtime.close()
    said = f"job {ended.id} ({ended.agent}) {ended.status}: {ended.failure_reason or ended.status}"
    if args.json:
        return emit_result("jobs cancel", True, said + ".", data={"job": ended.to_dict()}, started=started)
    print(said)
    if ended.status != "cancelled":
        print(f"it ended {ended.status} before the stop reached it", file=sys.stderr)
    return 0
