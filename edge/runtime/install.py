"""Installing a plugin: its files copied under OZ0_HOME, its version, agents and contracts recorded,
after the upgrade check (edge.documents.compat) has passed them. Installing the same content again
changes nothing: a version is known by a hash of every file of its folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from oz0.edge.contracts.changes import Change
from oz0.edge.documents.compat import check_upgrade
from oz0.edge.documents.contract_hash import contract_hash
from oz0.edge.documents.openapi import person_steps
from oz0.edge.mcp.kind import server_for_agent
from oz0.edge.mcp.spec import McpFailure
from oz0.edge.mcp.tool_contracts import with_listed_contracts
from oz0.edge.model.agent import TREE_LIMIT_DEFAULTS, AgentSpec
from oz0.edge.model.installed import InstalledVersion
from oz0.edge.plugins.declared import PluginError, read_yaml
from oz0.edge.plugins.lint_tools import UNBOUNDED_LOOP_FIX, unbounded_loop
from oz0.edge.plugins.manifest import Plugin, load_plugin
from oz0.edge.plugins.pack import content_hash, pack_plugin
from oz0.edge.runtime.access import local_user
from oz0.edge.runtime.redact import Redactor

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["InstallResult", "VersionReused", "agent_row", "content_hash", "contract_version", "install_plugin"]


class VersionReused(PluginError):
    """A version already installed with other content: a version names one content, as on a package
    index, so a changed plugin needs a new version (or `force`, audited as plugin.version.replaced)."""

    def __init__(self, plugin: Plugin, installed_hash: str, new_hash: str) -> None:
        super().__init__(f"{plugin.name} {plugin.version} is already installed with other content (sha256 "
                         f"{installed_hash[:12]}, this is {new_hash[:12]}); give the changed plugin a new version, "
                         "or replace it with --force (force=true over the API)",
                         file=str(Path(plugin.path) / "plugin.yaml"), location="$.version")
        self.installed_hash, self.new_hash = installed_hash, new_hash


class InstallResult:
    """What an install did: the stored version, and whether it was already the current one."""

    def __init__(self, version: InstalledVersion, *, unchanged: bool, previous: InstalledVersion | None,
                 changes: tuple[Change, ...] = ()) -> None:
        self.version = version
        self.unchanged = unchanged
        self.previous = previous
        self.changes = changes


def contract_version(spec: AgentSpec, version: str, previous: InstalledVersion | None) -> str:
    """The plugin version that introduced `spec`'s contract hash: the previous version's, while the
    hash it stored is equal, else `version` (the one being installed)."""
    before = next((a for a in previous.agents if a.name == spec.name), None) if previous is not None else None
    if before is not None and before.contract_hash == contract_hash(spec) and before.contract_version:
        return before.contract_version
    return version


def agent_row(spec: AgentSpec, *, version: str, previous: InstalledVersion | None) -> dict[str, Any]:
    """An agent's row in the plugin store; a flow's (kind `flow`) also keeps its person steps with its
    limits, so a later version's upgrade check can compare them."""
    limits: dict[str, Any] = {"timeout_s": spec.limits.timeout_s, "max_output_bytes": spec.limits.max_output_bytes,
                              "max_attempts": spec.limits.max_attempts, "concurrency": spec.limits.concurrency,
                              **{k: getattr(spec.limits, k) for k in TREE_LIMIT_DEFAULTS}}
    if spec.kind == "flow" or spec.asks:
        limits["person_steps"] = person_steps(spec)
    if spec.tools:  # kept with its limits, so a later version's upgrade check can compare them
        limits["tools"] = [t.as_json() for t in spec.tools]
    return {
        "name": spec.name, "kind": spec.kind, "description": spec.description,
        "input_schema_file": spec.input_schema_file,
        "input_schema": spec.input.schema if spec.input is not None else None,
        "input_hash": spec.input.digest if spec.input is not None else None,
        "output_schema_file": spec.output_schema_file,
        "output_schema": spec.output.schema if spec.output is not None else None,
        "output_hash": spec.output.digest if spec.output is not None else None,
        "failures": {f.name: {"retryable": f.retryable, "partial": f.partial, "person": f.person,
                              "description": f.description} for f in spec.failures},
        "limits": limits,
        "contract_hash": contract_hash(spec),
        "contract_version": contract_version(spec, version, previous),
        "annotations": (dict(spec.listed_annotations) if spec.listed_annotations
                        else {"servers": dict(spec.listed_tools)} if spec.listed_tools else None),
    }


