"""`oz0 plugin openapi` and `oz0 plugin diff`: a plugin's OpenAPI document, and what an upgrade changes.

These are subcommands of the `plugin` group (adapters/cli/plugin.py registers them). The install's
side of the upgrade check (refuse, print the changes) also formats its lines here, so the three
commands word a change the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from oz0.adapters.cli.draw import render_payload
from oz0.adapters.cli.errors import CommandError

if TYPE_CHECKING:  # the upgrade check and OpenAPI are imported by the functions that use them, when they run
    from oz0.edge.contracts.changes import Change
    from oz0.edge.documents.compat import UpgradeRefused
    from oz0.edge.plugins.manifest import Plugin

__all__ = [
    "change_lines",
    "contract_hash_lines",
    "print_changes",
    "print_latest_changes",
    "refusal_line",
    "register_diff",
    "register_openapi",
]


def _load(folder: str) -> Plugin:
    """The plugin folder as install sees it: an `mcp` agent's contracts (and its tool's annotations) read
    from its server, started as install starts it, under the agent's limits; one line when it cannot be."""
    from oz0.edge.mcp.tool_contracts import with_listed_contracts
    from oz0.edge.plugins.declared import PluginError
    from oz0.edge.plugins.manifest import load_plugin

    try:
        return with_listed_contracts(load_plugin(folder))
    except PluginError as exc:
        raise CommandError(f"cannot load the plugin: {exc}") from None


def register_openapi(plugin_sub: argparse._SubParsersAction) -> None:
    p = plugin_sub.add_parser(
        "openapi", help="print the OpenAPI 3.1 document of a plugin's agents",
        description=("Print the OpenAPI 3.1 document `oz0 serve` would publish for a plugin folder: one POST "
                     "/agents/{name}/runs operation per agent, its request body from the input contract, its "
                     "200 response from the output contract, its examples, and its failure kinds as error "
                     "responses with x-retryable, x-partial and x-person. An mcp agent's contracts and "
                     "annotations are its tool's, read from its server as install reads them."),
        epilog="Exit codes: 0 printed, 2 the plugin cannot be loaded or an MCP server cannot be reached.")
    p.add_argument("dir", metavar="DIR", help="the plugin folder")
    p.set_defaults(func=_openapi)


def _openapi(args: argparse.Namespace) -> int:
    from oz0.adapters.console.api_doc import api_document
    from oz0.edge.mcp.pool import servers

    try:
        plugin = _load(args.dir)
    finally:
        servers().close()
    document = api_document((*plugin.agents, *plugin.flows), versions={plugin.name: plugin.version})
    document["info"] = {"title": plugin.name, "version": plugin.version}
    if plugin.description:
        document["info"]["description"] = plugin.description
    if plugin.license:
        document["info"]["license"] = {"name": plugin.license, "identifier": plugin.license}
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return 0


def register_diff(plugin_sub: argparse._SubParsersAction) -> None:
    p = plugin_sub.add_parser(
        "diff", help="list what a new version of a plugin changes in its contracts, and what breaks",
        description=("Compare the OpenAPI documents of two versions of a plugin operation by operation "
                     "and list every change: agent, direction (input, output, failure), JSON path, what "
                     "changed, and whether it breaks callers (the rules of COMPATIBILITY.md)."),
        epilog=("Exit codes: 0 compared (whatever the verdict; the install is what refuses), "
                "2 a plugin cannot be loaded or the two cannot be compared."))
    p.add_argument("old", metavar="OLD_DIR", help="the installed (older) version's folder")
    p.add_argument("new", metavar="NEW_DIR", help="the new version's folder")
    p.add_argument("--json", action="store_true", help="print one QZX result with the changes")
    p.set_defaults(func=_diff)


