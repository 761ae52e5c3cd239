"""Budgets as people and APIs read them: for each budget covering a job, its limits, what is granted
to the job's tree, reserved by calls in flight, spent, and left. One reader of BudgetState for
`oz0 jobs show`, the console's job page and `GET /v1/jobs/{id}`.

Money in JSON is a decimal string (`"0.105"`), exact as stored, never a float.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oz0.edge.model.budget import BUDGET_DIMENSIONS, amount_text, format_dimension
from oz0.edge.runtime.budget_book import BudgetState
from oz0.edge.runtime.people import shown_as

__all__ = ["FIGURES", "budget_json", "budget_lines", "budget_table", "granted_by"]

FIGURES = ("limit", "granted", "reserved", "spent", "left")


def _figures(state: BudgetState, dimension: str) -> dict[str, int]:
    limit = state.limit(dimension)
    assert limit is not None
    return {"limit": limit, "granted": state.granted.get(dimension), "reserved": state.reserved.get(dimension),
            "spent": state.spent.get(dimension), "left": state.left(dimension) or 0}


def _exact(dimension: str, value: int) -> Any:
    return amount_text(value) if dimension == "cost" else value


def budget_json(state: BudgetState) -> dict[str, Any]:
    """One budget as JSON data: each limited dimension's figures, and who granted more (`by` the
    journal's id, `by_name` as people read it)."""
    ref = state.ref
    out: dict[str, Any] = {"budget": ref.label, "key": ref.key, "period": ref.period, "per": ref.budget.per,
                           "on_exhausted": ref.budget.on_exhausted}
    for d in BUDGET_DIMENSIONS:
        if state.limit(d) is not None:
            out[d] = {name: _exact(d, n) for name, n in _figures(state, d).items()}
    out["grants"] = [{"by": g["granted_by"], "by_name": granted_by(g), "at": g["at"],
                      **{d: _exact(d, int(g[d])) for d in BUDGET_DIMENSIONS if g[d]}} for g in state.grants]
    return out


def budget_table(state: BudgetState) -> list[dict[str, str]]:
    """One budget's rows for a page: a row per limited dimension, each figure as people read it."""
    return [{"dimension": d, **{name: format_dimension(d, n) for name, n in _figures(state, d).items()}}
            for d in BUDGET_DIMENSIONS if state.limit(d) is not None]


def budget_lines(state: BudgetState) -> list[str]:
    """One budget as text lines: whose it is, then each limited dimension."""
    day = f"{state.ref.period[4:]} UTC; " if state.ref.period.startswith("day:") else ""
    lines = [f"{state.ref.label} ({day}on_exhausted: {state.ref.budget.on_exhausted})"]
    for row in budget_table(state):
        granted = f" (+{row['granted']} granted)" if state.granted.get(row["dimension"]) else ""
        lines.append(f"  {row['dimension']}: limit {row['limit']}{granted}, reserved {row['reserved']}, "
                     f"spent {row['spent']}, left {row['left']}")
    for g in state.grants:
        given = ", ".join(format_dimension(d, int(g[d])) for d in BUDGET_DIMENSIONS if g[d])
        lines.append(f"  granted {given} for this job by {granted_by(g)}")
    return lines


def granted_by(grant: Mapping[str, Any]) -> str:
    """Who granted it, as people read them: their display name where a channel learned it, else the id."""
    return shown_as(str(grant["granted_by"]), grant.get("granted_by_name"))
