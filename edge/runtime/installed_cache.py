"""The installed plugins' current versions, read from the plugin store once per installed state.

Every job asks which agents are installed several times (its queue, its kind, its limits, its
lookup), and each full read decodes every stored contract of every installed agent. The installed
state changes only when a plugin version is installed or made current, or when a stored contract
follows its MCP tool (edge.runtime.tool_refresh); `installed_key` reads just what names that state
(each plugin's current version id, each of its agents' contract hashes: small columns, one query),
and the versions are read again only when it differs. The key is read from the database each time,
so an install by another process or replica is seen at the next lookup, as before.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from sqlalchemy import select

from oz0.edge.runtime.store import agents, plugins

if TYPE_CHECKING:
    from oz0.edge.model.installed import InstalledVersion
    from oz0.edge.runtime.store import Store

__all__ = ["InstalledCache", "InstalledKey", "installed_key"]

InstalledKey = tuple[tuple[str, int | None, str | None, str | None, str | None], ...]


_KEY_QUERY = (select(plugins.c.name, plugins.c.current_version_id, agents.c.name, agents.c.input_hash,
                     agents.c.output_hash)
              .select_from(plugins.outerjoin(agents, agents.c.version_id == plugins.c.current_version_id))
              .order_by(plugins.c.name, agents.c.name))


def installed_key(store: Store) -> InstalledKey:
    """What names the installed state: (plugin, current version id, agent, input hash, output hash)
    for every agent of every plugin's current version, in order."""
    with store.engine.connect() as conn:
        return tuple((r[0], r[1], r[2], r[3], r[4]) for r in conn.execute(_KEY_QUERY))


class InstalledCache:
    """`current()`: the store's current versions, kept while `installed_key` is unchanged."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._held: tuple[InstalledKey, list[InstalledVersion]] | None = None
        self._lock = threading.Lock()  # one full read at a time when the state changed

    def current(self) -> list[InstalledVersion]:
        key = installed_key(self.store)
        held = self._held
        if held is not None and held[0] == key:
            return list(held[1])
        with self._lock:
            versions = self.store.current_versions()
            if installed_key(self.store) == key:  # unchanged while it was read: it is the state of `key`
                self._held = (key, versions)
        return list(versions)
