"""The docs' screenshots of a conversation as the console shows it, made from a real run, not drawn by hand.

A conversation is made the way a Slack user makes one: the real Slack channel
(`oz0.adapters.chat.slack.serve`, HTTP mode, a Runtime on a SQLite file in a temporary OZ0_HOME) is sent
signed events by the tests' Slack stand-in (tests/support): `@oz0 triage the nightly build`, then two
replies in its thread without a mention, as the conversation tests send them
(tests/edge/runtime/test_conversations.py). `triage` is a python agent of this script's own plugin
that answers with the ask and the earlier asks it was given in `ctx.history`, so each card shows what
a follow-up carries, in words a reader can follow. Then the real console (uvicorn on loopback)
serves that journal, and Debian's headless Chromium, driven through playwright as the console's
browser tests drive it, takes the job page at 1,300 px wide:

- docs/images/console-conversation.png: the last turn's job page, the conversation and the card;
- docs/images/console-conversation-turn.png: the second turn's page (the first follow-up), from its
  Conversation section to its card;
- docs/images/console-conversation-discord.png: the same conversation had in a Discord thread (the
  Discord stand-in, `/ask` then two replies, with the message-content intent): its last turn's page,
  from its Conversation section to its card.

The script lives beside the pages that show its images; mkdocs.yml leaves it out of the site.
Re-run it after a change to the console's job page, look at the images, and commit them:

    .venv/bin/python docs/shots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "edge" / "runtime")]

from console_plugin import ConsoleThread
from discord_harness import CHANNEL, GUILD
from discord_standin import DiscordStandIn, snowflake
from slack_harness import running_channel
from slack_standin import signed_headers
from test_conversations import discord_running, thread_message

from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

if TYPE_CHECKING:
    from playwright.sync_api import Page

WIDTH = 1300
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ROOT_TS = "1764640800.000100"
ASKS = ("triage the nightly build", "and yesterday's?", "which of them failed first?")
MAX_BYTES = 200_000

PLUGIN = {
    "plugin.yaml": "name: shots\nversion: 1.0.0\ndescription: the agent of the docs' screenshots\n",
    "agents/triage.yaml": """\
        description: Says what it was asked and the earlier asks of the conversation it was given
        kind: python
        entry: impl:triage
        input: text
        output: text
        example: the nightly build
        """,
    "impl.py": """\
        def triage(text, ctx):
            asks = [turn["content"] for turn in ctx.history if turn["role"] == "user"]
            answers = sum(1 for turn in ctx.history if turn["role"] == "assistant")
            if not asks:
                return f"You asked “{text}”. No earlier turns: this thread is a new conversation."
            earlier = ", ".join(f"({n}) “{ask}”" for n, ask in enumerate(asks, start=1))
            return (f"You asked “{text}”. Earlier in this thread you asked {earlier}: "
                    f"I was given those asks and my {answers} answer{'s' if answers > 1 else ''} to them.")
        """,
}


def install(home: Path) -> None:
    """This script's plugin of one agent, `triage`, written next to `home` and installed in it."""
    where = home.parent / "shots-plugin"
    for relative, text in PLUGIN.items():
        (where / relative).parent.mkdir(parents=True, exist_ok=True)
        (where / relative).write_text(textwrap.dedent(text), encoding="utf-8")
    runtime = Runtime(home)
    try:
        install_plugin(runtime, load_plugin(where), actor="docs/shots.py")
    finally:
        runtime.close()


def turns_of(runtime: Runtime, count: int) -> list[str]:
    """The job ids of the latest `count` jobs, oldest first, each of which must have succeeded."""
    jobs = list(reversed(runtime.jobs(limit=count)))
    failed = [j.id for j in jobs if j.status != "succeeded"]
    if len(jobs) != count or failed:
        raise SystemExit(f"expected {count} succeeded turns, got {len(jobs)} jobs (failed: {failed})")
    return [j.id for j in jobs]


