"""Lint of a plugin's `schedules/*.yaml` (edge.plugins.schedules): each file's keys, its cron and time
zone, the agent or flow it names, and its input against that agent's input contract (from this
plugin's files, or the installed agents when known)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from oz0.edge.contracts.schema import Contract
from oz0.edge.plugins.lint_sides import TEXT, AgentSides
from oz0.edge.plugins.schedules import lint_schedule, schedule_files

__all__ = ["lint_schedules"]


def lint_schedules(root: Path, *, read: Callable[[Path], Any], add: Callable[..., None],
                   agents: Mapping[str, AgentSides], flows: set[str],
                   installed: Mapping[str, AgentSides] | None) -> None:
    """Every finding of the plugin's schedule files, through `add(severity, file, path, message, fix)`.
    With `installed` unknown (None), an agent from outside the plugin cannot be checked: it is taken."""
    known = {**(installed or {}), **agents}
    for file in schedule_files(root):
        data = read(file)
        if data is None:
            continue
        target = data.get("agent") if isinstance(data, dict) else None
        side = known.get(target) if isinstance(target, str) else None
        def found(path: str, message: str, fix: str, file: Path = file) -> None:
            add("error", file, path, message, fix)

        def exists(name: str) -> bool:
            return name in known or name in flows or installed is None
        lint_schedule(data, found, input_check=_checker(side.input) if side is not None else None, known=exists)


def _checker(side: Any) -> Callable[[Any], list[tuple[str, str]]] | None:
    if side is TEXT:
        return lambda value: [] if isinstance(value, str) else [("$", "the agent takes text: give input as text")]
    if isinstance(side, Contract):
        return lambda value: [(v.json_path, v.message) for v in side.validate(value, limit=20)]
    return None
