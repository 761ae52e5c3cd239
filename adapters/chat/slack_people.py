"""Who an asker is on Slack: the user groups access.yaml names that they are in (cached a while), and
the name a card shows for them."""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from oz0.edge.runtime.access import AccessPolicy, Asker

__all__ = ["GROUPS_TTL_S", "SlackPeople"]

log = logging.getLogger("oz0.slack")

GROUPS_TTL_S = 60.0       # how long a user group's members are cached


class SlackPeople:
    """usergroups.users.list and users.info, for the access policy and the cards."""

    def __init__(self, client: AsyncWebClient, policy: AccessPolicy) -> None:
        self.client = client
        self.policy = policy
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}  # group -> (read at, members)

    async def with_groups(self, asker: Asker) -> Asker:
        """Fill in the asker's user groups, asking Slack only about the groups access.yaml names. When
        Slack does not answer who is in one, the asker comes back with `groups_error` saying why (never
        "in no group", which would pass a deny by group), and that failure is not remembered. A group
        Slack does not know (`no_such_subteam`) has no members."""
        wanted = sorted({g for rule in self.policy.rules for g in rule.groups})
        if not wanted or asker.user is None:
            return asker
        mine = []
        now = time.monotonic()
        for group in wanted:
            cached = self._groups.get(group)
            if cached is None or now - cached[0] > GROUPS_TTL_S:
                try:
                    resp = await self.client.usergroups_users_list(usergroup=group)
                    cached = (now, frozenset(resp.get("users") or ()))
                except SlackApiError as exc:
                    error = str(exc.response.get("error") or f"HTTP {exc.response.status_code}")
                    log.warning("cannot read members of user group %s: %s", group, error)
                    if error != "no_such_subteam":
                        return replace(asker, groups=(), groups_error=f"Slack answered {error}")
                    cached = (now, frozenset())
                except (aiohttp.ClientError, TimeoutError) as exc:
                    log.warning("cannot read members of user group %s: %s", group, type(exc).__name__)
                    return replace(asker, groups=(), groups_error=f"Slack could not be reached ({type(exc).__name__})")
                self._groups[group] = cached
            if asker.user in cached[1]:
                mine.append(group)
        return replace(asker, groups=tuple(mine))

    async def display_name(self, user: str, workspace: str | None) -> str | None:
        """users.info: the profile's display name, else the real name, else the handle."""
        try:
            resp = await self.client.users_info(user=user)
        except SlackApiError as exc:
            log.warning("users.info of %s: %s", user, exc.response.get("error"))
            return None
        person = resp.get("user") or {}
        profile = person.get("profile") or {}
        return (profile.get("display_name") or profile.get("real_name") or person.get("real_name")
                or person.get("name") or None)
