"""People by name in chat: "Ana Lima" where a card names someone, never `slack:U04ABCD` or a live mention.

A channel looks a person up once an hour at most (`NAME_TTL_S`): Slack's `users.info`, Discord's
guild member (nick, else global name, else username), Teams' conversation member; a name the platform
sends with each request (Teams' `from.name`) is kept without a lookup (`heard`). What a platform will not say (an unknown user,
an API error) is shown as "@" and the id, as plain text, and asked again after `RETRY_S`. The
journal and `--json` keep the ids: names are for people reading a card.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

__all__ = ["MAX_NAMES", "NAME_TTL_S", "RETRY_S", "Names"]

log = logging.getLogger("oz0.chat")

NAME_TTL_S = 3600.0      # how long a display name is kept before it is asked again
RETRY_S = 60.0           # how long an id the platform would not name is shown as the id
MAX_NAMES = 10_000       # names kept; past it the oldest go first (memory stays bounded)
MAX_NAME_CHARS = 80

Lookup = Callable[[str, "str | None"], Awaitable["str | None"]]


class Names:
    """Display names of one platform's people, cached; `lookup(user, workspace)` asks the platform."""

    def __init__(self, platform: str, lookup: Lookup, *, ttl_s: float = NAME_TTL_S,
                 remember: Callable[[str, str], None] | None = None) -> None:
        self.platform = platform
        self.lookup = lookup
        self.ttl_s = ttl_s
        self.remember = remember   # told each name that is new or changed ("slack:U1", "Ana Lima"): the journal's
        self._names: dict[tuple[str, str | None], tuple[float, str]] = {}   # -> (good until, name)

    def heard(self, user: str, name: str | None, *, workspace: str | None = None) -> None:
        """A name the platform gave with a request of `user` (Teams' `from.name`): kept as if looked up."""
        shown = _plain(name) if name else ""
        if shown:
            self._keep((user, workspace), time.monotonic() + self.ttl_s, shown)

    def _keep(self, key: tuple[str, str | None], until: float, shown: str, *, known: bool = True) -> None:
        before = self._names.pop(key, None)
        if known and self.remember is not None and (before is None or before[1] != shown):
            self.remember(f"{self.platform}:{key[0]}", shown)
        self._names[key] = (until, shown)
        while len(self._names) > MAX_NAMES:
            self._names.pop(next(iter(self._names)))

    async def of(self, who: str, *, workspace: str | None = None) -> str:
        """How people here read `who` (a requester or answerer as journaled: "slack:U123"): this
        platform's person by display name; anyone else as recorded."""
        prefix = f"{self.platform}:"
        if not who.startswith(prefix):
            return who.split(":", 1)[1] if who.startswith("console:") else who
        user = who[len(prefix):]
        key = (user, workspace)
        now = time.monotonic()
        cached = self._names.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            name = await self.lookup(user, workspace)
        except Exception:
            log.exception("cannot read the display name of %s user %s", self.platform, user)
            name = None
        shown = _plain(name) if name else ""
        self._keep(key, now + (self.ttl_s if shown else RETRY_S), shown or f"@{user}", known=bool(shown))
        return shown or f"@{user}"


def _plain(name: str) -> str:
    """A name as one line of plain text (the renderer makes it inert; this keeps it short)."""
    one = " ".join(name.split())
    return one if len(one) <= MAX_NAME_CHARS else one[: MAX_NAME_CHARS - 1] + "…"
