"""Where a job's answer goes, as the channel that took the ask wrote it: a versioned, opaque record.

The edge journals a `ReplyRef` with the job and hands it back to the channel of its `platform`; it never
reads `data` (a Slack thread and response_url, a Discord interaction token). Each channel's wire encodes
its reply target as a ReplyRef of the version it writes and decodes the versions it knows, so a record
journaled by one release is read by the next, or refused with a reason, never misread. What the edge
itself needs of where a job was asked (the asker's workspace and channel, where its question is shown)
is in the job's own columns (edge.runtime.store), not in here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oz0.edge.errors import Oz0Error

__all__ = ["MAX_PLATFORM_CHARS", "ReplyRef", "ReplyRefError"]

MAX_PLATFORM_CHARS = 32


class ReplyRefError(Oz0Error, ValueError):
    """A journaled reply reference that cannot be read: names the field and what is wrong."""


@dataclass(frozen=True)
class ReplyRef:
    """`platform` (slack, discord, ...), the `version` of the wire's encoding, and its `data`."""

    platform: str
    version: int
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"platform": self.platform, "version": self.version, "data": dict(self.data)}

    @classmethod
    def from_json(cls, raw: Any) -> ReplyRef:
        """A ReplyRef from the journal; ReplyRefError naming the field that is missing or mistyped."""
        if not isinstance(raw, Mapping):
            raise ReplyRefError(f"a reply reference is a JSON object, not {type(raw).__name__}")
        platform, version, data = raw.get("platform"), raw.get("version"), raw.get("data")
        if not isinstance(platform, str) or not platform or len(platform) > MAX_PLATFORM_CHARS:
            raise ReplyRefError(f"a reply reference's platform is a name of 1 to {MAX_PLATFORM_CHARS} characters, "
                                f"not {platform!r}")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ReplyRefError(f"a {platform} reply reference has no version (a whole number from 1): {version!r}")
        if not isinstance(data, Mapping):
            raise ReplyRefError(f"a {platform} reply reference's data is a JSON object, not {type(data).__name__}")
        return cls(platform, version, dict(data))

    @classmethod
    def written(cls, platform: str, version: int, data: Mapping[str, Any]) -> ReplyRef:
        """A wire's reference: its fields that are set (None left out)."""
        return cls(platform, version, {k: v for k, v in data.items() if v is not None})

    def data_for(self, platform: str, versions: tuple[int, ...]) -> Mapping[str, Any]:
        """The data, for the wire of `platform` that reads `versions`; ReplyRefError for another
        platform's reference or a version it does not read."""
        if self.platform != platform:
            raise ReplyRefError(f"a {self.platform} reply reference handed to the {platform} channel")
        if self.version not in versions:
            known = ", ".join(str(v) for v in versions)
            raise ReplyRefError(f"a {platform} reply reference of version {self.version}; this release reads "
                                f"version {known}")
        return self.data
