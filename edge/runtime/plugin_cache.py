"""Each replica's local copy of the installed plugins: `OZ0_HOME/cache/<content hash>/`, filled from
the archive in the database (edge.runtime.plugin_store) the first time a version is used here.

A folder is named by the hash of its content and never changes, so a replica started with an empty
OZ0_HOME, a new version installed on another replica, or a rollback all come down to one question:
is `cache/<hash>/` here yet? If not, the archive is read from the database, unpacked by the upload's
checked reader (edge.plugins.archive) into a folder beside it, its content hash checked against the
name (a damaged archive is refused, never run) and renamed into place, so a reader never sees half a
folder and two processes filling one hash at once both end with the same folder.

An install made before revision 0024 kept its files only under the OZ0_HOME of the replica that made
it (`plugins/NAME/VERSION-HASH/`, the version's `path`). `import_local` stores the archive of every
such folder found here, once: `oz0 serve` runs it at start, and a version used before that is
imported on first use.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Protocol

from oz0.edge.model.installed import InstalledVersion
from oz0.edge.plugins.archive import ArchiveError, unpack_plugin
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.pack import content_hash, pack_plugin

__all__ = ["ArchiveSource", "PluginCache"]

log = logging.getLogger("oz0.plugins")


class ArchiveSource(Protocol):
    """Where the archives are (edge.runtime.plugin_store.PluginStore)."""

    def archive(self, content_hash: str) -> bytes | None: ...
    def put_archive(self, content_hash: str, data: bytes, *, by: str) -> bool: ...
    def hashes_without_archive(self) -> set[str]: ...
    def all_versions(self) -> list[InstalledVersion]: ...


class PluginCache:
    """The folders under `root` (OZ0_HOME/cache), one per content hash."""

    def __init__(self, root: Path, archives: ArchiveSource) -> None:
        self.root = root
        self.archives = archives

    def path(self, digest: str) -> Path:
        return self.root / digest

    def folder(self, version: InstalledVersion) -> Path:
        """The folder to run `version` from, filled from the database if it is not here yet.
        PluginError when the database has no archive for it and no local install can provide one."""
        target = self.path(version.content_hash)
        if (target / "plugin.yaml").is_file():
            return target
        data = self.archives.archive(version.content_hash)
        if data is None:
            data = self._import(version)
        return self.fill(version.content_hash, data)

    def fill(self, digest: str, data: bytes) -> Path:
        """Unpack `data` into `cache/<digest>/` (if that is not there yet) after checking its content
        is `digest`; PluginError naming the version's hash otherwise."""
        target = self.path(digest)
        if (target / "plugin.yaml").is_file():
            return target
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=self.root))
        try:
            try:
                unpacked = unpack_plugin(data, staging / "plugin")
            except ArchiveError as exc:
                raise PluginError(f"the stored archive of content {digest[:12]} is refused: {exc}",
                                  file=str(target)) from None
            found = content_hash(unpacked)
            if found != digest:
                raise PluginError(f"the stored archive of content {digest[:12]} unpacks to other content "
                                  f"({found[:12]}); install the plugin again", file=str(target))
            if target.exists() and not (target / "plugin.yaml").is_file():  # left half-made by hand: made again
                shutil.rmtree(target)
            try:
                os.rename(unpacked, target)
            except OSError:
                if not (target / "plugin.yaml").is_file():  # not a fill that won the race: a real failure
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target

    def _import(self, version: InstalledVersion) -> bytes:
        """The archive of a version installed before revision 0024, made from its folder here and stored."""
        where = Path(version.path)
        if not (where / "plugin.yaml").is_file():
            raise PluginError(f"{version.plugin} {version.version} (content {version.content_hash[:12]}) has no "
                              "archive in the database and its files are not on this replica (installed before "
                              f"plugins were stored in the database, at {version.path}); install it again",
                              file=str(where))
        if content_hash(where) != version.content_hash:
            raise PluginError(f"{version.plugin} {version.version}: its files at {where} were changed after the "
                              "install (their content hash differs); install the plugin again", file=str(where))
        data = pack_plugin(where)
        if self.archives.put_archive(version.content_hash, data, by="import"):
            log.info("plugin %s %s imported into the database from %s", version.plugin, version.version, where)
        return data

    def import_local(self) -> list[InstalledVersion]:
        """Store the archive of every version the database lacks whose folder is on this replica
        (installs made before revision 0024); the versions imported. Each one that cannot be is logged."""
        missing = self.archives.hashes_without_archive()
        imported = []
        for version in self.archives.all_versions():
            if version.content_hash not in missing or not (Path(version.path) / "plugin.yaml").is_file():
                continue
            try:
                self._import(version)
            except PluginError as exc:
                log.error("plugin %s %s cannot be imported into the database: %s", version.plugin,
                          version.version, exc)
                continue
            missing.discard(version.content_hash)
            imported.append(version)
        return imported
