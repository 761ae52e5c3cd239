"""What every renderer returns: the platform body, the files to upload beside it, and what was cut."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oz0.edge.cards.model import Attachment

__all__ = ["Rendered"]


@dataclass(frozen=True)
class Rendered:
    """A card drawn for one platform.

    `payload` is what the adapter posts as it is (a dict for Slack and Discord, a string for HTML and
    the terminal), with no private keys; `uploads` are the files to send beside it (name, bytes, media
    type); `cuts` says, in words, what the renderer left out to respect a platform limit. Adapters post
    and upload; they never re-derive bytes, re-trim blocks or re-set safety fields.
    """

    payload: Any
    uploads: tuple[Attachment, ...] = ()
    cuts: tuple[str, ...] = ()
