"""Who may ask which agent, where: `OZ0_HOME/access.yaml`, shared by every channel.

    default: deny            # what happens when no rule matches (allow when omitted)
    rules:                   # first rule that matches the agent and the asker decides
      - allow: [deploys, "incident-*"]     # agent names or globs
        platform: slack                    # optional: slack, discord, teams, console, cli
        workspace: T0123                   # optional: Slack team id, Discord guild id, Teams tenant id
        teams: ["19:abc@thread.tacv2"]     # optional: Microsoft Teams team ids (the team a channel is in)
        channels: [C0456]                  # optional
        users: [U0789]                     # optional; with groups: the user OR one of the groups
        groups: [S0ABC]                    # optional: Slack user group ids, Discord role ids, Entra group ids
      - deny: ["*"]
        channels: [C0DEAD]
    dms: false               # Discord: whether direct messages to the bot are asks (a DM has no channel
                             # to check, so off unless said)
    budgets:                 # optional: what the jobs asked in a place may spend (edge.runtime.budgets)
      - workspace: T0123     # the same conditions as a rule (platform, workspace, channels), none: everywhere
        channels: [C0456]
        cost: 5.00           # and tokens, calls, per (day, the default here, or job), on_exhausted

Without the file every agent may be asked everywhere the bot is. A broken file is an error at start,
never a silent "allow". Neither is a group the platform could not be asked about: when an asker's
groups cannot be read (`Asker.groups_error`), a rule that would need them refuses, saying why.
"""

from __future__ import annotations

import fnmatch
import getpass
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from oz0.edge.errors import Oz0Error
from oz0.edge.model.budget import Budget, BudgetDeclarationError, parse_budget

__all__ = ["AccessBudget", "AccessError", "AccessPolicy", "AccessRule", "Asker", "local_user"]

_CONDITIONS = ("platform", "workspace", "teams", "channels", "users", "groups")


class AccessError(Oz0Error, ValueError):
    """access.yaml cannot be read: names the file and the rule."""


@dataclass(frozen=True)
class Asker:
    """Who asks, and where: what a channel knows about a request."""

    platform: str
    workspace: str | None = None
    channel: str | None = None
    user: str | None = None
    groups: tuple[str, ...] = ()
    team: str | None = None                 # the team the channel is in (Microsoft Teams), else None
    groups_error: str | None = None         # why the groups could not be read: rules naming groups refuse


@dataclass(frozen=True)
class AccessRule:
    effect: str
    agents: tuple[str, ...]
    platform: str | None = None
    workspace: str | None = None
    channels: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    index: int = 0
    teams: tuple[str, ...] = ()

    def covers(self, agent: str) -> bool:
        return any(fnmatch.fnmatchcase(agent, pattern) for pattern in self.agents)

    def matches(self, asker: Asker) -> bool:
        if not self.place_matches(asker):
            return False
        if self.users or self.groups:
            return asker.user in self.users or bool(set(self.groups) & set(asker.groups))
        return True

    def place_matches(self, asker: Asker) -> bool:
        """Whether the asker is where this rule applies (platform, workspace, team, channel)."""
        return ((self.platform is None or self.platform == asker.platform)
                and (self.workspace is None or self.workspace == asker.workspace)
                and (not self.teams or asker.team in self.teams)
                and (not self.channels or asker.channel in self.channels))

    def undecidable(self, asker: Asker) -> bool:
        """The rule would ask the asker's groups, which could not be read: it cannot say yes or no."""
        return (bool(self.groups) and asker.groups_error is not None and asker.user not in self.users
                and self.place_matches(asker))


@dataclass(frozen=True)
class AccessBudget:
    """A budget of access.yaml: what the jobs asked where it matches may spend, together."""

    budget: Budget
    name: str
    platform: str | None = None
    workspace: str | None = None
    channels: tuple[str, ...] = ()

    def matches(self, asker: Asker) -> bool:
        return ((self.platform is None or self.platform == asker.platform)
                and (self.workspace is None or self.workspace == asker.workspace)
                and (not self.channels or asker.channel in self.channels))


