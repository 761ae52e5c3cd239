"""A plugin's schedules: `schedules/NAME.yaml`, an agent (or flow) run on a cron, its result posted to a
channel.

    # schedules/standup.yaml
    description: The stand-up report, every weekday at 9
    cron: "0 9 * * 1-5"          # minute hour day-of-month month day-of-week (6 fields: seconds first)
    timezone: Europe/Lisbon      # IANA; default UTC
    agent: standup               # or flow: NAME
    input: {team: core}          # checked against the agent's input contract (text for a text agent)
    slack: {channel: C0123ABCD}  # where the result goes; discord: {channel: "1234..."} and
                                 # teams: {conversation: "19:...@thread.tacv2", service_url: ...} too
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

__all__ = ["CHANNEL_KEYS", "DESTINATIONS", "Place", "Post", "ScheduleSpec", "lint_schedule", "load_schedules",
           "schedule_files"]

MAX_INPUT_CHARS = 20_000   # a schedule's input, as the job journals it (JSON or text)
TEAMS_SERVICE_URL = "https://smba.trafficmanager.net/teams/"   # the connector's global endpoint (the Teams SDK's default)
# A Teams post sends the bot's token to its service URL: only the Bot Framework connector's hosts (public,
# GCC, GCC High, DoD), or loopback (a stand-in), never a host a plugin names.
_SERVICE_URL_RE = re.compile(
    r"^(?:https://(?:smba\.trafficmanager\.net|[a-z0-9-]+\.botframework\.com|smba\.infra\.gcc\.teams\.microsoft\.com"
    r"|smba\.infra\.(?:gov|dod)\.teams\.microsoft\.us)|https?://(?:127\.0\.0\.1|localhost)(?::[0-9]{1,5})?)"
    r"(?:/[A-Za-z0-9_.~-]*)*/?$")


@dataclass(frozen=True)
class Place:
    """One key of a destination's mapping: what it must look like, what it is (said when it does not),
    and its default (None: required)."""

    key: str
    pattern: re.Pattern[str]
    what: str
    default: str | None = None


# Where a schedule may post: one line per platform, its key in the file and the keys of its mapping
# (the first names the place; together they are the reply reference the platform's wire reads).
DESTINATIONS: dict[str, tuple[Place, ...]] = {
    "slack": (Place("channel", re.compile(r"^[CGD][A-Z0-9]{2,30}$"),
                    "a Slack channel id such as C0123ABCD (channel details, at the bottom)"),),
    "discord": (Place("channel", re.compile(r"^[0-9]{15,25}$"),
                      "a Discord channel id: digits (Developer Mode, Copy Channel ID)"),),
    "teams": (Place("conversation", re.compile(r"^(?:19:|a:)[A-Za-z0-9_.@:;=-]{1,400}$"),
                    "a Teams conversation id such as 19:...@thread.tacv2 (the conversation.id of an activity "
                    "from there, or the channel link's id, URL-decoded)"),
              Place("service_url", _SERVICE_URL_RE,
                    f"the Bot Framework connector's service URL of the tenant, such as {TEAMS_SERVICE_URL} (the "
                    "serviceUrl of an activity from there; the bot's token is sent there, so only the "
                    "connector's hosts)", default=TEAMS_SERVICE_URL)),
}
CHANNEL_KEYS = tuple(DESTINATIONS)
KEYS = ("description", "cron", "timezone", "agent", "flow", "input", *CHANNEL_KEYS, "catch_up")


@dataclass(frozen=True)
class Post:
    """One place a schedule posts its result: a platform, and its destination's keys and values (defaults
    filled in), as the platform's reply reference names it."""

    platform: str
    place: tuple[tuple[str, str], ...]

    @property
    def where(self) -> str:
        """The place's first key's value: the channel or conversation id."""
        return self.place[0][1]

    def to_dict(self) -> dict[str, str]:
        return {"platform": self.platform, **dict(self.place)}

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
    post_to: tuple[Post, ...]      # in the order the file names them: the first is the job's own reply
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
    for key, places in DESTINATIONS.items():
        if key in data:
            _lint_destination(key, places, data[key], add)
    if not any(k in data for k in CHANNEL_KEYS):
        add("$", "the schedule posts nowhere", "add " + " or ".join(
            f"{k}: {{{', '.join(f'{p.key}: ...' for p in places if p.default is None)}}}"
            for k, places in DESTINATIONS.items()))
    if "catch_up" in data and not isinstance(data["catch_up"], bool):
        add("$.catch_up", f"catch_up is true or false, not {data['catch_up']!r}", "catch_up: true")
    if "description" in data and not isinstance(data["description"], str):
        add("$.description", "description is text", "describe the schedule in one line")


def _lint_destination(key: str, places: tuple[Place, ...], where: Any, add: Add) -> None:
    keys = {p.key for p in places}
    needed = [p.key for p in places if p.default is None]
    shape = f"{key}: {{{', '.join(f'{k}: ...' for k in needed)}}}"
    if not isinstance(where, dict) or not set(needed) <= set(where) or not set(where) <= keys:
        optional = sorted(keys - set(needed))
        add(f"$.{key}", f"{key}: is a mapping with {'one key' if len(needed) == 1 else 'the keys'} {', '.join(needed)}"
            + (f" (and optionally {', '.join(optional)})" if optional else ""), shape)
        return
    for place in places:
        value = where.get(place.key, place.default)
        if not isinstance(value, str) or not place.pattern.match(value):
            add(f"$.{key}.{place.key}", f"{value!r} is not {place.what}", "quote it as text")


def _post(key: str, where: Mapping[str, Any]) -> Post:
    return Post(key, tuple((p.key, str(where.get(p.key, p.default))) for p in DESTINATIONS[key]))


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
        input=data.get("input", ""), post_to=tuple(_post(k, data[k]) for k in data if k in DESTINATIONS),
        catch_up=bool(data.get("catch_up", False)), description=str(data.get("description", "")))
