"""The cards the ask flow draws itself: help, refusals, what went wrong around an agent, share.

Neutral `Card`s like any agent's answer, drawn by the same renderers; never a traceback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import orjson

from oz0.adapters.chat.wire import Syntax
from oz0.edge import AgentSpec
from oz0.edge.cards.model import Action, Card, Status
from oz0.edge.documents.summary import example_input, input_summary, schema_summary
from oz0.edge.model.progress import Progress

__all__ = ["CANCEL_ACTION", "NO_AGENTS_TEXT", "SHARE_ACTION", "agent_help_card", "failure_card", "help_card",
           "no_agents_card", "shareable", "streaming_card", "working_card"]

NO_AGENTS_TEXT = "No agent may be run by you in this channel. Ask the bot's administrator (access.yaml)."
SHARE_ACTION = "oz0_share"
CANCEL_ACTION = "oz0_cancel"   # the Stop button on a working message: its value is the job id


def failure_card(message: str, *, code: str, title: str | None = None) -> Card:
    """A card for what went wrong outside the agent (the platform refused, the channel broke): no traceback."""
    return Card(form="text", title=title, text="", text_format="plain",
                status=Status(success=False, message=message, error_code=code))


def no_agents_card() -> Card:
    """The answer to a help request from someone access.yaml lets run no agent here."""
    return Card(form="text", title="No agents for you here", text_format="plain", text=NO_AGENTS_TEXT)


def help_card(agents: Iterable[AgentSpec], syntax: Syntax) -> Card:
    """The agents this asker may run, each with what it does, its input contract and an example.

    A table where the platform draws one well, else one line per agent (key_values): a monospace
    table's fixed-width columns would cut the contracts short.
    """
    specs = list(agents)
    if not specs:
        return no_agents_card()
    examples = [syntax.example(s.name, example_input(s)) for s in specs]
    if syntax.help_form == "table":
        rows = tuple((s.name, s.description or "", input_summary(s), e) for s, e in zip(specs, examples))
        return Card(form="table", title="Agents you may run", columns=("agent", "what it does", "input", "example"),
                    rows=rows, notes=syntax.help_notes)
    values = tuple(" · ".join(p for p in (s.description or "", f"input: {input_summary(s)}", f"e.g. {e}") if p)
                   for s, e in zip(specs, examples))
    return Card(form="key_values", title="Agents you may run", keys=tuple(s.name for s in specs), values=values,
                notes=syntax.help_notes)


def agent_help_card(spec: AgentSpec, syntax: Syntax) -> Card:
    """One agent's contract: what it takes and answers, how it may fail, and an example to type."""
    keys, values = ["what it does", "input"], [spec.description or "(no description)", input_summary(spec)]
    if spec.input_schema_file:
        values[-1] += f" ({spec.input_schema_file})"
    keys.append("answers")
    if spec.output is None:
        values.append("text")
    else:
        schema = spec.output.schema if isinstance(spec.output.schema, dict) else {}
        values.append(f"JSON {schema_summary(schema)}" + (f" ({spec.output_schema_file})"
                                                          if spec.output_schema_file else ""))
    if spec.failures:
        keys.append("may fail with")
        values.append(", ".join(f.name for f in spec.failures))
    keys.append("example")
    values.append(syntax.example(spec.name, example_input(spec)))
    for i, example in enumerate(spec.examples, start=1):
        keys.append(f"example {i}")
        answer = f" -> {orjson.dumps(example.output).decode()}" if example.has_output else ""
        said = f"{example.description}: " if example.description else ""
        values.append(f"{said}{syntax.example(spec.name, example.input_text)}{answer}")
    return Card(form="key_values", title=spec.name, keys=tuple(keys), values=tuple(values),
                notes=syntax.help_notes)


def working_card(agent: str, progress: Progress | None = None, *, elapsed_s: float | None = None,
                 ahead: int = 0, job_id: str | None = None) -> Card:
    """The working message shown while a job runs; once the job reports progress, its latest report
    and the time so far: "Working on deploy... 14 s" over "step 2 of 3: approve · 3/10 ▓▓▓░░░░░░░".
    A job queued behind others says its place first: "Queued for deploy: 12 asks ahead of yours".
    With the job's id, a Stop button under it (edge.runtime.cancel; not a conversation's Stop)."""
    actions = (Action(CANCEL_ACTION, "Stop", value=job_id, style="danger"),) if job_id else ()
    if ahead:
        return Card(form="text", text_format="plain", actions=actions,
                    text=f"\u23f3 Queued for {agent}: {ahead} ask{'s' if ahead != 1 else ''} ahead of yours")
    head = f"\u23f3 Working on {agent}..."
    if elapsed_s is not None:
        head += f" {_elapsed(elapsed_s)}"
    if progress is None:
        return Card(form="text", text_format="plain", text=head, actions=actions)
    line = progress.summary()
    return Card(form="text", text_format="plain", text=f"{head}\n{line}" if line else head, actions=actions)


def streaming_card(agent: str, text: str, progress: Progress | None = None) -> Card:
    """A text answer while it is written: the text so far, and under it the job's latest step (a tool
    the model calls) as a status line."""
    line = progress.summary() if progress is not None else ""
    return Card(form="text", text=text or "\u23f3", notes=(f"\u23f3 {line}" if line else f"\u23f3 {agent} is writing...",))


def _elapsed(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def shareable(card: Card, job_id: str, *, shared: bool = False) -> Card:
    """The card with its "Share in channel" button (greyed out once shared)."""
    action = (Action(SHARE_ACTION, "Shared in channel", value=job_id, disabled=True) if shared
              else Action(SHARE_ACTION, "Share in channel", value=job_id, style="primary"))
    return dataclasses.replace(card, actions=(action,))
