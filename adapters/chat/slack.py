"""The Slack channel: `/ask AGENT INPUT` and `@bot AGENT INPUT` run an agent; the answer is a card.

A thin bolt-python `AsyncApp` around pure translations. `to_edge_request(body)` turns what Slack sent
(a slash command or an `app_mention` event) into an `EdgeRequest`; `to_slack_payload(card)` is the
Slack renderer's output with the channel and thread added. The only Block Kit built here is the
"working..." message and the "Share in channel" button, both with slack_sdk's block models.

Why it is shaped this way:
- Slack wants an answer within 3 seconds, so the listener acknowledges first (after the access check
  and the journal entry, which take milliseconds) and runs the job in a task it keeps a reference to.
- Slack redelivers what it believes was lost; the journal's dedupe key (the event's `event_id`, the
  command's `trigger_id`) makes a redelivery a no-op, even across a restart or another replica.
- `/ask` answers privately first (ephemeral, replaced in place through the command's `response_url`)
  with a button that posts the card for everyone; mentions answer in the thread, the "working..."
  message replaced by the card with `chat.update`.
- Access is checked on the agent name alone, before the input is parsed, so a refused ask learns
  nothing about the agent's contract.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, Iterable, Literal, Mapping, TypeVar

from aiohttp import web
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.models.blocks import (
    ContextBlock,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from oz0.adapters.chat.flow import ChannelTasks, failure_card, no_agents_card
from oz0.adapters.chat.flow import report_interrupted as report_each
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.edge.cards.model import Action, Card
from oz0.edge.contracts.summary import example_input, input_summary
from oz0.renderers import slack_blocks
from oz0.renderers.attachments import attachment_for

__all__ = [
    "EVENTS_PATH",
    "EdgeRequest",
    "ReplyTarget",
    "SlackChannel",
    "SlackConfigError",
    "SlackSettings",
    "configured",
    "report_interrupted",
    "serve",
    "to_edge_request",
    "to_slack_payload",
]

log = logging.getLogger("oz0.slack")

EVENTS_PATH = "/slack/events"
DEFAULT_PORT = 3000
COMMAND = "/ask"
SHARE_ACTION = "oz0_share"
MAX_BLOCKS = 50           # Slack refuses a message with more blocks
GROUPS_TTL_S = 60.0       # how long a user group's members are cached
STOP_GRACE_S = 5.0        # how long running jobs may finish when the channel stops
HELP_WORDS = ("", "help", "-h", "--help", "?")

_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
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


@dataclass(frozen=True)
class EdgeRequest:
    """One ask from Slack, in the edge's terms. `agent` is None when the asker wants the help."""

    agent: str | None
    text: str
    asker: Asker
    dedupe_key: str
    reply: ReplyTarget
    source: Literal["command", "mention"]

    @property
    def requester(self) -> str:
        return f"slack:{self.asker.user}"

    @property
    def channel_name(self) -> str:
        return f"slack:{self.asker.channel}"


