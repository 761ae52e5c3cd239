"""How every command prints a card: the text drawn for a target, JSON for the card and platform payloads."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from oz0.renderers import RENDERERS

if TYPE_CHECKING:
    from oz0.edge import Card

__all__ = ["TARGETS", "render_payload", "write_files"]

TARGETS: tuple[str, ...] = ("card", *RENDERERS)


def render_payload(card: Card, target: str) -> str:
    """The card drawn for `target` (a key of TARGETS) as the text printed: JSON for the card and the
    platform payloads (the body the channel is sent, as it is sent; the files uploaded beside it are
    not printed)."""
    if target == "card":
        return json.dumps(card.to_dict(), indent=2, ensure_ascii=False, default=str)
    payload = RENDERERS[target](card).payload
    return payload if isinstance(payload, str) else json.dumps(payload, indent=2, ensure_ascii=False)


def write_files(card: Card, target: str) -> None:
    """On a terminal (`--to text`), the files a card says are attached (an MCP tool's image, audio or
    embedded resource) are written to a new folder under the system's temporary folder, each path
    printed on stderr, so "attached as NAME" names a file that exists. The other targets print the
    payload a channel is sent, which uploads the files itself."""
    if target != "text" or not card.files:
        return
    import tempfile  # with shutil, random and the compressors (~5 ms): only for a card with files

    from oz0.renderers.attachments import files_for

    folder = Path(tempfile.mkdtemp(prefix="oz0-files-"))
    for upload in files_for(card):
        path = folder / upload.filename
        path.write_bytes(upload.data)
        print(f"wrote {upload.filename} ({upload.size:,} bytes) to {path}", file=sys.stderr)
