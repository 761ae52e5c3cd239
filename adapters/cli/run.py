"""`oz0 run`, `oz0 jobs` and `oz0 audit`: ask an agent from the terminal and read the journal."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import datetime
from typing import Any

from oz0.adapters.cli.draw import TARGETS, render_payload, write_files
from oz0.adapters.cli.errors import CommandError
from oz0.adapters.cli.json_out import emit_result
from oz0.adapters.cli.runtime import open_runtime
from oz0.edge.cards.model import Card
from oz0.edge.model.job import Job, snake_case

__all__ = ["register_audit", "register_jobs", "register_run"]


def register_run(p: argparse.ArgumentParser) -> None:
    p.description = ("Run an installed agent once. The input is text, or JSON for an agent with an input "
                     "schema: oz0 run acme-reviewer '{\"repo\": \"acme/api\", \"pr\": 42}'. An input that "
                     "does not match fails before the agent starts (InvalidInput).")
    p.epilog = "Exit codes: 0 the agent answered, 1 the job failed, 2 unknown agent or invalid input."
    p.add_argument("agent", metavar="AGENT", help="the agent's name (see oz0 plugin list)")
    p.add_argument("input", metavar="INPUT", help="the input: text, JSON, or - to read it from stdin")
    p.add_argument("--json", action="store_true", help="print one QZX result instead of the card")
    p.add_argument("--to", choices=list(TARGETS), default="text",
                   help="how to draw the card (default: text)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from oz0.edge.model.job import UnknownAgent
    from oz0.edge.runtime.access import local_user

    started = time.monotonic()
    text = sys.stdin.read() if args.input == "-" else args.input
    runtime = open_runtime()
    try:
        runtime.recover_interrupted()
        try:
            runtime.agent(args.agent)
        except UnknownAgent as exc:
            if args.json:
                return emit_result("run", False, f"run was not started: {exc}", error=str(exc),
                                   error_code="usage_error", started=started)
            raise CommandError(str(exc)) from None

        from oz0.adapters.cli.progress_out import TerminalProgress

        progress = TerminalProgress()
        try:
            job = asyncio.run(runtime.run(args.agent, text, requester=local_user(), channel="cli",
                                          on_progress=progress))
        finally:
            progress.close()
        card = runtime.card(job)
        flow = runtime.agent(args.agent).kind == "flow"
    finally:
        runtime.close()
    if args.json:
        return _emit_job(job, started)
    print(render_payload(card, args.to).rstrip("\n"))
    write_files(card, args.to)
    took = f" in {job.duration_s:.2f} s" if job.duration_s is not None else ""
    if flow and card.notes:  # the terminal draws no notes; a flow's last one is its steps' status
        print(card.notes[-1], file=sys.stderr)
    print(f"job {job.id} {job.status}{took}", file=sys.stderr)
    if job.status == "succeeded":
        return 0
    return 2 if job.failure_kind == "InvalidInput" else 1


def _emit_job(job: Job, started: float) -> int:
    facts = {"id": job.id, "agent": job.agent, "status": job.status, "attempts": job.attempts}
    if job.status == "succeeded":
        return emit_result("run", True, f"{job.agent} answered (job {job.id}).",
                           data={"output": job.output, "job": facts}, started=started)
    data: dict[str, Any] = {"job": facts}
    if job.output is not None:
        data["output"] = job.output
    code = emit_result("run", False, f"{job.agent} failed with {job.failure_kind} (job {job.id}).",
                       error=job.failure_reason or "the job failed",
                       error_code=snake_case(job.failure_kind or "Failed"), data=data, started=started)
    return 2 if job.failure_kind == "InvalidInput" else code


def register_jobs(p: argparse.ArgumentParser) -> None:
    p.description = "List recent jobs, newest first, or show one with its card."
    p.add_argument("--limit", type=int, default=20, help="how many jobs to list (default 20)")
    p.add_argument("--json", action="store_true", help="print one QZX result")
    p.set_defaults(func=_jobs)
    jsub = p.add_subparsers(dest="jobs_command", metavar="show ID")
    show = jsub.add_parser("show", help="one job: its facts and its card")
    show.add_argument("id", metavar="ID", help="the job id (or its first characters)")
    show.add_argument("--json", action="store_true", help="print one QZX result")
    show.set_defaults(func=_show)


def _when(ts: float | None, *, short: bool = False) -> str:
    if not ts:
        return ""
    return datetime.fromtimestamp(ts).strftime("%m-%d %H:%M:%S" if short else "%Y-%m-%d %H:%M:%S")


def _status(job: Job) -> str:
    return "failed-interrupted" if job.status == "interrupted" else job.status


def _jobs(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise CommandError("--limit must be at least 1")
    runtime = open_runtime()
    try:
        runtime.recover_interrupted()
        jobs = runtime.jobs(limit=args.limit)
    finally:
        runtime.close()
    if args.json:
        return emit_result("jobs", True, f"{len(jobs)} recent job{'s' * (len(jobs) != 1)}.",
                           data={"jobs": [j.to_dict() for j in jobs]})
    if not jobs:
        print("No jobs yet. Try: oz0 run AGENT INPUT (oz0 plugin list shows the agents)")
        return 0
    rows = tuple((j.id, j.agent, _status(j) + (f" ({j.failure_kind})" if j.failure_kind else ""),
                  j.requester if j.channel in ("", "cli") else f"{j.requester} in {j.channel}",
                  _when(j.created, short=True), f"{j.duration_s:.2f} s" if j.duration_s is not None else "")
                 for j in jobs)
    card = Card(form="table", title="Recent jobs", rows=rows,
                columns=("id", "agent", "status", "asked by", "created", "took"))
    print(render_payload(card, "text").rstrip("\n"))
    return 0


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
                               "see oz0 jobs)", code=1)
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
            "channel", "input", "created", "started", "ended")
    contract = (f"{job.contract_hash}" + (f" (since {job.contract_version})" if job.contract_version else "")
                if job.contract_hash else None)
    values = (job.id, job.agent, f"{job.plugin or ''} {job.plugin_version or ''}".strip(), contract, _status(job),
              job.failure_kind, job.failure_reason, job.attempts, job.requester, job.channel, job.input,
              _when(job.created), _when(job.started), _when(job.ended))
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
