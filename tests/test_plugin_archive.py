"""Unpacking an uploaded plugin archive: what lands, and every entry that is refused before it lands."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from oz0.edge.plugins import archive
from oz0.edge.plugins.archive import ArchiveError, unpack_plugin

MANIFEST = b"name: team\nversion: 0.1.0\n"


def tar_gz(entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in entries:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, *, link: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


def zip_bytes(entries: list[tuple[str, bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buf.getvalue()


def test_a_tar_gz_wrapping_one_folder_unpacks_to_that_folder(tmp_path):
    data = tar_gz([(member("team-0.1.0", tarfile.DIRTYPE, mode=0o755), None),
                   (member("team-0.1.0/plugin.yaml"), MANIFEST),
                   (member("team-0.1.0/run.sh", mode=0o755), b"#!/bin/sh\n")])
    root = unpack_plugin(data, tmp_path / "out")
    assert root == tmp_path / "out" / "team-0.1.0"
    assert (root / "plugin.yaml").read_bytes() == MANIFEST
    assert (root / "run.sh").stat().st_mode & stat.S_IXUSR


def test_a_zip_with_plugin_yaml_at_its_top_unpacks_in_place(tmp_path):
    data = zip_bytes([("plugin.yaml", MANIFEST, stat.S_IFREG | 0o644), ("agents/a.yaml", b"kind: python\n",
                                                                        stat.S_IFREG | 0o644)])
    root = unpack_plugin(data, tmp_path / "out")
    assert root == tmp_path / "out" and (root / "agents" / "a.yaml").is_file()


@pytest.mark.parametrize("entries, words", [
    ([(member("/etc/plugin.yaml"), MANIFEST)], "entry '/etc/plugin.yaml': an absolute path is refused"),
    ([(member("team/../../evil"), b"x")], "entry 'team/../../evil': a `..` in a path is refused"),
    ([(member("plugin.yaml", tarfile.SYMTYPE, link="/etc/passwd"), None)], "entry 'plugin.yaml': a link is refused"),
    ([(member("plugin.yaml"), MANIFEST), (member("copy", tarfile.LNKTYPE, link="plugin.yaml"), None)],
     "entry 'copy': a link is refused"),
    ([(member("dev", tarfile.CHRTYPE), None)], "entry 'dev': not a regular file or folder"),
    ([(member("fifo", tarfile.FIFOTYPE), None)], "entry 'fifo': not a regular file or folder"),
    ([(member("a\\b"), b"x")], "a backslash or NUL in a name is refused"),
    ([(member("plugin.yaml"), MANIFEST), (member("./plugin.yaml"), MANIFEST)], "the name is given twice"),
])
def test_unsafe_tar_entries_are_refused_naming_the_entry_and_nothing_lands_outside(tmp_path, entries, words):
    out = tmp_path / "box" / "out"
    out.parent.mkdir()
    with pytest.raises(ArchiveError) as err:
        unpack_plugin(tar_gz(entries), out)
    assert words in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["box"]
    assert not (tmp_path / "evil").exists() and not (tmp_path / "box" / "evil").exists()


def test_a_zip_symlink_or_parent_path_is_refused(tmp_path):
    link = zip_bytes([("plugin.yaml", b"/etc/passwd", stat.S_IFLNK | 0o777)])
    with pytest.raises(ArchiveError, match="entry 'plugin.yaml': a link is refused"):
        unpack_plugin(link, tmp_path / "a")
    with pytest.raises(ArchiveError, match=r"entry '\.\./x': a `\.\.` in a path is refused"):
        unpack_plugin(zip_bytes([("../x", b"x", stat.S_IFREG | 0o644)]), tmp_path / "b")
    with pytest.raises(ArchiveError, match="an absolute path is refused"):
        unpack_plugin(zip_bytes([("C:/x", b"x", stat.S_IFREG | 0o644)]), tmp_path / "c")


def test_the_limits_are_counted_while_unpacking_and_named_with_their_numbers(tmp_path):
    bomb = zip_bytes([("plugin.yaml", MANIFEST, stat.S_IFREG | 0o644),
                      ("big", b"\0" * (archive.MAX_UNPACKED_BYTES + 1), stat.S_IFREG | 0o644)])
    assert len(bomb) < 200_000  # a small upload that unpacks past the limit
    with pytest.raises(ArchiveError) as err:
        unpack_plugin(bomb, tmp_path / "bomb")
    assert f"more than {archive.MAX_UNPACKED_BYTES:,} bytes" in str(err.value) and "'big'" in str(err.value)
    many = tar_gz([(member(f"f{i}"), b"x") for i in range(archive.MAX_FILES + 1)])
    with pytest.raises(ArchiveError, match=f"more than {archive.MAX_FILES:,} files and folders"):
        unpack_plugin(many, tmp_path / "many")


def test_not_an_archive_or_no_plugin_yaml_says_so(tmp_path):
    with pytest.raises(ArchiveError, match=r"neither a \.tar\.gz \(gzip\) nor a \.zip"):
        unpack_plugin(b"name: team\n", tmp_path / "a")
    with pytest.raises(ArchiveError, match="no plugin.yaml at its top"):
        unpack_plugin(tar_gz([(member("README"), b"hi")]), tmp_path / "b")
    with pytest.raises(ArchiveError, match=r"the \.tar\.gz cannot be read"):
        unpack_plugin(b"\x1f\x8b" + b"garbage" * 10, tmp_path / "c")
