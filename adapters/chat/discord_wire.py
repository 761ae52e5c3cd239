"""Discord calls out: the ask flow's `ChatWire` calls as interaction responses and HTTP API requests,
and where an answer goes."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import discord
from discord.http import Route

from oz0.adapters.chat.asking import ANSWER_ACTION, FORM
from oz0.adapters.chat.wire import AnswerClick, Ask, RateLimited, ShareClick, StreamEnd, StreamView, Syntax, WireRefused
from oz0.edge import Attachment
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.access import Asker
from oz0.edge.runtime.questions import RefusedWhy
from oz0.renderers import discord_modal
from oz0.renderers.rendered import Rendered

__all__ = ["ASK_MESSAGE_COMMAND", "INTERACTION_TOKEN_S", "DiscordWire", "ReplyTarget"]

log = logging.getLogger("oz0.discord")

EPHEMERAL = 1 << 6              # a message's flag: seen by the person it answers alone
MESSAGE = 4                      # interaction callback type: answer with a message
MODAL = 9                        # interaction callback type: open a modal
INTERACTION_TOKEN_S = 15 * 60    # Discord: an interaction token may be used for 15 minutes
TOKEN_MARGIN_S = 30.0            # stop using it a little before, so a slow edit does not land after
ASK_MESSAGE_COMMAND = "Ask an agent about this"
STREAM_EDIT_S = 1.0              # a streamed answer's message is edited at most once a second

REF_VERSION = 1                  # the reply reference this wire writes (edge.model.reply_ref); it reads only this one


@dataclass(frozen=True)
class ReplyTarget:
    """Where the answer goes: the interaction's original response, or (token expired) its channel."""

    application_id: str
    token: str = field(repr=False)
    channel_id: str
    user_id: str
    guild_id: str | None = None
    created: float = 0.0          # when Discord created the interaction (its token's clock)
    interaction: Any = field(default=None, compare=False, repr=False)   # to answer it, while it is live
    message_id: str | None = None  # a message asked (a reply in a thread): the answer replies to it
    streamed_id: str | None = None  # the message a streamed answer was posted in (then edited into the card)

    def to_ref(self) -> ReplyRef:
        """This target as the job journals it: version REF_VERSION of the Discord reply reference."""
        return ReplyRef.written("discord", REF_VERSION, {
            "application_id": self.application_id, "token": self.token, "channel": self.channel_id,
            "user": self.user_id, "guild": self.guild_id, "created": self.created,
            "message": self.message_id, **({"streamed": self.streamed_id} if self.streamed_id else {})})

    @classmethod
    def from_ref(cls, ref: ReplyRef) -> ReplyTarget:
        """A journaled reference read back; ReplyRefError for another platform's or an unknown version."""
        data = ref.data_for("discord", (REF_VERSION,))
        return cls(application_id=str(data.get("application_id", "")), token=str(data.get("token", "")),
                   channel_id=str(data.get("channel", "")), user_id=str(data.get("user", "")),
                   guild_id=data.get("guild"), created=float(data.get("created") or 0.0),
                   message_id=data.get("message"), streamed_id=data.get("streamed"))

    def token_usable(self, *, now: float, lifetime_s: float) -> bool:
        return bool(self.token) and now < self.created + lifetime_s - min(TOKEN_MARGIN_S, lifetime_s / 10)


