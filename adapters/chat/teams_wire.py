"""Teams calls out: the ask flow's `ChatWire` calls as Bot Framework connector requests, and where an
answer goes.

Every call goes to the activity's own `serviceUrl` through the Microsoft 365 Agents SDK's
`ConnectorClient` (`v3/conversations/{id}/activities/{id}`: reply, update), with the bot's token
(`teams_auth.TokenSource`) and activities built as the SDK's `Activity` model from the renderer's
payload, sent as they are. A 429 is the connector asking to wait: progress then raises `RateLimited`
(the flow sends none for that long); a card waits for `Retry-After` and is sent again, a few times.

What is Teams' here: a bot message in a channel or chat is seen by everyone in it (there are no
ephemeral messages), so an answer is never "private" and carries no "Share in channel"; what one
person alone must see (a refusal of their click, the answer form) goes in the invoke's own response,
which Teams shows to the clicker alone (`Reply.respond`). Files: a bot cannot attach a file to a
channel message, so a card cut to fit links the full result on the console's job page
(`OZ0_PUBLIC_URL`), or names the `oz0 jobs show` command where no public URL is set; in a personal
chat the file is also offered with Teams' file consent card and uploaded once the person accepts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
from microsoft_agents.activity import Activity
from microsoft_agents.hosting.core.connector.client import ConnectorClient

from oz0.adapters.chat.asking import FORM
from oz0.adapters.chat.teams_auth import TokenSource
from oz0.adapters.chat.teams_graph import GraphGroups
from oz0.adapters.chat.teams_stream import (
    STREAM_EVERY_S,
    Streams,
    StreamState,
    final_activity,
    fits,
    piece_text,
    refusal,
    typing_activity,
)
from oz0.adapters.chat.wire import AnswerClick, Ask, RateLimited, ShareClick, StreamEnd, StreamView, Syntax, WireRefused
from oz0.edge.cards.model import Attachment
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.access import Asker
from oz0.edge.runtime.questions import RefusedWhy
from oz0.renderers import teams_form
from oz0.renderers.rendered import Rendered

__all__ = ["ConnectorRefused", "Reply", "TeamsWire"]

log = logging.getLogger("oz0.teams")

RETRIES = 3
PLACES_PER_TENANT = 3        # conversations per tenant a name is asked in (the newest the bot heard from)
MAX_TENANTS = 1_000          # tenants remembered so; past it the oldest go first
RETRY_AFTER_MAX_S = 30.0
MESSAGE = "application/vnd.microsoft.activity.message"
CARD = "application/vnd.microsoft.card.adaptive"
FILE_CONSENT = "application/vnd.microsoft.teams.card.file.consent"
FILE_INFO = "application/vnd.microsoft.teams.card.file.info"
REF_VERSION = 1                  # the reply reference this wire writes (edge.model.reply_ref); it reads only this one
MAX_STREAM_TEXT_BYTES = 20_000   # a streamed text stops growing here (the final keeps room for the card)


class ConnectorRefused(WireRefused):
    """The connector refused a call: its status, and its answer's body (Teams' error code and message)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"the connector answered {status}")
        self.status, self.detail = status, detail


@dataclass(frozen=True)
class Reply:
    """Where an answer goes: the conversation at its `serviceUrl`, the activity asked in, and (once
    posted) our working message to update. `to_ref` is the versioned reference journaled with the job."""

    service_url: str
    conversation: str
    activity: str
    user: str
    channel: str
    tenant: str | None = None
    team: str | None = None
    kind: str = "personal"                 # conversationType: personal, groupChat or channel
    message: str | None = None             # our working message's activity id
    stream: str | None = None              # the streamId of a streamed answer (personal chats, teams_stream)
    offer_job: str | None = field(default=None, compare=False)   # the job whose files are offered (files_place)
    respond: Callable[[dict[str, Any]], None] | None = field(default=None, compare=False, repr=False)

    def to_ref(self) -> ReplyRef:
        """This target as the job journals it: version REF_VERSION of the Teams reply reference."""
        return ReplyRef.written("teams", REF_VERSION, {
            "service_url": self.service_url, "conversation": self.conversation, "activity": self.activity,
            "user": self.user, "channel": self.channel, "tenant": self.tenant, "team": self.team,
            "kind": self.kind, "message": self.message, **({"stream": self.stream} if self.stream else {})})

    @classmethod
    def from_ref(cls, ref: ReplyRef) -> Reply:
        """A journaled reference read back; ReplyRefError for another platform's or an unknown version."""
        data = ref.data_for("teams", (REF_VERSION,))
        conversation = str(data.get("conversation", ""))
        return cls(service_url=str(data.get("service_url", "")), conversation=conversation,
                   activity=str(data.get("activity", "")), user=str(data.get("user", "")),
                   channel=str(data.get("channel", "")), tenant=data.get("tenant"), team=data.get("team"),
                   kind=str(data.get("kind") or _kind_of(conversation)), message=data.get("message"),
                   stream=data.get("stream"))


