"""`oz0 schedules`: the installed plugins' schedules (edge.runtime.schedules), their next runs and last
result; `oz0 schedules pause NAME` and `resume NAME` (audited), on every replica at once.

Exit codes: 0 done, 1 no such schedule (or one no `oz0 serve` has started yet, for pause and resume).
"""

from __future__ import annotations

import argparse
import time

from oz0.adapters.cli.draw import render_payload
from oz0.adapters.cli.errors import CommandError
from oz0.adapters.cli.json_out import emit_result
from oz0.adapters.cli.runtime import open_runtime
from oz0.edge.cards.model import Card

__all__ = ["register"]


def register(p: argparse.ArgumentParser) -> None:
    p.description = ("The installed plugins' schedules (schedules/NAME.yaml): when each runs next and how its last "
                     "run ended. Pause one (no tick fires on any replica) and resume it.")
    p.epilog = "Exit codes: 0 done, 1 no such schedule, or one that oz0 serve has not started yet."
    p.add_argument("--json", action="store_true", help="print one QZX result")
    p.set_defaults(func=_list)
    sub = p.add_subparsers(dest="schedules_command", metavar="pause|resume NAME")
    for verb, text in (("pause", "stop a schedule's ticks, on every replica"), ("resume", "start them again")):
        one = sub.add_parser(verb, help=text)
        one.add_argument("name", metavar="NAME", help="the schedule's name (its file's: schedules/NAME.yaml)")
        one.add_argument("--json", action="store_true", help="print one QZX result")
        one.set_defaults(func=_pause if verb == "pause" else _resume)


def _list(args: argparse.Namespace) -> int:
    runtime = open_runtime()
    try:
        states = runtime.schedules.states()
    finally:
        runtime.close()
    if args.json:
        return emit_result("schedules", True, f"{len(states)} schedule{'s' * (len(states) != 1)}.",
                           data={"schedules": [s.to_dict() for s in states]})
    if not states:
        print("No schedules installed. A plugin declares them in schedules/NAME.yaml.")
        return 0
    rows = []
    for s in states:
        last = s.last_job
        result = "" if last is None else f"{last.status} (job {last.id})"
        upcoming = "" if s.status == "paused" else s.next_runs[0].strftime("%Y-%m-%d %H:%M:%S %Z")
        rows.append((s.spec.name, s.spec.agent, f"{s.spec.cron} {s.spec.timezone}", s.status, upcoming, result,
                     ", ".join(f"{p.platform} {p.where}" for p in s.spec.post_to)))
    card = Card(form="table", title="Schedules", rows=tuple(rows),
                columns=("name", "agent", "cron", "status", "next run", "last result", "posts to"))
    print(render_payload(card, "text").rstrip("\n"))
    return 0


def _pause(args: argparse.Namespace) -> int:
    return _set(args, paused=True)


def _resume(args: argparse.Namespace) -> int:
    return _set(args, paused=False)


def _set(args: argparse.Namespace, *, paused: bool) -> int:
    from oz0.edge.runtime.access import local_user
    from oz0.edge.runtime.schedules import ScheduleError

    started = time.monotonic()
    runtime = open_runtime()
    try:
        state = runtime.schedules.set_paused(args.name, paused, by=local_user())
    except ScheduleError as exc:
        raise CommandError(exc.message, code=1, error_code="not_found" if exc.why == "unknown" else "not_started") \
            from None
    finally:
        runtime.close()
    said = f"schedule {args.name} {state.status}"
    if args.json:
        return emit_result(f"schedules {'pause' if paused else 'resume'}", True, said + ".",
                           data={"schedule": state.to_dict()}, started=started)
    print(said)
    return 0