class DiscordWire:
    """The ask flow's calls (`ChatWire`) as Discord interaction responses and HTTP API requests."""

    platform = "discord"
    name = "Discord"
    stream_every_s = STREAM_EDIT_S
    syntax = Syntax(example=lambda agent, value: f"/ask agent:{agent} input:{value}",
                    help_notes=(f"Run one with /ask, or on a message: Apps > {ASK_MESSAGE_COMMAND}.",),
                    unknown_hint="/agents lists them with their inputs.", help_form="key_values")

    def __init__(self, client: discord.Client, *, token_lifetime_s: float) -> None:
        self.client = client
        self.token_lifetime_s = token_lifetime_s

    async def with_groups(self, asker: Asker) -> Asker:
        return asker   # the roles come with the interaction

    async def display_name(self, user: str, workspace: str | None) -> str | None:
        """The guild member's nick, else their global name, else their username."""
        route = (Route("GET", "/guilds/{guild_id}/members/{user_id}", guild_id=workspace, user_id=user) if workspace
                 else Route("GET", "/users/{user_id}", user_id=user))
        try:
            found = await self.client.http.request(route)
        except discord.HTTPException as exc:
            log.warning("cannot read Discord user %s: %s", user, exc.status)
            return None
        person = (found.get("user") or found) if isinstance(found, dict) else {}
        nick = found.get("nick") if isinstance(found, dict) else None
        return nick or person.get("global_name") or person.get("username") or None

    def audit_detail(self, ask: Ask, asker: Asker) -> dict[str, Any]:
        return {"platform": "discord", "agent": ask.agent, "guild": asker.workspace, "channel": asker.channel,
                "user": asker.user, "roles": list(asker.groups)}

    async def refuse(self, ask: Ask, message: str, rendered: Rendered) -> None:
        if ask.reply.interaction is None:   # a message in a thread: a message has no private answer
            await self._in_channel(ask.reply, rendered)
            return
        await ask.reply.interaction.response.send_message(discord.utils.escape_markdown(message), ephemeral=True)

    async def show_help(self, ask: Ask, rendered: Rendered) -> None:
        if ask.reply.interaction is None:
            await self._in_channel(ask.reply, rendered)
            return
        await ask.reply.interaction.response.defer(ephemeral=True, thinking=True)
        await self._send(_original(ask.reply), rendered.payload, rendered.uploads)

    async def ignore(self, ask: Ask) -> None:
        return None   # the first delivery was answered; an interaction takes one answer

    def working_first(self, ask: Ask) -> bool:
        return False   # an interaction takes one answer: a replayed one must find the journal first

    async def working(self, ask: Ask, rendered: Rendered) -> ReplyTarget:
        """The interaction answered with the working message itself (with the job's Stop; Discord's own
        "thinking..." could carry no button), privately; the card replaces it."""
        if ask.reply.interaction is None:   # a message: "oz0 is typing..." until the answer is posted
            try:
                await self.client.http.request(Route("POST", "/channels/{channel_id}/typing",
                                                      channel_id=ask.reply.channel_id))
            except discord.HTTPException as exc:
                log.warning("could not show typing in %s: %s", ask.reply.channel_id, exc.status)
            return ask.reply
        callback = Route("POST", "/interactions/{interaction_id}/{interaction_token}/callback",
                         interaction_id=ask.reply.interaction.id, interaction_token=ask.reply.token)
        flags = int(rendered.payload.get("flags") or 0) | EPHEMERAL
        await self._send(callback, {"type": MESSAGE, "data": {**rendered.payload, "flags": flags}})
        return ask.reply

    def private(self, reply: ReplyTarget) -> bool:
        return reply.token_usable(now=time.time(), lifetime_s=self.token_lifetime_s)

    def files_place(self, reply: ReplyTarget, *, private: bool, job_id: str) -> tuple[ReplyTarget, str | None]:
        return reply, None   # a file shows inside the card, where its File component points

    # -- a streamed answer: a message posted with the first text, edited as more comes --

    async def stream_start(self, reply: ReplyTarget, view: StreamView) -> ReplyTarget | None:
        """A message asked (no interaction to answer): post the text so far as a reply to it. An
        interaction's private response is edited instead (the flow redraws it: None here)."""
        if reply.interaction is not None or self.private(reply):
            return None
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=reply.channel_id)
        payload = dict(view.draw().payload)
        if reply.message_id:
            payload["message_reference"] = {"message_id": reply.message_id, "fail_if_not_exists": False}
        posted = await self._streamed_call(route, payload)
        return replace(reply, streamed_id=str(posted["id"]))

    async def stream_update(self, stream: ReplyTarget, view: StreamView) -> None:
        await self._streamed_call(self._streamed_route(stream), dict(view.draw().payload))

    def streaming(self, reply: ReplyTarget) -> bool:
        return reply.streamed_id is not None

    async def stream_end(self, stream: ReplyTarget, end: StreamEnd) -> None:
        await self.deliver(stream, end.card)   # the message is redrawn, never appended: it becomes the card

    async def stream_cut(self, stream: ReplyTarget, note: str) -> None:
        shown = await self._streamed_call(Route("GET", "/channels/{channel_id}/messages/{message_id}",
                                                channel_id=stream.channel_id, message_id=stream.streamed_id), None)
        content = str(shown.get("content") or "")
        await self._streamed_call(self._streamed_route(stream), {"content": f"{content}\n\n*{note}*".strip()})

    @staticmethod
    def _streamed_route(stream: ReplyTarget) -> Route:
        return Route("PATCH", "/channels/{channel_id}/messages/{message_id}", channel_id=stream.channel_id,
                     message_id=stream.streamed_id)

    async def _streamed_call(self, route: Route, payload: Mapping[str, Any] | None) -> Any:
        """discord.py waits out a 429 itself (its Retry-After) and retries; one it gave up on is RateLimited."""
        try:
            return await self.client.http.request(route, json=payload) if payload is not None \
                else await self.client.http.request(route)
        except discord.RateLimited as exc:
            raise RateLimited(exc.retry_after) from None
        except discord.HTTPException as exc:
            if exc.status == 429:
                raise RateLimited(1.0) from None
            raise WireRefused(f"{exc.status}: {exc.text[:200]}") from None

    async def deliver(self, reply: ReplyTarget, rendered: Rendered) -> None:
        """Edit the asker's private response into the card; after the token's 15 minutes, post in the channel.
        A streamed answer's message is edited into the card."""
        if self.streaming(reply):
            try:
                await self._send(self._streamed_route(reply), rendered.payload, rendered.uploads)
            except discord.HTTPException as exc:
                raise WireRefused(f"{exc.status}: {exc.text[:200]}") from None
            return
        if self.private(reply):
            try:
                await self._send(_original(reply), rendered.payload, rendered.uploads)
                return
            except discord.NotFound:
                log.warning("the response in channel %s is gone (token expired?); posting in the channel",
                            reply.channel_id)
            except discord.HTTPException as exc:
                raise WireRefused(f"{exc.status}: {exc.text[:200]}") from None
        await self._in_channel(reply, rendered)

    async def _in_channel(self, reply: ReplyTarget, rendered: Rendered) -> None:
        """Post in the channel (as a reply to the message asked, when a message asked)."""
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=reply.channel_id)
        payload = dict(rendered.payload)
        payload["flags"] = int(payload.get("flags") or 0) & ~EPHEMERAL
        if reply.message_id:
            payload["message_reference"] = {"message_id": reply.message_id, "fail_if_not_exists": False}
        try:
            await self._send(route, payload, rendered.uploads)
        except discord.HTTPException as exc:
            log.error("could not post a card in channel %s: %s %s", reply.channel_id, exc.status, exc.text)

    async def progress(self, reply: ReplyTarget, rendered: Rendered) -> None:
        if self.private(reply):
            await self._send(_original(reply), rendered.payload)

    async def notice(self, reply: ReplyTarget, text: str) -> None:
        await reply.interaction.response.send_message(text, ephemeral=True)

    async def share(self, click: ShareClick, public: Rendered, marked: Rendered) -> None:
        reply: ReplyTarget = click.reply
        await reply.interaction.response.defer()
        followup = Route("POST", "/webhooks/{webhook_id}/{webhook_token}",
                         webhook_id=reply.application_id, webhook_token=reply.token)
        await self._send(followup, public.payload, public.uploads)
        await self._send(_original(reply), marked.payload)

    def share_note(self, user: str, agent: str) -> str | None:
        return None   # Discord shows who ran the command above the shared message

    def reply_from(self, ref: ReplyRef) -> ReplyTarget:
        return ReplyTarget.from_ref(ref)

    # -- questions --

    async def post_question(self, reply: ReplyTarget, rendered: Rendered, *, private: bool) -> dict[str, Any]:
        body = dict(rendered.payload)
        if private and self.private(reply):
            followup = Route("POST", "/webhooks/{webhook_id}/{webhook_token}", webhook_id=reply.application_id,
                             webhook_token=reply.token)
            message = await self._send(followup, {**body, "flags": int(body.get("flags") or 0) | EPHEMERAL})
            return {"message": str(message["id"])}
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=reply.channel_id)
        try:
            message = await self._send(route, body)
        except discord.HTTPException as exc:
            raise WireRefused(f"{exc.status}: {exc.text[:200]}") from None
        return {"message": str(message["id"]), "channel": reply.channel_id}

    async def update_question(self, reply: ReplyTarget, shown: Mapping[str, Any], rendered: Rendered, *,
                              via: ReplyTarget | None = None) -> None:
        if via is not None:   # the click was deferred as an update of the message it came from
            route = _original(via)
        elif shown.get("channel"):
            route = Route("PATCH", "/channels/{channel_id}/messages/{message_id}", channel_id=shown["channel"],
                          message_id=shown.get("message"))
        elif shown.get("message") and self.private(reply):
            route = Route("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}",
                          webhook_id=reply.application_id, webhook_token=reply.token, message_id=shown["message"])
        else:
            log.warning("the question in channel %s can no longer be edited (its token expired)", reply.channel_id)
            return
        try:
            await self._send(route, rendered.payload)
        except discord.HTTPException as exc:
            log.error("could not update the question in channel %s: %s %s", reply.channel_id, exc.status, exc.text)

    async def hold(self, click: AnswerClick) -> None:
        await click.reply.interaction.response.defer()   # a deferred update of the message clicked

    async def open_form(self, click: AnswerClick, question: Any) -> None:
        reply: ReplyTarget = click.reply
        modal = discord_modal.modal_for(answer_schema=question.answer_schema,
                                        custom_id=f"{ANSWER_ACTION}_{FORM}:{click.pick.value}")
        route = Route("POST", "/interactions/{interaction_id}/{interaction_token}/callback",
                      interaction_id=reply.interaction.id, interaction_token=reply.token)
        await self.client.http.request(route, json={"type": MODAL, "data": modal})

    async def open_ask_form(self, interaction: Any, modal: Mapping[str, Any]) -> None:
        """Answer the message command with the "Ask an agent about this" form (drawn by
        renderers.discord_modal.ask_modal)."""
        route = Route("POST", "/interactions/{interaction_id}/{interaction_token}/callback",
                      interaction_id=interaction.id, interaction_token=interaction.token)
        await self.client.http.request(route, json={"type": MODAL, "data": dict(modal)})

    def submitted(self, click: AnswerClick, answer_schema: Mapping[str, Any]) -> Mapping[str, Any]:
        return discord_modal.submitted(answer_schema, click.form or {})

    async def answer_refused(self, click: AnswerClick, message: str, *, why: RefusedWhy, question: Any) -> None:
        reply: ReplyTarget = click.reply
        followup = Route("POST", "/webhooks/{webhook_id}/{webhook_token}", webhook_id=reply.application_id,
                         webhook_token=reply.token)
        await self._send(followup, {"content": discord.utils.escape_markdown(message)[:2000], "flags": EPHEMERAL,
                                    "allowed_mentions": {"parse": []}})

    async def answer_taken(self, click: AnswerClick) -> None:
        return None   # the message clicked is edited into the answer (on_answered)

    async def _send(self, route: Route, body: Mapping[str, Any], files: Sequence[Attachment] = ()) -> Any:
        """Send a message body as it is through discord.py's HTTP client (its rate limits, its retries)."""
        if not files:
            return await self.client.http.request(route, json=body)
        body = {**body, "attachments": [{"id": i, "filename": f.filename} for i, f in enumerate(files)]}
        uploads = [discord.File(io.BytesIO(f.data), filename=f.filename) for f in files]
        form = [{"name": "payload_json", "value": json.dumps(body, ensure_ascii=False)}]
        form += [{"name": f"files[{i}]", "value": u.fp, "filename": u.filename, "content_type": f.content_type}
                 for i, (u, f) in enumerate(zip(uploads, files))]
        return await self.client.http.request(route, form=form, files=uploads)




def _original(reply: ReplyTarget) -> Route:
    return Route("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/@original",
                 webhook_id=reply.application_id, webhook_token=reply.token)
