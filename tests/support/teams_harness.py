"""A running Teams channel for tests: `oz0.adapters.chat.teams.serve` on a free loopback port, a real
Runtime on a SQLite file with the chat plugin, and the loopback stand-ins (issuer, token endpoint,
connector) it is pointed at by its settings."""

from __future__ import annotations

import asyncio
import contextlib
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from chat_plugin import install_chat_plugin
from discord_harness import IMPL
from ports import free_port
from teams_standin import TeamsStandIn

from oz0.adapters.chat import teams
from oz0.edge.runtime.runner import Runtime

__all__ = ["Harness", "home", "run", "running_channel"]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.fixture
def home(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """OZ0_HOME, with the chat plugin's agents writing their runs beside it."""
    monkeypatch.setenv("OZ0_TEST_RUNS", str(oz0_home.parent / "runs.txt"))
    return oz0_home


@dataclass
class Harness:
    standin: TeamsStandIn
    runtime: Runtime
    url: str
    session: aiohttp.ClientSession
    runs_file: Path

    def runs(self) -> list[str]:
        return self.runs_file.read_text().splitlines() if self.runs_file.exists() else []

    async def post(self, activity: dict[str, Any], *, token: str | None = "default") -> tuple[int, Any]:
        headers = {}
        if token == "default":
            token = self.standin.activity_token()
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        async with self.session.post(self.url, json=activity, headers=headers) as response:
            text = await response.text()
            return response.status, (await response.json() if text.startswith("{") else text)


@contextlib.asynccontextmanager
async def running_channel(home: Path, *, env: dict[str, str] | None = None, access: str | None = None,
                          runtime: Runtime | None = None, before_serve: Any = None,
                          standin: TeamsStandIn | None = None) -> AsyncIterator[Harness]:
    if access is not None:
        (home / "access.yaml").write_text(textwrap.dedent(access), encoding="utf-8")
    own_runtime = runtime is None
    if runtime is None:
        runtime = Runtime(home, backoff_s=0.01)
        install_chat_plugin(runtime, home.parent / "plugin-src", name="teamstest", impl=IMPL)
    if before_serve is not None:
        before_serve(runtime)
    standin = standin or await TeamsStandIn().start()
    port = free_port()
    environment = {**standin.env(), "OZ0_TEAMS_HOST": "127.0.0.1", "OZ0_TEAMS_PORT": str(port), **(env or {})}
    stop = asyncio.Event()
    task = asyncio.create_task(teams.serve(runtime, env=environment, stop=stop))
    session = aiohttp.ClientSession()
    url = f"http://127.0.0.1:{port}/api/messages"
    try:
        for _ in range(200):
            if task.done():
                task.result()
            try:
                async with session.post(url, json={}) as response:
                    if response.status in (400, 401):
                        break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.05)
        else:
            raise TimeoutError("the Teams endpoint never listened")
        yield Harness(standin, runtime, url, session, home.parent / "runs.txt")
    finally:
        stop.set()
        await session.close()
        try:
            await asyncio.wait_for(task, 15)
        finally:
            await standin.close()
            if own_runtime:
                runtime.close()
