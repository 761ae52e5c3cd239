"""The installed plugins' archives in the journal's database, so every replica runs the same files.

The versions themselves (name, version, content hash, who, when, their agents and contracts) and the
installed-version pointer (`plugins.current_version_id`) are the store's (edge.runtime.store). This
module adds what a replica needs to run a version it did not install: the archive of each version's
folder (edge.plugins.pack), one row per content hash, whoever stored it first. Revision 0024 makes the
table. It also owns the two moves of the pointer that are not an install: uninstall (the pointer
cleared, the versions kept for a later rollback or install) and `state`, the cheap read a replica
polls to learn that the installed versions changed (edge.runtime.plugin_watch).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import Column, Float, Integer, LargeBinary, String, Table, insert, select, update
from sqlalchemy.exc import IntegrityError

from oz0.edge.model.installed import InstalledVersion
from oz0.edge.runtime.store import metadata, plugin_versions, plugins

if TYPE_CHECKING:
    from oz0.edge.runtime.store import Store

__all__ = ["InstalledState", "PluginStore", "plugin_archives"]

plugin_archives = Table(
    "plugin_archives", metadata,
    Column("content_hash", String(64), primary_key=True),  # edge.plugins.pack.content_hash of the folder
    Column("archive", LargeBinary, nullable=False),         # at most edge.plugins.pack.MAX_ARCHIVE_BYTES
    Column("size", Integer, nullable=False),
    Column("stored_at", Float, nullable=False),
    Column("stored_by", String(200), nullable=False),
)

InstalledState = tuple[tuple[str, int], ...]  # (plugin, current version id) of every installed plugin


class PluginStore:
    """Archives by content hash, uninstall, and the installed state, over the store's database."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def put_archive(self, content_hash: str, data: bytes, *, by: str) -> bool:
        """Store the archive of `content_hash` unless it is there already; True when this call stored it."""
        if self.has_archive(content_hash):
            return False
        try:
            with self.store.engine.begin() as conn:
                conn.execute(insert(plugin_archives).values(content_hash=content_hash, archive=data, size=len(data),
                                                            stored_at=time.time(), stored_by=by))
        except IntegrityError:  # another replica stored the same content a moment before
            return False
        return True

    def has_archive(self, content_hash: str) -> bool:
        with self.store.engine.connect() as conn:
            return conn.execute(select(plugin_archives.c.content_hash)
                                .where(plugin_archives.c.content_hash == content_hash)).first() is not None

    def archive(self, content_hash: str) -> bytes | None:
        """The stored archive of this content, None when the database has none (an install made before
        revision 0024 on another replica, not imported yet)."""
        with self.store.engine.connect() as conn:
            data = conn.execute(select(plugin_archives.c.archive)
                                .where(plugin_archives.c.content_hash == content_hash)).scalar()
        return bytes(data) if data is not None else None

    def hashes_without_archive(self) -> set[str]:
        """The content hashes of stored versions whose archive the database lacks."""
        with self.store.engine.connect() as conn:
            stored = select(plugin_archives.c.content_hash)
            return set(conn.execute(select(plugin_versions.c.content_hash)
                                    .where(plugin_versions.c.content_hash.not_in(stored))).scalars())

    def state(self) -> InstalledState:
        """Which version of which plugin is installed: one small query, polled by every replica."""
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(plugins.c.name, plugins.c.current_version_id)
                                .where(plugins.c.current_version_id.is_not(None)).order_by(plugins.c.name)).all()
        return tuple((name, int(version_id)) for name, version_id in rows)

    def all_versions(self) -> list[InstalledVersion]:
        """Every stored version of every plugin, installed or not."""
        with self.store.engine.connect() as conn:
            names = conn.execute(select(plugins.c.name).order_by(plugins.c.name)).scalars().all()
        return [v for name in names for v in self.store.versions(name)]

    def uninstall(self, plugin: str, *, actor: str, detail: Mapping[str, Any]) -> bool:
        """Clear the installed-version pointer of `plugin`, audited as `plugin.uninstall` in the same
        transaction; False when it was not installed (nothing changed)."""
        with self.store.engine.begin() as conn:
            cleared = conn.execute(update(plugins).where(plugins.c.name == plugin,
                                                         plugins.c.current_version_id.is_not(None))
                                   .values(current_version_id=None, installed_at=time.time())).rowcount
            if cleared:
                self.store.add_audit("plugin.uninstall", actor=actor, detail=detail, conn=conn)
        return bool(cleared)