@dataclass(frozen=True)
class AccessPolicy:
    default: str = "allow"
    rules: tuple[AccessRule, ...] = ()
    source: str = "(no access.yaml: every agent, everywhere)"
    budgets: tuple[AccessBudget, ...] = ()
    dms: bool = False

    @classmethod
    def load(cls, home: str | Path) -> AccessPolicy:
        """The policy in `home/access.yaml`, or allow-all when there is no such file."""
        path = Path(home) / "access.yaml"
        if not path.exists():
            return cls()
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise AccessError(f"{path}: cannot read access rules: {exc}") from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "access.yaml") -> AccessPolicy:
        if not isinstance(data, dict):
            raise AccessError(f"{source}: expected a mapping with 'default' and 'rules'")
        default = data.get("default", "allow")
        if default not in ("allow", "deny"):
            raise AccessError(f"{source}: default must be 'allow' or 'deny', not {default!r}")
        rules = []
        for i, raw in enumerate(data.get("rules") or []):
            rules.append(_rule(raw, i, source))
        unknown = set(data) - {"default", "rules", "budgets", "dms"}
        if unknown:
            raise AccessError(f"{source}: unknown keys {sorted(unknown)}; expected 'default', 'rules', 'budgets' "
                              "and 'dms'")
        dms = data.get("dms", False)
        if not isinstance(dms, bool):
            raise AccessError(f"{source}: dms must be true or false, not {dms!r}")
        budgets = tuple(_budget(raw, i, source) for i, raw in enumerate(data.get("budgets") or []))
        return cls(default, tuple(rules), source, budgets, dms)

    def decide(self, agent: str, asker: Asker) -> tuple[bool, AccessRule | None]:
        """Whether `asker` may run `agent`, and the rule that decided (None: the default)."""
        for rule in self.rules:
            if rule.covers(agent) and rule.undecidable(asker):
                return False, rule    # never allowed (nor let past a deny) on groups nobody could read
            if rule.covers(agent) and rule.matches(asker):
                return rule.effect == "allow", rule
        return self.default == "allow", None

    def allows(self, agent: str, asker: Asker) -> bool:
        return self.decide(agent, asker)[0]

    def allowed_agents(self, agents: Iterable[str], asker: Asker) -> list[str]:
        return [a for a in agents if self.allows(a, asker)]

    def explain_denial(self, agent: str, asker: Asker) -> str:
        """A sentence for the person who was refused: what was refused and who can change it."""
        _, rule = self.decide(agent, asker)
        if rule is not None and rule.undecidable(asker):
            return (f"You may not run '{agent}' here now: rule {rule.index + 1} of the access rules depends on "
                    f"your groups, and {asker.groups_error}. Nothing was run; ask again in a minute.")
        why = f"rule {rule.index + 1} of the access rules" if rule else "the default of the access rules"
        return (f"You may not run '{agent}' here ({why}). Ask the bot's administrator to allow it in "
                "access.yaml.")


def _rule(raw: Any, index: int, source: str) -> AccessRule:
    where = f"{source}: rules[{index}]"
    if not isinstance(raw, dict):
        raise AccessError(f"{where}: a rule is a mapping with 'allow' or 'deny'")
    effects = [k for k in ("allow", "deny") if k in raw]
    if len(effects) != 1:
        raise AccessError(f"{where}: a rule has exactly one of 'allow' or 'deny' (a list of agents)")
    unknown = set(raw) - {"allow", "deny", *_CONDITIONS}
    if unknown:
        raise AccessError(f"{where}: unknown keys {sorted(unknown)}; conditions are {', '.join(_CONDITIONS)}")
    agents = _strings(raw[effects[0]], f"{where}.{effects[0]}")
    return AccessRule(
        effect=effects[0], agents=agents, index=index,
        platform=_scalar(raw.get("platform"), f"{where}.platform"),
        workspace=_scalar(raw.get("workspace"), f"{where}.workspace"),
        teams=_strings(raw.get("teams", []), f"{where}.teams"),
        channels=_strings(raw.get("channels", []), f"{where}.channels"),
        users=_strings(raw.get("users", []), f"{where}.users"),
        groups=_strings(raw.get("groups", []), f"{where}.groups"),
    )


def _budget(raw: Any, index: int, source: str) -> AccessBudget:
    where = f"budgets[{index}]"
    if not isinstance(raw, dict):
        raise AccessError(f"{source}: {where}: a budget is a mapping of conditions and limits")
    conditions = {"name", "platform", "workspace", "channels"}
    try:
        budget = parse_budget({k: v for k, v in raw.items() if k not in conditions}, f"$.{where}", default_per="day")
    except BudgetDeclarationError as exc:
        raise AccessError(f"{source}: {exc.path[2:]}: {exc.message}") from None
    assert budget is not None
    platform = _scalar(raw.get("platform"), f"{source}: {where}.platform")
    workspace = _scalar(raw.get("workspace"), f"{source}: {where}.workspace")
    channels = _strings(raw.get("channels", []), f"{source}: {where}.channels")
    name = _scalar(raw.get("name"), f"{source}: {where}.name") or "/".join(
        (platform or "*", workspace or "*", ",".join(channels) or "*"))
    return AccessBudget(budget, name, platform, workspace, channels)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, (str, int)):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value):
        raise AccessError(f"{where}: expected a list of names or ids")
    return tuple(str(v) for v in value)


def _scalar(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, int)):
        raise AccessError(f"{where}: expected one name or id")
    return str(value)


def local_user() -> str:
    """Who is asking from this machine's shell: `cli:<login>`, for the journal and the audit log."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in this environment (a container without passwd)
        return "cli"