def _diff(args: argparse.Namespace) -> int:
    from oz0.adapters.cli.json_out import emit_result
    from oz0.edge import Card
    from oz0.edge.contracts.changes import CompatError, breaking_changes
    from oz0.edge.documents.compat import is_major_bump, required_version_bump
    from oz0.edge.documents.contract_hash import contract_hash
    from oz0.edge.documents.diff import compare_agents
    from oz0.edge.mcp.pool import servers

    started = time.monotonic()
    try:
        old, new = _load(args.old), _load(args.new)
    finally:
        servers().close()
    try:
        changes = compare_agents((*old.agents, *old.flows), (*new.agents, *new.flows))
    except CompatError as exc:
        raise CommandError(f"cannot compare {args.old} with {args.new}: {exc}") from None
    verdict = _verdict(old, new, changes)
    if args.json:
        data = {"old": {"name": old.name, "version": old.version},
                "new": {"name": new.name, "version": new.version},
                "breaking": bool(breaking_changes(changes)),
                "required_version": required_version_bump(old.version),
                "major_bump": is_major_bump(old.version, new.version),
                "changes": [c.to_dict() for c in changes]}
        return emit_result("plugin diff", True, verdict, data=data, started=started)
    print(f"{old.name} {old.version} -> {new.name} {new.version}: {verdict}")
    if changes:
        card = Card(form="table", title="Changes",
                    columns=("agent", "direction", "json path", "change", "verdict"),
                    rows=tuple((c.agent, c.direction, c.json_path, c.what,
                                "breaking" if c.breaking else "not breaking") for c in changes))
        print(render_payload(card, "text").rstrip("\n"))
    for line in contract_hash_lines({a.name: contract_hash(a) for a in (*old.agents, *old.flows)},
                                    {a.name: contract_hash(a) for a in (*new.agents, *new.flows)}):
        print(line)
    return 0


def contract_hash_lines(old: Mapping[str, str | None], new: Mapping[str, str | None]) -> list[str]:
    """A line for every agent (or flow) of both versions whose contract hash changed: what a caller that
    pinned the old hash (`If-Match`) must look at again."""
    return [f"contract of {name} changed: {old[name]} -> {new[name]}"
            for name in sorted(old.keys() & new.keys()) if old[name] is not None and old[name] != new[name]]


def _verdict(old: Plugin, new: Plugin, changes: list[Change]) -> str:
    from oz0.edge.contracts.changes import breaking_changes
    from oz0.edge.documents.compat import is_major_bump, required_version_bump

    n, b = len(changes), len(breaking_changes(changes))
    counts = f"{n} change{'s' * (n != 1)}, {b} breaking."
    if not b:
        return counts if n else "no changes."
    if is_major_bump(old.version, new.version):
        return f"{counts} {new.version} is a new major version, so it may break them."
    return (f"{counts} Breaking changes need a new major version ({required_version_bump(old.version)} or "
            "later), or install with --allow-breaking.")


def change_lines(changes: Iterable[Change]) -> list[str]:
    """A change a line, verdict first, as the install prints them."""
    return [f"  {'breaking' if c.breaking else 'not breaking'}: {c.clause()}" for c in changes]


def print_changes(changes: Iterable[Change], *, stream: TextIO | None = None) -> None:
    """What an install that went through changed, after its one-line summary."""
    from oz0.edge.contracts.changes import breaking_changes

    changes = list(changes)
    out = stream or sys.stdout
    if not changes:
        return
    b = len(breaking_changes(changes))
    print(f"Contract changes ({len(changes)}, {b} breaking):", file=out)
    for line in change_lines(changes):
        print(line, file=out)


def refusal_line(exc: UpgradeRefused) -> str:
    """The line an install refused by the upgrade check prints: `Error: invalid_argument: invalid request: ...`."""
    return f"Error: {exc.code}: {exc}"


def print_latest_changes(versions: Iterable[Any], latest: Mapping[str, Mapping[str, Any]]) -> None:
    """Under `plugin list`: what the install of each current version changed, when it changed anything."""
    from oz0.edge.contracts.changes import breaking_changes

    for v in versions:
        entry = latest.get(v.plugin)
        if not entry or entry["version"] != v.version or not entry["changes"]:
            continue
        changes = entry["changes"]
        b = len(breaking_changes(changes))
        print(f"\n{v.plugin} {entry['previous_version']} -> {v.version}: {len(changes)} "
              f"change{'s' * (len(changes) != 1)}, {b} breaking")
        for line in change_lines(changes):
            print(line)
