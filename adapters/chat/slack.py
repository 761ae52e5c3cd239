"""The Slack channel: `/ask AGENT INPUT` and `@bot AGENT INPUT` run an agent; the answer is a card.

Wire translation only, around a thin bolt-python `AsyncApp`: `to_ask(body)` and `to_share_click(body)`
turn what Slack sent into the ask flow's neutral requests, and `SlackWire` turns the flow's calls
into Web API calls. What is decided (access, help, dedupe, the job, share, restart reports) is in
`oz0.adapters.chat.flow`, the same for every chat channel.

What is Slack's here:
- Slack wants an answer within 3 seconds. A slash command is acknowledged with its first answer
  (the help card, a refusal, or "working..." shown privately, later replaced in place through the
  command's `response_url`); an `app_mention` is acknowledged by bolt at once and answered in its
  thread, the "working..." message replaced by the card with `chat.update`.
- The delivery id is the event's `event_id` or the command's `trigger_id`.
- Files go to the asker's direct messages for a private answer, else into the thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from aiohttp import web
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.models.blocks import ActionsBlock, ButtonElement, PlainTextObject, SectionBlock
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from oz0.adapters.chat.cards import SHARE_ACTION
from oz0.adapters.chat.flow import AskFlow, Restarts
from oz0.adapters.chat.wire import Ask, ChatRuntime, ShareClick, Syntax, WireRefused
from oz0.edge.cards.model import Attachment, Card
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.renderers.rendered import Rendered

__all__ = [
    "EVENTS_PATH",
    "ReplyTarget",
    "SHARE_ACTION",
    "SlackChannel",
    "SlackConfigError",
    "SlackSettings",
    "SlackWire",
    "configured",
    "report_interrupted",
    "serve",
    "to_ask",
    "to_share_click",
]

log = logging.getLogger("oz0.slack")

EVENTS_PATH = "/slack/events"
DEFAULT_PORT = 3000
COMMAND = "/ask"
MAX_BLOCKS = 50           # Slack refuses a message with more blocks (TRANSITIONAL: the renderer's, see with_actions)
GROUPS_TTL_S = 60.0       # how long a user group's members are cached
STOP_GRACE_S = 5.0        # how long running jobs may finish when the channel stops
HELP_WORDS = ("", "help", "-h", "--help", "?")

_LEADING_MENTION = re.compile(r"^\s*<@[UW][A-Z0-9]+(?:\|[^>]*)?>\s*")
_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)(?:\|[^>]*)?>")


class SlackConfigError(ValueError):
    """The Slack environment cannot start a channel: names the variable and what to set."""


# ---- settings -------------------------------------------------------------------------------

@dataclass(frozen=True)
class SlackSettings:
    """The channel's settings, from the environment (names as in the README)."""

    bot_token: str
    app_token: str | None = None
    signing_secret: str | None = None
    api_url: str = "https://slack.com/api/"
    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT

    @property
    def socket_mode(self) -> bool:
        return bool(self.app_token)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "SlackSettings":
        token = env.get("SLACK_BOT_TOKEN", "").strip()
        if not token:
            raise SlackConfigError("SLACK_BOT_TOKEN is not set: the Slack channel needs the bot token (xoxb-...)")
        app_token = env.get("SLACK_APP_TOKEN", "").strip() or None
        if app_token and not app_token.startswith("xapp-"):
            raise SlackConfigError("SLACK_APP_TOKEN must be an app-level token (xapp-...) with connections:write")
        secret = env.get("SLACK_SIGNING_SECRET", "").strip() or None
        if not app_token and not secret:
            raise SlackConfigError(
                "SLACK_SIGNING_SECRET is not set: HTTP events are verified with it (Basic Information > "
                "App Credentials). Set it, or set SLACK_APP_TOKEN to use Socket Mode instead")
        raw_port = env.get("OZ0_SLACK_PORT", "").strip() or str(DEFAULT_PORT)
        if not raw_port.isdigit() or int(raw_port) > 65535:
            raise SlackConfigError(f"OZ0_SLACK_PORT must be a port number from 0 to 65535, not {raw_port!r}")
        api_url = env.get("SLACK_API_URL", "").strip() or "https://slack.com/api/"
        if not api_url.startswith(("http://", "https://")):
            raise SlackConfigError(f"SLACK_API_URL must be an http(s) URL, not {api_url!r}")
        return cls(bot_token=token, app_token=app_token, signing_secret=secret,
                   api_url=api_url.rstrip("/") + "/", host=env.get("OZ0_SLACK_HOST", "").strip() or "0.0.0.0",
                   port=int(raw_port))


def configured(env: Mapping[str, str]) -> bool:
    """Whether `oz0 serve` should start the Slack channel: a bot token is set."""
    return bool(env.get("SLACK_BOT_TOKEN", "").strip())


