"""The Discord channel against a loopback Discord: a real discord.py client, gateway and HTTP API."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from adapters import discord_client
from discord_harness import CHANNEL, GUILD, OTHER_CHANNEL, ROLE, running_channel
from discord_standin import DiscordStandIn, snowflake

DEFERRED_WITH_SOURCE = 5
DEFERRED_UPDATE = 6
AUTOCOMPLETE_RESULT = 8
MODAL = 9
MESSAGE_WITH_SOURCE = 4
EPHEMERAL = 1 << 6
COMPONENTS_V2 = 1 << 15


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.fixture
def home(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OZ0_TEST_RUNS", str(oz0_home.parent / "runs.txt"))
    return oz0_home


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


def buttons(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = list(components)
    while stack:
        node = stack.pop()
        if node.get("type") == 2:
            found.append(node)
        stack += node.get("components") or []
    return found


def count(components: list[dict[str, Any]]) -> int:
    return sum(1 + count(c.get("components") or []) + (1 if c.get("accessory") else 0) for c in components)


def assert_within_discord_limits(body: dict[str, Any]) -> None:
    """What Discord checks on a Components V2 message, and our own rule: no mention is ever parsed."""
    assert body["allowed_mentions"] == {"parse": []}
    assert body["flags"] & COMPONENTS_V2
    assert "content" not in body and "embeds" not in body
    assert count(body["components"]) <= 40
    assert sum(len(t.encode("utf-16-le")) // 2 for t in texts(body["components"]).split("\n")) <= 4000


def test_ask_defers_at_once_then_edits_the_original_response_into_the_card(home):
    async def scenario():
        async with running_channel(home) as h:
            sync = h.standin.calls("PUT", f"/guilds/{GUILD}/commands")
            assert sync, "commands are synced to DISCORD_GUILD_IDS"
            names = {c["name"]: c for c in sync[0].body}
            assert set(names) == {"ask", "agents", discord_client.ASK_MESSAGE_COMMAND}
            assert [o["name"] for o in names["ask"]["options"]] == ["agent", "input"]
            assert names["ask"]["options"][0]["autocomplete"] is True
            assert names[discord_client.ASK_MESSAGE_COMMAND]["type"] == 3
            assert h.standin.identifies[0]["intents"] == 1  # guilds only: nothing privileged

            started = time.monotonic()
            ask = await h.send(h.standin.slash("ask", {"agent": "deploys", "input": '{"service": "api", "rows": 2}'},
                                               **h.where()))
            defer = await h.callback(ask)
            assert time.monotonic() - started < 3
            assert defer.body == {"type": DEFERRED_WITH_SOURCE, "data": {"flags": EPHEMERAL}}
            edit = await h.edit(ask)
            assert_within_discord_limits(edit.body)
            shown = texts(edit.body["components"])
            assert "deploys" in shown and "api" in shown
            share = buttons(edit.body["components"])
            assert [b["label"] for b in share] == ["Share in channel"]
            assert share[0]["custom_id"].startswith(discord_client.SHARE_PREFIX)
            assert [r.method for r in h.to(ask)] == ["POST", "PATCH"]
    run(scenario())
