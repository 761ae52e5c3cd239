"""Discord's wire payloads as the ask flow's neutral requests: pure translations, no client, no I/O.

An interaction or a gateway message (as its wire dict) becomes an `Ask`, a `ShareClick` or an
`AnswerClick`; `adapters/chat/discord.py` is the thin client around these (bolt-python's shape: a
pair of pure translations around a thin class), and `discord_wire.py` the other direction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import discord

from oz0.adapters.chat.asking import ANSWER_ACTION, pick_of
from oz0.adapters.chat.cards import SHARE_ACTION
from oz0.adapters.chat.discord_wire import ReplyTarget
from oz0.adapters.chat.wire import AnswerClick, Ask, ShareClick
from oz0.edge.runtime.access import Asker
from oz0.renderers import discord_modal

__all__ = [
    "AGENT_FIELD",
    "INPUT_FIELD",
    "LEGACY_SHARE_PREFIX",
    "SHARE_PREFIX",
    "THREAD_TYPES",
    "asker_of",
    "referenced",
    "reply_of",
    "share_job",
    "snowflake_time",
    "str_or_none",
    "to_answer_click",
    "to_ask",
    "to_direct_message",
    "to_share_click",
    "to_thread_message",
]

SHARE_PREFIX = f"{SHARE_ACTION}:"   # a button's custom_id is f"{Action.id}:{Action.value}"
LEGACY_SHARE_PREFIX = "oz0:share:"  # buttons posted before 0.x still work
THREAD_TYPES = (10, 11, 12)         # announcement, public and private threads
AGENT_FIELD = discord_modal.ASK_AGENT_ID
INPUT_FIELD = discord_modal.ASK_INPUT_ID


def asker_of(data: Mapping[str, Any]) -> Asker:
    """Who asks and where, from an interaction payload: guild, channel, user and role ids."""
    member = data.get("member") or {}
    user = member.get("user") or data.get("user") or {}
    channel = data.get("channel_id") or (data.get("channel") or {}).get("id")
    return Asker("discord", workspace=str_or_none(data.get("guild_id")), channel=str_or_none(channel),
                 user=str_or_none(user.get("id")), groups=tuple(str(r) for r in member.get("roles") or ()))


def str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def snowflake_time(snowflake: Any) -> float:
    """When Discord made this id (Unix seconds)."""
    return discord.utils.snowflake_time(int(snowflake)).timestamp()


def to_ask(data: Mapping[str, Any], *, interaction: Any = None) -> Ask:
    """Translate `/ask`, `/agents` or the submit of the "Ask an agent about this" modal.

    `data` is the interaction as Discord sends it (INTERACTION_CREATE); `interaction` the live object
    the answer goes through. ValueError names what is missing.
    """
    kind = data.get("type")
    body = data.get("data") or {}
    wants_help = False
    if kind == 2 and body.get("type", 1) == 1 and body.get("name") == "agents":
        agent, text, wants_help = None, "", True
    elif kind == 2 and body.get("type", 1) == 1:
        options = {o.get("name"): o.get("value") for o in body.get("options") or []}
        agent, text = options.get("agent"), options.get("input")
    elif kind == 5:
        values = _modal_values(body.get("components") or [])
        agent, text = values.get(AGENT_FIELD), values.get(INPUT_FIELD)
    else:
        raise ValueError(f"not an ask: interaction type {kind}")
    if not wants_help and (not isinstance(agent, str) or not agent.strip()):
        raise ValueError("the ask names no agent")
    asker = asker_of(data)
    if not data.get("id") or not data.get("token") or asker.user is None or asker.channel is None:
        raise ValueError("interaction without id, token, user or channel")
    reply = reply_of(data, asker, interaction)
    in_thread = (data.get("channel") or {}).get("type") in THREAD_TYPES
    return Ask(agent.strip() if isinstance(agent, str) else None, text if isinstance(text, str) else "", asker,
               f"discord:interaction:{data['id']}", reply, help=wants_help,
               source="modal" if kind == 5 else "command", thread=asker.channel if in_thread else None)


def to_direct_message(data: Mapping[str, Any]) -> Ask:
    """A direct message to the bot (access.yaml `dms: true`): `AGENT INPUT` or `help`, no mention
    needed; the DM is one conversation, so words that name no agent follow it up."""
    author = data.get("author") or {}
    content = str(data.get("content") or "").strip()
    if author.get("bot") or not author.get("id") or not data.get("id") or not content:
        raise ValueError("a bot's direct message, or one without author, id or text")
    channel = str(data["channel_id"])
    asker = Asker("discord", workspace=None, channel=channel, user=str(author["id"]))
    reply = ReplyTarget(application_id="", token="", channel_id=channel, user_id=str(author["id"]),
                        message_id=str(data["id"]))
    words = content.split(None, 1)
    wants_help = words[0].lower() in ("help", "?", "/agents")
    return Ask(None if wants_help else words[0], "" if wants_help or len(words) < 2 else words[1].strip(), asker,
               f"discord:message:{data['id']}", reply, help=wants_help, source="mention", thread=channel)


def to_thread_message(data: Mapping[str, Any], *, bot_id: str) -> Ask:
    """A person's message in a guild channel (MESSAGE_CREATE). In a thread, a mention of the bot asks
    like `/ask` (`@oz0 AGENT INPUT`, or words that follow up the thread's conversation); without one it
    is a follow-up, whose content Discord sends only with the message-content intent. In a plain
    channel a mention asks too, answered as a reply to it (the root of a reply chain), and a reply to
    the bot's answer there (`message_reference`) continues that chain's conversation (`Ask.chain`).
    ValueError for anything else."""
    author = data.get("author") or {}
    if author.get("bot") or not author.get("id") or not data.get("id") or not data.get("channel_id"):
        raise ValueError("a bot's message, or one without author, id or channel")
    in_thread = data.get("channel_type") in THREAD_TYPES
    answered = data.get("referenced") or {}
    chain = (f"discord:message:{answered['reply_to']}" if not in_thread and answered.get("author") == bot_id
             and answered.get("reply_to") else None)
    content = str(data.get("content") or "")
    mentioned = any(str(m.get("id")) == bot_id for m in data.get("mentions") or ())
    if not in_thread and not mentioned and chain is None:
        raise ValueError("a message outside a thread that neither mentions the bot nor replies to its answer")
    if not content.strip():
        raise ValueError("a message without content (no message-content intent, or only attachments)")
    channel = str(data["channel_id"])
    asker = Asker("discord", workspace=str_or_none(data.get("guild_id")), channel=channel, user=str(author["id"]),
                  groups=tuple(str(r) for r in (data.get("member") or {}).get("roles") or ()))
    reply = ReplyTarget(application_id="", token="", channel_id=channel, user_id=str(author["id"]),
                        guild_id=asker.workspace, message_id=str(data["id"]))
    delivery = f"discord:message:{data['id']}"
    thread = channel if in_thread else str(data["id"])   # a plain channel: this message roots a reply chain
    if mentioned:
        words = re.sub(rf"<@!?{re.escape(bot_id)}>", " ", content).strip().split(None, 1)
        agent, text = (words[0] if words else None), (words[1].strip() if len(words) > 1 else "")
        wants_help = agent is None or agent.lower() in ("help", "?")
        return Ask(None if wants_help else agent, "" if wants_help else text, asker, delivery, reply,
                   help=wants_help, source="mention", thread=thread, chain=chain)
    return Ask(None, content.strip(), asker, delivery, reply, source="reply", thread=channel if in_thread else None,
               follow_up=True, chain=chain)


def reply_of(data: Mapping[str, Any], asker: Asker, interaction: Any) -> ReplyTarget:
    return ReplyTarget(application_id=str(data.get("application_id", "")), token=str(data["token"]),
                       channel_id=str(asker.channel), user_id=str(asker.user), guild_id=asker.workspace,
                       created=snowflake_time(data["id"]), interaction=interaction)


def referenced(message: discord.Message) -> dict[str, str | None] | None:
    """The message this one replies to, as far as a reply chain needs it: its author, and the message
    it replied to in turn (Discord sends the replied-to message with its own `message_reference`)."""
    ref = message.reference
    answered = ref.resolved if ref is not None else None
    if not isinstance(answered, discord.Message):
        return None
    before = answered.reference.message_id if answered.reference is not None else None
    return {"id": str(answered.id), "author": str(answered.author.id), "reply_to": str_or_none(before)}


def share_job(custom_id: str) -> str | None:
    """The job a "Share in channel" button's custom_id names, or None for another component."""
    for prefix in (SHARE_PREFIX, LEGACY_SHARE_PREFIX):
        if custom_id.startswith(prefix):
            return custom_id[len(prefix):]
    return None


def to_share_click(data: Mapping[str, Any], *, interaction: Any = None) -> ShareClick:
    """A click on "Share in channel" (a component interaction); ValueError for another component."""
    job_id = share_job(str((data.get("data") or {}).get("custom_id", "")))
    if job_id is None:
        raise ValueError("not a share button")
    asker = asker_of(data)
    return ShareClick(job_id, asker, reply_of(data, asker, interaction))


def to_answer_click(data: Mapping[str, Any], *, interaction: Any = None) -> AnswerClick:
    """A click on a question's button (a component interaction) or its modal's submit; ValueError
    for another component or modal."""
    custom_id = str((data.get("data") or {}).get("custom_id", ""))
    prefix, _, value = custom_id.partition(":")
    pick = pick_of(value) if prefix.startswith(f"{ANSWER_ACTION}_") else None
    if pick is None:
        raise ValueError("not a question's button or modal")
    asker = asker_of(data)
    if not data.get("token") or asker.user is None or asker.channel is None:
        raise ValueError("interaction without token, user or channel")
    form = _modal_values((data.get("data") or {}).get("components") or []) if data.get("type") == 5 else None
    return AnswerClick(pick, asker, reply_of(data, asker, interaction), form=form)


def _modal_values(components: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """custom_id -> value of a modal submit (text inputs and selects, inside labels or action rows)."""
    out: dict[str, str] = {}
    for comp in components:
        if comp.get("type") == 18 and comp.get("component"):
            out.update(_modal_values([comp["component"]]))
        elif comp.get("type") == 1:
            out.update(_modal_values(comp.get("components") or []))
        elif comp.get("custom_id"):
            value = comp.get("value")
            if value is None and isinstance(comp.get("values"), list):
                value = ",".join(str(v) for v in comp["values"])  # a select's chosen indices (renderers.discord_modal)
            if isinstance(value, str):
                out[str(comp["custom_id"])] = value
    return out