async def converse_in_slack(home: Path) -> list[str]:
    """The Slack conversation: a mention, then replies in its thread; the job id of each turn, in order."""
    async with running_channel(home) as h:
        await h.mention(ASKS[0], event_id="EvShot1", ts=ROOT_TS)
        await h.slack.wait_for("chat.update", 1)
        for n, text in enumerate(ASKS[1:], start=2):
            body = thread_message(text, event_id=f"EvShot{n}", thread_ts=ROOT_TS, ts=f"1764640800.00{n}000")
            status, _, _ = await h.post(body, signed_headers(body, content_type="application/json"))
            if status != 200:
                raise SystemExit(f"the Slack channel answered {status} to the reply {text!r}")
            await h.slack.wait_for("chat.update", n)
        return turns_of(h.runtime, len(ASKS))


async def converse_in_discord(home: Path) -> list[str]:
    """The Discord conversation, with the message-content intent: `/ask` in a thread, then replies in
    it; the job id of each turn, in order."""
    thread = snowflake()
    standin = DiscordStandIn(guilds=[DiscordStandIn.guild(GUILD, channel_ids=(CHANNEL,), thread_ids=(thread,))])
    async with discord_running(home, env={"DISCORD_MESSAGE_CONTENT": "true"}, standin=standin) as h:
        agent, text = ASKS[0].split(" ", 1)
        await h.edit(await h.send(standin.slash("ask", {"agent": agent, "input": text},
                                                guild_id=GUILD, channel_id=thread, channel_type=11)))
        for n, text in enumerate(ASKS[1:], start=1):
            await standin.post_message(text, guild_id=GUILD, channel_id=thread)
            await standin.wait_for(lambda r: r.method == "POST" and r.path == f"/channels/{thread}/messages", count=n)
        return turns_of(h.runtime, len(ASKS))


def clip_of(page: Page, path: Path) -> None:
    """The page from its Conversation heading to the bottom of its card, as a PNG at `path`."""
    top, bottom = page.locator("h2:has-text('Conversation')").bounding_box(), page.locator("#card").bounding_box()
    if top is None or bottom is None:
        raise SystemExit(f"{page.url} has no Conversation section or no card")
    y = top["y"] - 12
    page.screenshot(path=str(path), full_page=True,
                    clip={"x": 0, "y": y, "width": WIDTH, "height": bottom["y"] + bottom["height"] + 12 - y})


def shoot(home: Path, slack: list[str], discord: list[str], out: Path) -> list[Path]:
    """The console over the journal the conversations left; their job pages, as PNGs in `out`."""
    from playwright.sync_api import sync_playwright  # costly; only the screenshots need it

    out.mkdir(parents=True, exist_ok=True)
    shots = [out / "console-conversation.png", out / "console-conversation-turn.png",
             out / "console-conversation-discord.png"]
    runtime = Runtime(home)
    try:
        with ConsoleThread(runtime) as console, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            page.goto(f"{console.url}/jobs/{slack[-1]}")
            page.wait_for_selector("#conversation li.this-turn")
            page.screenshot(path=str(shots[0]), full_page=True)
            page.goto(f"{console.url}/jobs/{slack[1]}")
            clip_of(page, shots[1])
            page.goto(f"{console.url}/jobs/{discord[-1]}")
            clip_of(page, shots[2])
            browser.close()
    finally:
        runtime.close()
    for png in shots:
        if png.stat().st_size > MAX_BYTES:
            raise SystemExit(f"{png} is {png.stat().st_size} bytes; keep a docs image under {MAX_BYTES}")
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit("no chromium: `make browser` installs Debian's chromium")
    with tempfile.TemporaryDirectory(prefix="oz0-shots-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        os.environ["OZ0_HOME"] = str(home)
        os.environ.pop("OZ0_DATABASE_URL", None)
        install(home)
        slack = asyncio.run(asyncio.wait_for(converse_in_slack(home), 120))
        discord = asyncio.run(asyncio.wait_for(converse_in_discord(home), 120))
        for png in shoot(home, slack, discord, args.out):
            print(json.dumps({"image": str(png.relative_to(ROOT) if png.is_relative_to(ROOT) else png),
                              "bytes": png.stat().st_size}))


if __name__ == "__main__":
    main()
