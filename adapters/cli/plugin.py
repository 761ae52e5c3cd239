"""`oz0 plugin new|lint|install|uninstall|rollback|list`: write, check, install, remove, roll back and list plugins."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oz0.adapters.cli import upgrade as cli_upgrade
from oz0.adapters.cli.draw import render_payload
from oz0.adapters.cli.errors import CommandError
from oz0.adapters.cli.runtime import open_runtime

if TYPE_CHECKING:
    from oz0.edge.plugins.lint import LintReport

__all__ = ["example_plugin_dir", "register"]


def example_plugin_dir() -> Path:
    """The bundled example plugin, shipped inside the package."""
    from importlib import resources  # defers a costly import (with tempfile and shutil): only `install --example`

    return Path(str(resources.files("oz0.edge") / "example_plugin"))


def register(p: argparse.ArgumentParser) -> None:
    """Fill in `oz0 plugin` with its subcommands; each one's work imports what it uses when it runs."""
    p.description = "Plugins are folders: plugin.yaml and agents/*.yaml, with schemas under schemas/."
    psub = p.add_subparsers(dest="plugin_command", metavar="SUBCOMMAND", required=True)

    new = psub.add_parser("new", help="scaffold a plugin with a working python agent and its test",
                          description="Write a new plugin whose agent declares input: text and output: text.")
    new.add_argument("name", metavar="NAME", help="the plugin's name: lower-case letters, digits, dashes")
    new.add_argument("dir", metavar="DIR", nargs="?", help="where to write it (default: ./NAME)")
    new.add_argument("--flow", action="store_true",
                     help="also write an example flow (flows/NAME-release.yaml: an agent step, a person step, "
                          "a conditional step) with its agents and test")
    new.set_defaults(func=_new)

    lint = psub.add_parser("lint", help="check a plugin folder and list every finding",
                           description=("Check a plugin: its manifests, its agents' contracts and schemas. "
                                        "Each finding names the file, the JSON path, what is wrong and how "
                                        "to mend it."),
                           epilog="Exit codes: 0 no errors (warnings allowed), 1 errors.")
    lint.add_argument("dir", metavar="DIR", help="the plugin folder")
    lint.add_argument("--json", action="store_true", help="print one QZX result instead of lines")
    lint.set_defaults(func=_lint)

    install = psub.add_parser("install", help="lint, then install a plugin for every replica",
                              description=("Lint the plugin (errors refuse the install), store its archive in "
                                           "the journal's database and record its version, agents and "
                                           "contracts; every replica sharing the database serves it."))
    install.add_argument("dir", metavar="DIR", nargs="?", help="the plugin folder")
    install.add_argument("--example", action="store_true", help="install the bundled example plugin")
    install.add_argument("--allow-breaking", action="store_true",
                         help="install even when the new version breaks the installed one's contracts")
    install.add_argument("--force", action="store_true",
                         help="replace a version installed before with other content (audited as "
                              "plugin.version.replaced); without it, a changed plugin needs a new version")
    install.add_argument("--quiet-if-current", action="store_true",
                         help="print nothing when this exact version is already installed")
    install.set_defaults(func=_install)

    pre = psub.add_parser("preinstall", help="install each plugin folder under DIR whose content was never stored",
                          description=("Lint and install every plugin folder under DIR (or DIR itself), skipping "
                                       "those whose content the database has stored before: a deploy step may run "
                                       "it at every start (oz0 serve does, with OZ0_PREINSTALL=DIR)."),
                          epilog="Exit codes: 0 every folder installed or already stored, 1 any refused.")
    pre.add_argument("dir", metavar="DIR", help="a folder of plugin folders, or one plugin folder")
    pre.set_defaults(func=_preinstall)

    uninstall = psub.add_parser("uninstall", help="uninstall a plugin on every replica (its versions are kept)",
                                description=("Stop serving the plugin's agents, on every replica. Its stored "
                                             "versions stay, for `oz0 plugin rollback` or a new install; audited."))
    uninstall.add_argument("name", metavar="NAME", help="the plugin's name")
    uninstall.set_defaults(func=_uninstall)

    rollback = psub.add_parser("rollback", help="install again the version stored before the current one",
                               description=("Make the plugin's previous stored version the installed one, on "
                                            "every replica; the upgrade check applies as for an install; audited."))
    rollback.add_argument("name", metavar="NAME", help="the plugin's name")
    rollback.add_argument("--allow-breaking", action="store_true",
                          help="roll back even when the earlier version breaks the installed one's contracts")
    rollback.add_argument("--force", action="store_true",
                          help="roll back to a version whose number was installed again with other content")
    rollback.set_defaults(func=_rollback)

    listing = psub.add_parser("list", help="installed plugins, versions, agents and contracts")
    listing.add_argument("--json", action="store_true", help="print one QZX result")
    listing.set_defaults(func=_list)

    cli_upgrade.register_openapi(psub)
    cli_upgrade.register_diff(psub)


