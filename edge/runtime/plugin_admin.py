"""Uninstalling a plugin and rolling it back to its previous stored version, on any replica.

Uninstall clears the installed-version pointer (edge.runtime.plugin_store); every stored version stays,
so the plugin can be installed again or rolled back later, and the audit log keeps who did it. It is
refused while a flow of another installed plugin runs one of its agents (that flow would break).

Rollback makes the version stored before the current one (in the order they were first stored) the
installed one again, from its archive in the database. It is an install of that version (edge.runtime
.install): the upgrade check runs, once, here, against the current version, and `allow_breaking` and
`force` mean what they mean for an install; it is audited as `plugin.rollback`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oz0.edge.errors import Oz0Error
from oz0.edge.model.flow import FlowSpec
from oz0.edge.model.installed import InstalledVersion
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.access import local_user
from oz0.edge.runtime.install import InstallResult, install_plugin

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["PluginStateError", "rollback_plugin", "rollback_target", "uninstall_plugin"]


class PluginStateError(Oz0Error, ValueError):
    """An uninstall or rollback the installed state refuses; `why` says which, for the adapters:
    `not_installed` (no plugin of this name is installed), `no_earlier_version` (the current version is
    the first stored), `in_use` (a flow of another installed plugin runs one of its agents)."""

    def __init__(self, message: str, *, why: str, plugin: str) -> None:
        super().__init__(message)
        self.message, self.why, self.plugin = message, why, plugin


def _not_installed(runtime: Runtime, name: str) -> PluginStateError:
    installed = ", ".join(v.plugin for v in runtime.installed()) or "none"
    return PluginStateError(f"no plugin named {name!r} is installed (installed: {installed})", why="not_installed",
                            plugin=name)


def _current(runtime: Runtime, name: str) -> InstalledVersion:
    current = runtime.store.current_version(name)
    if current is None:
        raise _not_installed(runtime, name)
    return current


def uninstall_plugin(runtime: Runtime, name: str, *, actor: str | None = None) -> InstalledVersion:
    """Uninstall plugin `name`; the version that was installed. PluginStateError (not_installed, in_use)."""
    current = _current(runtime, name)
    own = {a.name for a in current.agents}
    uses = [(plugin.name, flow.name, step.agent) for plugin in runtime.plugins() if plugin.name != name
            for flow in plugin.flows if isinstance(flow, FlowSpec) for step in flow.steps if step.agent in own]
    if uses:
        listed = "; ".join(f"flow {flow!r} of plugin {owner!r} runs agent {agent!r}" for owner, flow, agent in uses)
        raise PluginStateError(f"{name} is not uninstalled: {listed}; uninstall or change that plugin first",
                               why="in_use", plugin=name)
    detail = {"plugin": name, "version": current.version, "content_hash": current.content_hash,
              "agents": [a.name for a in current.agents]}
    if not runtime.plugin_store.uninstall(name, actor=actor or local_user(), detail=detail):
        raise _not_installed(runtime, name)  # another replica was first
    return current


def rollback_target(runtime: Runtime, name: str) -> InstalledVersion:
    """The version a rollback of `name` installs: the one stored last before the current one."""
    current = _current(runtime, name)
    earlier = [v for v in runtime.store.versions(name) if v.id < current.id]
    if not earlier:
        raise PluginStateError(f"{current.plugin} {current.version} is the first version stored; there is no "
                               "earlier version to roll back to (uninstall it instead)", why="no_earlier_version",
                               plugin=name)
    return max(earlier, key=lambda v: v.id)


def rollback_plugin(runtime: Runtime, name: str, *, actor: str | None = None, allow_breaking: bool = False,
                    force: bool = False) -> InstallResult:
    """Install again the version of `name` stored before the current one. PluginStateError
    (not_installed, no_earlier_version), and whatever an install raises (UpgradeRefused, VersionReused,
    PluginError)."""
    target = rollback_target(runtime, name)
    plugin = load_plugin(runtime.plugin_cache.folder(target))
    return install_plugin(runtime, plugin, actor=actor, allow_breaking=allow_breaking, force=force,
                          action="plugin.rollback")
