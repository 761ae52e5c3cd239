"""The Discord channel's settings, from the environment (names as in docs/reference/configuration.md), and its API base."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import discord
from discord.http import Route

__all__ = ["DiscordConfigError", "DiscordSettings", "api_base", "configured"]


class DiscordConfigError(ValueError):
    """The Discord settings in the environment cannot work: names the variable and what it needs."""


@dataclass(frozen=True)
class DiscordSettings:
    """The channel's settings, from the environment (names as in docs/reference/configuration.md)."""

    token: str = field(repr=False)
    guild_ids: tuple[int, ...] = ()
    api_url: str | None = None
    shard_count: int | None = None
    shard_ids: tuple[int, ...] | None = None
    # DISCORD_MESSAGE_CONTENT: the privileged intent (switched on in the Developer Portal too) that lets a
    # reply in a conversation's thread be a follow-up without a mention; off, only mentions are read
    message_content: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DiscordSettings:
        token = env.get("DISCORD_TOKEN", "").strip()
        if not token:
            raise DiscordConfigError("DISCORD_TOKEN is not set: the Discord channel needs the bot token "
                                     "(Developer Portal > your application > Bot > Reset Token)")
        guilds = _ids(env.get("DISCORD_GUILD_IDS", ""), "DISCORD_GUILD_IDS")
        api_url = env.get("DISCORD_API_URL", "").strip().rstrip("/") or None
        if api_url and not api_url.startswith(("http://", "https://")):
            raise DiscordConfigError(f"DISCORD_API_URL must be an http(s) URL such as "
                                     f"https://discord.com/api/v10, not {api_url!r}")
        count_text = env.get("DISCORD_SHARD_COUNT", "").strip()
        shard_ids = _ids(env.get("DISCORD_SHARD_IDS", ""), "DISCORD_SHARD_IDS") or None
        count = None
        if count_text:
            if not count_text.isdigit() or int(count_text) < 1:
                raise DiscordConfigError(f"DISCORD_SHARD_COUNT must be a whole number of at least 1, "
                                         f"not {count_text!r}")
            count = int(count_text)
        if shard_ids is not None:
            if count is None:
                raise DiscordConfigError("DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT (the bot's total shards)")
            wrong = [s for s in shard_ids if s >= count]
            if wrong:
                raise DiscordConfigError(f"DISCORD_SHARD_IDS {wrong} are not below DISCORD_SHARD_COUNT {count}")
        content = env.get("DISCORD_MESSAGE_CONTENT", "").strip().lower()
        if content not in ("", "0", "1", "true", "false", "yes", "no"):
            raise DiscordConfigError(f"DISCORD_MESSAGE_CONTENT must be true or false, not {content!r}")
        return cls(token=token, guild_ids=guilds, api_url=api_url, shard_count=count, shard_ids=shard_ids,
                   message_content=content in ("1", "true", "yes"))

    @property
    def sharded(self) -> bool:
        return self.shard_count is not None


def _ids(text: str, name: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    bad = [p for p in parts if not p.isdigit()]
    if bad:
        raise DiscordConfigError(f"{name} must be numbers separated by commas; {bad[0]!r} is not one")
    return tuple(int(p) for p in parts)


def configured(env: Mapping[str, str]) -> bool:
    """Whether `oz0 serve` should start the Discord channel: a bot token is set."""
    return bool(env.get("DISCORD_TOKEN", "").strip())


@contextmanager
def api_base(api_url: str | None) -> Iterator[None]:
    """discord.py's API base (and so the gateway found from it) for the life of the channel."""
    if not api_url:
        yield
        return
    old_base, old_gateway = Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = api_url
    try:
        yield
    finally:
        Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway
