"""Slack calls out: the ask flow's `ChatWire` calls as Slack Web API calls, and where an answer goes."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from oz0.adapters.chat.slack_steps import StreamSteps
from oz0.adapters.chat.wire import AnswerClick, Ask, RateLimited, ShareClick, StreamEnd, StreamView, Syntax, WireRefused
from oz0.edge import Attachment
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.edge.runtime.questions import RefusedWhy
from oz0.renderers import slack_modal
from oz0.renderers.rendered import Rendered
from oz0.renderers.safety import slack_escape

__all__ = ["COMMAND", "ClickReply", "ReplyTarget", "SlackWire"]

log = logging.getLogger("oz0.slack")

COMMAND = "/ask"
GROUPS_TTL_S = 60.0       # how long a user group's members are cached
PRIVATE_PROGRESS_USES = 2   # of a response_url's 5 uses (Slack's limit), what progress may spend
MAX_PROGRESS_VIEWS = 10_000  # private views whose progress uses are remembered
TITLE_MAX = 60              # an assistant thread's title, from its first ask
STREAM_EVERY_S = 0.25       # one chat.*Stream call per streamed message at most this often
MAX_STREAM_TEXT = 12_000    # Slack: markdown_text of one chat.*Stream call

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


def _retry_after(headers: Mapping[str, Any]) -> float:
    """A 429's Retry-After in seconds (Slack sends whole seconds); 1 s when it is missing or unreadable."""
    for name, value in headers.items():
        if name.lower() == "retry-after":
            raw = value[0] if isinstance(value, (list, tuple)) and value else value
            try:
                return max(0.0, float(raw))
            except (TypeError, ValueError):
                break
    return 1.0


# ---- Slack calls out ------------------------------------------------------------------------