def _web_client(settings: SlackSettings) -> AsyncWebClient:
    """A Web API client that honours 429 Retry-After and retries dropped connections."""
    return AsyncWebClient(
        token=settings.bot_token,
        base_url=settings.api_url,
        retry_handlers=[AsyncConnectionErrorRetryHandler(max_retry_count=2),
                        AsyncRateLimitErrorRetryHandler(max_retry_count=3)],
    )


# ---- pure translations ----------------------------------------------------------------------

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

    @property
    def ephemeral(self) -> bool:
        return self.response_url is not None

    def to_dict(self) -> dict[str, Any]:
        out = {"platform": "slack", "channel": self.channel, "user": self.user, "team": self.team,
               "thread_ts": self.thread_ts, "response_url": self.response_url, "ts": self.ts,
               "in_thread": self.in_thread or None}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ReplyTarget":
        return cls(channel=str(data["channel"]), user=str(data.get("user", "")), team=data.get("team"),
                   thread_ts=data.get("thread_ts"), response_url=data.get("response_url"), ts=data.get("ts"),
                   in_thread=bool(data.get("in_thread")))


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
        wants_help, agent, text = _split(plain_input(_LEADING_MENTION.sub("", str(event.get("text", "")), count=1)))
        asker = Asker("slack", workspace=team, channel=channel, user=user)
        reply = ReplyTarget(channel=channel, user=user, team=team,
                            thread_ts=event.get("thread_ts") or event.get("ts"), in_thread=bool(event.get("thread_ts")))
        return Ask(agent, text, asker, f"slack:event:{body['event_id']}", reply, help=wants_help, source="mention")
    raise ValueError(f"not an ask: {body.get('type') or 'unknown'} payload")


def to_share_click(body: Mapping[str, Any]) -> ShareClick:
    """A click on "Share in channel" (a block_actions payload): the job is the button's value."""
    user = str((body.get("user") or {}).get("id", ""))
    channel = str((body.get("channel") or {}).get("id", ""))
    team = (body.get("team") or {}).get("id")
    action = next((a for a in body.get("actions") or () if a.get("action_id") == SHARE_ACTION), {})
    reply = ReplyTarget(channel=channel, user=user, team=team, response_url=body.get("response_url"))
    return ShareClick(str(action.get("value", "")), Asker("slack", workspace=team, channel=channel, user=user), reply)


def working_payload(agent: str) -> dict[str, Any]:
    """The message shown while a job runs; replaced by the card when it ends."""
    text = f"Working on {agent}..."
    return {"text": text, "blocks": [SectionBlock(text=PlainTextObject(text=f"\u23f3 {text}")).to_dict()]}


def _files_note(uploads: Sequence[Attachment], where: str) -> str:
    names = ", ".join(f"{a.filename} ({a.size} bytes)" for a in uploads)
    return f"Full result: {names}, {where}."


# ---- Slack calls out ------------------------------------------------------------------------

class SlackWire:
    """The ask flow's calls (`ChatWire`) as Slack Web API calls."""

    platform = "slack"
    name = "Slack"

    def __init__(self, client: AsyncWebClient, policy: AccessPolicy, *, command: str = COMMAND) -> None:
        self.client = client
        self.policy = policy
        self.command = command
        self.syntax = Syntax(example=lambda agent, value: f"{command} {agent} {value}",
                             help_notes=(f"Run one with {command} AGENT INPUT, or mention the bot: @oz0 AGENT INPUT",),
                             unknown_hint=f"Try {command} help.")
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}  # group -> (read at, members)

    async def with_groups(self, asker: Asker) -> Asker:
        """Fill in the asker's user groups, asking Slack only about the groups access.yaml names."""
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
                    log.warning("cannot read members of user group %s: %s", group, exc.response.get("error"))
                    cached = (now, frozenset())
                self._groups[group] = cached
            if asker.user in cached[1]:
                mine.append(group)
        return replace(asker, groups=tuple(mine))

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

    async def working(self, ask: Ask, *, agent: str) -> ReplyTarget:
        reply: ReplyTarget = ask.reply
        if reply.ack is not None:
            await reply.ack({**working_payload(agent), "response_type": "ephemeral"})
            return reply
        try:
            resp = await self.client.chat_postMessage(channel=reply.channel, thread_ts=reply.thread_ts,
                                                      **working_payload(agent))
            return replace(reply, ts=resp["ts"])
        except SlackApiError as exc:
            log.error("could not post the working message for %s: %s", ask.delivery, exc.response.get("error"))
            return reply

    def private(self, reply: ReplyTarget) -> bool:
        return reply.ephemeral

    async def place_uploads(self, reply: ReplyTarget, uploads: Sequence[Attachment], *,
                            private: bool) -> tuple[ReplyTarget, str | None]:
        if not private:
            return reply, _files_note(uploads, "uploaded in this thread")
        try:
            resp = await self.client.conversations_open(users=reply.user)
            dm = resp["channel"]["id"]
        except SlackApiError as exc:
            log.error("cannot open a direct message with %s: %s", reply.user, exc.response.get("error"))
            return reply, _files_note(uploads, "could not be uploaded (see the log)")
        return replace(reply, upload_to=dm), _files_note(uploads, "sent to you as a direct message")

    async def deliver(self, reply: ReplyTarget, rendered: Rendered) -> None:
        if reply.ephemeral:
            await self._respond(reply, {**rendered.payload, "response_type": "ephemeral", "replace_original": True})
            if reply.upload_to:
                await self._upload(rendered.uploads, channel=reply.upload_to, thread_ts=None)
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
        # A private view is replaced through its response_url, which takes 5 uses: the card needs one.
        if not reply.ephemeral and reply.ts:
            await self.client.chat_update(channel=reply.channel, ts=reply.ts, **rendered.payload)

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

    def reply_from(self, data: Mapping[str, Any]) -> ReplyTarget:
        return ReplyTarget.from_dict(data)

    def with_actions(self, card: Card, rendered: Rendered) -> Rendered:
        """TRANSITIONAL (removed when slack_blocks draws Card.actions): the card's buttons as an
        actions block, room made under Slack's 50 blocks."""
        if not card.actions:
            return rendered
        row = ActionsBlock(block_id=card.actions[0].id, elements=[
            ButtonElement(text=a.label, action_id=a.id, value=a.value,
                          style=a.style if a.style != "default" else None) for a in card.actions]).to_dict()
        blocks = list(rendered.payload.get("blocks") or [])[:MAX_BLOCKS - 1]
        return replace(rendered, payload={**rendered.payload, "blocks": blocks + [row]})


