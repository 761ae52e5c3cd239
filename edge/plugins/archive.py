"""Unpacking an uploaded plugin (a .tar.gz or .zip) into a folder, safely, before lint and install.

An archive comes from the network, so every entry is checked before a byte of it is written: no
absolute path or drive, no `..`, no backslash, no link (symbolic or hard), no device, FIFO or other
special entry, no name given twice; at most MAX_FILES entries (every one counts, `./` too) and
MAX_UNPACKED_BYTES bytes in all, counted while decompressing (the sizes an archive claims are not
trusted, so a zip bomb stops at the limit). A tar's headers are bounded before they are read: a pax or
GNU long-name header over MAX_EXTENDED_HEADER_BYTES, more than MAX_EXTENDED_HEADERS of them before one
entry, or over MAX_HEADER_BYTES of headers in all is refused (tarfile would read whatever size a header
claims into memory), and so is a sparse entry. The archive is unpacked into a folder the caller owns
(a temporary one); the plugin is that folder, or the one folder at its top when the archive wraps it
(`team-1.2.0/plugin.yaml`).
"""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from oz0.edge.errors import Oz0Error

__all__ = ["MAX_EXTENDED_HEADERS", "MAX_EXTENDED_HEADER_BYTES", "MAX_FILES", "MAX_HEADER_BYTES", "MAX_NAME_CHARS",
           "MAX_UNPACKED_BYTES", "ArchiveError", "archive_kind", "unpack_plugin"]

MAX_FILES = 1_000
MAX_UNPACKED_BYTES = 50 * 1024 * 1024
MAX_NAME_CHARS = 400
MAX_EXTENDED_HEADER_BYTES = 64 * 1024
MAX_EXTENDED_HEADERS = 4
MAX_HEADER_BYTES = 4 * 1024 * 1024
_EXTENDED = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
             tarfile.SOLARIS_XHDTYPE)
_CHUNK = 64 * 1024


class ArchiveError(Oz0Error, ValueError):
    """An upload that is not a plugin archive we unpack: says which entry and why."""


def archive_kind(data: bytes) -> str:
    """`tar.gz` or `zip`, from the first bytes (never from a file name); ArchiveError otherwise."""
    if data[:2] == b"\x1f\x8b":
        return "tar.gz"
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    raise ArchiveError("the upload is neither a .tar.gz (gzip) nor a .zip archive")


def _checked_name(name: str) -> PurePosixPath | None:
    """The entry's relative path, None for the archive's own root (`./`); ArchiveError if unsafe."""
    if len(name) > MAX_NAME_CHARS:
        raise ArchiveError(f"entry {name[:60]!r}…: a name of {len(name):,} characters, over {MAX_NAME_CHARS}")
    if "\\" in name or "\0" in name:
        raise ArchiveError(f"entry {name!r}: a backslash or NUL in a name is refused")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"entry {name!r}: an absolute path is refused; entries are relative to the plugin")
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if ".." in parts:
        raise ArchiveError(f"entry {name!r}: a `..` in a path is refused (it would leave the plugin folder)")
    return PurePosixPath(*parts) if parts else None


