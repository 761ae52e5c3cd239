"""A plugin folder as one archive: what the journal's database stores for every installed version, so
any replica can run it (edge.runtime.plugin_store, edge.runtime.plugin_cache).

The archive is a deterministic .tar.gz of the folder's own files (edge.plugins.files: no links out,
no special files, caches left out): entries sorted, every time and owner zeroed, modes only 0644 or
0755, so the same folder always packs to the same bytes. It is unpacked by the same checked reader as
an upload (edge.plugins.archive.unpack_plugin), so a stored archive is held to the upload's limits.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.files import plugin_files

__all__ = ["MAX_ARCHIVE_BYTES", "content_hash", "pack_plugin"]

MAX_ARCHIVE_BYTES = 10 * 1024 * 1024  # an uploaded archive and a stored one alike


def content_hash(root: str | Path) -> str:
    """SHA-256 over every file of a plugin folder (names and bytes), caches left out: a version's
    identity, and the key of its archive and of its cached folder."""
    root = Path(root)
    digest = hashlib.sha256()
    for rel in plugin_files(root):
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256((root / rel).read_bytes()).digest())
    return digest.hexdigest()


def pack_plugin(root: str | Path) -> bytes:
    """The plugin folder `root` as deterministic .tar.gz bytes; PluginError over MAX_ARCHIVE_BYTES, or
    for a link out of the folder or a special file (edge.plugins.files)."""
    root = Path(root)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in plugin_files(root):
            path = root / rel
            data = path.read_bytes()
            info = tarfile.TarInfo(rel.as_posix())
            info.size = len(data)
            info.mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    packed = gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)
    if len(packed) > MAX_ARCHIVE_BYTES:
        raise PluginError(f"the plugin packs to {len(packed):,} bytes, over the {MAX_ARCHIVE_BYTES:,} "
                           "byte limit of a stored plugin; leave large data out of the plugin folder",
                          file=str(root))
    return packed
