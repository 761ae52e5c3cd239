"""The Slack channel: `/ask AGENT INPUT` and `@bot AGENT INPUT` run an agent; the answer is a card.

Wire translation only: HTTP deliveries are answered by a thin endpoint (`slack_http`), Socket Mode
by a bolt-python `AsyncApp`, both routed by one table to the same listeners. `to_ask(body)` and
`to_share_click(body)` turn what Slack sent into the ask flow's neutral requests, and `SlackWire`
turns the flow's calls into Web API calls. What is decided (access, help, dedupe, the job, share, restart reports) is in
`oz0.adapters.chat.flow`, the same for every chat channel.

What is Slack's here:
- Slack wants an answer within 3 seconds. A slash command is acknowledged with its first answer
  (the help card, a refusal, or "working..." shown privately, later replaced in place through the
  command's `response_url`); an `app_mention` is acknowledged once it is journaled (a journal that
  cannot be written answers 500, and Slack sends the event again) and answered in its thread, the
  "working..." message replaced by the card with `chat.update`.
- The delivery id is the event's `event_id` or the command's `trigger_id`.
- Files go to the asker's direct messages for a private answer, else into the thread.
- A job's question is answered with its buttons (block_actions, acked at once) or its modal
  (`views.open` from the "Answer…" button; the view_submission is acked with the outcome: errors
  under the field keep it open, an empty ack closes it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from oz0.adapters.chat.asking import ANSWER_ACTION, AnswerPick, pick_of
from oz0.adapters.chat.cards import CANCEL_ACTION, SHARE_ACTION
from oz0.adapters.chat.conversing import STOP_ACTION, suggested_prompts
from oz0.adapters.chat.flow import AskFlow
from oz0.adapters.chat.restarts import Restarts
from oz0.adapters.chat.slack_http import Listener, SlackHttp
from oz0.adapters.chat.slack_settings import SlackConfigError, SlackSettings, configured, web_client
from oz0.adapters.chat.slack_targets import ClickReply, ReplyTarget
from oz0.adapters.chat.slack_wire import COMMAND, SlackWire
from oz0.adapters.chat.wire import AnswerClick, Ask, ChatRuntime, ShareClick
from oz0.edge.cards.model import FEEDBACK_ACTION
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.renderers.slack_modal import CALLBACK_ID as ANSWER_FORM

__all__ = [
    "ANSWER_ACTION",
    "ANSWER_FORM",
    "EVENTS_PATH",
    "SHARE_ACTION",
    "ReplyTarget",
    "SlackChannel",
    "SlackConfigError",
    "SlackSettings",
    "configured",
    "report_interrupted",
    "serve",
    "to_answer_click",
    "to_answer_submit",
    "to_ask",
    "to_share_click",
]

log = logging.getLogger("oz0.slack")

EVENTS_PATH = "/slack/events"
STOP_GRACE_S = 5.0        # how long running jobs may finish when the channel stops
LISTEN_BACKLOG = 1024     # connections waiting to be accepted; past it a SYN waits 1 s to be resent
HELP_WORDS = ("", "help", "-h", "--help", "?")

_LEADING_MENTION = re.compile(r"^\s*<@[UW][A-Z0-9]+(?:\|[^>]*)?>\s*")
_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|[^>]*)?>")


# ---- pure translations ----------------------------------------------------------------------

def plain_input(text: str) -> str:
    """What the person typed, from Slack's encoding: links unwrapped and `&amp; &lt; &gt;` decoded."""
    text = _LINK.sub(lambda m: m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


def _split(text: str) -> tuple[bool, str | None, str]:
    """(help?, agent, input): `help`, `help AGENT`, or `AGENT INPUT`."""
    words = text.strip().split(None, 1)
    if not words or words[0].lower() in HELP_WORDS:
        rest = words[1].split() if len(words) > 1 else []
        return True, (rest[0] if rest else None), ""
    return False, words[0], words[1].strip() if len(words) > 1 else ""


def to_ask(body: Mapping[str, Any], *, ack: Callable[..., Any] | None = None) -> Ask:
    """Translate a slash command body (answered through `ack`) or an `app_mention` event callback;
    ValueError for anything else."""
    if "command" in body:
        user, channel, team = str(body.get("user_id", "")), str(body.get("channel_id", "")), body.get("team_id")
        trigger = body.get("trigger_id")
        if not user or not channel or not trigger:
            raise ValueError("slash command without user_id, channel_id or trigger_id")
        wants_help, agent, text = _split(plain_input(str(body.get("text", ""))))
        asker = Asker("slack", workspace=team, channel=channel, user=user)
        reply = ReplyTarget(channel=channel, user=user, team=team, response_url=body.get("response_url"), ack=ack)
        return Ask(agent, text, asker, f"slack:command:{trigger}", reply, help=wants_help, source="command")
    event = body.get("event") or {}
    if body.get("type") == "event_callback" and event.get("type") == "app_mention":
        user, channel = str(event.get("user", "")), str(event.get("channel", ""))
        team = body.get("team_id") or event.get("team")
        if not user or not channel or not body.get("event_id"):
            raise ValueError("app_mention without user, channel or event_id")
        if event.get("bot_id") or user in _bot_users(body):
            raise ValueError("app_mention by a bot (its own message, or another app's): only people ask")
        wants_help, agent, text = _split(plain_input(_LEADING_MENTION.sub("", str(event.get("text", "")), count=1)))
        asker = Asker("slack", workspace=team, channel=channel, user=user)
        thread = event.get("thread_ts") or event.get("ts")
        reply = ReplyTarget(channel=channel, user=user, team=team, thread_ts=thread,
                            in_thread=bool(event.get("thread_ts")))
        return Ask(agent, text, asker, f"slack:event:{body['event_id']}", reply, help=wants_help, source="mention",
                   thread=str(thread) if thread else None)
    if body.get("type") == "event_callback" and event.get("type") == "message":
        if event.get("channel_type") == "im":
            return _direct_message(body, event)
        return _thread_reply(body, event)
    raise ValueError(f"not an ask: {body.get('type') or 'unknown'} payload")


def _direct_message(body: Mapping[str, Any], event: Mapping[str, Any]) -> Ask:
    """A message to the bot in its direct messages (the App Home's Messages tab, the assistant pane):
    an ask with no mention (`AGENT INPUT`, `help`), answered in its thread, which is then a
    conversation (where words that name no agent follow it up)."""
    user, channel = str(event.get("user", "")), str(event.get("channel", ""))
    ts = event.get("thread_ts") or event.get("ts")
    if event.get("subtype") or event.get("bot_id") or user in _bot_users(body):
        raise ValueError("a direct message that is no person's ask (an edit, the bot's own message)")
    if not user or not channel or not ts or not body.get("event_id"):
        raise ValueError("a direct message without user, channel, ts or event_id")
    wants_help, agent, text = _split(plain_input(_LEADING_MENTION.sub("", str(event.get("text", "")), count=1)))
    team = body.get("team_id") or event.get("team")
    asker = Asker("slack", workspace=team, channel=channel, user=user)
    reply = ReplyTarget(channel=channel, user=user, team=team, thread_ts=str(ts), in_thread=bool(event.get("thread_ts")))
    return Ask(agent, text, asker, f"slack:event:{body['event_id']}", reply, help=wants_help, source="mention",
               thread=str(ts))


def _thread_reply(body: Mapping[str, Any], event: Mapping[str, Any]) -> Ask:
    """A person's reply in a thread (a `message` event with `thread_ts`): a follow-up of the thread's
    conversation, if it is one (the flow decides). A reply that mentions the bot is its `app_mention`."""
    user, channel, thread = str(event.get("user", "")), str(event.get("channel", "")), event.get("thread_ts")
    if event.get("subtype") or event.get("bot_id") or user in _bot_users(body):
        raise ValueError("a message that is no person's reply (an edit, a join, a bot's message)")
    if not thread or not user or not channel or not body.get("event_id"):
        raise ValueError("a message outside a thread: only a mention asks there")
    raw = str(event.get("text", ""))
    if any(f"<@{bot}" in raw for bot in _bot_users(body)):
        raise ValueError("a reply that mentions the bot: its app_mention event asks")
    team = body.get("team_id") or event.get("team")
    asker = Asker("slack", workspace=team, channel=channel, user=user)
    reply = ReplyTarget(channel=channel, user=user, team=team, thread_ts=str(thread), in_thread=True)
    return Ask(None, plain_input(raw), asker, f"slack:event:{body['event_id']}", reply, source="reply",
               thread=str(thread), follow_up=True)


def _bot_users(body: Mapping[str, Any]) -> set[str]:
    """The bot users an event was delivered for (`authorizations`): the app's own messages that mention
    it come back as events, and answering them would loop."""
    return {str(a.get("user_id")) for a in body.get("authorizations") or () if isinstance(a, Mapping) and a.get("is_bot")}


def to_share_click(body: Mapping[str, Any]) -> ShareClick:
    """A click on "Share in channel" (a block_actions payload): the job is the button's value."""
    user = str((body.get("user") or {}).get("id", ""))
    channel = str((body.get("channel") or {}).get("id", ""))
    team = (body.get("team") or {}).get("id")
    action = next((a for a in body.get("actions") or () if a.get("action_id") == SHARE_ACTION), {})
    reply = ReplyTarget(channel=channel, user=user, team=team, response_url=body.get("response_url"))
    return ShareClick(str(action.get("value", "")), Asker("slack", workspace=team, channel=channel, user=user), reply)


def to_answer_click(body: Mapping[str, Any]) -> AnswerClick:
    """A click on a question's button (block_actions); ValueError when it names no question."""
    user = str((body.get("user") or {}).get("id", ""))
    channel = str((body.get("channel") or {}).get("id", ""))
    team = (body.get("team") or {}).get("id")
    action = next((a for a in body.get("actions") or () if str(a.get("action_id", "")).startswith(ANSWER_ACTION)),
                  {})
    pick = pick_of(str(action.get("value", "")))
    if pick is None or not user:
        raise ValueError("not a question's button")
    reply = ClickReply(channel=channel, user=user, team=team, response_url=body.get("response_url"),
                       trigger_id=body.get("trigger_id"))
    return AnswerClick(pick, Asker("slack", workspace=team, channel=channel, user=user), reply)


def to_answer_submit(body: Mapping[str, Any], *, ack: Callable[..., Any]) -> AnswerClick:
    """The submit of a question's modal (view_submission): the job and step come back in its
    private_metadata, the answer in its state; ValueError when it is not ours."""
    view = body.get("view") or {}
    user = str((body.get("user") or {}).get("id", ""))
    team = (body.get("team") or {}).get("id")
    try:
        meta = json.loads(view.get("private_metadata") or "")
        pick = AnswerPick(str(meta["job"]), str(meta["digest"]), "submit")
        channel = str(meta.get("channel") or "")
    except (ValueError, KeyError, TypeError):
        raise ValueError("a modal submit without oz0's metadata") from None
    if not user:
        raise ValueError("a modal submit without a user")
    reply = ClickReply(channel=channel, user=user, team=team, response_url=meta.get("response_url"), ack=ack)
    return AnswerClick(pick, Asker("slack", workspace=team, channel=channel, user=user), reply,
                       form=(view.get("state") or {}).get("values") or {})


# ---- the channel ----------------------------------------------------------------------------

class SlackChannel:
    """The listeners, each translating a payload and handing it to the ask flow; one table routes
    Slack's payloads to them, for bolt in Socket Mode and for the HTTP endpoint (`slack_http`)."""

    def __init__(self, runtime: ChatRuntime, *, client: AsyncWebClient, signing_secret: str | None,
                 policy: AccessPolicy | None = None, command: str = COMMAND) -> None:
        policy = policy if policy is not None else AccessPolicy.load(runtime.home)
        self.wire = SlackWire(client, policy, command=command)
        self.flow = AskFlow(runtime, self.wire, policy=policy, log=log, grace_s=STOP_GRACE_S)
        self.command = command
        self.signing_secret = signing_secret
        # (kind, what it matches, listener): bolt's listener kinds
        self.routes: tuple[tuple[str, str | re.Pattern[str], Listener], ...] = (
            ("command", command, self._on_command),
            ("event", "app_mention", self._on_mention),
            ("event", "message", self._on_message),
            ("event", "assistant_thread_started", self._on_assistant_thread),
            ("action", STOP_ACTION, self._on_stop),
            ("action", CANCEL_ACTION, self._on_cancel),
            ("action", FEEDBACK_ACTION, self._on_feedback),
            ("action", SHARE_ACTION, self._on_share),
            ("action", re.compile(f"^{ANSWER_ACTION}_"), self._on_answer),
            ("view", ANSWER_FORM, self._on_answer_form),
        )
        self._app: AsyncApp | None = None

    @property
    def app(self) -> AsyncApp:
        """The bolt app of Socket Mode, with the same routes (made on first use)."""
        if self._app is None:
            self._app = AsyncApp(client=self.wire.client, process_before_response=False,
                                 request_verification_enabled=False, logger=log,
                                 raise_error_for_unhandled_request=False)
            for kind, key, listener in self.routes:
                getattr(self._app, kind)(key)(listener)
            self._app.error(self._on_error)
        return self._app

    def route(self, body: Mapping[str, Any]) -> tuple[Listener, bool] | None:
        """The listener of an HTTP delivery, as bolt would pick it, and whether it is acked first (none
        is: an event is acked once it is journaled)."""
        kind, name = _kind_of(body)
        for k, key, listener in self.routes:
            if k == kind and _matches(key, name):
                return listener, False
        return None

    def http(self) -> SlackHttp:
        """The HTTP endpoint of these routes (HTTP mode: the signing secret is required)."""
        if not self.signing_secret:
            raise SlackConfigError("SLACK_SIGNING_SECRET is required for Slack's HTTP events")
        return SlackHttp(self, signing_secret=self.signing_secret, spawn=self.flow.tasks.spawn,
                         on_error=self._on_error)

    async def _on_command(self, ack: Any, body: dict[str, Any]) -> None:
        """The command's first answer is its ack (Slack gives 3 s): the flow acks through the reply."""
        try:
            ask = to_ask(body, ack=ack)
        except ValueError as exc:
            await ack(response_type="ephemeral", text=f"oz0 could not read this command: {exc}")
            return
        await self.flow.ask(ask)

    async def _on_mention(self, ack: Any, body: dict[str, Any]) -> None:
        """Acked once the flow has journaled it (`recorded`): while the journal cannot be written the
        HTTP endpoint answers 500 and Slack sends the event again (Socket Mode: bolt acks it first)."""
        try:
            ask = to_ask(body)
        except ValueError as exc:
            log.warning("ignored a mention: %s", exc)
            await ack()
            return
        await self.flow.ask(ask, recorded=ack)

    async def _on_message(self, ack: Any, body: dict[str, Any]) -> None:
        """A message event: acked once journaled, like a mention (most are nobody's ask: acked at once)."""
        try:
            ask = to_ask(body)
        except ValueError:
            await ack()   # not worth a log line each
            return
        await self.flow.ask(ask, recorded=ack)

    async def _on_assistant_thread(self, ack: Any, body: dict[str, Any]) -> None:
        """The assistant pane opened a thread: suggest prompts from the agents this person may run."""
        await ack()
        thread = (body.get("event") or {}).get("assistant_thread") or {}
        user, channel, ts = thread.get("user_id"), thread.get("channel_id"), thread.get("thread_ts")
        if not (user and channel and ts):
            log.warning("ignored an assistant_thread_started without user, channel or thread")
            return
        asker = Asker("slack", workspace=body.get("team_id"), channel=str(channel), user=str(user))
        prompts = suggested_prompts(await self.flow.allowed(asker))
        self.flow.tasks.spawn(self.wire.suggest(str(channel), str(ts), prompts), name=f"slack-prompts-{ts}")

    async def _on_stop(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        user = str((body.get("user") or {}).get("id", ""))
        action = next((a for a in body.get("actions") or () if a.get("action_id") == STOP_ACTION), {})
        channel = str((body.get("channel") or {}).get("id", ""))
        reply = ReplyTarget(channel=channel, user=user, team=(body.get("team") or {}).get("id"),
                            response_url=body.get("response_url"))
        await self.flow.conversing.stop_click(str(action.get("value", "")), f"slack:{user}", reply)

    async def _on_cancel(self, ack: Any, body: dict[str, Any]) -> None:
        """The Stop button on a working message: stop its job (adapters/chat/stopping.py)."""
        await ack()
        user = str((body.get("user") or {}).get("id", ""))
        action = next((a for a in body.get("actions") or () if a.get("action_id") == CANCEL_ACTION), {})
        channel = str((body.get("channel") or {}).get("id", ""))
        team = (body.get("team") or {}).get("id")
        reply = ReplyTarget(channel=channel, user=user, team=team, response_url=body.get("response_url"))
        await self.flow.stopping.click(str(action.get("value", "")), f"slack:{user}", reply, workspace=team)

    async def _on_feedback(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        click = to_share_click(body)   # who clicked and where: the same fields as a share's
        action = next((a for a in body.get("actions") or () if a.get("action_id") == FEEDBACK_ACTION), {})
        await self.flow.buttons.feedback(str(action.get("value", "")), click.asker, click.reply)

    async def _on_share(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        await self.flow.buttons.share(to_share_click(body))

    async def _on_answer(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        try:
            click = to_answer_click(body)
        except ValueError as exc:
            log.warning("ignored a click: %s", exc)
            return
        await self.flow.answer(click)

    async def _on_answer_form(self, ack: Any, body: dict[str, Any]) -> None:
        """The modal's submit: acked by the flow with the outcome (Slack gives 3 s)."""
        try:
            click = to_answer_submit(body, ack=ack)
        except ValueError as exc:
            log.warning("ignored a modal submit: %s", exc)
            await ack()
            return
        await self.flow.answer(click)

    async def _on_error(self, error: Exception, body: Mapping[str, Any]) -> None:
        log.error("Slack listener failed for a %s payload", body.get("type") or body.get("command"),
                  exc_info=error)


def _kind_of(body: Mapping[str, Any]) -> tuple[str | None, str]:
    """(bolt's listener kind, the name its listeners match) of a payload."""
    if "command" in body:
        return "command", str(body["command"])
    kind = body.get("type")
    if kind == "event_callback":
        return "event", str((body.get("event") or {}).get("type", ""))
    if kind == "block_actions" and body.get("actions"):
        return "action", str((body["actions"][0] or {}).get("action_id", ""))
    if kind == "view_submission":
        return "view", str((body.get("view") or {}).get("callback_id", ""))
    return None, ""


def _matches(key: str | re.Pattern[str], value: str) -> bool:
    return key.match(value) is not None if isinstance(key, re.Pattern) else key == value


# ---- oz0 serve ------------------------------------------------------------------------------

_RESTARTS = Restarts("slack")


def report_interrupted(jobs: Any) -> None:
    """Hook for `oz0 serve`: jobs a restart interrupted are reported in their Slack threads as soon as
    the channel is connected (or at once, when it already is)."""
    _RESTARTS.report(jobs)


async def serve(runtime: ChatRuntime, *, env: Mapping[str, str], stop: asyncio.Event) -> None:
    """Run the Slack channel until `stop` is set: Socket Mode with SLACK_APP_TOKEN, else HTTP events."""
    settings = SlackSettings.from_env(env)
    channel = SlackChannel(runtime, client=web_client(settings), signing_secret=settings.signing_secret)
    channel.flow.deliver_durably()
    channel.flow.listen_questions()
    try:
        if settings.socket_mode:
            await _serve_socket_mode(channel, settings, stop)
        else:
            await _serve_http(channel, settings, stop)
    finally:
        _RESTARTS.detach(channel.flow)
        await channel.flow.close()


async def _serve_http(channel: SlackChannel, settings: SlackSettings, stop: asyncio.Event) -> None:
    runner = web.AppRunner(channel.http().app(EVENTS_PATH), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.host, settings.port, backlog=LISTEN_BACKLOG)
        await site.start()
        for address in runner.addresses:
            log.info("Slack channel: HTTP events at http://%s:%s%s", address[0], address[1], EVENTS_PATH)
        _RESTARTS.attach(channel.flow)
        await stop.wait()
    finally:
        await runner.cleanup()


async def _serve_socket_mode(channel: SlackChannel, settings: SlackSettings, stop: asyncio.Event) -> None:
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(channel.app, settings.app_token)
    await handler.connect_async()
    log.info("Slack channel: connected in Socket Mode")
    try:
        _RESTARTS.attach(channel.flow)
        await stop.wait()
    finally:
        await handler.close_async()
