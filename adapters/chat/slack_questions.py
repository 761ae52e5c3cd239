"""A job's questions on Slack: posted in the thread or the asker's private view, updated when answered,
and the modal a form question opens."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from oz0.adapters.chat.slack_targets import ClickReply, ReplyTarget, respond
from oz0.adapters.chat.wire import AnswerClick, WireRefused
from oz0.edge.runtime.questions import RefusedWhy
from oz0.renderers import slack_modal
from oz0.renderers.rendered import Rendered

__all__ = ["SlackQuestions"]

log = logging.getLogger("oz0.slack")


class SlackQuestions:
    """The question calls of the ask flow's `ChatWire`, as Slack Web API calls."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post_question(self, reply: ReplyTarget, rendered: Rendered, *, private: bool) -> dict[str, Any]:
        if private and reply.response_url:
            await respond(self.client, reply,
                          {**rendered.payload, "response_type": "ephemeral", "replace_original": False})
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
