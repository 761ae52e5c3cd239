"""The upgrade check's policy: which version may break which contracts, and refusing an install that
breaks them without a new major version.

A change is breaking when a caller that worked with the old contract can fail with the new one
(edge.documents.diff finds the changes). A breaking change needs a new major version in the sense of
Cargo and npm carets, or an install with `--allow-breaking`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from oz0.edge.contracts.changes import Change, CompatError
from oz0.edge.contracts.schema import ContractError, load_contract
from oz0.edge.documents.diff import compare_agents
from oz0.edge.errors import Oz0Error
from oz0.edge.model.agent import AgentSpec, FailureKind, PersonAsk
from oz0.edge.model.flow import FlowSpec
from oz0.edge.model.installed import InstalledVersion
from oz0.edge.model.tools import ToolDecl
from oz0.edge.plugins.flow_manifest import stored_steps
from oz0.edge.plugins.manifest import Plugin

__all__ = [
    "UpgradeRefused",
    "check_upgrade",
    "installed_agents",
    "is_major_bump",
    "refusal_message",
    "required_version_bump",
]

_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def _parse_version(version: str) -> tuple[tuple[int, int, int], str | None]:
    match = _VERSION.match(version)
    if match is None:
        raise ValueError(f"{version!r} is not a semantic version (MAJOR.MINOR.PATCH)")
    return (int(match[1]), int(match[2]), int(match[3])), match[4]


def required_version_bump(old: str) -> str:
    """The least version that counts as a new major version after `old`: its first non-zero part goes
    up and everything after it goes to zero (1.4.0 -> 2.0.0, 0.2.1 -> 0.3.0, 0.0.3 -> 0.0.4), the
    rule of Cargo and npm carets. 0.0.0 -> 0.0.1."""
    (major, minor, patch), _ = _parse_version(old)
    if major:
        return f"{major + 1}.0.0"
    if minor:
        return f"0.{minor + 1}.0"
    return f"0.0.{patch + 1}"


def is_major_bump(old: str, new: str) -> bool:
    """Whether `new` is outside the caret range of `old`, so it may break its contracts.

    A pre-release of the next major version counts (2.0.0-rc.1 after 1.4.0): it is not in ^1.4.0.
    """
    new_parts, _ = _parse_version(new)
    least, _ = _parse_version(required_version_bump(old))
    return new_parts >= least


def refusal_message(plugin: str, old_version: str, new_version: str, changes: Iterable[Change]) -> str:
    """Why an install is refused: `team 0.1.1 breaks the contracts of 0.1.0: helper: input: ...;
    give it a new major version, or install it with --allow-breaking`."""
    clauses = "; ".join(c.clause() for c in changes if c.breaking)
    return (f"{plugin} {new_version} breaks the contracts of {old_version}: {clauses}; "
            "give it a new major version, or install it with --allow-breaking")


class UpgradeRefused(Oz0Error, ValueError):
    """An install the upgrade check refuses; `code` is the error code the CLI and API show."""

    code = "invalid_argument"

    def __init__(self, message: str, *, changes: Iterable[Change] = ()) -> None:
        super().__init__(f"invalid request: {message}")
        self.changes = tuple(changes)


def installed_agents(version: InstalledVersion) -> list[AgentSpec]:
    """The agents and flows of an installed version as the store keeps them: their contracts, not
    their files (a flow's person steps are kept with it, edge.runtime.install)."""
    def contract(schema: Any, file: str | None) -> Any:
        if schema is None:
            return None
        return load_contract(schema, source=f"{version.plugin} {version.version}: {file or 'schema'}")

    def make(a: Any, **fields: Any) -> AgentSpec:
        if a.kind != "flow":
            asks = tuple(PersonAsk(s["step"], contract(s.get("answer_schema") or {}, f"asks.{s['step']}"))
                         for s in a.limits.get("person_steps") or [])
            return AgentSpec(**fields, asks=asks,
                             tools=tuple(ToolDecl.from_json(t) for t in a.limits.get("tools") or ()))
        return FlowSpec(**fields, steps=stored_steps(a.limits.get("person_steps") or [], source=version.plugin))

    return [make(a,
        name=a.name, plugin=version.plugin, kind=a.kind, file="", description=a.description,
        input=contract(a.input_schema, a.input_schema_file), output=contract(a.output_schema, a.output_schema_file),
        input_schema_file=a.input_schema_file, output_schema_file=a.output_schema_file,
        failures=tuple(FailureKind(name, bool(f.get("retryable")), bool(f.get("partial")), bool(f.get("person")),
                                   str(f.get("description") or "")) for name, f in a.failures.items()),
    ) for a in version.agents]


def check_upgrade(previous: InstalledVersion | None, plugin: Plugin, *, allow_breaking: bool = False) -> list[Change]:
    """The changes from the installed version to `plugin`, checked before anything is stored.

    Raises UpgradeRefused when a change breaks callers and the version is not a new major one (and
    `allow_breaking` is off), or when the two cannot be compared.
    """
    if previous is None:
        return []
    try:
        changes = compare_agents(installed_agents(previous), (*plugin.agents, *plugin.flows))
    except (CompatError, ContractError) as exc:
        raise UpgradeRefused(f"cannot compare the contracts of {plugin.name} {plugin.version} with those of "
                             f"{previous.version}: {exc}") from None
    if any(c.breaking for c in changes) and not allow_breaking and not is_major_bump(previous.version, plugin.version):
        raise UpgradeRefused(refusal_message(plugin.name, previous.version, plugin.version, changes), changes=changes)
    return changes
