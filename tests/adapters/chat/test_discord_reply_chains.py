"""Discord reply chains in a plain channel (issue 25 §1): a mention of the bot outside a thread is an
ask answered as a reply to it, and a reply to that answer (`message_reference`) is a follow-up of the
same conversation, turn after turn, without a thread. Against the Discord stand-in's gateway and API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_conversations import discord_running, home, run  # noqa: F401  (home: the conversations plugin)

from oz0.edge.runtime.conversations import conversation_id


def _standin() -> Any:
    from discord_harness import CHANNEL, GUILD
    from discord_standin import DiscordStandIn

    return DiscordStandIn(guilds=[DiscordStandIn.guild(GUILD, channel_ids=(CHANNEL,))]), GUILD, CHANNEL


async def posted(h: Any, channel: str, count: int) -> list[Any]:
    return await h.standin.wait_for(lambda r: r.method == "POST" and r.path == f"/channels/{channel}/messages",
                                    count=count)


def answer_to(h: Any, message_id: str) -> dict[str, Any]:
    """The bot's message that replied to `message_id`."""
    [found] = [m for m in h.standin.messages.values() if m["author"]["id"] == h.standin.bot_id
               and (m.get("message_reference") or {}).get("message_id") == message_id]
    return found


def test_a_reply_to_the_bots_answer_in_a_plain_channel_is_a_follow_up(home: Path) -> None:
    standin, guild, channel = _standin()

    async def main() -> None:
        async with discord_running(home, env={"DISCORD_MESSAGE_CONTENT": "true"}, standin=standin) as h:
            s = h.standin
            root = await s.post_message("recall the nightly build", guild_id=guild, channel_id=channel,
                                        mentions_bot=True)
            [first] = await posted(h, channel, 1)
            assert first.body["message_reference"]["message_id"] == root["id"] and not first.body.get("flags", 0) & 64
            said = await s.post_message("and yesterday's?", guild_id=guild, channel_id=channel,
                                        reply_to=answer_to(h, root["id"])["id"])
            second = (await posted(h, channel, 2))[1]
            body = json.dumps(second.body, ensure_ascii=False)
            assert "and yesterday's?" in body and "the nightly build" in body
            assert second.body["message_reference"]["message_id"] == said["id"]
            again = await s.post_message("and the day before?", guild_id=guild, channel_id=channel,
                                         reply_to=answer_to(h, said["id"])["id"])
            third = json.dumps((await posted(h, channel, 3))[2].body, ensure_ascii=False)
            assert "and the day before?" in third and "and yesterday's?" in third
            assert "oz0_stop:" in third
            turns = h.runtime.conversations.turns(conversation_id("discord", channel, root["id"]))
            assert [t["kind"] for t in turns] == ["turn", "turn", "turn"]
            assert answer_to(h, again["id"])
    run(main())


def test_other_messages_in_a_plain_channel_are_nobodys_ask(home: Path) -> None:
    import asyncio

    standin, guild, channel = _standin()

    async def main() -> None:
        async with discord_running(home, env={"DISCORD_MESSAGE_CONTENT": "true"}, standin=standin) as h:
            s = h.standin
            chatter = await s.post_message("recall hello", guild_id=guild, channel_id=channel)
            await s.post_message("recall me too", guild_id=guild, channel_id=channel, reply_to=chatter["id"])
            await asyncio.sleep(0.5)
            assert h.runtime.jobs() == [] and not s.calls("POST", f"/channels/{channel}/messages")
    run(main())


def test_without_the_intent_a_reply_that_pings_the_bot_follows_up(home: Path) -> None:
    standin, guild, channel = _standin()

    async def main() -> None:
        async with discord_running(home, standin=standin) as h:
            s = h.standin
            root = await s.post_message("recall first", guild_id=guild, channel_id=channel, mentions_bot=True)
            await posted(h, channel, 1)
            answer = answer_to(h, root["id"])["id"]
            await s.post_message("not read", guild_id=guild, channel_id=channel, reply_to=answer)  # content empty
            await s.post_message("and then?", guild_id=guild, channel_id=channel, reply_to=answer, reply_ping=True)
            second = json.dumps((await posted(h, channel, 2))[1].body, ensure_ascii=False)
            assert "and then?" in second and "first" in second
            assert len(h.runtime.jobs()) == 2
    run(main())
