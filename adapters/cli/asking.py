"""A person step met by a terminal command (`oz0 run`, `oz0 jobs answer`): asked there, or the job parked.

On a terminal (stdin and stderr are terminals) the question is asked where the command runs: its
message, then the answer schema's fields as prompts (the console's run-form fields, `fields_for`),
the answer taken by the path every channel takes (`Runtime.answer`: a refused answer is asked again
with the reason). Off a terminal nobody can type an answer, so the command never waits: the job is
left `waiting`, parked (its runner journaled as PARKED_RUNNER, so recovery does not take it for a
crashed one), and the command says its id and how to answer it: `oz0 jobs answer`, which resumes it
here, or `POST /v1/jobs/ID/answer`. A tool loop on a SQLite home runs as its workflow under the
command's own engine (adapters.cli.loop_engine), so it resumes from its last finished call. Any other
resumed job runs again from its start; what it did before the question is not done twice where it is
idempotent (a flow's finished steps are its child jobs, a step already answered keeps its answer), as a
retried attempt is not.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TextIO

from oz0.adapters.console.forms import Field, FormError, fields_for, form_input
from oz0.edge.contracts.schema import load_contract
from oz0.edge.model.job import Job
from oz0.edge.runtime.events import QuestionAsked, TextDelta
from oz0.edge.runtime.questions import AnswerRefused, Question
from oz0.edge.runtime.runner import Runtime

__all__ = ["PARKED_RUNNER", "Parked", "drive", "on_a_terminal", "waiting_lines"]

PARKED_RUNNER = "parked:0:waiting-for-an-answer"  # not this host's `host:pid:token`: recovery leaves it 6 h
# Steps the runtime names afresh on each run (an MCP elicitation, a budget's allowance): a resumed job
# would ask a new one, so off a terminal they are cancelled at once rather than parked
UNRESUMABLE_STEPS = ("elicit-", "budget-")
MAX_TRIES = 5  # answers refused in a row before the terminal gives up (the question stays open)


@dataclass(frozen=True)
class Parked:
    """A job left waiting off a terminal, and the question it waits on."""

    job: Job
    question: Question


def on_a_terminal() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def drive(runtime: Runtime, work: Callable[[], Coroutine[Any, Any, Job]], job_id: str, *, by: str,
          interactive: bool, pause: Callable[[bool], None] = lambda paused: None,
          on_text: Callable[[TextDelta], None] | None = None) -> Job | Parked:
    """Run `work` (the job's execution) until the job ends, its questions asked on this terminal; off
    a terminal, until the job asks, then park it. The job runs on a loop of its own, in a daemon
    thread, so parking leaves its wait as it stands (an open question, never one cancelled). `pause`
    holds the progress bar while a question is asked; `on_text` is given a model's text as it is written."""
    settled = threading.Event()
    outcome: dict[str, Any] = {}

    async def listener(question: Question) -> None:
        if interactive:  # a daemon thread: a prompt nobody answers never holds the process's exit
            pause(True)
            threading.Thread(target=ask_here, args=(runtime, question, by), kwargs={"done": lambda: pause(False)},
                             daemon=True, name="oz0-terminal-question").start()
            return
        if question.step.startswith(UNRESUMABLE_STEPS):
            print(f"step {question.step} of job {question.job_id} asks a person ({question.message[:200]}), and "
                  "this command is not on a terminal: cancelled (run it on a terminal, or from the console or chat)",
                  file=sys.stderr)
            runtime.questions.close(question.job_id, question.step, action="cancel", by="no terminal")
            return
        outcome.setdefault("parked", question)
        settled.set()

    async def follow() -> None:  # the job's questions, as its event stream shows them
        async for event in runtime.events(job_id):
            if isinstance(event, QuestionAsked):
                await listener(event.question)
            elif isinstance(event, TextDelta) and on_text is not None:
                on_text(event)

    async def run() -> Job:
        follower = asyncio.create_task(follow())
        try:
            return await work()
        finally:
            follower.cancel()

    def target() -> None:
        try:
            outcome["job"] = asyncio.run(run())
        except BaseException as exc:  # handed to the command, which reports it
            outcome["error"] = exc
        finally:
            settled.set()

    runtime.questions.shows("cli")
    threading.Thread(target=target, daemon=True, name="oz0-cli-job").start()
    settled.wait()
    if "job" in outcome:
        return outcome["job"]
    if "error" in outcome:
        raise outcome["error"]
    runtime.store.update_job(job_id, only_if_status=("waiting",), runner=PARKED_RUNNER)
    job = runtime.job(job_id)
    assert job is not None
    return Parked(job, outcome["parked"])


def waiting_lines(parked: Parked) -> list[str]:
    """What the command says of a parked job: its id, the question, and the two ways to answer."""
    q, job = parked.question, parked.job
    example = json.dumps(_example(q.answer_schema), ensure_ascii=False)
    return [f"job {job.id} is waiting for an answer to step {q.step!r}: {q.message}",
            f"answer it with: oz0 jobs answer {job.id} '{example}' --step {q.step}"  # ANSWER before --step: argparse
            "  (or --decline, --cancel)",
            f"or over the API: POST /v1/jobs/{job.id}/answer?step={q.step} with the answer as JSON"]


def _example(schema: dict[str, Any]) -> dict[str, Any]:
    """An answer of the schema's required fields, each with a value of its type, to show the shape."""
    props = schema.get("properties") or {}
    samples = {"boolean": True, "integer": 1, "number": 1, "string": "..."}
    out: dict[str, Any] = {}
    for name in schema.get("required") or list(props)[:1]:
        prop = props.get(name) or {}
        out[name] = prop["enum"][0] if prop.get("enum") else samples.get(str(prop.get("type")), "...")
    return out


def ask_here(runtime: Runtime, question: Question, by: str, *, stdin: TextIO | None = None,
             out: TextIO | None = None, done: Callable[[], None] = lambda: None) -> None:
    """The question on this terminal until an answer is taken (Ctrl-D cancels it); then `done`."""
    try:
        _ask_here(runtime, question, by, stdin or sys.stdin, out or sys.stderr)
    finally:
        done()


def _ask_here(runtime: Runtime, question: Question, by: str, stdin: TextIO, out: TextIO) -> None:
    fields = fields_for(load_contract(question.answer_schema, source="the answer schema"))
    print(f"\n? {question.message}" + (f" (asked by {question.source})" if question.source else ""), file=out)
    for _ in range(MAX_TRIES):
        content = _prompted(fields, stdin, out)
        try:
            if content is None:
                runtime.answer(question.job_id, question.step, action="cancel", content=None, by=by)
                print("  cancelled", file=out)
                return
            runtime.answer(question.job_id, question.step, action="accept", content=content, by=by)
            return
        except AnswerRefused as exc:
            print(f"  not taken: {exc.message}", file=out)
            if exc.why != "invalid":
                return
    print(f"  {MAX_TRIES} answers refused; the question stays open (oz0 jobs answer {question.job_id})", file=out)


def _prompted(fields: tuple[Field, ...], stdin: TextIO, out: TextIO) -> dict[str, Any] | None:
    """One value per field, read as the console's form reads its inputs; None when the person cancels."""
    form: dict[str, str] = {}
    for field in fields:
        while True:
            raw = _read(_prompt(field), stdin, out)
            if raw is None:
                return None
            if field.widget == "checkbox":
                if raw.strip().lower() in ("y", "yes", "true"):
                    form[field.html_id] = "on"
                elif raw.strip().lower() not in ("", "n", "no", "false"):
                    print("  answer y or n", file=out)
                    continue
                break
            if field.widget == "select":
                raw = next((value for value, shown in field.choices if raw.strip() in (shown, value)), raw)
            form[field.html_id] = raw
            try:
                form_input((field,), form)
            except FormError as exc:
                print(f"  {exc.message}", file=out)
                del form[field.html_id]
                continue
            break
    return form_input(fields, form)


def _prompt(field: Field) -> str:
    label = field.label or field.name
    if field.widget == "checkbox":
        return f"  {label}? [y/N] "
    choices = f" ({', '.join(shown for _, shown in field.choices)})" if field.choices else ""
    optional = "" if field.required else " (optional)"
    return f"  {label}{choices}{optional}: "


def _read(prompt: str, stdin: TextIO, out: TextIO) -> str | None:
    out.write(prompt)
    out.flush()
    line = stdin.readline()
    return None if line == "" else line.rstrip("\n")
