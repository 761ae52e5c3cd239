"""The Microsoft Teams channel's endpoint: `@oz0 AGENT INPUT` (or the same in a personal chat); the answer is a card.

Wire translation only: the Bot Framework messaging endpoint (`POST /api/messages` on
`OZ0_TEAMS_PORT`, aiohttp), `to_ask(activity)` and `to_click(activity)` turning an activity into
the ask flow's neutral requests, and `teams_wire.TeamsWire` turning the flow's calls into connector
requests. What is decided (access, help, dedupe, the job, progress, questions, restart reports) is in
`oz0.adapters.chat.flow`, the same for every chat channel.

What is Teams' here:
- Every request's Bearer token is checked first (`teams_auth.InboundAuth`): a missing, badly signed,
  expired or foreign-audience token, or one whose `serviceUrl` claim is not the activity's, is 401
  and nothing runs.
- The delivery id is the conversation and activity id: the connector redelivers an activity it got
  no answer for, and the journal's claim answers it once.
- A message is acknowledged 200 once the flow has journaled it and posted the working message (Teams
  waits 15 s); the job runs on in the flow's tasks.
- A card button is an `Action.Execute`: an `adaptiveCard/action` invoke whose answer (a card for the
  clicker, or a line) is the HTTP response; the flow answers it through `Reply.respond`. Its data
  `{id, value}` names the button: a question's, "Share", or an answer's Stop and 👍 / 👎.
- The SDK's activity model (`microsoft_agents.activity.Activity`) reads each activity; the SDK is
  imported only when this channel starts.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import aiohttp
from aiohttp import web
from microsoft_agents.activity import Activity

from oz0.adapters.chat.asking import ANSWER_ACTION, pick_of
from oz0.adapters.chat.cards import CANCEL_ACTION, SHARE_ACTION
from oz0.adapters.chat.conversing import STOP_ACTION
from oz0.adapters.chat.flow import AskFlow
from oz0.adapters.chat.restarts import Restarts
from oz0.adapters.chat.teams_auth import InboundAuth, KeysUnavailable, TokenSource, Unauthorized
from oz0.adapters.chat.teams_graph import GraphGroups
from oz0.adapters.chat.teams_settings import GRAPH_SCOPE, TeamsSettings
from oz0.adapters.chat.teams_wire import MESSAGE, Reply, TeamsWire
from oz0.adapters.chat.wire import AnswerClick, Ask, ButtonClick, ChatRuntime, ShareClick
from oz0.edge.cards.model import FEEDBACK_ACTION
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.renderers.teams_form import FORM_VERB

__all__ = ["MESSAGES_PATH", "TeamsChannel", "asker_of", "thread_of", "to_ask", "to_click"]

log = logging.getLogger("oz0.teams")

MESSAGES_PATH = "/api/messages"
MAX_BODY_BYTES = 1 << 20
STOP_GRACE_S = 5.0
INVOKE_WAIT_S = 2.0          # how long an invoke waits for the card that answers it before "Done"
THREAD_MARKER = ";messageid="   # a channel conversation id names the root post of its reply chain
_AT = re.compile(r"<at[^>]*>(.*?)</at>", re.IGNORECASE | re.DOTALL)


# ---- pure translations ----------------------------------------------------------------------

def _reply(activity: Activity) -> Reply:
    conversation = activity.conversation
    data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    channel = (data.get("channel") or {}).get("id") if isinstance(data.get("channel"), dict) else None
    team = (data.get("team") or {}).get("id") if isinstance(data.get("team"), dict) else None
    tenant = (data.get("tenant") or {}).get("id") if isinstance(data.get("tenant"), dict) else None
    user = activity.from_property
    return Reply(service_url=str(activity.service_url or ""), conversation=str(conversation.id if conversation else ""),
                 activity=str(activity.id or ""), user=str((user.aad_object_id or user.id) if user else ""),
                 channel=str(channel or (conversation.id if conversation else "")),
                 tenant=tenant or (conversation.tenant_id if conversation else None), team=team,
                 kind=str((conversation.conversation_type if conversation else None) or "personal"))


def asker_of(reply: Reply) -> Asker:
    """Who asks and where: the tenant, the team and channel (or the chat) and the user's Entra object id."""
    return Asker("teams", workspace=reply.tenant, channel=reply.channel, user=reply.user, team=reply.team)


def _mentioned(activity: Activity) -> list[str]:
    """The `<at>` texts of the entities that mention the bot itself."""
    bot = activity.recipient.id if activity.recipient else None
    out = []
    for entity in activity.entities or ():
        data = entity.model_dump(by_alias=True) if hasattr(entity, "model_dump") else dict(entity)
        mentioned = data.get("mentioned") or {}
        if data.get("type") == "mention" and mentioned.get("id") == bot and data.get("text"):
            out.append(str(data["text"]))
    return out


