"""Slack calls out: the ask flow's `ChatWire` calls as Slack Web API calls (the working message, the
streamed answer, the card). Where an answer goes is `slack_targets`, who asks `slack_people`, a job's
questions `slack_questions`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from oz0.adapters.chat.slack_people import SlackPeople
from oz0.adapters.chat.slack_questions import SlackQuestions
from oz0.adapters.chat.slack_steps import StreamSteps
from oz0.adapters.chat.slack_targets import ClickReply, ReplyTarget, respond, retry_after
from oz0.adapters.chat.wire import AnswerClick, Ask, RateLimited, ShareClick, StreamEnd, StreamView, Syntax, WireRefused
from oz0.edge import Attachment
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.edge.runtime.questions import RefusedWhy
from oz0.renderers.rendered import Rendered
from oz0.renderers.safety import slack_escape

__all__ = ["COMMAND", "ClickReply", "ReplyTarget", "SlackWire"]

log = logging.getLogger("oz0.slack")

COMMAND = "/ask"
PRIVATE_PROGRESS_USES = 2   # of a response_url's 5 uses (Slack's limit), what progress may spend
MAX_PROGRESS_VIEWS = 10_000  # private views whose progress uses are remembered
TITLE_MAX = 60              # an assistant thread's title, from its first ask
STREAM_EVERY_S = 0.25       # one chat.*Stream call per streamed message at most this often
MAX_STREAM_TEXT = 12_000    # Slack: markdown_text of one chat.*Stream call


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
        self.people = SlackPeople(client, policy)
        self.questions = SlackQuestions(client)
        self._progress_uses: dict[str, int] = {}  # a private view's response_url -> progress updates sent
        self._steps = StreamSteps()

    async def with_groups(self, asker: Asker) -> Asker:
        return await self.people.with_groups(asker)

    async def display_name(self, user: str, workspace: str | None) -> str | None:
        return await self.people.display_name(user, workspace)

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
                raise RateLimited(retry_after(exc.response.headers)) from None
            raise WireRefused(str(exc.response.get("error"))) from None

    async def deliver(self, reply: ReplyTarget, rendered: Rendered) -> None:
        if self.streaming(reply):   # the streamed message ends, and becomes the card
            await self._stop(reply)
            await asyncio.sleep(STREAM_EVERY_S)
        if reply.response_url:
            self._progress_uses.pop(reply.response_url, None)
        if reply.ephemeral:
            await respond(self.client, reply, {**rendered.payload, "response_type": "ephemeral", "replace_original": True})
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
                raise RateLimited(retry_after(resp.headers))
            return
        if reply.ts:
            try:
                await self.client.chat_update(channel=reply.channel, ts=reply.ts, **rendered.payload)
            except SlackApiError as exc:
                if exc.response.status_code == 429:
                    raise RateLimited(retry_after(exc.response.headers)) from None
                raise

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

    # -- questions (SlackQuestions) --

    async def post_question(self, reply: ReplyTarget, rendered: Rendered, *, private: bool) -> dict[str, Any]:
        return await self.questions.post_question(reply, rendered, private=private)

    async def update_question(self, reply: ReplyTarget, shown: Mapping[str, Any], rendered: Rendered, *,
                              via: ClickReply | None = None) -> None:
        await self.questions.update_question(reply, shown, rendered, via=via)

    async def hold(self, click: AnswerClick) -> None:
        return None   # a button was acked on arrival; a modal's submit is acked with its outcome

    async def open_form(self, click: AnswerClick, question: Any) -> None:
        await self.questions.open_form(click, question)

    def submitted(self, click: AnswerClick, answer_schema: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.questions.submitted(click, answer_schema)

    async def answer_refused(self, click: AnswerClick, message: str, *, why: RefusedWhy, question: Any) -> None:
        await self.questions.answer_refused(click, message, why=why, question=question)

    async def answer_taken(self, click: AnswerClick) -> None:
        await self.questions.answer_taken(click)