# ---- the channel ----------------------------------------------------------------------------

class SlackChannel:
    """The bolt app: each listener translates and hands the request to the ask flow."""

    def __init__(self, runtime: ChatRuntime, *, client: AsyncWebClient, signing_secret: str | None,
                 policy: AccessPolicy | None = None, command: str = COMMAND,
                 request_verification: bool = True) -> None:
        policy = policy if policy is not None else AccessPolicy.load(runtime.home)
        self.wire = SlackWire(client, policy, command=command)
        self.flow = AskFlow(runtime, self.wire, policy=policy, log=log, grace_s=STOP_GRACE_S)
        self.app = AsyncApp(client=client, signing_secret=signing_secret, process_before_response=False,
                            request_verification_enabled=request_verification, logger=log,
                            raise_error_for_unhandled_request=False)
        self.app.command(command)(self._on_command)
        self.app.event("app_mention")(self._on_mention)
        self.app.action(SHARE_ACTION)(self._on_share)
        self.app.error(self._on_error)

    async def _on_command(self, ack: Any, body: dict[str, Any]) -> None:
        """The command's first answer is its ack (Slack gives 3 s): the flow acks through the reply."""
        try:
            ask = to_ask(body, ack=ack)
        except ValueError as exc:
            await ack(response_type="ephemeral", text=f"oz0 could not read this command: {exc}")
            return
        await self.flow.ask(ask)

    async def _on_mention(self, body: dict[str, Any]) -> None:
        # bolt has acknowledged the event already; the work is the flow's to track (and to drain on stop)
        self.flow.tasks.spawn(self._mention(body), name=f"slack-event-{body.get('event_id')}")

    async def _mention(self, body: dict[str, Any]) -> None:
        try:
            ask = to_ask(body)
        except ValueError as exc:
            log.warning("ignored a mention: %s", exc)
            return
        await self.flow.ask(ask)

    async def _on_share(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        await self.flow.share(to_share_click(body))

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("Slack listener failed for a %s payload", body.get("type") or body.get("command"),
                  exc_info=error)


# ---- oz0 serve ------------------------------------------------------------------------------

_RESTARTS = Restarts("slack")


def report_interrupted(jobs: Any) -> None:
    """Hook for `oz0 serve`: jobs a restart interrupted are reported in their Slack threads as soon as
    the channel is connected (or at once, when it already is)."""
    _RESTARTS.report(jobs)


async def serve(runtime: ChatRuntime, *, env: Mapping[str, str], stop: asyncio.Event) -> None:
    """Run the Slack channel until `stop` is set: Socket Mode with SLACK_APP_TOKEN, else HTTP events."""
    settings = SlackSettings.from_env(env)
    channel = SlackChannel(runtime, client=_web_client(settings), signing_secret=settings.signing_secret,
                           request_verification=not settings.socket_mode)
    try:
        if settings.socket_mode:
            await _serve_socket_mode(channel, settings, stop)
        else:
            await _serve_http(channel, settings, stop)
    finally:
        _RESTARTS.detach(channel.flow)
        await channel.flow.close()


async def _serve_http(channel: SlackChannel, settings: SlackSettings, stop: asyncio.Event) -> None:
    runner = web.AppRunner(channel.app.web_app(path=EVENTS_PATH, port=settings.port), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.host, settings.port)
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
