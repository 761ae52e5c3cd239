"""The installed plugins and their agents and flows, as the store records them.

Every job looks its agent up here (to submit, run, draw its card, walk its tree's limits), so a
plugin is loaded from its stored copy once per installed version and kept until that version's
stored contracts change (an MCP tool list that changed reloads it). What names the installed state is
read from the store each time, and the versions only when it changed (edge.runtime.installed_cache),
so an install by another process (`oz0 plugin install` beside `oz0 serve`) is seen at the next lookup.
"""

from __future__ import annotations

import logging

from oz0.edge.mcp.tool_contracts import with_stored_contracts
from oz0.edge.model.agent import AgentSpec
from oz0.edge.model.installed import InstalledVersion
from oz0.edge.model.job import UnknownAgent
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.manifest import Plugin, load_plugin
from oz0.edge.runtime.installed_cache import InstalledCache
from oz0.edge.runtime.plugin_cache import PluginCache
from oz0.edge.runtime.store import Store

__all__ = ["Catalog"]

log = logging.getLogger(__name__)

_Key = tuple[int, tuple[tuple[str, str | None, str | None], ...]]


class Catalog:
    """The installed plugins (current versions), their agents and flows, looked up by name."""

    def __init__(self, store: Store, cache: PluginCache) -> None:
        self.store = store
        self.cache = cache  # the installed versions' folders, filled from the database by content hash
        self._loaded: dict[int, tuple[_Key, Plugin]] = {}  # installed version id -> (its contracts, the plugin)
        self._installed = InstalledCache(store)  # read again only when the installed state changes

    def installed(self) -> list[InstalledVersion]:
        """The current version of every installed plugin, with its agents and contracts as stored."""
        return self._installed.current()

    def plugins(self) -> list[Plugin]:
        """The installed plugins (current versions), loaded from their stored copies."""
        return [p for v in self.installed() if (p := self._load(v)) is not None]

    def agents(self) -> list[AgentSpec]:
        """Installed agents, the current version of each plugin, by name."""
        return sorted((a for p in self.plugins() for a in p.agents), key=lambda a: a.name)

    def flows(self) -> list[AgentSpec]:
        """Installed flows (edge.model.flow.FlowSpec, run by name like agents), by name."""
        return sorted((f for p in self.plugins() for f in p.flows), key=lambda f: f.name)

    def agent(self, name: str) -> AgentSpec:
        """The installed agent or flow of this name; UnknownAgent (naming the installed ones) if none."""
        return self.lookup(name)[0]

    def agent_or_none(self, name: str) -> AgentSpec | None:
        """The installed agent or flow of this name, or None: uninstalled since its job started."""
        try:
            return self.agent(name)
        except UnknownAgent:
            return None

    def lookup(self, name: str) -> tuple[AgentSpec, Plugin]:
        """The agent of this name and the plugin it comes from, in one read of the installed plugins."""
        plugins = self.plugins()
        for plugin in plugins:
            for spec in (*plugin.agents, *plugin.flows):
                if spec.name == name:
                    return spec, plugin
        raise UnknownAgent(name, sorted(a.name for p in plugins for a in (*p.agents, *p.flows)))

    def _load(self, version: InstalledVersion) -> Plugin | None:
        key: _Key = (version.id, tuple((a.name, a.input_hash, a.output_hash) for a in version.agents))
        cached = self._loaded.get(version.id)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            plugin = with_stored_contracts(load_plugin(self.cache.folder(version)), version.agents)
        except PluginError as exc:
            log.error("installed plugin %s %s cannot be loaded: %s", version.plugin, version.version, exc)
            return None
        self._loaded[version.id] = (key, plugin)  # stored contracts that change load again
        return plugin