class SlackWire:
    """The ask flow's calls (`ChatWire`) as Slack Web API calls."""

    platform = "slack"
    name = "Slack"
    stream_every_s = STREAM_EVERY_S

    def __init__(self, client: AsyncWebClient, policy: AccessPolicy, *, command: str = COMMAND) -> None:
        self.client = client
        self.policy = policy
        self.command = command
        self.syntax = Syntax(example=lambda agent, value: f"{command} {agent} {value}",
                             help_notes=(f"Run one with {command} AGENT INPUT, or mention the bot: @oz0 AGENT INPUT",),
                             unknown_hint=f"Try {command} help.")
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}  # group -> (read at, members)
        self._progress_uses: dict[str, int] = {}  # a private view's response_url -> progress updates sent
        self._steps = StreamSteps()

    async def with_groups(self, asker: Asker) -> Asker:
        """Fill in the asker's user groups, asking Slack only about the groups access.yaml names. When
        Slack does not answer who is in one, the asker comes back with `groups_error` saying why (never
        "in no group", which would pass a deny by group), and that failure is not remembered. A group
        Slack does not know (`no_such_subteam`) has no members."""
        wanted = sorted({g for rule in self.policy.rules for g in rule.groups})
        if not wanted or asker.user is None:
            return asker
        mine = []
        now = time.monotonic()
        for group in wanted:
            cached = self._groups.get(group)
            if cached is None or now - cached[0] > GROUPS_TTL_S:
                try:
                    resp = await self.client.usergroups_users_list(usergroup=group)
                    cached = (now, frozenset(resp.get("users") or ()))
                except SlackApiError as exc:
                    error = str(exc.response.get("error") or f"HTTP {exc.response.status_code}")
                    log.warning("cannot read members of user group %s: %s", group, error)
                    if error != "no_such_subteam":
                        return replace(asker, groups=(), groups_error=f"Slack answered {error}")
                    cached = (now, frozenset())
                except (aiohttp.ClientError, TimeoutError) as exc:
                    log.warning("cannot read members of user group %s: %s", group, type(exc).__name__)
                    return replace(asker, groups=(), groups_error=f"Slack could not be reached ({type(exc).__name__})")
                self._groups[group] = cached
            if asker.user in cached[1]:
                mine.append(group)
        return replace(asker, groups=tuple(mine))

    async def display_name(self, user: str, workspace: str | None) -> str | None:
        """users.info: the profile's display name, else the real name, else the handle."""
        try:
            resp = await self.client.users_info(user=user)
        except SlackApiError as exc:
            log.warning("users.info of %s: %s", user, exc.response.get("error"))
            return None
        person = resp.get("user") or {}
        profile = person.get("profile") or {}
        return (profile.get("display_name") or profile.get("real_name") or person.get("real_name")
                or person.get("name") or None)

    def audit_detail(self, ask: Ask, asker: Asker) -> dict[str, Any]:
        return {"platform": "slack", "agent": ask.agent, "workspace": asker.workspace, "channel": asker.channel,
                "user": asker.user, "groups": list(asker.groups), "source": ask.source}

    async def refuse(self, ask: Ask, message: str, rendered: Rendered) -> None:
        await self._privately(ask.reply, rendered.payload)

    async def show_help(self, ask: Ask, rendered: Rendered) -> None:
        await self._privately(ask.reply, rendered.payload)

    async def _privately(self, reply: ReplyTarget, payload: Mapping[str, Any]) -> None:
        if reply.ack is not None:
            await reply.ack({**payload, "response_type": "ephemeral"})
            return
        # An ephemeral message in a thread shows only if the thread exists: a top-level mention has none yet.
        thread = reply.thread_ts if reply.in_thread else None
        await self.client.chat_postEphemeral(channel=reply.channel, user=reply.user, **payload,
                                             **({"thread_ts": thread} if thread else {}))

    async def ignore(self, ask: Ask) -> None:
        if ask.reply.ack is not None:
            await ask.reply.ack()

    def working_first(self, ask: Ask) -> bool:
        # A command's ack (3 s) would queue behind journal writes under load: measured by bench/slack_ack.py.
        return ask.reply.ack is not None

    async def working(self, ask: Ask, rendered: Rendered) -> ReplyTarget:
        reply: ReplyTarget = ask.reply
        if reply.ack is not None:
            await reply.ack({**rendered.payload, "response_type": "ephemeral"})
            return reply
        await self._assistant_status(ask)
        try:
            resp = await self.client.chat_postMessage(channel=reply.channel, thread_ts=reply.thread_ts,
                                                      **rendered.payload)
            return replace(reply, ts=resp["ts"])
        except SlackApiError as exc:
            log.error("could not post the working message for %s: %s", ask.delivery, exc.response.get("error"))
            return reply

    async def suggest(self, channel: str, thread_ts: str, prompts: Sequence[tuple[str, str]]) -> None:
        """assistant.threads.setSuggestedPrompts in a new assistant thread."""
        if not prompts:
            return
        try:
            await self.client.assistant_threads_setSuggestedPrompts(
                channel_id=channel, thread_ts=thread_ts, title="Try one of these agents:",
                prompts=[{"title": t, "message": m} for t, m in prompts])
        except SlackApiError as exc:
            log.warning("could not suggest prompts in %s: %s", channel, exc.response.get("error"))

    async def _assistant_status(self, ask: Ask) -> None:
        """In a direct message's thread (the assistant pane): "is thinking..." while the job runs, and
        the thread titled after the ask that started or switched its conversation."""
        reply: ReplyTarget = ask.reply
        if not (reply.channel.startswith("D") and reply.in_thread and reply.thread_ts):
            return
        try:
            await self.client.assistant_threads_setStatus(channel_id=reply.channel, thread_ts=reply.thread_ts,
                                                          status="is thinking...")
            if not ask.follow_up and ask.agent:
                title = " ".join(f"{ask.agent} {ask.text}".split())[:TITLE_MAX]
                await self.client.assistant_threads_setTitle(channel_id=reply.channel, thread_ts=reply.thread_ts,
                                                             title=title)
        except SlackApiError as exc:   # a DM thread that is no assistant thread: Slack says so, nothing breaks
            log.info("assistant status in %s: %s", reply.channel, exc.response.get("error"))

    def private(self, reply: ReplyTarget) -> bool:
        return reply.ephemeral

    def files_place(self, reply: ReplyTarget, *, private: bool, job_id: str) -> tuple[ReplyTarget, str | None]:
        if not private:
            return reply, "uploaded in this thread"
        return replace(reply, upload_to=reply.user), "sent to you as a direct message"

    # -- a streamed answer (Slack's native streaming, in the thread of the ask) --

    async def stream_start(self, reply: ReplyTarget, view: StreamView) -> ReplyTarget | None:
        """chat.startStream in the ask's thread with the first text, for the asker; the working message
        goes (the streamed message is the answer now). A private view does not stream (None)."""
        if reply.ephemeral or not reply.thread_ts or not reply.team:
            return None
        resp = await self._stream_call(self.client.chat_startStream, channel=reply.channel, thread_ts=reply.thread_ts,
                                       recipient_user_id=reply.user, recipient_team_id=reply.team,
                                       markdown_text=view.piece[:MAX_STREAM_TEXT])
        stream = replace(reply, ts=str(resp["ts"]), streamed=True)
        if reply.ts:
            try:
                await self.client.chat_delete(channel=reply.channel, ts=reply.ts)
            except SlackApiError as exc:
                log.warning("could not remove the working message in %s: %s", reply.channel, exc.response.get("error"))
        return stream

    async def stream_update(self, stream: ReplyTarget, view: StreamView) -> None:
        """The next safe piece appended; a new step of the job (a tool the model calls) shown as a task
        of the stream's timeline (`task_update` chunks: the step before marked complete)."""
        tasks = self._steps.tasks(str(stream.ts), slack_escape(view.step)) if view.step else []
        if tasks:
            text = [{"type": "markdown_text", "text": view.piece[:MAX_STREAM_TEXT]}] if view.piece else []
            await self._stream_call(self.client.chat_appendStream, channel=stream.channel, ts=stream.ts,
                                    chunks=[*text, *tasks])
            self._steps.shown(str(stream.ts), slack_escape(view.step))
            piece = view.piece[MAX_STREAM_TEXT:]
        else:
            piece = view.piece
        while piece:   # a piece past Slack's limit goes in several calls (the caller paces them)
            await self._stream_call(self.client.chat_appendStream, channel=stream.channel, ts=stream.ts,
                                    markdown_text=piece[:MAX_STREAM_TEXT])
            piece = piece[MAX_STREAM_TEXT:]

    def streaming(self, reply: ReplyTarget) -> bool:
        return reply.streamed and reply.ts is not None

    async def stream_cut(self, stream: ReplyTarget, note: str) -> None:
        await self._stop(stream, markdown_text=f"\n\n_{note}_")

    async def stream_end(self, stream: ReplyTarget, end: StreamEnd) -> None:
        """chat.stopStream with the card's tail (status, actions, feedback) under the streamed text; the
        whole card in its place when the text is not all there, or the stream had already ended."""
        blocks = end.tail.payload.get("blocks") if end.tail is not None else None
        if not (end.whole and await self._stop(stream, **({"blocks": blocks} if blocks else {}))):
            await self.deliver(stream, end.card)
            return
        await self._upload(end.card.uploads, channel=stream.channel, thread_ts=stream.thread_ts)

    async def _stop(self, stream: ReplyTarget, **fields: Any) -> bool:
        """chat.stopStream; a stream Slack already ended (it expires when appends stop) is no error (False)."""
        done = self._steps.done(str(stream.ts))
        if done:
            fields["chunks"] = [*([{"type": "markdown_text", "text": fields.pop("markdown_text")}]
                                  if fields.get("markdown_text") else []), *done]
        try:
            await self._stream_call(self.client.chat_stopStream, channel=stream.channel, ts=stream.ts, **fields)
        except WireRefused as exc:
            if str(exc) != "message_not_in_streaming_state":
                raise
            if fields.get("markdown_text"):
                await self.client.chat_postMessage(channel=stream.channel, thread_ts=stream.thread_ts,
                                                   text=slack_escape(fields["markdown_text"].strip().strip("_")))
            return False
        return True

    async def _stream_call(self, method: Callable[..., Any], **args: Any) -> Any:
        try:
            return await method(**args)
        except SlackApiError as exc:
            if exc.response.status_code == 429:
                raise RateLimited(_retry_after(exc.response.headers)) from None
            raise WireRefused(str(exc.response.get("error"))) from None

    async def deliver(self, reply: ReplyTarget, rendered: Rendered) -> None:
        if self.streaming(reply):   # the streamed message ends, and becomes the card
            await self._stop(reply)
            await asyncio.sleep(STREAM_EVERY_S)
        if reply.response_url:
            self._progress_uses.pop(reply.response_url, None)
        if reply.ephemeral:
            await self._respond(reply, {**rendered.payload, "response_type": "ephemeral", "replace_original": True})
            if reply.upload_to and rendered.uploads:
                await self._upload_privately(reply, rendered.uploads)
            return
        try:
            if reply.ts:
                await self.client.chat_update(channel=reply.channel, ts=reply.ts, **rendered.payload)
            else:
                await self.client.chat_postMessage(channel=reply.channel, thread_ts=reply.thread_ts,
                                                   **rendered.payload)
        except SlackApiError as exc:
            raise WireRefused(str(exc.response.get("error"))) from None
        await self._upload(rendered.uploads, channel=reply.channel, thread_ts=reply.thread_ts)

    async def progress(self, reply: ReplyTarget, rendered: Rendered) -> None:
        """chat.update of the working message (the client waits out a 429's Retry-After and retries;
        one it gave up on is RateLimited). A private view is replaced through its response_url, which
        Slack takes 5 times: progress uses PRIVATE_PROGRESS_USES of them, the rest stay for questions
        and the card, and a failed use is not retried (the card must not be spent on it)."""
        if reply.ephemeral:
            assert reply.response_url is not None
            used = self._progress_uses.pop(reply.response_url, 0)
            if used >= PRIVATE_PROGRESS_USES:
                self._progress_uses[reply.response_url] = used
                return
            self._progress_uses[reply.response_url] = used + 1
            while len(self._progress_uses) > MAX_PROGRESS_VIEWS:   # memory stays bounded
                self._progress_uses.pop(next(iter(self._progress_uses)))
            resp = await AsyncWebhookClient(reply.response_url, timeout=10).send_dict(
                {**rendered.payload, "response_type": "ephemeral", "replace_original": True})
            if resp.status_code == 429:
                raise RateLimited(_retry_after(resp.headers))
            return
        if reply.ts:
            try:
                await self.client.chat_update(channel=reply.channel, ts=reply.ts, **rendered.payload)
            except SlackApiError as exc:
                if exc.response.status_code == 429:
                    raise RateLimited(_retry_after(exc.response.headers)) from None
                raise

    async def _respond(self, reply: ReplyTarget, body: dict[str, Any]) -> None:
        """Replace the asker's private view through the command's response_url; when that has expired
        (30 minutes, 5 uses), post a new ephemeral message instead."""
        assert reply.response_url is not None
        resp = await AsyncWebhookClient(reply.response_url, timeout=10).send_dict(body)
        if resp.status_code == 200:
            return
        log.warning("response_url answered %s %s; posting an ephemeral message instead", resp.status_code,
                    resp.body[:200])
        fields = {k: v for k, v in body.items() if k not in ("response_type", "replace_original")}
        await self.client.chat_postEphemeral(channel=reply.channel, user=reply.user, **fields)

    async def _upload_privately(self, reply: ReplyTarget, uploads: Sequence[Attachment]) -> None:
        """A private answer's files, in a direct message to the asker (`upload_to`)."""
        assert reply.upload_to is not None
        try:
            resp = await self.client.conversations_open(users=reply.upload_to)
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.error("cannot open a direct message with %s: %s", reply.upload_to, error)
            await self.notice(reply, f"oz0 could not send you the full result as a direct message ({error}).")
            return
        await self._upload(uploads, channel=resp["channel"]["id"], thread_ts=None)

    async def _upload(self, uploads: Sequence[Attachment], *, channel: str, thread_ts: str | None) -> None:
        for upload in uploads:
            try:
                await self.client.files_upload_v2(channel=channel, thread_ts=thread_ts, content=upload.data,
                                                  filename=upload.filename, title=upload.filename)
            except SlackApiError as exc:
                log.error("could not upload %s: %s", upload.filename, exc.response.get("error"))

    async def notice(self, reply: ReplyTarget, text: str) -> None:
        if reply.response_url:
            await AsyncWebhookClient(reply.response_url, timeout=10).send_dict(
                {"response_type": "ephemeral", "replace_original": False, "text": text})

    async def share(self, click: ShareClick, public: Rendered, marked: Rendered) -> None:
        reply: ReplyTarget = click.reply
        posted = await self.client.chat_postMessage(channel=reply.channel, **public.payload)
        await self._upload(public.uploads, channel=reply.channel, thread_ts=posted["ts"])
        if reply.response_url:  # the private copy goes: the channel has the card now
            await AsyncWebhookClient(reply.response_url, timeout=10).send_dict({"delete_original": True})

    def share_note(self, user: str, agent: str) -> str | None:
        return f"Asked by {user} with {self.command} {agent}"

    def reply_from(self, ref: ReplyRef) -> ReplyTarget:
        return ReplyTarget.from_ref(ref)

    # -- questions --

    async def post_question(self, reply: ReplyTarget, rendered: Rendered, *, private: bool) -> dict[str, Any]:
        if private and reply.response_url:
            await self._respond(reply, {**rendered.payload, "response_type": "ephemeral", "replace_original": False})
            return {"private": True}
        try:
            resp = await self.client.chat_postMessage(channel=reply.channel, thread_ts=reply.thread_ts,
                                                      **rendered.payload)
        except SlackApiError as exc:
            raise WireRefused(str(exc.response.get("error"))) from None
        return {"channel": reply.channel, "ts": resp["ts"]}

    async def update_question(self, reply: ReplyTarget, shown: Mapping[str, Any], rendered: Rendered, *,
                              via: ClickReply | None = None) -> None:
        try:
            if shown.get("ts"):
                await self.client.chat_update(channel=str(shown.get("channel") or reply.channel), ts=shown["ts"],
                                              **rendered.payload)
            elif via is not None and via.response_url:
                # a private question can only be replaced through the response_url of a click on it
                await AsyncWebhookClient(via.response_url, timeout=10).send_dict(
                    {**rendered.payload, "response_type": "ephemeral", "replace_original": True})
            else:
                await self.client.chat_postEphemeral(channel=reply.channel, user=reply.user, **rendered.payload,
                                                     **({"thread_ts": reply.thread_ts} if reply.in_thread else {}))
        except SlackApiError as exc:
            log.error("could not update the question in %s: %s", reply.channel, exc.response.get("error"))

    async def hold(self, click: AnswerClick) -> None:
        return None   # a button was acked on arrival; a modal's submit is acked with its outcome

    async def open_form(self, click: AnswerClick, question: Any) -> None:
        reply: ClickReply = click.reply
        metadata = json.dumps({"job": click.pick.job_id, "digest": click.pick.digest, "channel": reply.channel,
                               "response_url": reply.response_url}, separators=(",", ":"))
        view = slack_modal.modal_for(message=question.message, answer_schema=question.answer_schema,
                                     metadata=metadata, source=question.source)
        try:
            await self.client.views_open(trigger_id=reply.trigger_id, view=view)
        except SlackApiError as exc:
            log.error("could not open the answer modal: %s", exc.response.get("error"))
            await self._tell(reply, f"oz0 could not open the answer form ({exc.response.get('error')}).")

    def submitted(self, click: AnswerClick, answer_schema: Mapping[str, Any]) -> Mapping[str, Any]:
        return slack_modal.submitted(answer_schema, click.form or {})

    async def answer_refused(self, click: AnswerClick, message: str, *, why: RefusedWhy, question: Any) -> None:
        reply: ClickReply = click.reply
        if reply.ack is not None:
            if question is not None and why in ("not_answerer", "invalid"):
                await reply.ack(**slack_modal.errors_for(question.answer_schema, message))
                return
            await reply.ack()
        await self._tell(reply, message)

    async def answer_taken(self, click: AnswerClick) -> None:
        if click.reply.ack is not None:
            await click.reply.ack()   # closes the modal

    async def _tell(self, reply: ClickReply, text: str) -> None:
        """One line to the clicker alone: through the message's response_url, else an ephemeral message."""
        body = {"response_type": "ephemeral", "replace_original": False, "text": text}
        if reply.response_url:
            resp = await AsyncWebhookClient(reply.response_url, timeout=10).send_dict(body)
            if resp.status_code == 200:
                return
        await self.client.chat_postEphemeral(channel=reply.channel, user=reply.user, text=text)

