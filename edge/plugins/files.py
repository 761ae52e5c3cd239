"""What of a plugin folder may be read and copied: regular files and folders inside it, nothing else.

A symbolic link that leads out of the folder (an `agents` folder link, an agent file link, any linked
file) would let an install copy someone else's files into OZ0_HOME, so it is refused, naming the link;
a link inside the folder is copied as the file it names. FIFOs, sockets and devices are refused (a
FIFO would block the reader forever), as are links that loop. An install packs these files into the
archive the database keeps (edge.plugins.pack).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from oz0.edge.plugins.declared import PluginError

__all__ = ["IGNORED", "plugin_files", "plugin_problems"]

IGNORED = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".venv", "node_modules"})


def _ignored(rel: Path) -> bool:
    return any(part in IGNORED for part in rel.parts) or rel.suffix == ".pyc"


def _walk(root: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """The plugin's files (relative paths, in order) and its problems as (relative path, why)."""
    files: list[Path] = []
    problems: list[tuple[str, str]] = []
    real_root = root.resolve()
    pending = [Path()]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(root / folder), key=lambda e: e.name)
        except OSError as exc:
            problems.append((folder.as_posix() or ".", f"cannot read the folder: {exc.strerror or exc}"))
            continue
        for entry in entries:
            rel = folder / entry.name
            if _ignored(rel):
                continue
            path = root / rel
            if entry.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError) as exc:
                    why = getattr(exc, "strerror", None) or str(exc)
                    problems.append((rel.as_posix(), f"a symbolic link that cannot be followed ({why})"))
                    continue
                if not target.is_relative_to(real_root):
                    problems.append((rel.as_posix(), f"a symbolic link out of the plugin folder (to {target})"))
                    continue
            try:
                mode = path.stat().st_mode
            except OSError as exc:
                problems.append((rel.as_posix(), f"cannot read: {exc.strerror or exc}"))
                continue
            if stat.S_ISDIR(mode):
                pending.append(rel)
            elif stat.S_ISREG(mode):
                files.append(rel)
            else:
                problems.append((rel.as_posix(), "not a regular file (a FIFO, socket or device)"))
    return sorted(files), problems


def plugin_problems(root: str | Path) -> list[tuple[str, str]]:
    """Every link out of the folder, looping link and special file, as (path relative to the root, why)."""
    return _walk(Path(root))[1]


def plugin_files(root: str | Path) -> list[Path]:
    """The plugin's regular files, relative to its root; PluginError naming the first problem."""
    files, problems = _walk(Path(root))
    if problems:
        rel, why = problems[0]
        raise PluginError(f"{why}; a plugin holds only its own regular files", file=str(Path(root) / rel))
    return files