def _text(activity: Activity, mentions: list[str]) -> str:
    """The message's text without the bot's own mention (`<at>oz0</at>`), other mentions as their names."""
    text = str(activity.text or "")
    for mention in mentions:
        text = text.replace(mention, " ")
    return _AT.sub(lambda m: m.group(1), text).replace("&nbsp;", " ").strip()


def thread_of(reply: Reply) -> str | None:
    """The thread an answer to this activity goes to, which a conversation then follows: a channel
    post's reply chain (the conversation id's `;messageid=ROOT`; a new post is the root of its own), or
    the whole personal chat. A group chat has no threads: each mention there is one ask."""
    if reply.kind == "personal":
        return reply.conversation
    if reply.kind == "channel":
        _, marker, root = reply.conversation.partition(THREAD_MARKER)
        return root if marker and root else reply.activity
    return None


def to_ask(body: Mapping[str, Any]) -> Ask:
    """A message activity as an ask: `help`, `help AGENT` or `AGENT INPUT`; in a channel's reply chain,
    a message without a mention is a follow-up (Teams delivers those with the RSC permission
    `ChannelMessage.Read.Group`). ValueError names what is missing, or that nobody asked."""
    activity = Activity.model_validate(body)
    if activity.type != "message":
        raise ValueError(f"not a message: activity type {activity.type}")
    reply = _reply(activity)
    if not reply.activity or not reply.conversation or not reply.user or not reply.service_url:
        raise ValueError("activity without id, conversation, sender or serviceUrl")
    mentions = _mentioned(activity)
    text = _text(activity, mentions)
    delivery = f"teams:{reply.conversation}:{reply.activity}"
    asker = asker_of(reply)
    thread = thread_of(reply)
    if not mentions and reply.kind != "personal":
        if reply.kind != "channel" or thread == reply.activity or not text:
            raise ValueError("a message that does not mention the bot, outside a reply chain")
        return Ask(None, text, asker, delivery, reply, source="reply", thread=thread, follow_up=True)
    words = text.split(None, 1)
    if not words or words[0].lower() in ("help", "agents", "/help"):
        agent = words[1].split()[0] if len(words) > 1 and words[1].split() else None
        return Ask(agent, "", asker, delivery, reply, help=True, source="mention", thread=thread)
    return Ask(words[0], words[1] if len(words) > 1 else "", asker, delivery, reply, source="mention", thread=thread)


def to_click(body: Mapping[str, Any], respond: Any) -> AnswerClick | ShareClick | ButtonClick:
    """An `adaptiveCard/action` invoke (an `Action.Execute` click) as a click; ValueError for another."""
    activity = Activity.model_validate(body)
    value = activity.value if isinstance(activity.value, dict) else {}
    action = value.get("action") if isinstance(value.get("action"), dict) else {}
    data = action.get("data") if isinstance(action.get("data"), dict) else {}
    if activity.type != "invoke" or activity.name != "adaptiveCard/action":
        raise ValueError(f"not a card action: {activity.type} {activity.name}")
    reply = replace(_reply(activity), respond=respond)
    asker = asker_of(reply)
    ident, val = str(data.get("id", "")), str(data.get("value", ""))
    if ident == SHARE_ACTION:
        return ShareClick(val, asker, reply)
    if ident in (STOP_ACTION, CANCEL_ACTION, FEEDBACK_ACTION):
        return ButtonClick(ident, val, asker, reply)
    pick = pick_of(val) if ident.startswith(ANSWER_ACTION) or ident == FORM_VERB else None
    if pick is None:
        raise ValueError("not one of oz0's buttons")
    form = {k: v for k, v in data.items() if k not in ("id", "value")} if ident == FORM_VERB else None
    return AnswerClick(pick, asker, reply, form=form)


# ---- the channel ----------------------------------------------------------------------------

