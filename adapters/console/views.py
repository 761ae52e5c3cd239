"""What the console's pages show, prepared for the templates: a card drawn with its channel payloads,
an agent's summary, its example as form values, a job's row.

The page handlers (adapters/console/app.py) stay thin: every value a template reads is built here.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from oz0.adapters.console import api as console_api
from oz0.adapters.console.forms import Field
from oz0.edge import Card
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.progress import Progress
from oz0.edge.runtime.confirm import known_annotations, needs_confirmation

__all__ = ["PAGE_REFRESH_S", "agent_view", "budget_rows", "budget_text", "channel_payloads", "drawn_card",
           "example_values", "job_view"]

PAGE_REFRESH_S = 2   # a running job's page reloads this often, to show its latest progress

log = logging.getLogger("oz0.console")


def drawn_card(card: Card) -> tuple[Markup, bool]:
    """The card as the HTML renderer draws it (every view of a job page), and whether the full result
    is offered as a file (the card was cut, or not drawn)."""
    from oz0.renderers import html_console

    drawn = html_console.render(card)
    # Markup: the HTML renderer escapes every value it draws (its contract, tested on every hostile fixture)
    return Markup(drawn.payload), bool(drawn.uploads)


def channel_payloads(card: Card) -> list[dict[str, Any]]:
    """The card's Slack, Discord and Teams payloads as pretty JSON with the files each uploads beside
    it, and how each platform shows it: drawn only when the page is asked for them (`?previews=1`)."""
    from oz0.renderers import discord_message, slack_blocks, teams_adaptive

    payloads = []
    for key, label, renderer in (("slack", "Slack", slack_blocks.render),
                                 ("discord", "Discord", discord_message.render),
                                 ("teams", "Teams", teams_adaptive.render)):
        try:
            rendered = renderer(card)
        except Exception as exc:
            log.exception("the %s renderer failed", key)
            payloads.append({"key": key, "label": label, "uploads": [], "preview": None,
                             "json": f"the {label} renderer failed: {type(exc).__name__}: {exc}"})
            continue
        payloads.append({"key": key, "label": label, "uploads": [u.to_dict() for u in rendered.uploads],
                         "json": json.dumps(rendered.payload, ensure_ascii=False, indent=2, default=str),
                         "preview": _preview(key, label, rendered)})
    return payloads


def _preview(key: str, label: str, rendered: Any) -> Markup | None:
    """How the payload looks on the platform (adapters/console/preview.py); None, logged, if it cannot be drawn."""
    from oz0.adapters.console.preview import preview

    try:
        return preview(key, rendered)
    except Exception:
        log.exception("the %s preview failed", label)
        return None


def agent_view(spec: AgentSpec, versions: Mapping[str, str]) -> dict[str, Any]:
    def label(contract: Any, file: str | None) -> str:
        if contract is None:
            return "text"
        title = contract.schema.get("title") if isinstance(contract.schema, dict) else None
        return f"{title} ({file})" if title and file else (title or file or "JSON Schema")

    def schema(contract: Any) -> str | None:
        return None if contract is None else json.dumps(contract.schema, ensure_ascii=False, indent=2)

    return {
        "name": spec.name, "plugin": spec.plugin, "version": versions.get(spec.plugin, ""), "kind": spec.kind,
        "description": spec.description, "input_label": label(spec.input, spec.input_schema_file),
        "output_label": label(spec.output, spec.output_schema_file), "input_schema": schema(spec.input),
        "output_schema": schema(spec.output), "failures": console_api.failure_kinds(spec),
        "annotations": (hints := known_annotations(spec)), "confirms": needs_confirmation(spec, hints),
        "path": f"/{'flows' if spec.kind == 'flow' else 'agents'}/{quote(spec.name, safe='')}",
        "steps": [{"id": s.id, "what": f"asks: {s.ask}" if s.is_ask else f"runs {s.agent}",
                   "condition": s.condition} for s in getattr(spec, "steps", ())],
        "contract_hash": contract_hash(spec), "contract_version": spec.contract_version,
        "budget": budget_text(getattr(spec, "budget", None)),
        "price": spec.price.describe() if getattr(spec, "price", None) is not None else None,
        "examples": [{"description": e.description, "input": e.input_text,
                      "output": json.dumps(e.output, ensure_ascii=False) if e.has_output else None}
                     for e in spec.examples],
    }


def budget_text(budget: Any) -> str | None:
    """A declared budget for people, as `oz0 jobs show` names it: `50 tokens, $0.50 per job (on_exhausted: ask)`."""
    if budget is None:
        return None
    return f"{budget.describe()} per {budget.per} (on_exhausted: {budget.on_exhausted})"


def example_values(spec: AgentSpec, fields: tuple[Field, ...], text: str) -> dict[str, str]:
    """An example input of the agent (`text`), put into its form's `fields` as a starting point."""
    if spec.input is None:
        return {fields[0].html_id: text}
    try:
        example = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return {}
    if len(fields) == 1 and fields[0].widget == "json":
        return {fields[0].html_id: json.dumps(example, ensure_ascii=False, indent=2)}
    if not isinstance(example, dict):
        return {}
    values = {}
    for field in fields:
        if field.name not in example:
            continue
        value = example[field.name]
        if field.widget == "select" or (field.widget == "checkbox" and value is True):
            values[field.html_id] = json.dumps(value, ensure_ascii=False)
        elif field.widget == "lines" and isinstance(value, list):
            values[field.html_id] = "\n".join(str(v) for v in value)
        elif field.widget == "json":
            values[field.html_id] = json.dumps(value, ensure_ascii=False, indent=2)
        else:
            values[field.html_id] = "" if value is None else str(value)
    return values


def budget_rows(states: Any) -> list[dict[str, Any]]:
    """The job page's budgets: whose each is, and a row per limited dimension (edge.runtime.budget_view)."""
    from oz0.edge.model.budget import BUDGET_DIMENSIONS, format_dimension
    from oz0.edge.runtime.budget_view import budget_table, granted_by

    return [{"label": s.ref.label, "on_exhausted": s.ref.budget.on_exhausted, "rows": budget_table(s),
             "grants": [{"by": granted_by(g), "what": ", ".join(
                 format_dimension(d, int(g[d])) for d in BUDGET_DIMENSIONS if g[d])} for g in s.grants]}
            for s in states]


def job_view(job: Any) -> dict[str, Any]:
    took = job.duration_s
    reason = job.failure_reason or ""
    return {
        "id": job.id, "agent": job.agent, "status": job.status, "requester": job.requester,
        "channel": job.channel, "input": job.input, "input_short": _short(job.input, 80),
        "failure_kind": job.failure_kind, "failure_reason": reason, "failure_short": _short(reason, 120),
        "when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.created)),
        "took": f"{took:.2f} s" if took is not None else "", "attempts": job.attempts,
        "progress": _progress_text(job), "trace_id": job.trace_id,
        # a running job's page reloads itself to show its latest progress (no script needed); a
        # waiting one does not, for its page holds the answer form someone may be filling in
        "refresh_s": PAGE_REFRESH_S if job.status in ("queued", "running") else None,
    }


def _progress_text(job: Any) -> str:
    """The latest progress a running job journaled (edge.runtime.progress), as one line."""
    progress = Progress.from_dict(getattr(job, "progress", None)) if not job.finished else None
    if progress is None:
        return ""
    return progress.summary()


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