def _kind_of(conversation: str) -> str:
    """The conversationType of a reference that names a conversation alone (a schedule's, which posts
    there unasked): a personal chat's id starts `a:`, a group chat's ends `@thread.v2`, else a channel."""
    if conversation.startswith("a:"):
        return "personal"
    return "groupChat" if conversation.split(";", 1)[0].endswith("@thread.v2") else "channel"


class TeamsWire:
    """The ask flow's calls (`ChatWire`) as Bot Framework connector requests."""

    platform = "teams"
    name = "Teams"
    stream_every_s = STREAM_EVERY_S
    syntax = Syntax(example=lambda agent, value: f"@oz0 {agent} {value}",
                    help_notes=("Mention @oz0 with an agent and its input; in a personal chat, no mention.",
                                "help AGENT shows what one agent takes."),
                    unknown_hint="Send `help` to list them with their inputs.", help_form="key_values")

    def __init__(self, tokens: TokenSource, *, public_url: str | None, groups: GraphGroups | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.tokens = tokens
        self.public_url = public_url
        self.groups = groups
        self.sleep = sleep
        self._sessions: dict[str, aiohttp.ClientSession] = {}
        self._places: dict[str | None, list[tuple[str, str]]] = {}   # tenant -> (serviceUrl, conversation)
        self._streams = Streams()

    async def _client(self, reply: Reply) -> ConnectorClient:
        """The SDK's connector client for the activity's own serviceUrl (one HTTP session per URL)."""
        url = reply.service_url.rstrip("/") + "/"
        session = self._sessions.get(url)
        if session is None or session.closed:
            session = self._sessions[url] = aiohttp.ClientSession(base_url=url, headers={"Accept": "application/json"})
        return ConnectorClient(url, await self.tokens.token(), session=session)

    async def close(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()

    async def _call(self, reply: Reply, op: str, body: Mapping[str, Any], *, wait: bool = True) -> str | None:
        """One connector call (`reply`, `update` or `send`); the new activity's id."""
        activity = Activity.model_validate({"type": "message", **body})
        for attempt in range(RETRIES + 1):
            client = await self._client(reply)
            try:
                if op == "update" and reply.message:
                    activity.id = reply.message
                    done = await client.conversations.update_activity(reply.conversation, reply.message, activity)
                elif op == "send" or not reply.activity:
                    done = await client.conversations.send_to_conversation(reply.conversation, activity)
                else:
                    done = await client.conversations.reply_to_activity(reply.conversation, reply.activity, activity)
                return done.id
            except aiohttp.ClientResponseError as exc:
                if exc.status != 429:
                    raise ConnectorRefused(exc.status, str(exc.message)[:500]) from None
                after = _retry_after(exc.headers)
                if not wait or attempt == RETRIES:
                    raise RateLimited(after) from None
                log.info("the Teams connector asked to wait %.1f s", after)
                await self.sleep(after)
        return None

    # -- ChatWire --

    async def with_groups(self, asker: Asker) -> Asker:
        """The asker's Entra groups among those access.yaml names, from Microsoft Graph (`teams_graph`)."""
        return await self.groups.fill(asker) if self.groups is not None else asker

    def seen(self, reply: Reply) -> None:
        """An activity came from this conversation: remember it (a few per tenant, newest first) as where
        to ask the connector for the names of the tenant's people."""
        places = self._places.pop(reply.tenant, [])
        place = (reply.service_url, reply.conversation)
        self._places[reply.tenant] = [place, *(p for p in places if p != place)][:PLACES_PER_TENANT]
        while len(self._places) > MAX_TENANTS:
            self._places.pop(next(iter(self._places)))

    async def display_name(self, user: str, workspace: str | None) -> str | None:
        """The member's name as the connector gives it (`GET v3/conversations/{id}/members/{user}`, the
        user's Entra object id), asked in the conversations of their tenant the bot heard from last; None
        when none of them has that member. Names sent with an activity (`from.name`) need no call
        (`names.Names.heard`)."""
        for service_url, conversation in list(self._places.get(workspace, ())):
            client = await self._client(Reply(service_url=service_url, conversation=conversation, activity="",
                                              user="", channel=""))
            try:
                member = await client.conversations.get_conversation_member(conversation, user)
            except aiohttp.ClientResponseError as exc:
                log.info("the Teams connector did not name member %s in a conversation (%s)", user, exc.status)
                continue
            if member.name:
                return str(member.name)
        return None

    def audit_detail(self, ask: Ask, asker: Asker) -> dict[str, Any]:
        return {"platform": "teams", "agent": ask.agent, "tenant": asker.workspace, "team": asker.team,
                "channel": asker.channel,
                "user": asker.user, "groups": list(asker.groups)}

    async def refuse(self, ask: Ask, message: str, rendered: Rendered) -> None:
        await self._call(ask.reply, "reply", rendered.payload)

    async def show_help(self, ask: Ask, rendered: Rendered) -> None:
        await self._call(ask.reply, "reply", rendered.payload)

    async def ignore(self, ask: Ask) -> None:
        return None   # the HTTP request is answered 200 by the endpoint; nothing is posted

    def working_first(self, ask: Ask) -> bool:
        return False   # Teams waits 15 s for the endpoint's answer: the journal comes first

    async def working(self, ask: Ask, rendered: Rendered) -> Reply:
        message = await self._call(ask.reply, "reply", rendered.payload)
        return replace(ask.reply, message=message, respond=None)

    def private(self, reply: Reply) -> bool:
        return False   # a bot's message is seen by everyone in its conversation

    def files_place(self, reply: Reply, *, private: bool, job_id: str) -> tuple[Reply, str | None]:
        """A bot cannot attach a file to a message: the console's job page is named, and in a personal
        chat the full result is also offered as a file (Teams' file consent card, sent by `deliver`
        below the card; the person accepts, and the bot uploads it to their OneDrive)."""
        link = (f"on the console: {self.public_url}/jobs/{job_id}" if self.public_url
                else f"shown by oz0 jobs show {job_id}")
        if reply.kind != "personal":
            return reply, link
        return replace(reply, offer_job=job_id), f"offered to you as a file below, and {link}"

    async def _offer(self, reply: Reply, job_id: str, attachment: Attachment) -> None:
        consent = {"contentType": FILE_CONSENT, "name": attachment.filename,
                   "content": {"description": f"The full result of job {job_id}", "sizeInBytes": attachment.size,
                               "acceptContext": {"job": job_id}, "declineContext": {"job": job_id}}}
        await self._call(replace(reply, message=None), "reply", {"attachments": [consent]})

    async def upload(self, reply: Reply, upload_url: str, attachment: Attachment, info: Mapping[str, Any]) -> None:
        """The accepted file: its bytes PUT to the upload URL Teams gave (one range), then a file card."""
        size = attachment.size
        headers = {"Content-Length": str(size), "Content-Range": f"bytes 0-{size - 1}/{size}"}
        async with aiohttp.ClientSession() as session:
            async with session.put(upload_url, data=attachment.data, headers=headers) as response:
                if response.status not in (200, 201):
                    raise WireRefused(f"the file upload answered {response.status}")
        card = {"contentType": FILE_INFO, "name": str(info.get("name") or attachment.filename),
                "contentUrl": str(info.get("contentUrl") or ""),
                "content": {"uniqueId": str(info.get("uniqueId") or ""), "fileType": str(info.get("fileType") or "")}}
        await self._call(replace(reply, message=None), "reply", {"attachments": [card]})

    async def deliver(self, reply: Reply, rendered: Rendered) -> None:
        if self.streaming(reply):
            await self._end_stream(reply, StreamEnd(rendered, rendered, "", whole=False))
        else:
            await self._call(reply, "update" if reply.message else "reply", rendered.payload)
        if reply.offer_job and rendered.uploads:
            await self._offer(reply, reply.offer_job, rendered.uploads[0])

    async def progress(self, reply: Reply, rendered: Rendered) -> None:
        if reply.message:
            await self._call(reply, "update", rendered.payload, wait=False)

    async def notice(self, reply: Reply, text: str) -> None:
        if reply.respond is not None:
            reply.respond({"statusCode": 200, "type": MESSAGE, "value": text[:1000]})
        else:
            await self._call(reply, "reply", {"text": text[:1000], "textFormat": "plain"})

    async def share(self, click: ShareClick, public: Rendered, marked: Rendered) -> None:
        await self._call(click.reply, "send", public.payload)

    def share_note(self, user: str, agent: str) -> str | None:
        return None   # answers are public in Teams: nothing is shared

    def reply_from(self, ref: ReplyRef) -> Reply:
        return Reply.from_ref(ref)

    # -- a streamed answer (Teams' streaming protocol, personal chats: teams_stream) --

    async def stream_start(self, reply: Reply, view: StreamView) -> Reply | None:
        """The first `typing` activity of the stream (sequence 1); its id is the streamId. The working
        message goes (the streamed message is the answer now). Not in a channel or group chat (None)."""
        if reply.kind != "personal":
            return None
        text = piece_text(view.piece)
        stream_id = await self._call(replace(reply, message=None), "send", typing_activity(text, 1, None), wait=False)
        if not stream_id:
            raise WireRefused("the connector gave no streamId")
        self._streams.begin(stream_id, StreamState(text=text, sequence=1))
        if reply.message:
            try:
                client = await self._client(reply)
                await client.conversations.delete_activity(reply.conversation, reply.message)
            except aiohttp.ClientResponseError as exc:
                log.warning("could not remove the working message in %s: %s", reply.channel, exc.status)
        return replace(reply, stream=stream_id, message=None)

    async def stream_update(self, stream: Reply, view: StreamView) -> None:
        """The next `typing` activity: the whole text so far, the next sequence number. None once the
        person stopped it, near the two-minute limit, or past MAX_STREAM_TEXT_BYTES (the card has it all)."""
        state = self._streams.get(stream.stream or "")
        if state is None or state.ended or state.late() or not view.piece:
            return
        text = state.text + piece_text(view.piece)
        if len(text.encode()) > MAX_STREAM_TEXT_BYTES:
            return
        try:
            await self._call(replace(stream, message=None), "send",
                             typing_activity(text, state.sequence + 1, stream.stream), wait=False)
        except ConnectorRefused as exc:
            if exc.status == 403:
                state.ended = refusal(exc.detail)
            raise
        state.text, state.sequence = text, state.sequence + 1

    def streaming(self, reply: Reply) -> bool:
        return reply.stream is not None

    async def stream_cut(self, stream: Reply, note: str) -> None:
        state = self._streams.end(stream.stream or "")
        text = f"{state.text}\n\n_{note}_" if state is not None and state.text else note
        await self._final(stream, final_activity(str(stream.stream), text, None), state)

    async def stream_end(self, stream: Reply, end: StreamEnd) -> None:
        await self._end_stream(stream, end)

    async def _end_stream(self, reply: Reply, end: StreamEnd) -> None:
        """The final message: the whole text once, the card's tail (status, actions) attached, or the
        whole card when its body is not that text; the card alone as a message of its own where Teams
        no longer takes the stream (Stop pressed) or the two would not fit in one. The text is what
        this replica streamed when it streamed it all, else the card's whole text (Teams' final
        message replaces the streamed one: a replica that did not stream it ends it the same)."""
        state = self._streams.end(reply.stream or "")
        streamed = state.text if state is not None and state.text else ""
        if end.text and not (end.whole and streamed):
            streamed = piece_text(end.text)
        text = streamed or str(end.card.payload.get("summary") or "")
        attached = end.tail if end.text else end.card   # the text once: its card's body is that text
        here = replace(reply, message=None, stream=None)
        if state is not None and state.ended == "cancelled":
            await self._call(here, "send", end.card.payload)
            return
        summary = end.card.payload.get("summary")
        final = final_activity(str(reply.stream), text,
                               {**attached.payload, "summary": summary} if attached is not None else None)
        if fits(final):
            await self._final(reply, final, state, card=end.card.payload)
            return
        await self._final(reply, final_activity(str(reply.stream), text, None), state)
        await self._call(here, "send", end.card.payload)

    async def _final(self, reply: Reply, final: dict[str, Any], state: StreamState | None, *,
                     card: Mapping[str, Any] | None = None) -> None:
        """Send the final activity; a stream Teams ended (two minutes passed) is updated in place
        instead, and one the person stopped gets the card as a message of its own."""
        here = replace(reply, message=None, stream=None)
        ended = state.ended if state is not None else None
        if ended is None:
            try:
                await self._call(here, "send", final)
                return
            except ConnectorRefused as exc:
                if exc.status != 403:
                    raise
                ended = refusal(exc.detail)
        log.info("the Teams stream %s was %s: its message is updated in place", reply.stream, ended)
        body = {k: v for k, v in final.items() if k != "entities"}
        if ended == "timed_out":
            await self._call(replace(here, message=reply.stream), "update", body)
        elif card is not None:
            await self._call(here, "send", card)

    # -- questions --

    async def post_question(self, reply: Reply, rendered: Rendered, *, private: bool) -> dict[str, Any]:
        message = await self._call(replace(reply, message=None), "reply", rendered.payload)
        return {"message": message}

    async def update_question(self, reply: Reply, shown: Mapping[str, Any], rendered: Rendered, *,
                              via: Any = None) -> None:
        if via is not None and via.respond is not None:
            content = rendered.payload["attachments"][0]["content"]
            via.respond({"statusCode": 200, "type": CARD, "value": content})
        if shown.get("message"):
            try:
                await self._call(replace(reply, message=str(shown["message"])), "update", rendered.payload)
            except (WireRefused, RateLimited) as exc:
                log.error("could not update the question in %s: %s", reply.channel, exc)

    async def hold(self, click: AnswerClick) -> None:
        return None   # the invoke is answered when the flow is done with it (its respond callback)

    async def open_form(self, click: AnswerClick, question: Any) -> None:
        card = teams_form.form_card(message=question.message, answer_schema=question.answer_schema,
                                    value=click.pick.value, source=question.source)
        _respond(click, {"statusCode": 200, "type": CARD, "value": card})

    def submitted(self, click: AnswerClick, answer_schema: Mapping[str, Any]) -> Mapping[str, Any]:
        return teams_form.submitted(answer_schema, click.form or {})

    async def answer_refused(self, click: AnswerClick, message: str, *, why: RefusedWhy, question: Any) -> None:
        if question is not None and click.form is not None and why in ("not_answerer", "invalid"):
            typed = teams_form.submitted(question.answer_schema, click.form)
            card = teams_form.form_card(message=question.message, answer_schema=question.answer_schema,
                                        value=click.pick.value.replace(f"/{click.pick.choice}", f"/{FORM}"),
                                        source=question.source, typed=typed, refusal=message)
            _respond(click, {"statusCode": 200, "type": CARD, "value": card})
            return
        _respond(click, {"statusCode": 200, "type": MESSAGE, "value": message[:1000]})

    async def answer_taken(self, click: AnswerClick) -> None:
        return None   # the question's card is replaced by its answered card (update_question)


def _respond(click: AnswerClick, body: dict[str, Any]) -> None:
    if click.reply.respond is not None:
        click.reply.respond(body)


def _retry_after(headers: Any) -> float:
    try:
        return min(RETRY_AFTER_MAX_S, max(0.0, float((headers or {}).get("Retry-After", "1"))))
    except (TypeError, ValueError):
        return 1.0
