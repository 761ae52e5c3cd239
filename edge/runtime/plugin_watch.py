"""Learning that the installed plugins changed, on every replica: a poll of the installed state
(edge.runtime.plugin_store.PluginStore.state, one small query) every POLL_S, on a thread of its own.

Every read of the installed plugins goes to the database already, so a replica never runs a version
that is no longer installed; the watch is for what should happen before the next ask: `oz0 serve`
fills the local cache (edge.runtime.plugin_cache) of a version installed on another replica, and a
cache of loaded plugins per installed version can drop what changed. A poll rather than Postgres
LISTEN/NOTIFY: it is the same on SQLite, and a notification lost while a connection was down cannot
leave a replica behind. A change is seen within POLL_S plus one query.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from oz0.edge.runtime.plugin_store import InstalledState

__all__ = ["POLL_S", "PluginWatch"]

log = logging.getLogger("oz0.plugins")

POLL_S = 1.0

Watcher = Callable[[InstalledState], None]


class PluginWatch:
    """Calls each watcher with the new installed state when it changes (and once at start)."""

    def __init__(self, state: Callable[[], InstalledState], *, interval_s: float = POLL_S) -> None:
        self._state = state
        self._interval_s = interval_s
        self._watchers: list[Watcher] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.seen: InstalledState | None = None

    def watch(self, watcher: Watcher) -> None:
        self._watchers.append(watcher)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="oz0-plugin-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def poll(self) -> bool:
        """Read the state once; True (and the watchers called) when it changed."""
        state = self._state()
        if state == self.seen:
            return False
        self.seen = state
        for watcher in self._watchers:
            try:
                watcher(state)
            except Exception as exc:  # one watcher's failure must not stop the others or the watch
                log.error("a watcher of the installed plugins failed: %s: %s", type(exc).__name__, exc)
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except SQLAlchemyError as exc:  # the database is away: the next poll tries again
                log.warning("cannot read the installed plugins: %s", type(exc).__name__)
            self._stop.wait(self._interval_s)