class _Writer:
    """Writes checked entries under `dest`, counting files and bytes against the limits."""

    def __init__(self, dest: Path) -> None:
        self.dest = dest
        self.bytes = 0
        self.seen: set[PurePosixPath] = set()

    def claim(self, rel: PurePosixPath, name: str) -> Path:
        if rel in self.seen:
            raise ArchiveError(f"entry {name!r}: the name is given twice")
        self.seen.add(rel)
        return self.dest.joinpath(*rel.parts)

    def folder(self, rel: PurePosixPath, name: str) -> None:
        self.claim(rel, name).mkdir(parents=True, exist_ok=True)

    def file(self, rel: PurePosixPath, name: str, stream: IO[bytes], *, executable: bool) -> None:
        target = self.claim(rel, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() and not target.is_file():
            raise ArchiveError(f"entry {name!r}: a file where the archive already made a folder")
        with open(target, "wb") as out:
            while chunk := stream.read(_CHUNK):
                self.bytes += len(chunk)
                if self.bytes > MAX_UNPACKED_BYTES:
                    raise ArchiveError(f"entry {name!r}: the archive unpacks to more than "
                                       f"{MAX_UNPACKED_BYTES:,} bytes")
                out.write(chunk)
        target.chmod(0o755 if executable else 0o644)


def _too_many() -> ArchiveError:
    return ArchiveError(f"the archive holds more than {MAX_FILES:,} files and folders "
                        "(every entry counts, `./` too)")


class _HeaderBudget:
    """The header bytes read so far and the extended headers before the current entry."""

    def __init__(self) -> None:
        self.bytes = 0
        self.chained = 0

    def spend(self, info: tarfile.TarInfo) -> None:
        """Checked before tarfile reads what `info` claims (its own 512 bytes are already read)."""
        extended = info.type in _EXTENDED
        if info.type == tarfile.GNUTYPE_SPARSE:
            raise ArchiveError(f"entry {info.name[:60]!r}: a sparse file is refused")
        if extended and not 0 <= info.size <= MAX_EXTENDED_HEADER_BYTES:
            raise ArchiveError(f"a pax or GNU long-name header claims {info.size:,} bytes, over "
                               f"{MAX_EXTENDED_HEADER_BYTES:,}")
        self.chained = self.chained + 1 if extended else 0
        if self.chained > MAX_EXTENDED_HEADERS:
            raise ArchiveError(f"more than {MAX_EXTENDED_HEADERS} pax or GNU long-name headers before one entry")
        claimed = -(-info.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE if extended else 0
        self.bytes += tarfile.BLOCKSIZE + claimed
        if self.bytes > MAX_HEADER_BYTES:
            raise ArchiveError(f"the archive's headers take more than {MAX_HEADER_BYTES:,} bytes")


def _bounded_tarinfo(budget: _HeaderBudget) -> type[tarfile.TarInfo]:
    """A TarInfo whose headers spend `budget` before they are read (`_proc_member` is tarfile's hook
    for subclasses); GNU sparse maps in pax headers are refused."""

    class Bounded(tarfile.TarInfo):
        def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
            budget.spend(self)
            member: tarfile.TarInfo = super()._proc_member(tar)  # type: ignore[misc]  # a private hook typeshed omits
            return member

        def _refuse_sparse(self, *_: object) -> None:
            raise ArchiveError(f"entry {self.name[:60]!r}: a sparse file is refused")

        _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _refuse_sparse

    return Bounded


def _tar_entries(data: bytes, writer: _Writer) -> None:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz", tarinfo=_bounded_tarinfo(_HeaderBudget())) as tar:
            for member in _members(tar):
                rel = _checked_name(member.name)
                if member.issym() or member.islnk():
                    raise ArchiveError(f"entry {member.name!r}: a link is refused; put the file itself in the plugin")
                if member.isdir():
                    if rel is not None:
                        writer.folder(rel, member.name)
                    continue
                if not member.isreg():
                    raise ArchiveError(f"entry {member.name!r}: not a regular file or folder "
                                       "(a device, FIFO or other special entry)")
                if rel is None:
                    raise ArchiveError(f"entry {member.name!r}: a file without a name")
                stream = tar.extractfile(member)
                assert stream is not None  # a regular member always has a stream
                writer.file(rel, member.name, stream, executable=bool(member.mode & 0o111))
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ArchiveError(f"the .tar.gz cannot be read: {exc}") from None


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """The members one at a time (tarfile reads headers as it goes: memory stays bounded), counted."""
    count = 0
    while (member := tar.next()) is not None:
        count += 1
        if count > MAX_FILES:
            raise _too_many()
        yield member


def _zip_entries(data: bytes, writer: _Writer) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_FILES:
                raise _too_many()
            for info in infos:
                rel = _checked_name(info.filename)
                mode = info.external_attr >> 16
                kind = stat.S_IFMT(mode)
                if stat.S_ISLNK(mode):
                    raise ArchiveError(f"entry {info.filename!r}: a link is refused; put the file itself in the plugin")
                if info.is_dir():
                    if rel is not None:
                        writer.folder(rel, info.filename)
                    continue
                if kind and not stat.S_ISREG(mode):
                    raise ArchiveError(f"entry {info.filename!r}: not a regular file or folder "
                                       "(a device, FIFO or other special entry)")
                if rel is None:
                    raise ArchiveError(f"entry {info.filename!r}: a file without a name")
                with archive.open(info) as stream:
                    writer.file(rel, info.filename, stream, executable=bool(mode & 0o111))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError, OSError) as exc:
        raise ArchiveError(f"the .zip cannot be read: {exc}") from None


def unpack_plugin(data: bytes, dest: Path) -> Path:
    """Unpack the archive `data` into the empty folder `dest`; the plugin's folder (the one holding
    plugin.yaml: `dest` itself or its single top folder). ArchiveError naming the first bad entry;
    what was written stays in `dest` for the caller to remove with it."""
    writer = _Writer(dest)
    (_tar_entries if archive_kind(data) == "tar.gz" else _zip_entries)(data, writer)
    if not writer.seen:
        raise ArchiveError("the archive holds no file or folder: it is empty (a plugin needs plugin.yaml)")
    if (dest / "plugin.yaml").is_file():
        return dest
    tops = list(dest.iterdir())
    if len(tops) == 1 and tops[0].is_dir() and (tops[0] / "plugin.yaml").is_file():
        return tops[0]
    raise ArchiveError("the archive has no plugin.yaml at its top, nor in a single folder at its top")
