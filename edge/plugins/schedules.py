"""A plugin's schedules: `schedules/NAME.yaml`, an agent (or flow) run on a cron, its result posted to a
channel.

    # schedules/standup.yaml
    description: The stand-up report, every weekday at 9
    cron: "0 9 * * 1-5"          # minute hour day-of-month month day-of-week (6 fields: seconds first)
    timezone: Europe/Lisbon      # IANA; default UTC
    agent: standup               # or flow: NAME
    input: {team: core}          # checked against the agent's input contract (text for a text agent)
    slack: {channel: C0123ABCD}  # where the result goes; discord: {channel: "1234..."} too
    catch_up: true               # a tick missed while every replica was down runs once at start

Why a file per schedule and not a key of plugin.yaml: a schedule names its agent, its input and
where it posts, like a flow names its steps; lint checks each against the agent's contract and says
the file and the key (`oz0 plugin lint` exits 1). The engine runs it (edge.runtime.schedule_engine).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter  # type: ignore[import-untyped]  # ships no stubs

from oz0.edge.plugins.declared import AGENT_NAME_RE, PluginError, read_yaml

__all__ = ["CHANNEL_KEYS", "ScheduleSpec", "lint_schedule", "load_schedules", "schedule_files"]

CHANNEL_KEYS = ("slack", "discord")  # Teams posts need its conversation's serviceUrl: not from a channel id
KEYS = ("description", "cron", "timezone", "agent", "flow", "input", *CHANNEL_KEYS, "catch_up")
MAX_INPUT_CHARS = 20_000   # a schedule's input, as the job journals it (JSON or text)
_CHANNEL_RE = {"slack": re.compile(r"^[CGD][A-Z0-9]{2,30}$"), "discord": re.compile(r"^[0-9]{15,25}$")}
_CHANNEL_HINT = {"slack": "a Slack channel id such as C0123ABCD (channel details, at the bottom)",
                 "discord": "a Discord channel id: digits (Developer Mode, Copy Channel ID)"}

Add = Callable[[str, str, str], None]   # (JSON path, message, how to mend)


@dataclass(frozen=True)
class ScheduleSpec:
    """One schedule as its file declares it (checked by `lint_schedule`)."""

    name: str
    plugin: str
    file: str
    cron: str                      # as written: 5 fields (or 6, seconds first)
    timezone: str
    agent: str                     # the agent or flow it runs
    input: Any                     # text, or JSON data
    post_to: tuple[tuple[str, str], ...]   # (platform, channel id)
    catch_up: bool
    description: str = ""

    @property
    def engine_cron(self) -> str:
        """The cron as DBOS reads it: seconds first."""
        return self.cron if len(self.cron.split()) == 6 else f"0 {self.cron}"

    def next_runs(self, count: int, *, after: datetime | None = None) -> list[datetime]:
        tz = ZoneInfo(self.timezone)
        it = croniter(self.engine_cron, (after or datetime.now(tz)).astimezone(tz), second_at_beginning=True)
        return [it.get_next(datetime) for _ in range(count)]

    def input_text(self) -> str:
        import orjson

        return self.input if isinstance(self.input, str) else orjson.dumps(self.input).decode()


def schedule_files(root: Path) -> list[Path]:
    folder = root / "schedules"
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def lint_schedule(data: Any, add: Add, *, input_check: Callable[[Any], list[tuple[str, str]]] | None,
                  known: Callable[[str], bool]) -> None:
    """Every problem of one schedule file's data, through `add(path, message, fix)`. `input_check`
    gives the (JSON path, message) of each way the input breaks the agent's input contract (None: the
    agent is not known here); `known(name)` says whether an agent or flow of that name exists."""
    if not isinstance(data, dict):
        add("$", "a schedule file must be a mapping of keys", "start with `cron:` and `agent:`")
        return
    for key in data:
        if key not in KEYS:
            add(f"$.{key}", f"unknown key {key!r}", f"use only: {', '.join(KEYS)}")
    cron = data.get("cron")
    if not isinstance(cron, str) or not cron.strip():
        add("$.cron", "cron is required: five fields, minute hour day-of-month month day-of-week",
            'for every weekday at 9: cron: "0 9 * * 1-5"')
    elif len(cron.split()) not in (5, 6) or not croniter.is_valid(cron if len(cron.split()) == 6 else f"0 {cron}",
                                                                   second_at_beginning=True):
        add("$.cron", f"{cron!r} is not a cron of 5 fields (minute hour day-of-month month day-of-week), or 6 "
                      "with seconds first", 'for every weekday at 9: cron: "0 9 * * 1-5"')
    tz = data.get("timezone", "UTC")
    try:
        if not isinstance(tz, str):
            raise ZoneInfoNotFoundError(str(tz))
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        add("$.timezone", f"{tz!r} is not an IANA time zone", "for example Europe/Lisbon, America/New_York or UTC")
    target = [k for k in ("agent", "flow") if k in data]
    if len(target) != 1:
        add("$", "name exactly one of agent: or flow: (what the schedule runs)", "add `agent: NAME`")
    else:
        name = data[target[0]]
        if not isinstance(name, str) or not AGENT_NAME_RE.match(name):
            add(f"$.{target[0]}", f"{name!r} is not an agent name", "lowercase letters, digits and dashes")
        elif not known(name):
            add(f"$.{target[0]}", f"no {target[0]} {name!r} in this plugin or installed",
                f"add {target[0]}s/{name}.yaml, or install the plugin that has it")
        elif input_check is not None:
            for path, message in input_check(data.get("input")):
                add("$.input" + path.removeprefix("$"), message, f"give an input that {name}'s input contract takes")
    if "input" in data and _too_long(data["input"]):
        add("$.input", f"the input is over {MAX_INPUT_CHARS:,} characters", "keep a schedule's input short")
    posted = 0
    for key in CHANNEL_KEYS:
        if key not in data:
            continue
        where = data[key]
        channel = where.get("channel") if isinstance(where, dict) else None
        if not isinstance(where, dict) or set(where) != {"channel"}:
            add(f"$.{key}", f"{key}: is a mapping with one key, channel", f"{key}: {{channel: ...}}")
        elif not isinstance(channel, str) or not _CHANNEL_RE[key].match(channel):
            add(f"$.{key}.channel", f"{channel!r} is not {_CHANNEL_HINT[key]}", "quote it as text")
        else:
            posted += 1
    if posted == 0 and not any(k in data for k in CHANNEL_KEYS):
        add("$", "the schedule posts nowhere", "add slack: {channel: C...} or discord: {channel: ...}")
    if "catch_up" in data and not isinstance(data["catch_up"], bool):
        add("$.catch_up", f"catch_up is true or false, not {data['catch_up']!r}", "catch_up: true")
    if "description" in data and not isinstance(data["description"], str):
        add("$.description", "description is text", "describe the schedule in one line")


def _too_long(value: Any) -> bool:
    import orjson

    try:
        return len(value if isinstance(value, str) else orjson.dumps(value).decode()) > MAX_INPUT_CHARS
    except TypeError:
        return False


def load_schedules(root: Path, plugin: str) -> tuple[ScheduleSpec, ...]:
    """The plugin's schedules, as installed (lint refused a broken one at install). PluginError names
    the file and the key of a file that no longer reads."""
    specs = []
    for file in schedule_files(root):
        data = read_yaml(file)
        problems: list[str] = []

        def found(path: str, message: str, fix: str, problems: list[str] = problems) -> None:
            problems.append(f"{path}: {message}")
        lint_schedule(data, found, input_check=None, known=lambda name: True)
        if problems:
            raise PluginError(problems[0], file=str(file))
        specs.append(_spec(file, plugin, data))
    return tuple(specs)


def _spec(file: Path, plugin: str, data: Mapping[str, Any]) -> ScheduleSpec:
    return ScheduleSpec(
        name=file.stem, plugin=plugin, file=f"schedules/{file.name}", cron=" ".join(str(data["cron"]).split()),
        timezone=str(data.get("timezone", "UTC")), agent=str(data.get("agent") or data.get("flow")),
        input=data.get("input", ""), post_to=tuple((k, str(data[k]["channel"])) for k in CHANNEL_KEYS if k in data),
        catch_up=bool(data.get("catch_up", False)), description=str(data.get("description", "")))
