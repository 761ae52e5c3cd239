"""A person step answered at the terminal: `oz0 run` on a TTY draws a job's question (a destructive tool's
Confirm, a model's `ask_person`) as a prompt, one field at a time, and answers it as the asker. Without
a TTY nothing is registered, so such a job is told that its channel cannot ask."""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Callable

from oz0.edge.model.job import Job
from oz0.edge.runtime.questions import Question

__all__ = ["ask_at_terminal", "prompt_answer"]

Ask = Callable[[str], str]


def prompt_answer(question: Question, ask: Ask) -> dict[str, Any] | None:
    """The answer typed for each field of the question's schema; None: the person declined (an empty
    answer to a required field, or end of input). A value that does not fit its field is asked again."""
    props: dict[str, Any] = question.answer_schema.get("properties") or {}
    required = set(question.answer_schema.get("required") or ())
    out: dict[str, Any] = {}
    for name, field in props.items():
        choices = field.get("enum")
        hint = f" [{'/'.join(map(str, choices))}]" if choices else f" ({field.get('type')})"
        for _ in range(3):
            try:
                text = ask(f"{field.get('title') or name}{hint}: ").strip()
            except EOFError:
                return None
            if not text:
                if name in required:
                    return None
                break
            value = _typed(text, field)
            if value is not None and (not choices or value in choices):
                out[name] = value
                break
        else:
            return None
    return out


def _typed(text: str, field: dict[str, Any]) -> Any:
    kind = field.get("type")
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return None
    if kind == "boolean":
        return {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}.get(text.lower())
    return text


def ask_at_terminal(runtime: Any, *, ask: Ask = input) -> None:
    """Register the terminal as the `cli` channel's question drawer, when stdin is a terminal."""
    if not sys.stdin.isatty():
        return

    async def asked(job: Job, question: Question) -> None:
        print(f"\n? {question.message}", file=sys.stderr, flush=True)
        content = await asyncio.to_thread(prompt_answer, question, ask)
        runtime.answer(job.id, question.step, action="accept" if content is not None else "decline",
                       content=content, by=job.requester)

    runtime.on_question("cli", asked)