class TeamsChannel:
    """The messaging endpoint and the flow behind it. One per process."""

    def __init__(self, runtime: ChatRuntime, settings: TeamsSettings, session: aiohttp.ClientSession, *,
                 restarts: Restarts, policy: AccessPolicy | None = None) -> None:
        self.settings = settings
        self.restarts = restarts
        self.auth = InboundAuth(settings, session)
        policy = policy if policy is not None else AccessPolicy.load(runtime.home)
        wanted = tuple(sorted({g for r in policy.rules if r.platform in (None, "teams") for g in r.groups}))
        groups = GraphGroups(TokenSource(settings, session, scope=GRAPH_SCOPE), session, graph_url=settings.graph_url,
                             wanted=wanted) if wanted else None
        self.wire = TeamsWire(TokenSource(settings, session), public_url=settings.public_url, groups=groups)
        self.flow = AskFlow(runtime, self.wire, policy=policy, log=log, grace_s=STOP_GRACE_S)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(MESSAGES_PATH, self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": "the body is not JSON"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": "the body is not an activity"}, status=400)
        try:
            await self.auth.check(request.headers.get("Authorization"), body)
        except Unauthorized as exc:
            log.info("refused a Teams request: %s", exc)
            return web.json_response({"error": "unauthorized"}, status=401)
        except KeysUnavailable as exc:
            log.warning("could not check a Teams request: %s", exc)
            return web.json_response({"error": "the signing keys are unavailable"}, status=503)
        kind = body.get("type")
        try:
            if kind in ("message", "invoke"):
                self._heard(body)
            if kind == "message":
                await self._message(body)
            elif kind == "invoke":
                return await self._invoke(body)
        except ValueError as exc:
            log.info("a Teams activity oz0 cannot read: %s", exc)
        except Exception:
            log.exception("a Teams activity failed")
            return web.json_response({"error": "internal error"}, status=500)
        return web.Response(status=200)

    def _heard(self, body: Mapping[str, Any]) -> None:
        """Every activity names its sender (`from.name`), kept by the names cache; and its conversation is
        where the wire asks the connector for other people's names."""
        reply = _reply(Activity.model_validate(body))
        sender = body.get("from") if isinstance(body.get("from"), dict) else {}
        if reply.user and reply.service_url and reply.conversation:
            self.flow.names.heard(reply.user, sender.get("name"), workspace=reply.tenant)
            self.wire.seen(reply)

    async def _message(self, body: Mapping[str, Any]) -> None:
        await self.flow.ask(to_ask(body))

    async def _invoke(self, body: Mapping[str, Any]) -> web.Response:
        answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        def respond(value: dict[str, Any]) -> None:
            if not answered.done():
                answered.set_result(value)

        if body.get("name") == "fileConsent/invoke":
            await self._file_consent(body)
            return web.json_response({"status": 200})
        try:
            click = to_click(body, respond)
        except ValueError as exc:
            log.info("an invoke oz0 does not take: %s", exc)
            return web.json_response({"statusCode": 200, "type": MESSAGE, "value": "This button is not oz0's."})
        if isinstance(click, ShareClick):
            await self.flow.buttons.share(click)
        elif isinstance(click, ButtonClick):
            await self.flow.buttons.button(click)
        else:
            await self.flow.answer(click)
        try:
            value = await asyncio.wait_for(asyncio.shield(answered), INVOKE_WAIT_S)
        except TimeoutError:
            value = {"statusCode": 200, "type": MESSAGE, "value": "Done."}
        return web.json_response(value)

    async def _file_consent(self, body: Mapping[str, Any]) -> None:
        """The person accepted (or declined) the full result offered as a file: upload it to the URL
        Teams gave, if they asked the job."""
        activity = Activity.model_validate(body)
        value = activity.value if isinstance(activity.value, dict) else {}
        context = value.get("context") if isinstance(value.get("context"), dict) else {}
        info = value.get("uploadInfo") if isinstance(value.get("uploadInfo"), dict) else {}
        if value.get("action") != "accept" or not info.get("uploadUrl"):
            return
        reply = _reply(activity)
        job = await self.flow.jobs.call(self.flow.runtime.job, str(context.get("job", "")))
        if job is None or job.requester != f"teams:{reply.user}":
            log.info("a file consent for a job this person did not ask; nothing uploaded")
            return
        card = await self.flow.jobs.call(self.flow.runtime.card, job)
        uploads = self.flow.draw(card).uploads
        if uploads:
            await self.wire.upload(reply, str(info["uploadUrl"]), uploads[0], info)

    async def run(self, stop: asyncio.Event) -> None:
        """Listen on the messaging endpoint until `stop` is set; then let the jobs wind down."""
        self.flow.deliver_durably()
        self.flow.listen_questions()
        runner = web.AppRunner(self.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.settings.host, self.settings.port)
        await site.start()
        log.info("Teams channel: messaging endpoint on http://%s:%d%s", self.settings.host, self.port(runner),
                 MESSAGES_PATH)
        self.restarts.attach(self.flow)
        try:
            await stop.wait()
        finally:
            self.restarts.detach(self.flow)
            await runner.cleanup()
            await self.flow.close()
            await self.wire.close()

    @staticmethod
    def port(runner: web.AppRunner) -> int:
        for address in runner.addresses:
            return int(address[1])
        return 0