def _new(args: argparse.Namespace) -> int:
    from oz0.edge.flows.scaffold import ScaffoldError, scaffold_plugin

    try:
        files = scaffold_plugin(args.name, args.dir, flow=args.flow)
    except ScaffoldError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write the plugin: {exc.strerror or exc}", code=1) from None
    root = files[0].parent
    print(f"Created plugin {args.name} in {root}:")
    for path in files:
        print(f"  {path}")
    print("Next:")
    print(f"  oz0 plugin lint {root}")
    print(f"  oz0 plugin install {root}")
    print(f"  oz0 run {args.name} \"hello there\"")
    if args.flow:
        print(f"  oz0 serve   (then run {args.name}-release in the console, and answer its question on the job page)")
    print(f"  python -m pytest {root / 'tests'}")
    return 0


def _summary(report: LintReport) -> str:
    e, w = len(report.errors), len(report.warnings)
    return f"{e} error{'s' * (e != 1)}, {w} warning{'s' * (w != 1)}"


def _lint(args: argparse.Namespace) -> int:
    from oz0.edge.plugins.lint import lint_plugin

    started = time.monotonic()
    report = lint_plugin(args.dir, installed=_installed_here(args.dir))
    if args.json:
        from oz0.adapters.cli.json_out import emit_result  # defers a costly import (the QZX result model): --json only

        data = {"findings": [f.to_dict() for f in report.findings]}
        if report.ok:
            return emit_result("plugin lint", True, f"{args.dir}: no errors ({_summary(report)}).", data=data,
                               warnings=[f.describe() for f in report.warnings], started=started)
        return emit_result("plugin lint", False, f"{args.dir}: {_summary(report)}.", data=data,
                           error=report.errors[0].describe(), error_code="lint_errors", started=started)
    for finding in report.findings:
        print(finding.describe())
    print(f"{args.dir}: {_summary(report)}")
    return 0 if report.ok else 1


def _installed_here(folder: str | Path) -> dict[str, Any] | None:
    """The agents and flows installed under OZ0_HOME, for the references of the plugin's flows; None
    for a plugin without flows (nothing to ask for). With no store here yet nothing is installed, so a
    flow step naming an agent the plugin lacks is an error, in lint as in install."""
    import os

    if not (Path(folder) / "flows").is_dir():
        return None
    from oz0.edge.runtime.runner import default_home

    if not os.environ.get("OZ0_DATABASE_URL") and not (default_home() / "oz0.db").is_file():
        return {}
    runtime = open_runtime()
    try:
        return {a.name: a for a in (*runtime.agents(), *runtime.flows())}
    finally:
        runtime.close()


def _install(args: argparse.Namespace) -> int:
    from oz0.edge import PluginError
    from oz0.edge.documents.compat import UpgradeRefused
    from oz0.edge.plugins.lint import lint_plugin
    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin

    if args.example == bool(args.dir):
        raise CommandError("give the plugin folder DIR, or --example for the bundled example plugin")
    folder = example_plugin_dir() if args.example else Path(args.dir)
    report = lint_plugin(folder, installed=_installed_here(folder))
    for finding in report.findings:
        print(finding.describe(), file=sys.stderr)
    if not report.ok:
        raise CommandError(f"not installed: {folder} has {_summary(report)}; mend the errors above "
                           f"(oz0 plugin lint {folder})", code=1)
    try:
        plugin = load_plugin(folder)
    except PluginError as exc:
        raise CommandError(f"not installed: {exc}", code=1) from None
    runtime = open_runtime()
    try:
        result = install_plugin(runtime, plugin, allow_breaking=args.allow_breaking, force=args.force)
    except UpgradeRefused as exc:
        print(cli_upgrade.refusal_line(exc), file=sys.stderr)
        return 1
    except PluginError as exc:
        raise CommandError(f"not installed: {exc}", code=1) from None
    finally:
        runtime.close()
    v = result.version
    if result.unchanged:
        if not args.quiet_if_current:
            print(f"{v.plugin} {v.version} is already installed with the same content; nothing to do.")
        return 0
    was = ""
    if result.previous is not None:
        was = (f" (content replaced, same version {v.version}, --force)" if result.previous.version == v.version
               else f" (was {result.previous.version})")
    names = ", ".join(a.name for a in v.agents) or "no agents"
    print(f"Installed {v.plugin} {v.version}{was}: {len(v.agents)} agent{'s' * (len(v.agents) != 1)} "
          f"({names}) into {runtime.home}")
    cli_upgrade.print_changes(result.changes)
    if result.previous is not None:
        for line in cli_upgrade.contract_hash_lines({a.name: a.contract_hash for a in result.previous.agents},
                                                    {a.name: a.contract_hash for a in v.agents}):
            print(line)
    return 0


