"""Where a Slack answer goes: the reply target a job journals, the reply to a click, and the
response_url a private view is replaced through (with its fallback when Slack no longer takes it)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from oz0.edge.model.reply_ref import ReplyRef

__all__ = ["REF_VERSION", "ClickReply", "ReplyTarget", "respond", "retry_after"]

log = logging.getLogger("oz0.slack")

REF_VERSION = 1               # the reply reference this wire writes (edge.model.reply_ref); it reads only this one


@dataclass(frozen=True)
class ReplyTarget:
    """Where the answer goes: a thread (mentions) or the asker's private view (slash commands)."""

    channel: str
    user: str
    team: str | None = None
    thread_ts: str | None = None
    response_url: str | None = None
    ts: str | None = None          # the "working..." message, once posted
    in_thread: bool = False        # the ask was made in an existing thread (not a top-level message)
    ack: Callable[..., Any] | None = field(default=None, compare=False, repr=False)   # a command's ack
    upload_to: str | None = field(default=None, compare=False)   # the DM a private answer's files go to
    streamed: bool = False         # `ts` is a message chat.startStream began (a streamed answer)

    @property
    def ephemeral(self) -> bool:
        return self.response_url is not None

    def to_ref(self) -> ReplyRef:
        """This target as the job journals it: version REF_VERSION of the Slack reply reference."""
        return ReplyRef.written("slack", REF_VERSION, {
            "channel": self.channel, "user": self.user, "team": self.team, "thread_ts": self.thread_ts,
            "response_url": self.response_url, "ts": self.ts, "in_thread": self.in_thread or None,
            "streamed": self.streamed or None})

    @classmethod
    def from_ref(cls, ref: ReplyRef) -> ReplyTarget:
        """A journaled reference read back; ReplyRefError for another platform's or an unknown version."""
        data = ref.data_for("slack", (REF_VERSION,))
        return cls(channel=str(data["channel"]), user=str(data.get("user", "")), team=data.get("team"),
                   thread_ts=data.get("thread_ts"), response_url=data.get("response_url"), ts=data.get("ts"),
                   in_thread=bool(data.get("in_thread")), streamed=bool(data.get("streamed")))


@dataclass(frozen=True)
class ClickReply:
    """Where to answer someone who clicked a question's button or sent its modal: the message's
    `response_url`, the click's `trigger_id` (to open the modal) and, for a modal's submit, its ack
    (what the ack carries keeps the modal open with errors, or closes it)."""

    channel: str
    user: str
    team: str | None = None
    response_url: str | None = None
    trigger_id: str | None = None
    ack: Callable[..., Any] | None = field(default=None, compare=False, repr=False)


def retry_after(headers: Mapping[str, Any]) -> float:
    """A 429's Retry-After in seconds (Slack sends whole seconds); 1 s when it is missing or unreadable."""
    for name, value in headers.items():
        if name.lower() == "retry-after":
            raw = value[0] if isinstance(value, (list, tuple)) and value else value
            try:
                return max(0.0, float(raw))
            except (TypeError, ValueError):
                break
    return 1.0


async def respond(client: AsyncWebClient, reply: ReplyTarget, body: dict[str, Any]) -> None:
    """Replace the asker's private view through the command's response_url; when that has expired
    (30 minutes, 5 uses), post a new ephemeral message instead."""
    assert reply.response_url is not None
    resp = await AsyncWebhookClient(reply.response_url, timeout=10).send_dict(body)
    if resp.status_code == 200:
        return
    log.warning("response_url answered %s %s; posting an ephemeral message instead", resp.status_code,
                resp.body[:200])
    fields = {k: v for k, v in body.items() if k not in ("response_type", "replace_original")}
    await client.chat_postEphemeral(channel=reply.channel, user=reply.user, **fields)