def plain_input(text: str) -> str:
    """What the person typed, from Slack's encoding: links unwrapped and `&amp; &lt; &gt;` decoded."""
    text = _LINK.sub(lambda m: m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


def _split(text: str) -> tuple[str | None, str]:
    words = text.strip().split(None, 1)
    if not words or words[0].lower() in HELP_WORDS:
        return None, ""
    return words[0], words[1].strip() if len(words) > 1 else ""


def to_edge_request(body: Mapping[str, Any]) -> EdgeRequest:
    """Translate a slash command body or an `app_mention` event callback; ValueError for anything else."""
    if "command" in body:
        user, channel, team = str(body.get("user_id", "")), str(body.get("channel_id", "")), body.get("team_id")
        trigger = body.get("trigger_id")
        if not user or not channel or not trigger:
            raise ValueError("slash command without user_id, channel_id or trigger_id")
        agent, text = _split(plain_input(str(body.get("text", ""))))
        asker = Asker("slack", workspace=team, channel=channel, user=user)
        reply = ReplyTarget(channel=channel, user=user, team=team, response_url=body.get("response_url"))
        return EdgeRequest(agent, text, asker, f"slack:command:{trigger}", reply, "command")
    event = body.get("event") or {}
    if body.get("type") == "event_callback" and event.get("type") == "app_mention":
        user, channel = str(event.get("user", "")), str(event.get("channel", ""))
        team = body.get("team_id") or event.get("team")
        if not user or not channel or not body.get("event_id"):
            raise ValueError("app_mention without user, channel or event_id")
        agent, text = _split(plain_input(_LEADING_MENTION.sub("", str(event.get("text", "")), count=1)))
        asker = Asker("slack", workspace=team, channel=channel, user=user)
        reply = ReplyTarget(channel=channel, user=user, team=team,
                            thread_ts=event.get("thread_ts") or event.get("ts"), in_thread=bool(event.get("thread_ts")))
        return EdgeRequest(agent, text, asker, f"slack:event:{body['event_id']}", reply, "mention")
    raise ValueError(f"not an ask: {body.get('type') or 'unknown'} payload")


def to_slack_payload(card: Card, *, channel: str | None = None, thread_ts: str | None = None) -> dict[str, Any]:
    """The Slack renderer's chat.postMessage body for `card`, addressed to a channel and thread.

    Keys starting with "oz0_" (e.g. `oz0_attachments`) are left in for the caller to act on; use
    `split_private` before sending.
    """
    rendered = slack_blocks.render(card)
    payload = dict(rendered.payload)
    if rendered.uploads:  # TRANSITIONAL: until this adapter takes Rendered (uploads) itself
        payload["oz0_attachments"] = [u.to_dict() for u in rendered.uploads]
    if channel is not None:
        payload["channel"] = channel
    if thread_ts is not None:
        payload["thread_ts"] = thread_ts
    return payload


def split_private(payload: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what Slack may see, the renderer's notes to the adapter such as `oz0_attachments`)."""
    public = {k: v for k, v in payload.items() if not k.startswith("oz0_")}
    private = {k: v for k, v in payload.items() if k.startswith("oz0_")}
    return public, private


def working_payload(agent: str) -> dict[str, Any]:
    """The message shown while a job runs; replaced by the card when it ends."""
    text = f"Working on {agent}..."
    return {"text": text,
            "blocks": [SectionBlock(text=PlainTextObject(text=f"\u23f3 {text}")).to_dict()]}


def note_block(text: str) -> dict[str, Any]:
    return ContextBlock(elements=[PlainTextObject(text=text[:2000])]).to_dict()


def _with_blocks(payload: dict[str, Any], extra: list[dict[str, Any]]) -> dict[str, Any]:
    """Append blocks, keeping under Slack's 50-block limit (the renderer's own notes stay last)."""
    if not extra:
        return payload
    blocks = list(payload.get("blocks") or [])
    room = MAX_BLOCKS - len(extra)
    if len(blocks) > room:
        log.warning("card had %d blocks; dropped %d to fit %s", len(blocks), len(blocks) - room, extra)
        blocks = blocks[:room]
    return {**payload, "blocks": blocks + extra}


def help_card(agents: Iterable[Any], *, command: str = COMMAND) -> Card:
    """The agents this asker may run, with their input contracts and an example (a neutral table card)."""
    rows = []
    for spec in agents:
        rows.append((spec.name, spec.description or "", input_summary(spec),
                     f"{command} {spec.name} {example_input(spec)}"))
    if not rows:
        return no_agents_card()
    return Card(form="table", title="Agents you may run", columns=("agent", "what it does", "input", "example"),
                rows=tuple(rows), notes=(f"Run one with {command} AGENT INPUT, or mention the bot: @oz0 AGENT INPUT",))


def _attachment_bytes(entry: Mapping[str, Any], card: Card) -> bytes:
    attachment = attachment_for(card)
    if entry.get("filename") not in (None, attachment.filename):
        log.warning("renderer asked for %s; uploading %s", entry.get("filename"), attachment.filename)
    return attachment.data


# ---- the channel ----------------------------------------------------------------------------

T = TypeVar("T")


class JobThread:
    """Jobs run on an event loop of their own, in one thread.

    The runtime's journal writes are synchronous (a SQLite commit is milliseconds), so a burst of jobs
    on the channel's loop would queue the next acks behind them; measured with bench/slack_ack.py, 200
    concurrent asks then pushed acks past Slack's 3 seconds. Here they compete only for the GIL.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="oz0-slack-jobs", daemon=True)
        self._thread.start()

    async def run(self, coro: Awaitable[T]) -> T:
        """Await `coro` on the jobs loop; cancelling the caller cancels it there too."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))  # type: ignore[arg-type]

    async def call(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        async def call() -> T:
            return func(*args, **kwargs)
        return await self.run(call())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


class SlackChannel:
    """The bolt app and what it does with each ask. One per process (several replicas share the journal)."""

    def __init__(self, runtime: Any, *, client: AsyncWebClient, signing_secret: str | None,
                 policy: AccessPolicy | None = None, command: str = COMMAND,
                 request_verification: bool = True) -> None:
        self.runtime = runtime
        self.client = client
        self.policy = policy if policy is not None else AccessPolicy.load(runtime.home)
        self.command = command
        self.tasks = ChannelTasks("Slack", log=log, grace_s=STOP_GRACE_S)
        self.jobs = JobThread()
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}  # group -> (read at, members)
        self._shared: set[str] = set()
        self.app = AsyncApp(client=client, signing_secret=signing_secret, process_before_response=False,
                            request_verification_enabled=request_verification, logger=log,
                            raise_error_for_unhandled_request=False)
        self.app.command(command)(self._on_command)
        self.app.event("app_mention")(self._on_mention)
        self.app.action(SHARE_ACTION)(self._on_share)
        self.app.error(self._on_error)

    # -- lifecycle --

    def spawn(self, coro: Any, *, name: str) -> asyncio.Task[Any]:
        """Run `coro` after the ack (see `ChannelTasks`)."""
        return self.tasks.spawn(coro, name=name)

    async def drain(self, *, timeout: float | None = None) -> None:
        """Let running jobs finish for a while (STOP_GRACE_S); the rest are stopped, journaled as
        interrupted and reported so in their threads."""
        await self.tasks.drain(timeout=timeout)

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> None:
        log.error("Slack listener failed for a %s payload", body.get("type") or body.get("command"),
                  exc_info=error)

    # -- access --

    async def _with_groups(self, asker: Asker) -> Asker:
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

    def _agent_names(self) -> list[str]:
        return [spec.name for spec in self.runtime.agents()]

    async def _refusal(self, req: EdgeRequest) -> tuple[Card | None, dict[str, Any] | None]:
        """(None, None) when the ask may go on; else the card that says why not, and for a denial the
        audit detail to record (after the ack: a journal write is not worth a late ack)."""
        names = self._agent_names()
        asker = await self._with_groups(req.asker)
        if req.agent is None:
            allowed = set(self.policy.allowed_agents(names, asker))
            agents = [s for s in self.runtime.agents() if s.name in allowed]
            return help_card(agents, command=self.command), None
        if req.agent not in names:
            allowed = self.policy.allowed_agents(names, asker)
            known = ", ".join(allowed) if allowed else "none"
            return failure_card(f"There is no agent '{req.agent}'. Agents you may run here: {known}. "
                                f"Try {self.command} help.", code="unknown_agent"), None
        if not self.policy.allows(req.agent, asker):
            detail = {"platform": "slack", "agent": req.agent, "workspace": asker.workspace,
                      "channel": asker.channel, "user": asker.user, "groups": list(asker.groups),
                      "source": req.source}
            return failure_card(self.policy.explain_denial(req.agent, asker), code="access_denied"), detail
        return None, None

    async def _audit_denial(self, req: EdgeRequest, detail: dict[str, Any] | None) -> None:
        if detail is not None:
            await self.jobs.call(self.runtime.audit, "access.denied", actor=req.requester, detail=detail)

    # -- slash command --

    async def _on_command(self, ack: Any, body: dict[str, Any]) -> None:
        """Ack first (Slack gives 3 s, and the journal write can queue behind others under load),
        then journal and run. A redelivered command finds its dedupe key journaled and stops there."""
        try:
            req = to_edge_request(body)
        except ValueError as exc:
            await ack(response_type="ephemeral", text=f"oz0 could not read this command: {exc}")
            return
        refusal, denial = await self._refusal(req)
        if refusal is not None:
            public, _ = split_private(to_slack_payload(refusal))
            await ack({**public, "response_type": "ephemeral"})
            if denial is not None:
                self.spawn(self._audit_denial(req, denial), name=f"slack-audit-{req.dedupe_key}")
            return
        assert req.agent is not None
        await ack({**working_payload(req.agent), "response_type": "ephemeral"})
        self.spawn(self._submit_and_finish(req), name=f"slack-{req.dedupe_key}")

    async def _submit_and_finish(self, req: EdgeRequest) -> None:
        job, new = await self._submit(req)
        if not new:
            log.info("redelivered %s ignored: job %s already %s", req.dedupe_key, job.id, job.status)
            return
        await self._finish(job.id, req.reply)

    async def _submit(self, req: EdgeRequest) -> tuple[Any, bool]:
        assert req.agent is not None
        return await self.jobs.call(self.runtime.submit, req.agent, req.text, requester=req.requester,
                                    channel=req.channel_name, dedupe_key=req.dedupe_key,
                                    reply_to=req.reply.to_dict())

    # -- mention --

    async def _on_mention(self, body: dict[str, Any]) -> None:
        # bolt has acknowledged the event already; the work is ours to track (and to drain on stop)
        self.spawn(self._mention(body), name=f"slack-event-{body.get('event_id')}")

    async def _mention(self, body: dict[str, Any]) -> None:
        try:
            req = to_edge_request(body)
        except ValueError as exc:
            log.warning("ignored a mention: %s", exc)
            return
        refusal, denial = await self._refusal(req)
        if refusal is not None:
            await self._post_ephemeral(req.reply, refusal)
            await self._audit_denial(req, denial)
            return
        job, new = await self._submit(req)
        if not new:
            log.info("redelivered %s ignored: job %s already %s", req.dedupe_key, job.id, job.status)
            return
        reply = req.reply
        try:
            resp = await self.client.chat_postMessage(channel=reply.channel, thread_ts=reply.thread_ts,
                                                      **working_payload(req.agent))
            reply = replace(reply, ts=resp["ts"])
            await self.jobs.call(self.runtime.set_reply_to, job.id, reply.to_dict())
        except SlackApiError as exc:
            log.error("could not post the working message for job %s: %s", job.id, exc.response.get("error"))
        await self._finish(job.id, reply)

    async def _post_ephemeral(self, reply: ReplyTarget, card: Card) -> None:
        public, _ = split_private(to_slack_payload(card, channel=reply.channel))
        # An ephemeral message in a thread shows only if the thread exists: a top-level mention has none yet.
        thread = reply.thread_ts if reply.in_thread else None
        await self.client.chat_postEphemeral(user=reply.user, **public,
                                             **({"thread_ts": thread} if thread else {}))

    # -- the job and its card --

    async def _finish(self, job_id: str, reply: ReplyTarget) -> None:
        job = None
        try:
            job = await self.jobs.run(self.runtime.execute(job_id))
            card = await self.jobs.call(self.runtime.card, job)
        except asyncio.CancelledError:
            # The channel is stopping: the runtime journals the job as interrupted; say so where it was asked.
            job = await self._ended(job_id)
            if job is not None:
                await self.deliver(self.runtime.card(job), reply, job=None, job_id=job_id, shareable=False)
            raise
        except Exception:
            log.exception("job %s could not run", job_id)
            card = failure_card(f"oz0 could not run this ask (internal error, job {job_id}); the bot's log "
                                "has the details.", code="internal_error")
        await self.deliver(card, reply, job=job, job_id=job_id)

    async def _ended(self, job_id: str, *, within_s: float = 2.0) -> Any:
        """The job once the runtime has journaled its end (a cancelled job ends on the jobs loop)."""
        deadline = time.monotonic() + within_s
        while True:
            job = self.runtime.job(job_id)
            if job is None or job.finished or time.monotonic() > deadline:
                return job if job is not None and job.finished else None
            await asyncio.sleep(0.02)

    async def deliver(self, card: Card, reply: ReplyTarget, *, job: Any = None, job_id: str,
                      shareable: bool = True) -> None:
        """Put the card where the ask was made: replace the private "working..." view, or the thread message."""
        if reply.ephemeral and shareable and job is not None:
            card = replace(card, actions=(Action(SHARE_ACTION, "Share in channel", value=job_id, style="primary"),))
        payload = to_slack_payload(card, channel=reply.channel,
                                   thread_ts=None if reply.ephemeral else reply.thread_ts)
        public, private = split_private(payload)
        attachments = list(private.get("oz0_attachments") or [])
        notes: list[dict[str, Any]] = []
        if reply.ephemeral:
            upload_to = await self._direct_channel(reply.user) if attachments else None
            if attachments:
                where = "sent to you as a direct message" if upload_to else "could not be uploaded (see the log)"
                notes.append(note_block(_files_note(attachments, where)))
            body = _with_blocks(public, notes)
            body.pop("channel", None)
            await self._respond(reply, {**body, "response_type": "ephemeral", "replace_original": True})
            if upload_to:
                await self._upload(attachments, card, job, channel=upload_to, thread_ts=None)
            return
        if attachments:
            notes.append(note_block(_files_note(attachments, "uploaded in this thread")))
        body = _with_blocks(public, notes)
        try:
            if reply.ts:
                await self.client.chat_update(ts=reply.ts, **body)
            else:
                await self.client.chat_postMessage(**body)
        except SlackApiError as exc:
            log.error("Slack refused the card for job %s: %s", job_id, exc.response.get("error"))
            fallback = failure_card(f"oz0 could not show this result in Slack ({exc.response.get('error')}); "
                                    f"job {job_id} is in the journal.", code="slack_refused")
            fb, _ = split_private(to_slack_payload(fallback, channel=reply.channel, thread_ts=reply.thread_ts))
            if reply.ts:
                await self.client.chat_update(ts=reply.ts, **fb)
            else:
                await self.client.chat_postMessage(**fb)
            return
        if attachments:
            await self._upload(attachments, card, job, channel=reply.channel, thread_ts=reply.thread_ts)

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

    async def _direct_channel(self, user: str) -> str | None:
        try:
            resp = await self.client.conversations_open(users=user)
            return resp["channel"]["id"]
        except SlackApiError as exc:
            log.error("cannot open a direct message with %s: %s", user, exc.response.get("error"))
            return None

    async def _upload(self, attachments: list[Mapping[str, Any]], card: Card, job: Any, *, channel: str,
                      thread_ts: str | None) -> None:
        for entry in attachments:
            data = _attachment_bytes(entry, card)
            filename = str(entry.get("filename") or "result.json")
            try:
                await self.client.files_upload_v2(channel=channel, thread_ts=thread_ts, content=data,
                                                  filename=filename, title=filename)
            except SlackApiError as exc:
                log.error("could not upload %s: %s", filename, exc.response.get("error"))

    # -- share --

    async def _on_share(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        job_id = str((body.get("actions") or [{}])[0].get("value", ""))
        user = str((body.get("user") or {}).get("id", ""))
        channel = str((body.get("channel") or {}).get("id", ""))
        response_url = body.get("response_url")
        reply = ReplyTarget(channel=channel, user=user, team=(body.get("team") or {}).get("id"),
                            response_url=response_url)
        job = self.runtime.job(job_id)
        problem = None
        if job is None or not job.finished:
            problem = "This result is no longer available; ask again."
        elif job.requester != f"slack:{user}":
            problem = "Only the person who asked can share this result."
        elif job_id in self._shared:
            problem = "This result was already shared."
        if problem:
            if response_url:
                await AsyncWebhookClient(response_url, timeout=10).send_dict(
                    {"response_type": "ephemeral", "replace_original": False, "text": problem})
            return
        self._shared.add(job_id)
        card = self.runtime.card(job)
        payload = to_slack_payload(card, channel=channel)
        public, private = split_private(payload)
        attachments = list(private.get("oz0_attachments") or [])
        notes = [note_block(f"Asked by {user} with {self.command} {job.agent}")]
        if attachments:
            notes.append(note_block(_files_note(attachments, "uploaded in this thread")))
        posted = await self.client.chat_postMessage(**_with_blocks(public, notes))
        if attachments:
            await self._upload(attachments, card, job, channel=channel, thread_ts=posted["ts"])
        if response_url:
            await AsyncWebhookClient(response_url, timeout=10).send_dict({"delete_original": True})

    # -- restart --

    async def report_interrupted(self, jobs: Iterable[Any]) -> None:
        """Tell each thread (or asker) whose job a restart cut short; never drop one silently."""
        async def deliver(job: Any, card: Card) -> None:
            await self.deliver(card, ReplyTarget.from_dict(job.reply_to), job=None, job_id=job.id, shareable=False)

        await report_each(jobs, platform="slack", log=log, card_for=self.runtime.card, deliver=deliver)


def _files_note(attachments: list[Mapping[str, Any]], where: str) -> str:
    names = ", ".join(f"{a.get('filename', 'result.json')} ({a.get('size', '?')} bytes)" for a in attachments)
    return f"Full result: {names}, {where}."


# ---- oz0 serve ------------------------------------------------------------------------------

_PENDING_INTERRUPTED: list[Any] = []
_ACTIVE: list[SlackChannel] = []


def report_interrupted(jobs: Iterable[Any]) -> None:
    """Hook for `oz0 serve`: jobs a restart interrupted are reported in their Slack threads as soon as
    the channel is connected (or at once, when it already is)."""
    jobs = [j for j in jobs if (j.reply_to or {}).get("platform") == "slack"]
    if not jobs:
        return
    if _ACTIVE:
        _ACTIVE[0].spawn(_ACTIVE[0].report_interrupted(jobs), name="slack-report-interrupted")
    else:
        _PENDING_INTERRUPTED.extend(jobs)


async def serve(runtime: Any, *, env: Mapping[str, str], stop: asyncio.Event) -> None:
    """Run the Slack channel until `stop` is set: Socket Mode with SLACK_APP_TOKEN, else HTTP events."""
    settings = SlackSettings.from_env(env)
    client = _web_client(settings)
    channel = SlackChannel(runtime, client=client, signing_secret=settings.signing_secret,
                           request_verification=not settings.socket_mode)
    _ACTIVE.append(channel)
    try:
        if settings.socket_mode:
            await _serve_socket_mode(channel, settings, stop)
        else:
            await _serve_http(channel, settings, stop)
    finally:
        _ACTIVE.remove(channel)
        try:
            await channel.drain()
        finally:
            channel.jobs.close()


def _flush_pending(channel: SlackChannel) -> None:
    if _PENDING_INTERRUPTED:
        jobs = list(_PENDING_INTERRUPTED)
        _PENDING_INTERRUPTED.clear()
        channel.spawn(channel.report_interrupted(jobs), name="slack-report-interrupted")


async def _serve_http(channel: SlackChannel, settings: SlackSettings, stop: asyncio.Event) -> None:
    runner = web.AppRunner(channel.app.web_app(path=EVENTS_PATH, port=settings.port), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.host, settings.port)
        await site.start()
        for address in runner.addresses:
            log.info("Slack channel: HTTP events at http://%s:%s%s", address[0], address[1], EVENTS_PATH)
        _flush_pending(channel)
        await stop.wait()
    finally:
        await runner.cleanup()


async def _serve_socket_mode(channel: SlackChannel, settings: SlackSettings, stop: asyncio.Event) -> None:
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(channel.app, settings.app_token)
    await handler.connect_async()
    log.info("Slack channel: connected in Socket Mode")
    try:
        _flush_pending(channel)
        await stop.wait()
    finally:
        await handler.close_async()
