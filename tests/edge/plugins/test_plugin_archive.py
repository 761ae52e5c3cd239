"""Unpacking an uploaded plugin archive: what lands, and every entry that is refused before it lands."""

from __future__ import annotations

import io
import re
import stat
import tarfile
import zipfile

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
    with pytest.raises(ArchiveError, match=re.escape("entry 'plugin.yaml': a link is refused")):
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
    with pytest.raises(ArchiveError, match=re.escape("no plugin.yaml at its top")):
        unpack_plugin(tar_gz([(member("README"), b"hi")]), tmp_path / "b")
    with pytest.raises(ArchiveError, match=r"the \.tar\.gz cannot be read"):
        unpack_plugin(b"\x1f\x8b" + b"garbage" * 10, tmp_path / "c")


def _gz_stream(parts) -> bytes:
    """gzip of the byte strings `parts` yields, compressed as they come (a bomb never sits in memory)."""
    import zlib
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(z.compress(p) for p in parts) + z.flush()


def _extended_header_bomb(kind: bytes, claimed: int) -> bytes:
    head = tarfile.TarInfo("././@LongLink" if kind == tarfile.GNUTYPE_LONGNAME else "./PaxHeaders/x")
    head.type, head.size = kind, claimed

    def parts():
        yield head.tobuf(format=tarfile.GNU_FORMAT if kind == tarfile.GNUTYPE_LONGNAME else tarfile.USTAR_FORMAT)
        for _ in range(claimed // (1 << 20)):
            yield b"\0" * (1 << 20)
        yield member("plugin.yaml").tobuf() + b"\0" * 1024
    return _gz_stream(parts())


@pytest.mark.parametrize("kind", [tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME])
def test_a_pax_or_gnu_long_name_header_claiming_megabytes_is_refused_before_it_is_read(tmp_path, kind):
    import tracemalloc
    bomb = _extended_header_bomb(kind, 40 << 20)
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveError) as err:
            unpack_plugin(bomb, tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value) == (f"a pax or GNU long-name header claims {40 << 20:,} "
                              f"bytes, over {archive.MAX_EXTENDED_HEADER_BYTES:,}")
    assert peak < 4 << 20, f"{peak:,} bytes allocated"


def test_many_small_extended_headers_are_bounded_in_number_and_in_total_bytes(tmp_path):
    pax = tarfile.TarInfo("./PaxHeaders/x")
    pax.type, pax.size = tarfile.XHDTYPE, 0
    chain = _gz_stream([pax.tobuf()] * 2000)
    with pytest.raises(ArchiveError, match=f"more than {archive.MAX_EXTENDED_HEADERS} pax or GNU long-name "
                                           "headers before one entry"):
        unpack_plugin(chain, tmp_path / "chain")
    big = tarfile.TarInfo("./PaxHeaders/x")
    big.type, big.size = tarfile.XHDTYPE, archive.MAX_EXTENDED_HEADER_BYTES
    body = (b"64 comment=" + b"x" * 52 + b"\n") * (archive.MAX_EXTENDED_HEADER_BYTES // 64)
    assert len(body) == archive.MAX_EXTENDED_HEADER_BYTES

    def entries():
        for i in range(200):
            yield big.tobuf() + body + member(f"f{i}", tarfile.DIRTYPE).tobuf()
    with pytest.raises(ArchiveError, match=f"the archive's headers take more than {archive.MAX_HEADER_BYTES:,} bytes"):
        unpack_plugin(_gz_stream(entries()), tmp_path / "total")


def test_a_sparse_entry_is_refused(tmp_path):
    sparse = member("plugin.yaml", tarfile.GNUTYPE_SPARSE)
    data = _gz_stream([sparse.tobuf(format=tarfile.GNU_FORMAT), b"\0" * 1024])
    with pytest.raises(ArchiveError, match=re.escape("entry 'plugin.yaml': a sparse file is refused")):
        unpack_plugin(data, tmp_path / "out")


def test_dot_entries_count_against_the_entry_limit(tmp_path):
    dots = _gz_stream([member(".", tarfile.DIRTYPE).tobuf()] * 200_000)
    with pytest.raises(ArchiveError, match=f"more than {archive.MAX_FILES:,} files and folders "
                                           r"\(every entry counts, `\./` too\)"):
        unpack_plugin(dots, tmp_path / "out")


@pytest.mark.parametrize("entries", [[], [(member(".", tarfile.DIRTYPE), None)],
                                     [(member("./", tarfile.DIRTYPE), None)]])
def test_an_empty_archive_or_one_holding_only_dot_says_it_is_empty(tmp_path, entries):
    with pytest.raises(ArchiveError) as err:
        unpack_plugin(tar_gz(entries), tmp_path / "out")
    assert str(err.value) == "the archive holds no file or folder: it is empty (a plugin needs plugin.yaml)"
