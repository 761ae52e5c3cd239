"""A running Discord channel for tests: `oz0.adapters.chat.discord.serve` with a real discord.py client,
a real Runtime on a SQLite file with a plugin of small agents, and the loopback Discord stand-in as
both the HTTP API and the gateway."""

from __future__ import annotations

import asyncio
import contextlib
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chat_plugin import install_chat_plugin
from discord_standin import DiscordStandIn, Recorded, snowflake
from plugin_kit import COUNT_AGENT

from oz0.adapters.chat import discord as discord_client
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

__all__ = ["CHANNEL", "GUILD", "ROLE", "Harness", "buttons", "install_test_plugin", "running_channel", "texts",
           "working_stop"]

GUILD = snowflake()
CHANNEL = snowflake()
OTHER_CHANNEL = snowflake()
ROLE = snowflake()
TOKEN = "test-bot-token.not-a-real-one"

RESTRICTED_AGENT = {"agents/ops-restart.yaml": """\
    description: Restarts a service (restricted)
    kind: python
    entry: impl:echo
    input: text
    output: text
    """}
IMPL = COUNT_AGENT + """\
    import asyncio
    import os
    import threading
    from pathlib import Path

    RUNS = Path(os.environ["OZ0_TEST_RUNS"])

    async def echo(text, ctx):
        with RUNS.open("a") as f:
            f.write(text.replace("\\n", " ") + "\\n")
        with RUNS.with_suffix(".threads").open("a") as f:
            f.write(threading.current_thread().name + "\\n")
        if text.startswith("sleep "):
            await asyncio.sleep(float(text.split()[1]))
        if text.startswith("count "):
            await count(text, ctx)
        return "echo: " + text

    def deploys(value):
        return [{"service": value["service"], "n": i, "status": "ok @everyone <@&1>"}
                for i in range(value.get("rows", 3))]

    def boom(text):
        raise RuntimeError("token=sk-live-SECRET at /srv/app/boom.py line 3")
    """


def install_test_plugin(runtime: Runtime, where: Path) -> None:
    install_chat_plugin(runtime, where, name="discordtest", impl=IMPL, extra=RESTRICTED_AGENT)


@dataclass
class Harness:
    standin: DiscordStandIn
    runtime: Runtime
    stop: asyncio.Event
    task: asyncio.Task[Any]
    runs_file: Path

    def runs(self) -> list[str]:
        return self.runs_file.read_text().splitlines() if self.runs_file.exists() else []

    def threads(self) -> list[str]:
        """The thread each run of `echo` ran on."""
        path = self.runs_file.with_suffix(".threads")
        return path.read_text().splitlines() if path.exists() else []

    async def send(self, payload: dict[str, Any], *, shard_id: int = 0) -> dict[str, Any]:
        return await self.standin.interact(payload, shard_id=shard_id)

    def where(self, **extra: Any) -> dict[str, Any]:
        return {"guild_id": GUILD, "channel_id": CHANNEL, **extra}

    async def callback(self, payload: dict[str, Any], *, timeout: float = 10.0) -> Recorded:
        path = f"/interactions/{payload['id']}/{payload['token']}/callback"
        return (await self.standin.wait_for(lambda r: r.path == path, timeout=timeout))[0]

    async def edit(self, payload: dict[str, Any], *, timeout: float = 10.0) -> Recorded:
        path = f"/webhooks/{self.standin.app_id}/{payload['token']}/messages/@original"
        return (await self.standin.wait_for(lambda r: r.method == "PATCH" and r.path == path,
                                            timeout=timeout))[0]

    def to(self, payload: dict[str, Any]) -> list[Recorded]:
        """Every request the client made with this interaction's id or token."""
        return [r for r in self.standin.requests if payload["token"] in r.path or payload["id"] in r.path]


@contextlib.asynccontextmanager
async def running_channel(home: Path, *, env: dict[str, str] | None = None, access: str | None = None,
                          token_lifetime_s: float = discord_client.INTERACTION_TOKEN_S,
                          standin: DiscordStandIn | None = None, runtime: Runtime | None = None,
                          before_serve: Any = None) -> AsyncIterator[Harness]:
    if access is not None:
        (home / "access.yaml").write_text(textwrap.dedent(access), encoding="utf-8")
    own_runtime = runtime is None
    if runtime is None:
        runtime = Runtime(home, backoff_s=0.01, flow_engine=FLOW_ENGINE)
        install_test_plugin(runtime, home.parent / "plugin-src")
    if standin is None:
        standin = DiscordStandIn(guilds=[DiscordStandIn.guild(GUILD, channel_ids=(CHANNEL, OTHER_CHANNEL),
                                                              role_ids=(ROLE,))])
    await standin.start()
    environment = {"DISCORD_TOKEN": TOKEN, "DISCORD_API_URL": standin.api_url, "DISCORD_GUILD_IDS": GUILD,
                   **(env or {})}
    stop = asyncio.Event()
    if before_serve is not None:
        before_serve(runtime)
    task = asyncio.create_task(discord_client.serve(runtime, env=environment, stop=stop,
                                                    token_lifetime_s=token_lifetime_s))
    harness = Harness(standin, runtime, stop, task, home.parent / "runs.txt")
    try:
        shard_ids = tuple(int(s) for s in environment.get("DISCORD_SHARD_IDS", "0").split(","))
        waiter = asyncio.create_task(standin.wait_identified(shard_ids))
        done, _ = await asyncio.wait({waiter, task}, timeout=15, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            waiter.cancel()
            task.result()
        if waiter not in done:
            raise TimeoutError("the client never identified on the stand-in gateway")
        yield harness
    finally:
        stop.set()
        try:
            await asyncio.wait_for(task, 15)
        finally:
            await standin.close()
            if own_runtime:
                runtime.close()


def buttons(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every button (type 2) of a message's components, in document order."""
    found: list[dict[str, Any]] = []
    stack = list(components)
    while stack:
        node = stack.pop(0)
        if node.get("type") == 2:
            found.append(node)
        stack[0:0] = node.get("components") or []
    return found


def texts(components: list[dict[str, Any]]) -> str:
    """Every Text Display's content in a Components V2 message, in order."""
    out: list[str] = []
    stack = list(components)
    while stack:
        node = stack.pop(0)
        if node.get("type") == 10:
            out.append(node["content"])
        stack[0:0] = node.get("components") or []
    return "\n".join(out)


MESSAGE_WITH_SOURCE = 4
EPHEMERAL = 1 << 6


def working_stop(callback: Recorded, agent: str) -> dict[str, Any]:
    """The interaction's own answer, at once: the working message of `agent`, private to the asker, with
    its job's Stop button (never Discord's bare "thinking...", which could carry no button). Its Stop."""
    assert callback.body["type"] == MESSAGE_WITH_SOURCE, callback.body
    data = callback.body["data"]
    assert data["flags"] & EPHEMERAL, data
    assert f"Working on {agent}" in texts(data["components"]) or f"Queued for {agent}" in texts(data["components"])
    [stop] = buttons(data["components"])
    assert stop["label"] == "Stop" and stop["custom_id"].startswith("oz0_cancel:"), stop
    return stop
