"""MCP content blocks other than text, read once into what a card lists and the files it attaches.

A CallToolResult may carry images, audio, links to resources and embedded resources beside (or instead
of) its text. None of them is dropped without a word: each becomes one line naming it (a link's name
and URI; an image's or audio clip's media type and size; an embedded resource's URI, type and size),
and binary data becomes a file the renderers upload where the platform allows it. Text of an embedded
resource is kept as text. A file over `MAX_BLOCK_FILE_BYTES` is listed, not attached.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from oz0.edge.model.attachment import Attachment

__all__ = ["MAX_BLOCK_FILE_BYTES", "BlockSummary", "EmbeddedText", "read_blocks"]

MAX_BLOCK_FILE_BYTES = 8 * 1024 * 1024
_EXTENSIONS = {"audio/wav": ".wav", "audio/mpeg": ".mp3", "audio/ogg": ".ogg", "image/webp": ".webp",
               "text/markdown": ".md"}  # media types mimetypes does not know on every system


@dataclass(frozen=True)
class EmbeddedText:
    """An embedded text resource: its URI, media type and text, and its name as a file."""

    uri: str
    mime_type: str
    text: str
    filename: str


@dataclass(frozen=True)
class BlockSummary:
    """The non-text blocks of a result: a line for each, the binary files, the embedded texts.

    `lines` name the blocks of a card whose body shows the embedded texts; `noted` name them when the
    card's body is the result's own text, so the embedded texts are attached as text files instead.
    """

    lines: tuple[str, ...] = ()
    noted: tuple[str, ...] = ()
    files: tuple[Attachment, ...] = ()
    texts: tuple[EmbeddedText, ...] = ()

    def text_files(self) -> tuple[Attachment, ...]:
        """The embedded texts as files (for a card whose body is the result's own text)."""
        return tuple(Attachment(t.filename, t.mime_type if t.mime_type.startswith("text/") else "text/plain",
                                t.text.encode("utf-8")) for t in self.texts)


def _filename(stem: str, mime_type: str, number: int) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._")[:80]
    if not name:
        name = f"block-{number}"
    if "." not in name:
        name += _EXTENSIONS.get(mime_type) or mimetypes.guess_extension(mime_type) or ".bin"
    return f"{number}-{name}"


def _decoded(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _text(value: Any, fallback: str = "") -> str:
    return value if isinstance(value, str) and value.strip() else fallback


def read_blocks(content: Any) -> BlockSummary:
    """Every block of `content` that is not a text block, as lines, files and embedded texts."""
    lines: list[str] = []
    noted: list[str] = []
    files: list[Attachment] = []
    texts: list[EmbeddedText] = []
    blocks = content if isinstance(content, list) else []
    for number, block in enumerate(blocks, start=1):
        noted += lines[len(noted):]  # a block's line is the same in both lists unless it says otherwise
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            continue
        if kind in ("image", "audio"):
            mime = _text(block.get("mimeType"), "application/octet-stream")
            data = _decoded(block.get("data"))
            if data is None:
                lines.append(f"{kind} ({mime}): its data is not valid base64, so it is not attached")
                continue
            lines.append(_file_line(f"{kind} ({mime}, {len(data):,} bytes)", data, mime,
                                    _filename(kind, mime, number), files))
        elif kind == "resource_link":
            uri = _text(block.get("uri"), "(no URI)")
            name = _text(block.get("title")) or _text(block.get("name"), uri)
            mime = _text(block.get("mimeType"))
            lines.append(f"resource link: {name} — {uri}" + (f" ({mime})" if mime else ""))
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            res = block["resource"]
            uri = _text(res.get("uri"), "(no URI)")
            mime = _text(res.get("mimeType"), "text/plain" if isinstance(res.get("text"), str) else
                         "application/octet-stream")
            stem = urlsplit(uri).path.rsplit("/", 1)[-1] or "resource"
            if isinstance(res.get("text"), str):
                text = res["text"]
                texts.append(EmbeddedText(uri, mime, text, _filename(stem, mime, number)))
                lines.append(f"resource: {uri} ({mime}, {len(text.encode('utf-8')):,} bytes of text)")
                noted.append(f"{lines[-1]}, attached as {texts[-1].filename}")
                continue
            data = _decoded(res.get("blob"))
            if data is None:
                lines.append(f"resource: {uri} ({mime}): it has no text and its blob is not valid base64")
                continue
            lines.append(_file_line(f"resource: {uri} ({mime}, {len(data):,} bytes)", data, mime,
                                    _filename(stem, mime, number), files))
        else:
            lines.append(f"a {kind if isinstance(kind, str) else 'malformed'} content block, which oz0 "
                         "does not draw (it is in the full result)")
    noted += lines[len(noted):]
    return BlockSummary(tuple(lines), tuple(noted), tuple(files), tuple(texts))


def _file_line(said: str, data: bytes, mime: str, filename: str, files: list[Attachment]) -> str:
    if len(data) > MAX_BLOCK_FILE_BYTES:
        return f"{said}: not attached, over the {MAX_BLOCK_FILE_BYTES:,}-byte limit for one file"
    files.append(Attachment(filename, mime, data))
    return f"{said}, attached as {filename}"