def _preinstall(args: argparse.Namespace) -> int:
    from oz0.edge.runtime.plugin_sync import preinstall

    runtime = open_runtime()
    try:
        done = preinstall(runtime, Path(args.dir))
    finally:
        runtime.close()
    for folder, why in done.refused:
        print(f"not pre-installed: {folder}: {why}", file=sys.stderr)
    if done.installed:
        print(f"Pre-installed {', '.join(done.installed)}.")
    elif not done.refused:
        print(f"Nothing to pre-install from {args.dir}: every plugin there was stored before.")
    return 1 if done.refused else 0


def _uninstall(args: argparse.Namespace) -> int:
    from oz0.edge.runtime.plugin_admin import PluginStateError, uninstall_plugin

    runtime = open_runtime()
    try:
        removed = uninstall_plugin(runtime, args.name)
    except PluginStateError as exc:
        raise CommandError(f"not uninstalled: {exc}", code=1) from None
    finally:
        runtime.close()
    names = ", ".join(a.name for a in removed.agents) or "no agents"
    print(f"Uninstalled {removed.plugin} {removed.version} ({names}); its versions stay stored "
          f"(oz0 plugin install, or oz0 plugin rollback after a new install).")
    return 0


def _rollback(args: argparse.Namespace) -> int:
    from oz0.edge import PluginError
    from oz0.edge.documents.compat import UpgradeRefused
    from oz0.edge.runtime.plugin_admin import PluginStateError, rollback_plugin

    runtime = open_runtime()
    try:
        result = rollback_plugin(runtime, args.name, allow_breaking=args.allow_breaking, force=args.force)
    except UpgradeRefused as exc:
        print(cli_upgrade.refusal_line(exc), file=sys.stderr)
        return 1
    except (PluginError, PluginStateError) as exc:
        raise CommandError(f"not rolled back: {exc}", code=1) from None
    finally:
        runtime.close()
    v, was = result.version, result.previous
    print(f"Rolled back {v.plugin} to {v.version}" + (f" (was {was.version})" if was is not None else ""))
    cli_upgrade.print_changes(result.changes)
    return 0


def _contract(file: str | None, digest: str | None) -> str:
    if file is None:
        return "text"
    return f"{file} (sha256:{digest[:8]})" if digest else file


def _contract_id(digest: str | None, version: str | None) -> str:
    """An agent's contract hash (its first 12 hex digits, as `oz0 plugin list --json` gives it whole)
    and the version that introduced it; `-` for an agent installed before contract hashes."""
    if digest is None:
        return "-"
    return f"{digest[:12]} (since {version})" if version else digest[:12]


def _budget(budget: Any) -> str:
    """A declared budget in a table cell: `20,000 tokens, $0.50 per job (ask)`; `-` for none."""
    if budget is None:
        return "-"
    return f"{budget.describe()} per {budget.per}" + (" (ask)" if budget.on_exhausted == "ask" else "")


def _conversation(spec: Any) -> str:
    """A thread's conversation bounds in a table cell (`10 turns/4000 tok/8h +history`); "-" for the defaults."""
    from oz0.edge.model.agent import ConversationLimits  # defers a costly import (the agent model): `plugin list` only

    if spec is None or (spec.conversation == ConversationLimits() and not spec.history):
        return "-"
    c = spec.conversation
    return f"{c.max_turns} turns/{c.max_tokens} tok/{c.idle_hours:g}h" + (" +history" if spec.history else "")


def _loop(spec: Any) -> str:
    """A model agent's tools and its loop's max_steps (default 10): `3 tools, ≤10 steps`."""
    tools = getattr(spec, "tools", ())
    if not tools:
        return "-"
    return f"{len(tools)} tool{'s' * (len(tools) != 1)}, ≤{spec.limits.max_steps} steps"


def _loop_json(spec: Any) -> dict[str, Any]:
    tools = getattr(spec, "tools", ())
    from oz0.edge.documents.openapi import tools_json

    return {"tools": tools_json(spec), "max_steps": spec.limits.max_steps} if tools else {}


def _list(args: argparse.Namespace) -> int:
    from oz0.edge import Card
    from oz0.edge.model.agent import ConversationLimits  # defers a costly import (the agent model): `plugin list` only
    from oz0.edge.plugins.history import MAX_AUDIT_SCAN, latest_changes, latest_json

    runtime = open_runtime()
    try:
        versions = runtime.installed()
        latest = latest_changes(runtime.audit_log(limit=MAX_AUDIT_SCAN))
        specs = {(p.name, a.name): a for p in runtime.plugins() for a in (*p.agents, *p.flows)}
    finally:
        runtime.close()

    def declared(plugin: str, agent: str, key: str) -> Any:
        value = getattr(specs.get((plugin, agent)), key, None)
        return value.as_json() if value is not None else None

    def annotations(plugin: str, agent: str) -> dict[str, Any]:
        from oz0.edge.runtime.confirm import known_annotations

        spec = specs.get((plugin, agent))
        return known_annotations(spec) if spec is not None else {}

    if args.json:
        from oz0.adapters.cli.json_out import emit_result  # defers a costly import (the QZX result model): --json only

        plugins = [{"name": v.plugin, "version": v.version, "content_hash": v.content_hash,
                    "path": str(runtime.plugin_cache.path(v.content_hash)),
                    "agents": [{"name": a.name, "kind": a.kind,
                                "input": _contract(a.input_schema_file, a.input_hash),
                                "output": _contract(a.output_schema_file, a.output_hash),
                                "failures": dict(a.failures), "contract_hash": a.contract_hash,
                                "contract_version": a.contract_version,
                                "budget": declared(v.plugin, a.name, "budget"),
                                "price": declared(v.plugin, a.name, "price"),
                                "annotations": annotations(v.plugin, a.name),
                                "conversation": declared(v.plugin, a.name, "conversation"),
                                "history": bool(getattr(specs.get((v.plugin, a.name)), "history", False)),
                                **_loop_json(specs.get((v.plugin, a.name)))}
                               for a in v.agents],
                    "latest_changes": latest_json(latest.get(v.plugin))} for v in versions]
        return emit_result("plugin list", True, f"{len(versions)} plugin{'s' * (len(versions) != 1)} installed.",
                           data={"plugins": plugins})
    if not versions:
        print("No plugins installed. Try: oz0 plugin install --example")
        return 0
    rows = tuple((v.plugin, v.version, a.name, a.kind, _contract(a.input_schema_file, a.input_hash),
                  _contract(a.output_schema_file, a.output_hash), _contract_id(a.contract_hash, a.contract_version),
                  _conversation(specs.get((v.plugin, a.name))),
                  _budget(getattr(specs.get((v.plugin, a.name)), "budget", None)),
                  _loop(specs.get((v.plugin, a.name))))
                 for v in versions for a in v.agents)
    columns = ("plugin", "version", "agent", "kind", "input", "output", "contract", "conversation", "budget", "tools")
    # no conversation bound of its own, no budget, no tool loop anywhere: that column would be empty
    keep = [i for i, name in enumerate(columns)
            if name not in ("conversation", "budget", "tools") or any(row[i] != "-" for row in rows)]
    rows, columns = tuple(tuple(row[i] for i in keep) for row in rows), tuple(columns[i] for i in keep)
    card = Card(form="table", title=f"Installed plugins ({runtime.home})", columns=columns, rows=rows)
    print(render_payload(card, "text").rstrip("\n"))
    d = ConversationLimits()
    print(f"Conversations in chat threads keep {d.max_turns} turns, {d.max_tokens:,} tokens, {d.idle_hours:g}h idle "
          "unless an agent says otherwise (conversation:).")
    cli_upgrade.print_latest_changes(versions, latest)
    return 0
