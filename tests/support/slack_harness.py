"""A running Slack channel for tests and the ack benchmark: the real HTTP endpoint (or bolt in Socket
Mode) started by `oz0.adapters.chat.slack.serve`, a real Runtime on a SQLite file, a plugin of small agents
installed in it, and the loopback Slack stand-in as the Web API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from chat_plugin import install_chat_plugin
from plugin_kit import COUNT_AGENT
from ports import free_port
from slack_sdk.models.blocks import Block
from slack_standin import (
    APP_TOKEN,
    BOT_TOKEN,
    SIGNING_SECRET,
    SlackStandIn,
    mention_event_body,
    signed_headers,
    slash_command_body,
)

from oz0.adapters.chat import slack as slack_app
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

__all__ = ["Harness", "answer_response", "assert_valid_blocks", "install_test_plugin", "running_channel"]

IMPL = COUNT_AGENT + """\
    import asyncio
    import threading

    async def echo(text, ctx):
        if text.startswith("sleep "):
            await asyncio.sleep(float(text.split()[1]))
        if text.startswith("progress "):
            ctx.progress("step 1 of 2: " + text.split(None, 1)[1])
            await asyncio.sleep(0.3)
        if text.startswith("count "):
            await count(text, ctx)
        if text == "which thread":
            return "echo: on " + threading.current_thread().name
        return "echo: " + text

    def deploys(value):
        return [{"service": value["service"], "n": i, "status": "ok"} for i in range(value.get("rows", 3))]

    def boom(text):
        raise RuntimeError("the database is on fire")
    """


async def answer_response(slack: SlackStandIn, *, timeout: float = 10.0) -> Any:
    """The response_url call that put the card in a private view: the first that is not a progress
    update of the working message (those come first, while the job runs)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        for call in slack.of("response"):
            if "Working on" not in str(call.args.get("text", "")):
                return call
        await asyncio.sleep(0.02)
    raise AssertionError(f"no answer through the response_url within {timeout}s; got {slack.methods()}")


def install_test_plugin(home: Path) -> None:
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        install_chat_plugin(runtime, home.parent / "slacktest-plugin", name="slacktest", impl=IMPL)
    finally:
        runtime.close()


def assert_valid_blocks(blocks: list[dict[str, Any]]) -> None:
    """The oracle: slack_sdk's own models parse and validate every block, and there are at most 50."""
    assert isinstance(blocks, list) and 0 < len(blocks) <= 50, blocks
    for raw in blocks:
        block = Block.parse(raw)
        assert block is not None, raw
        block.validate_json()


@dataclass
class Harness:
    slack: SlackStandIn
    runtime: Runtime
    http: aiohttp.ClientSession
    url: str
    stop: asyncio.Event
    env: dict[str, str]

    async def command(self, text: str, *, trigger_id: str = "1337.42.abcdef", user: str = "U0ASKER",
                      channel: str = "C0GENERAL", headers: dict[str, str] | None = None
                      ) -> tuple[int, Any, float]:
        """POST a signed /ask; (status, JSON body or text, seconds until the answer)."""
        body = slash_command_body(text, response_url=self.slack.response_url(trigger_id), user=user,
                                  channel=channel, trigger_id=trigger_id)
        return await self.post(body, headers or signed_headers(body))

    async def mention(self, text: str, *, event_id: str = "Ev0001", user: str = "U0ASKER",
                      ts: str = "1700000000.000100", thread_ts: str | None = None, retry_num: int | None = None
                      ) -> tuple[int, Any, float]:
        body = mention_event_body(text, event_id=event_id, user=user, ts=ts, thread_ts=thread_ts)
        return await self.post(body, signed_headers(body, content_type="application/json", retry_num=retry_num))

    async def post(self, body: str, headers: dict[str, str]) -> tuple[int, Any, float]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        async with self.http.post(self.url, data=body.encode("utf-8"), headers=headers) as resp:
            raw = await resp.text()
            took = loop.time() - start
            try:
                payload: Any = await resp.json(content_type=None) if raw else None
            except ValueError:
                payload = raw
            return resp.status, payload, took


@contextlib.asynccontextmanager
async def running_channel(home: Path, *, usergroups: dict[str, list[str]] | None = None,
                          socket_mode: bool = False, slack: SlackStandIn | None = None) -> AsyncIterator[Harness]:
    """Start `oz0.adapters.chat.slack.serve` against a stand-in; stop it (and wait for it) on exit."""
    async with contextlib.AsyncExitStack() as stack:
        if slack is None:
            slack = await stack.enter_async_context(SlackStandIn(usergroups=usergroups))
        runtime = Runtime(home, backoff_s=0.01, flow_engine=FLOW_ENGINE)
        stack.callback(runtime.close)
        port = free_port()
        env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
               "SLACK_API_URL": slack.api_url, "OZ0_SLACK_PORT": str(port), "OZ0_SLACK_HOST": "127.0.0.1"}
        if socket_mode:
            env["SLACK_APP_TOKEN"] = APP_TOKEN
        stop = asyncio.Event()
        server = asyncio.create_task(slack_app.serve(runtime, env=env, stop=stop))
        # no client-side cap on connections (aiohttp's default is 100): Slack's requests do not wait for each other
        http = await stack.enter_async_context(aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)))
        if socket_mode:
            await slack.wait_for("apps.connections.open")
        else:
            await _wait_listening(port, server)
        try:
            yield Harness(slack, runtime, http, f"http://127.0.0.1:{port}{slack_app.EVENTS_PATH}", stop, env)
        finally:
            stop.set()
            await asyncio.wait_for(server, 15)


async def _wait_listening(port: int, server: asyncio.Task[Any]) -> None:
    for _ in range(500):
        if server.done():
            server.result()  # raises what serve() raised
            raise AssertionError("serve() returned before listening")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.01)
    raise AssertionError(f"the Slack channel did not listen on {port}")
