"""Teams: which of the Entra (AAD) groups access.yaml names a person is in, from Microsoft Graph.

`POST {TEAMS_GRAPH_URL}/v1.0/users/{id}/checkMemberGroups` with `{"groupIds": [...]}` (at most
`GRAPH_BATCH` ids a request, as Graph takes them) answers the ones the user is a member of, directly
or through nested groups. The bot asks with an app token of the same app registration from the same
token endpoint (`TEAMS_TOKEN_URL`, scope `https://graph.microsoft.com/.default`); the app needs the
Graph application permission `GroupMember.Read.All`, granted by an admin. Only the groups the rules
name are asked about, once per person per hour (`GROUPS_TTL_S`). A Graph failure is never "in no
group": the asker comes back with `groups_error` saying why, and every rule that needs the groups
refuses (edge.runtime.access).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from urllib.parse import quote

import aiohttp

from oz0.adapters.chat.teams_auth import TokenSource
from oz0.edge.runtime.access import Asker

__all__ = ["GRAPH_BATCH", "GROUPS_TTL_S", "GraphGroups"]

log = logging.getLogger("oz0.teams")

GRAPH_BATCH = 20              # checkMemberGroups takes at most 20 group ids a request
GROUPS_TTL_S = 3600.0         # a person's groups are asked again after an hour
MAX_PEOPLE = 10_000           # people whose groups are kept; past it the oldest go first
GRAPH_TIMEOUT_S = 10.0


class GraphUnavailable(Exception):
    """Graph did not say which groups a person is in: why, in words for them (never a token)."""


class GraphGroups:
    """The asker's Entra groups among `wanted` (the group ids access.yaml's Teams rules name)."""

    def __init__(self, tokens: TokenSource, session: aiohttp.ClientSession, *, graph_url: str,
                 wanted: tuple[str, ...]) -> None:
        self.tokens = tokens
        self.session = session
        self.graph_url = graph_url.rstrip("/")
        self.wanted = wanted
        self._groups: dict[str, tuple[float, tuple[str, ...]]] = {}   # user -> (good until, their groups)

    async def fill(self, asker: Asker) -> Asker:
        """The asker with their groups, or with `groups_error` when Graph could not say."""
        if not self.wanted or not asker.user:
            return asker
        now = time.monotonic()
        cached = self._groups.get(asker.user)
        if cached is None or cached[0] <= now:
            try:
                mine = await self._ask(asker.user)
            except GraphUnavailable as exc:
                log.warning("could not read the Entra groups of %s: %s", asker.user, exc)
                return replace(asker, groups=(), groups_error=str(exc))
            cached = (now + GROUPS_TTL_S, mine)
            self._groups.pop(asker.user, None)
            self._groups[asker.user] = cached
            while len(self._groups) > MAX_PEOPLE:
                self._groups.pop(next(iter(self._groups)))
        return replace(asker, groups=cached[1])

    async def _ask(self, user: str) -> tuple[str, ...]:
        try:
            token = await self.tokens.token()
        except (PermissionError, aiohttp.ClientError, ValueError) as exc:
            raise GraphUnavailable(f"oz0 could not get a Microsoft Graph token ({type(exc).__name__})") from None
        url = f"{self.graph_url}/v1.0/users/{quote(user, safe='')}/checkMemberGroups"
        found: list[str] = []
        for start in range(0, len(self.wanted), GRAPH_BATCH):
            batch = list(self.wanted[start:start + GRAPH_BATCH])
            try:
                async with self.session.post(url, json={"groupIds": batch}, headers={"Authorization": f"Bearer {token}"},
                                             timeout=aiohttp.ClientTimeout(total=GRAPH_TIMEOUT_S)) as response:
                    try:
                        body = await response.json(content_type=None)
                    except ValueError:
                        body = None
                    if response.status != 200:
                        code = (body.get("error") or {}).get("code", "") if isinstance(body, dict) else ""
                        raise GraphUnavailable(f"Microsoft Graph answered {response.status}"
                                               + (f" ({str(code)[:60]})" if code else ""))
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                raise GraphUnavailable(f"Microsoft Graph could not be reached ({type(exc).__name__})") from None
            values = body.get("value") if isinstance(body, dict) else None
            if not isinstance(values, list):
                raise GraphUnavailable("Microsoft Graph's answer had no list of groups")
            found += [str(v) for v in values if str(v) in batch]
        return tuple(found)
