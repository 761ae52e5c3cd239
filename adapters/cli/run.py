"""`oz0 run`, `oz0 jobs` and `oz0 audit`: ask an agent from the terminal and read the journal."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from oz0.adapters.cli.draw import TARGETS, render_payload, write_files
from oz0.adapters.cli.errors import CommandError
from oz0.adapters.cli.jobs_cancel import register_cancel
from oz0.adapters.cli.json_out import emit_result
from oz0.adapters.cli.runtime import open_runtime
from oz0.edge.cards.model import Card
from oz0.edge.model.job import Job, failure_code

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime  # the command makes it; a type here, not an import

__all__ = ["register_audit", "register_jobs", "register_run"]


def register_run(p: argparse.ArgumentParser) -> None:
    p.description = ("Run an installed agent once. The input is text, or JSON for an agent with an input "
                     "schema: oz0 run acme-reviewer '{\"repo\": \"acme/api\", \"pr\": 42}'. An input that "
                     "does not match fails before the agent starts (InvalidInput).")
    p.epilog = ("Exit codes: 0 the agent answered, 1 the job failed, 2 unknown agent or invalid input, 3 the job "
                "waits for an answer (off a terminal: answer it with oz0 jobs answer). On a terminal a person "
                "step is asked there.")
    p.add_argument("agent", metavar="AGENT", help="the agent's name (see oz0 plugin list)")
    p.add_argument("input", metavar="INPUT", help="the input: text, JSON, or - to read it from stdin")
    p.add_argument("--json", action="store_true", help="print one QZX result instead of the card")
    p.add_argument("--to", choices=list(TARGETS), default="text",
                   help="how to draw the card (default: text)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from oz0.edge import UnknownAgent
    from oz0.edge.runtime.access import local_user

    started = time.monotonic()
    text = sys.stdin.read() if args.input == "-" else args.input
    runtime = open_runtime()
    parked = None
    try:
        runtime.recover_interrupted()
        try:
            runtime.agent(args.agent)
        except UnknownAgent as exc:
            if args.json:
                return emit_result("run", False, f"run was not started: {exc}", error=str(exc),
                                   error_code="usage_error", started=started)
            raise CommandError(str(exc)) from None

        from oz0.adapters.cli.loop_engine import launch_for_loop

        launch_for_loop(runtime, args.agent)  # a tool loop runs as its workflow: each call a checkpoint
        submitted, _ = runtime.submit(args.agent, text, requester=local_user(), channel="cli")
        job, streamed = _driven(runtime, submitted.id,
                                lambda progress: runtime.execute(submitted.id, on_progress=progress))
        if not isinstance(job, Job):
            parked = job
            return _parked(parked, args.json, "run", started, engine_launched=runtime.engine is not None)
        card = runtime.card(job)
        flow = runtime.agent(args.agent).kind == "flow"
    finally:
        if parked is None:  # a parked job's wait is left as it stands: the process ends around it
            runtime.close()
    if args.json:
        return _emit_job(job, started)
    _print_card(card, args.to, streamed)
    write_files(card, args.to)
    took = f" in {job.duration_s:.2f} s" if job.duration_s is not None else ""
    if flow and card.notes:  # the terminal draws no notes; a flow's last one is its steps' status
        print(card.notes[-1], file=sys.stderr)
    print(f"job {job.id} {job.status}{took}", file=sys.stderr)
    if job.status == "succeeded":
        return 0
    return 2 if job.failure_kind == "InvalidInput" else 1


def _print_card(card: Card, target: str, streamed: str) -> None:
    """The card on stdout; what a person already read streamed on this terminal is not printed again
    (adapters.cli.streamed)."""
    from oz0.adapters.cli.streamed import card_to_print

    drawn = render_payload(card_to_print(card, streamed, target=target, out=sys.stdout, err=sys.stderr),
                           target).rstrip("\n")
    if drawn:
        print(drawn)


def _driven(runtime: Runtime, job_id: str, work: Any) -> tuple[Any, str]:
    """The job run here with its person steps met on this terminal (adapters.cli.asking): the ended
    Job, or a Parked one off a terminal; and the answer streamed on stderr meanwhile ("" for none)."""
    from oz0.adapters.cli.asking import drive, on_a_terminal
    from oz0.adapters.cli.progress_out import TerminalProgress, TerminalText
    from oz0.edge.runtime.access import local_user

    progress = TerminalProgress()
    text = TerminalText(pause=progress.pause)
    try:
        ended = drive(runtime, lambda: work(progress), job_id, by=local_user(), interactive=on_a_terminal(),
                      pause=progress.pause, on_text=text if text.live else None)
    finally:
        text.close()
        progress.close()
    return ended, text.shown


def _parked(parked: Any, json_out: bool, command: str, started: float, *, engine_launched: bool) -> int:
    """A job left waiting for an answer: its id and how to answer it; exit code 3."""
    from oz0.adapters.cli.asking import waiting_lines

    lines = waiting_lines(parked)
    if json_out:
        emit_result(command, False, lines[0] + ".", error=" ".join(lines[1:]), error_code="waiting_for_answer",
                    data={"job": {"id": parked.job.id, "agent": parked.job.agent, "status": parked.job.status},
                          "question": parked.question.to_dict()}, started=started)
    else:
        for line in lines:
            print(line, file=sys.stderr)
    if engine_launched:  # its workflow waits in this process: left pending as a crash leaves it, for oz0 jobs answer
        from oz0.adapters.cli.loop_engine import leave_pending

        leave_pending(3)
    return 3


def _emit_job(job: Job, started: float, *, command: str = "run") -> int:
    facts = {"id": job.id, "agent": job.agent, "status": job.status, "attempts": job.attempts}
    if job.status == "succeeded":
        return emit_result(command, True, f"{job.agent} answered (job {job.id}).",
                           data={"output": job.output, "job": facts}, started=started)
    data: dict[str, Any] = {"job": facts}
    if job.output is not None:
        data["output"] = job.output
    code = emit_result(command, False, f"{job.agent} failed with {job.failure_kind} (job {job.id}).",
                       error=job.failure_reason or "the job failed",
                       error_code=failure_code(job), data=data, started=started)
    return 2 if job.failure_kind == "InvalidInput" else code


def register_jobs(p: argparse.ArgumentParser) -> None:
    p.description = ("List recent jobs, newest first, or show one with its card. Filter with --agent, --status, "
                     "--asker, --since and --until (a duration back from now: 90s, 30m, 2h, 7d, 1w; or an ISO "
                     "8601 time, UTC unless it says: 2026-12-01T09:00); --cursor reads the next page.")
    p.add_argument("--limit", type=int, default=20, help="how many jobs to list (default 20)")
    p.add_argument("--agent", help="only this agent's jobs")
    p.add_argument("--status", help="only jobs with this status (queued, running, waiting, succeeded, failed, ...)")
    p.add_argument("--asker", help="only jobs asked by this user (as `oz0 jobs` shows it)")
    p.add_argument("--since", help="only jobs created at or after this time (2h, 7d, 2026-12-01)")
    p.add_argument("--until", help="only jobs created before this time")
    p.add_argument("--cursor", help="the next page: the cursor the previous page printed")
    p.add_argument("--json", action="store_true", help="print one QZX result")
    p.set_defaults(func=_jobs)
    jsub = p.add_subparsers(dest="jobs_command", metavar="show|answer|cancel ID")
    show = jsub.add_parser("show", help="one job: its facts and its card")
    show.add_argument("id", metavar="ID", help="the job id (or its first characters)")
    show.add_argument("--json", action="store_true", help="print one QZX result")
    show.set_defaults(func=_show)
    answer = jsub.add_parser("answer", help="answer a waiting job's question (a job oz0 run left waiting resumes here)",
                             description="Answer the question a waiting job asks: ANSWER is a JSON object of the "
                                         "answer schema's fields (oz0 jobs show ID shows the question). A job that "
                                         "oz0 run left waiting off a terminal goes on here, and its card is drawn.")
    answer.add_argument("id", metavar="ID", help="the job id (or its first characters)")
    answer.add_argument("answer", metavar="ANSWER", nargs="?", help="the answer as a JSON object, or - for stdin")
    answer.add_argument("--step", help="the question's step (default: the job's open question)")
    how = answer.add_mutually_exclusive_group()
    how.add_argument("--decline", action="store_true", help="decline instead of answering")
    how.add_argument("--cancel", action="store_true", help="cancel instead of answering")
    answer.add_argument("--json", action="store_true", help="print one QZX result")
    answer.add_argument("--to", choices=list(TARGETS), default="text", help="how to draw the card (default: text)")
    answer.set_defaults(func=_answer)
    register_cancel(jsub.add_parser("cancel", help="stop a job wherever it runs; it ends cancelled"))


def _when(ts: float | None, *, short: bool = False) -> str:
    if not ts:
        return ""
    return datetime.fromtimestamp(ts).strftime("%m-%d %H:%M:%S" if short else "%Y-%m-%d %H:%M:%S")


def _status(job: Job) -> str:
    return "failed-interrupted" if job.status == "interrupted" else job.status


def _jobs(args: argparse.Namespace) -> int:
    from oz0.edge.runtime.job_search import SearchError, parse_query

    try:
        query = parse_query(agent=args.agent, status=args.status, asker=args.asker, since=args.since,
                            until=args.until, limit=args.limit, cursor=args.cursor)
    except SearchError as exc:
        raise CommandError(f"--{exc.param}: {exc}") from None
    filtered = any((args.agent, args.status, args.asker, args.since, args.until, args.cursor))
    runtime = open_runtime()
    try:
        runtime.recover_interrupted()
        jobs, cursor = runtime.search_jobs(query)
    finally:
        runtime.close()
    if args.json:
        return emit_result("jobs", True, f"{len(jobs)} {'matching' if filtered else 'recent'} "
                                         f"job{'s' * (len(jobs) != 1)}.",
                           data={"jobs": [j.to_dict() for j in jobs], "next_cursor": cursor})
    if not jobs:
        print("No job matches these filters." if filtered
              else "No jobs yet. Try: oz0 run AGENT INPUT (oz0 plugin list shows the agents)")
        return 0
    rows = tuple((j.id, j.agent, _status(j) + (f" ({j.failure_kind})" if j.failure_kind else ""),
                  j.requester if j.channel in ("", "cli") else f"{j.requester} in {j.channel}",
                  _when(j.created, short=True), f"{j.duration_s:.2f} s" if j.duration_s is not None else "")
                 for j in jobs)
    card = Card(form="table", title="Matching jobs" if filtered else "Recent jobs", rows=rows,
                columns=("id", "agent", "status", "asked by", "created", "took"))
    print(render_payload(card, "text").rstrip("\n"))
    if cursor:
        print(f"more: oz0 jobs ... --cursor {cursor}", file=sys.stderr)
    return 0


def _answer(args: argparse.Namespace) -> int:
    import json

    from oz0.adapters.cli.asking import PARKED_RUNNER
    from oz0.edge.runtime.access import local_user
    from oz0.edge.runtime.questions import AnswerRefused

    started = time.monotonic()
    action = "decline" if args.decline else "cancel" if args.cancel else "accept"
    if (action == "accept") == (args.answer is None):
        raise CommandError("give the ANSWER as a JSON object, or --decline or --cancel without one")
    content = None
    if action == "accept":
        try:
            content = json.loads(sys.stdin.read() if args.answer == "-" else args.answer)
        except json.JSONDecodeError as exc:
            raise CommandError(f"ANSWER is not JSON: {exc.msg} at column {exc.colno}") from None
    runtime = open_runtime()
    parked = None
    try:
        job = runtime.job(args.id)
        if job is None:
            raise CommandError(f"no job {args.id!r} (see oz0 jobs)", code=1, error_code="not_found")
        open_question = runtime.question(job.id)
        step = args.step or (open_question.step if open_question is not None else None)
        if step is None:
            raise CommandError(f"job {job.id} asks nothing now (it is {job.status})", code=1, error_code="not_waiting")
        try:
            runtime.answer(job.id, step, action=action, content=content, by=local_user())
        except AnswerRefused as exc:
            raise CommandError(f"not taken: {exc.message}", code=2 if exc.why == "invalid" else 1,
                               error_code="invalid_answer" if exc.why == "invalid" else "answer_refused") from None
        row = runtime.store.job(job.id) or {}
        if row.get("runner") != PARKED_RUNNER or row.get("status") != "running":
            said = (f"answered step {step!r} of job {job.id}: recorded; the job resumes in the process that runs it "
                    "(its oz0 serve, or the oz0 run still asking)")
            if args.json:
                return emit_result("jobs answer", True, said + ".", started=started)
            print(said)
            return 0
        from oz0.adapters.cli.loop_engine import resumable

        if resumable(runtime, job.id, job.agent):  # its workflow goes on from its last finished call
            engine = runtime.engine
            assert engine is not None
            done, streamed = _driven(runtime, job.id, lambda progress: engine.execute(job.id, on_progress=progress,
                                                                                      resume=True))
        else:
            done, streamed = _driven(runtime, job.id, lambda progress: runtime.execute_here(
                job.id, on_progress=progress, resume=True))
        if not isinstance(done, Job):
            parked = done
            return _parked(parked, args.json, "jobs answer", started,
                           engine_launched=runtime.engine is not None)
        card = runtime.card(done)
    finally:
        if parked is None:
            runtime.close()
    if args.json:
        return _emit_job(done, started, command="jobs answer")
    _print_card(card, args.to, streamed)
    print(f"job {done.id} {done.status}", file=sys.stderr)
    return 0 if done.status == "succeeded" else 1


def _show(args: argparse.Namespace) -> int:
    from oz0.edge.runtime.budget_view import budget_json, budget_lines
    from oz0.edge.runtime.loop_trace import read_trace, trace_lines
    from oz0.edge.runtime.tree import MAX_DEPTH

    runtime = open_runtime()
    try:
        runtime.recover_interrupted()
        job = runtime.job(args.id)
        if job is None:
            raise CommandError(f"no job {args.id!r} (an id, or its first 4+ characters when they are unique; "
                               "see oz0 jobs)", code=1, error_code="not_found")
        card = runtime.card(job)
        tree, left_out = runtime.tree_below(job)  # flow steps, delegations, and their own children
        budgets = runtime.budgets.report(job)
        trace = read_trace(runtime.store, job.id)  # a tool loop's calls (edge.runtime.tool_loop)
    finally:
        runtime.close()
    if args.json:
        data: dict[str, Any] = {"job": job.to_dict()}
        if trace:
            data["trace"] = trace
        if budgets:
            data["budgets"] = [budget_json(b) for b in budgets]
        if len(tree) > 1:
            data["tree"] = [{"depth": depth, **j.to_dict()} for depth, j in tree]
        if left_out:
            data["tree_left_out"] = left_out
        return emit_result("jobs show", True, f"job {job.id}: {_status(job)}.", data=data)
    keys = ("id", "agent", "plugin", "contract", "status", "failure kind", "reason", "attempts", "requester",
            "channel", "input", "created", "started", "ended", "trace id")
    contract = (f"{job.contract_hash}" + (f" (since {job.contract_version})" if job.contract_version else "")
                if job.contract_hash else None)
    values = (job.id, job.agent, f"{job.plugin or ''} {job.plugin_version or ''}".strip(), contract, _status(job),
              job.failure_kind, job.failure_reason, job.attempts, job.requester, job.channel, job.input,
              _when(job.created), _when(job.started), _when(job.ended), job.trace_id)
    facts = Card(form="key_values", title=f"Job {job.id}", keys=keys, values=values)
    print(render_payload(facts, "text").rstrip("\n"))
    if budgets:
        print("\nBudgets")
        print("\n".join(f"  {line}" for b in budgets for line in budget_lines(b)))
    if trace:
        print("\nTrace")
        print("\n".join(f"  {line}" for line in trace_lines(trace)))
    if len(tree) > 1:
        print()
        for depth, node in tree:
            step = (node.dedupe_key or "").rsplit(":", 1)[-1] if node.parent_id else node.agent
            took = f", {node.duration_s:.2f} s" if node.duration_s is not None else ""
            kind = f" ({node.failure_kind})" if node.failure_kind else ""
            print(f"{'  ' * depth}{'└ ' if depth else ''}{node.id}  {step}: {node.agent} {_status(node)}{kind}{took}")
        if left_out:
            print(f"{'  ' * (MAX_DEPTH + 1)}└ … {_left_out(left_out)} below depth {MAX_DEPTH} not drawn "
                  f"(deeper than any limits.max_depth allows: the journal's parent links are broken)")
    print()
    print(render_payload(card, "text").rstrip("\n"))
    return 0


def _left_out(count: int) -> str:
    from oz0.edge.runtime.tree import MAX_LEFT_OUT

    return f"{MAX_LEFT_OUT} or more jobs" if count >= MAX_LEFT_OUT else f"{count} job{'s' * (count != 1)}"


def register_audit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=int, default=50, help="how many records (default 50)")
    p.add_argument("--json", action="store_true", help="print one QZX result")
    p.set_defaults(func=_audit)


def _audit(args: argparse.Namespace) -> int:
    import json

    runtime = open_runtime()
    try:
        records = runtime.audit_log(limit=max(1, args.limit))
    finally:
        runtime.close()
    if args.json:
        return emit_result("audit", True, f"{len(records)} audit record{'s' * (len(records) != 1)}.",
                           data={"records": [{"at": r.at, "action": r.action, "actor": r.actor,
                                              "detail": dict(r.detail)} for r in records]})
    if not records:
        print("The audit log is empty.")
        return 0
    rows = tuple((_when(r.at), r.action, r.actor, json.dumps(dict(r.detail), ensure_ascii=False)[:200])
                 for r in records)
    print(render_payload(Card(form="table", title="Audit log", columns=("at", "action", "actor", "detail"),
                              rows=rows), "text").rstrip("\n"))
    return 0
