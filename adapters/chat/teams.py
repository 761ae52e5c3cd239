"""The Microsoft Teams channel for `oz0 serve`: whether it is configured, and its start.

The Microsoft 365 Agents SDK (and the endpoint built on it, `teams_channel`) is imported only when
the channel starts, so a `serve` without Teams settings never loads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from oz0.adapters.chat.restarts import Restarts
from oz0.adapters.chat.teams_settings import TeamsConfigError, TeamsSettings, configured
from oz0.adapters.chat.wire import ChatRuntime

__all__ = ["RESTARTS", "TeamsConfigError", "TeamsSettings", "configured", "report_interrupted", "serve"]

RESTARTS = Restarts("teams")


def report_interrupted(jobs: Iterable[Any]) -> None:
    """Hook for `oz0 serve`: jobs a restart interrupted are reported where they were asked, once the
    channel is up."""
    RESTARTS.report(jobs)


async def serve(runtime: ChatRuntime, *, env: Mapping[str, str], stop: asyncio.Event) -> None:
    """Run the Teams channel (its messaging endpoint) until `stop` is set."""
    import aiohttp

    from oz0.adapters.chat.teams_channel import TeamsChannel  # defers the Agents SDK to the channel's start

    settings = TeamsSettings.from_env(env)
    async with aiohttp.ClientSession() as session:
        await TeamsChannel(runtime, settings, session, restarts=RESTARTS).run(stop)