def install_plugin(runtime: Runtime, plugin: Plugin, *, allow_breaking: bool = False,
                   actor: str | None = None, force: bool = False, action: str = "plugin.install") -> InstallResult:
    """Store a linted, loaded plugin: its folder's archive in the database (edge.runtime.plugin_store,
    so every replica runs it from its own cache, edge.runtime.plugin_cache), its version, agents and
    contracts (the schemas themselves and their hashes) recorded and made current in one transaction,
    audited as `action` (`plugin.install`, or `plugin.rollback` for edge.runtime.plugin_admin).
    Installing the same content again changes nothing.

    An `mcp` agent without declared contracts gets its tool's inputSchema/outputSchema from the server's
    listing now (edge.mcp.tool_contracts), stored and upgrade-checked like any other contract.

    Raises PluginError when an agent name belongs to another installed plugin or an mcp agent's tool
    cannot be listed, and UpgradeRefused
    (edge.documents.compat) when the new version breaks the installed one's contracts without a new major version
    or allow_breaking; both before anything is stored. A breaking change let through (by a new major
    version or allow_breaking) is recorded in the audit log as `plugin.contracts.breaking`. A version
    installed before with other content raises VersionReused unless `force` (then audited as
    `plugin.version.replaced`).
    """
    actor = actor or local_user()
    digest = content_hash(plugin.path)
    previous = runtime.store.current_version(plugin.name)
    if previous is not None and previous.version == plugin.version and previous.content_hash == digest:
        return InstallResult(previous, unchanged=True, previous=previous)
    reused = next((v for v in runtime.store.versions(plugin.name)
                   if v.version == plugin.version and v.content_hash != digest), None)
    if reused is not None and not force:
        raise VersionReused(plugin, reused.content_hash, digest)
    owners = {a.name: v.plugin for v in runtime.installed() if v.plugin != plugin.name for a in v.agents}
    for spec in (*plugin.agents, *plugin.flows):
        if spec.name in owners:
            raise PluginError(f"agent {spec.name!r} is already installed by plugin {owners[spec.name]!r}; "
                              "agent names are unique across plugins, so rename one",
                              file=spec.file, location="$.name")
    for spec in plugin.agents:
        _refuse_unbounded_loop(spec)
    plugin = _listed_contracts(plugin)
    changes = tuple(check_upgrade(previous, plugin, allow_breaking=allow_breaking))  # raises UpgradeRefused
    archive = pack_plugin(plugin.path)  # refuses links out of the folder, special files, an archive over the limit
    runtime.plugin_store.put_archive(digest, archive, by=actor)
    stored_plugin = load_plugin(runtime.plugin_cache.fill(digest, archive))
    listed = {a.name: a for a in plugin.agents}
    detail = {"plugin": plugin.name, "version": plugin.version, "content_hash": digest,
              "previous_version": previous.version if previous else None,
              "agents": [a.name for a in stored_plugin.agents], "allow_breaking": allow_breaking,
              "changes": [c.to_dict() for c in changes]}
    version = runtime.store.record_version(
        plugin=plugin.name, version=plugin.version, content_hash=digest, path=str(runtime.plugin_cache.path(digest)),
        description=plugin.description, installed_by=actor,
        agent_rows=[agent_row(listed.get(a.name, a) if a.kind == "mcp" or a.tools else a, version=plugin.version,
                               previous=previous)
                    for a in (*stored_plugin.agents, *stored_plugin.flows)],
        audit_detail=detail, action=action)
    if reused is not None:
        runtime.audit("plugin.version.replaced", actor=actor, detail={
            "plugin": plugin.name, "version": plugin.version, "content_hash": digest,
            "replaced_content_hash": reused.content_hash})
    if previous is not None and any(c.breaking for c in changes):  # let through by a major version or the flag
        runtime.audit("plugin.contracts.breaking", actor=actor, detail={
            "plugin": plugin.name, "version": plugin.version, "previous_version": detail["previous_version"],
            "allow_breaking": allow_breaking, "changes": [c.to_dict() for c in changes if c.breaking]})
    return InstallResult(version, unchanged=False, previous=previous, changes=changes)


def _refuse_unbounded_loop(spec: AgentSpec) -> None:
    """Install refuses what lint refuses: a tool loop whose agent file gives no limits.max_steps."""
    if not spec.tools or spec.kind != "model" or not spec.file:
        return
    why = unbounded_loop(read_yaml(Path(spec.file)))
    if why is not None:
        raise PluginError(f"{why}; {UNBOUNDED_LOOP_FIX}", file=spec.file, location="$.limits.max_steps")


def _listed_contracts(plugin: Plugin) -> Plugin:
    """`with_listed_contracts` (an mcp agent's contracts are its tool's, read now); its refusal quotes
    the server's stderr, so the servers' secrets are hidden in it, as in a job's reason."""
    try:
        return with_listed_contracts(plugin)
    except PluginError as exc:
        secrets = [s for spec in plugin.agents if spec.kind == "mcp" for s in _server_secrets(spec)]
        raise PluginError(Redactor(secrets).text(exc.message), file=exc.file, location=exc.location) from None


def _server_secrets(spec: AgentSpec) -> list[str]:
    try:
        return server_for_agent(spec).secrets()
    except McpFailure:  # a server the agent file cannot name has no secrets to hide
        return []
