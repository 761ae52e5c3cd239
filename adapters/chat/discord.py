"""The Discord channel: `/ask`, `/agents` and "Ask an agent about this"; the answer is a card.

A thin discord.py client (gateway + `app_commands`) around pure translations: `to_edge_request(data)`
turns an interaction's wire payload into an `EdgeRequest`; `to_discord_payload(card)` is the Discord
renderer's message body with the "Share in channel" button added. The only components built here
are that button and the modal of the message command.

Why it is shaped this way:
- Discord wants an answer within 3 seconds: the handler checks access, journals the job (milliseconds)
  and defers ("thinking", ephemeral), then runs the job in a task. The interaction is journaled under
  its id, so a redelivered INTERACTION_CREATE (a gateway resume replays events) is answered by nobody
  a second time and never runs the agent twice.
- The renderer returns a raw Create Message body (Components V2 or embeds). discord.py's high-level
  `edit_original_response` wants `ui.LayoutView` objects, so the body goes out as it is through
  discord.py's own HTTP client (`client.http.request(Route(...))`): the same rate-limit buckets,
  429 handling and multipart file upload as everything else the library sends, and no markup
  rebuilt here. Components V2 messages are sent by editing the original (deferred) response.
- The interaction token lives 15 minutes. A job that ends after that (less a margin) posts its card
  as a new message in the channel instead of editing the expired response.
- `allowed_mentions` parses nothing, on the client and on every body sent.
- Access is checked on the agent name alone (and Discord's guild, channel, user and roles) before
  the input is parsed, so a refused ask learns nothing about the agent's contract.
- `DISCORD_API_URL` replaces discord.py's `Route.BASE` (a class attribute: one per process, restored
  when the channel stops) and the gateway URL then comes from that API's `/gateway/bot`.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Mapping

import discord
import yarl
from discord import app_commands
from discord.http import Route

from oz0 import renderers
from oz0.adapters.chat.flow import NO_AGENTS_TEXT, ChannelTasks, failure_card, no_agents_card
from oz0.adapters.chat.flow import report_interrupted as report_each
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.edge.cards.model import Action, Card
from oz0.edge.contracts.summary import example_input, input_summary
from oz0.renderers.attachments import attachment_for

__all__ = [
    "AGENT_FIELD",
    "ASK_MESSAGE_COMMAND",
    "COMPONENTS_V2",
    "DiscordChannel",
    "DiscordConfigError",
    "DiscordSettings",
    "EdgeRequest",
    "INPUT_FIELD",
    "INTERACTION_TOKEN_S",
    "ReplyTarget",
    "SHARE_PREFIX",
    "agents_card",
    "configured",
    "failure_card",
    "report_interrupted",
    "serve",
    "to_discord_payload",
    "to_edge_request",
    "upload_names",
]

log = logging.getLogger("oz0.discord")

INTERACTION_TOKEN_S = 15 * 60    # Discord: an interaction token may be used for 15 minutes
TOKEN_MARGIN_S = 30.0            # stop using it a little before, so a slow edit does not land after
COMPONENTS_V2 = 1 << 15          # message flag IS_COMPONENTS_V2
EPHEMERAL = 1 << 6               # message flag EPHEMERAL
MAX_CHOICES = 25                 # autocomplete answers and select options: at most 25
MAX_FILES = 10                   # files per message
MAX_INPUT_CHARS = 4000           # a modal text input holds at most 4,000 characters
STOP_GRACE_S = 5.0               # how long running jobs may finish when the channel stops
SHARE_ACTION = "oz0_share"
SHARE_PREFIX = f"{SHARE_ACTION}:"  # the renderer's custom_id is f"{action.id}:{action.value}"
ASK_MESSAGE_COMMAND = "Ask an agent about this"
AGENT_FIELD = "oz0:ask:agent"
INPUT_FIELD = "oz0:ask:input"
NO_MENTIONS = {"parse": []}


class DiscordConfigError(ValueError):
    """The Discord settings in the environment cannot work: names the variable and what it needs."""


# ---- settings -------------------------------------------------------------------------------

@dataclass(frozen=True)
class DiscordSettings:
    """The channel's settings, from the environment (names as in the README)."""

    token: str = field(repr=False)
    guild_ids: tuple[int, ...] = ()
    api_url: str | None = None
    shard_count: int | None = None
    shard_ids: tuple[int, ...] | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "DiscordSettings":
        token = env.get("DISCORD_TOKEN", "").strip()
        if not token:
            raise DiscordConfigError("DISCORD_TOKEN is not set: the Discord channel needs the bot token "
                                     "(Developer Portal > your application > Bot > Reset Token)")
        guilds = _ids(env.get("DISCORD_GUILD_IDS", ""), "DISCORD_GUILD_IDS")
        api_url = env.get("DISCORD_API_URL", "").strip().rstrip("/") or None
        if api_url and not api_url.startswith(("http://", "https://")):
            raise DiscordConfigError(f"DISCORD_API_URL must be an http(s) URL such as "
                                     f"https://discord.com/api/v10, not {api_url!r}")
        count_text = env.get("DISCORD_SHARD_COUNT", "").strip()
        shard_ids = _ids(env.get("DISCORD_SHARD_IDS", ""), "DISCORD_SHARD_IDS") or None
        count = None
        if count_text:
            if not count_text.isdigit() or int(count_text) < 1:
                raise DiscordConfigError(f"DISCORD_SHARD_COUNT must be a whole number of at least 1, "
                                         f"not {count_text!r}")
            count = int(count_text)
        if shard_ids is not None:
            if count is None:
                raise DiscordConfigError("DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT (the bot's total shards)")
            wrong = [s for s in shard_ids if s >= count]
            if wrong:
                raise DiscordConfigError(f"DISCORD_SHARD_IDS {wrong} are not below DISCORD_SHARD_COUNT {count}")
        return cls(token=token, guild_ids=guilds, api_url=api_url, shard_count=count, shard_ids=shard_ids)

    @property
    def sharded(self) -> bool:
        return self.shard_count is not None


def _ids(text: str, name: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    bad = [p for p in parts if not p.isdigit()]
    if bad:
        raise DiscordConfigError(f"{name} must be numbers separated by commas; {bad[0]!r} is not one")
    return tuple(int(p) for p in parts)


def configured(env: Mapping[str, str]) -> bool:
    """Whether `oz0 serve` should start the Discord channel: a bot token is set."""
    return bool(env.get("DISCORD_TOKEN", "").strip())


# ---- pure translations ----------------------------------------------------------------------

@dataclass(frozen=True)
class ReplyTarget:
    """Where the answer goes: the interaction's original response, or (token expired) its channel."""

    application_id: str
    token: str = field(repr=False)
    channel_id: str
    user_id: str
    guild_id: str | None = None
    created: float = 0.0          # when Discord created the interaction (its token's clock)

    def to_dict(self) -> dict[str, Any]:
        out = {"platform": "discord", "application_id": self.application_id, "token": self.token,
               "channel": self.channel_id, "user": self.user_id, "guild": self.guild_id, "created": self.created}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ReplyTarget":
        return cls(application_id=str(data.get("application_id", "")), token=str(data.get("token", "")),
                   channel_id=str(data.get("channel", "")), user_id=str(data.get("user", "")),
                   guild_id=data.get("guild"), created=float(data.get("created") or 0.0))

    def token_usable(self, *, now: float, lifetime_s: float) -> bool:
        return bool(self.token) and now < self.created + lifetime_s - min(TOKEN_MARGIN_S, lifetime_s / 10)


@dataclass(frozen=True)
class EdgeRequest:
    """One ask from Discord, in the edge's terms."""

    agent: str
    text: str
    asker: Asker
    dedupe_key: str
    reply: ReplyTarget

    @property
    def requester(self) -> str:
        return f"discord:{self.asker.user}"

    @property
    def channel_name(self) -> str:
        return f"discord:{self.asker.channel}"


def asker_of(data: Mapping[str, Any]) -> Asker:
    """Who asks and where, from an interaction payload: guild, channel, user and role ids."""
    member = data.get("member") or {}
    user = member.get("user") or data.get("user") or {}
    channel = data.get("channel_id") or (data.get("channel") or {}).get("id")
    return Asker("discord", workspace=_str(data.get("guild_id")), channel=_str(channel),
                 user=_str(user.get("id")), groups=tuple(str(r) for r in member.get("roles") or ()))


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def snowflake_time(snowflake: Any) -> float:
    """When Discord made this id (Unix seconds)."""
    return discord.utils.snowflake_time(int(snowflake)).timestamp()


def to_edge_request(data: Mapping[str, Any]) -> EdgeRequest:
    """Translate an `/ask` command or the submit of the "Ask an agent about this" modal.

    `data` is the interaction as Discord sends it (INTERACTION_CREATE). ValueError names what is missing.
    """
    kind = data.get("type")
    body = data.get("data") or {}
    if kind == 2 and body.get("type", 1) == 1:
        options = {o.get("name"): o.get("value") for o in body.get("options") or []}
        agent, text = options.get("agent"), options.get("input")
    elif kind == 5:
        values = _modal_values(body.get("components") or [])
        agent, text = values.get(AGENT_FIELD), values.get(INPUT_FIELD)
    else:
        raise ValueError(f"not an ask: interaction type {kind}")
    if not isinstance(agent, str) or not agent.strip():
        raise ValueError("the ask names no agent")
    asker = asker_of(data)
    if not data.get("id") or not data.get("token") or asker.user is None or asker.channel is None:
        raise ValueError("interaction without id, token, user or channel")
    reply = ReplyTarget(application_id=str(data.get("application_id", "")), token=str(data["token"]),
                        channel_id=asker.channel, user_id=asker.user, guild_id=asker.workspace,
                        created=snowflake_time(data["id"]))
    return EdgeRequest(agent.strip(), text if isinstance(text, str) else "", asker,
                       f"discord:interaction:{data['id']}", reply)


def _modal_values(components: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """custom_id -> value of a modal submit (text inputs and selects, inside labels or action rows)."""
    out: dict[str, str] = {}
    for comp in components:
        if comp.get("type") == 18 and comp.get("component"):
            out.update(_modal_values([comp["component"]]))
        elif comp.get("type") == 1:
            out.update(_modal_values(comp.get("components") or []))
        elif comp.get("custom_id"):
            value = comp.get("value")
            if value is None and comp.get("values"):
                value = comp["values"][0]
            if isinstance(value, str):
                out[str(comp["custom_id"])] = value
    return out


def to_discord_payload(card: Card, *, share_job: str | None = None,
                       shared: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the message body for Discord, the files the renderer asked to attach).

    With `share_job`, the card carries the "Share in channel" action (disabled when `shared`), which
    the renderer draws as a button.
    """
    if share_job is not None:
        card = replace(card, actions=(Action(SHARE_ACTION, "Shared in channel" if shared else "Share in channel",
                                             value=share_job, style="default" if shared else "primary",
                                             disabled=shared),))
    rendered = renderers.RENDERERS["discord"](card)
    return dict(rendered.payload), [u.to_dict() for u in rendered.uploads]  # TRANSITIONAL descriptors


def agents_card(agents: Iterable[Any]) -> Card:
    """The agents this asker may run, each with what it does, its input contract and an example.

    One line per agent (key_values): a table's fixed-width columns would cut the contracts short.
    """
    keys, values = [], []
    for spec in agents:
        parts = [spec.description or "", f"input: {input_summary(spec)}",
                 f"e.g. /ask agent:{spec.name} input:{example_input(spec)}"]
        keys.append(spec.name)
        values.append(" · ".join(p for p in parts if p))
    if not keys:
        return no_agents_card()
    return Card(form="key_values", title="Agents you may run", keys=tuple(keys), values=tuple(values),
                notes=(f"Run one with /ask, or on a message: Apps > {ASK_MESSAGE_COMMAND}.",))


def upload_names(body: Mapping[str, Any], attachments: list[Mapping[str, Any]]) -> list[str]:
    """The file name each attachment must be uploaded under: the one its File component points at
    (`attachment://NAME`), so that Discord shows it inside the card."""
    pointed: list[str] = []
    stack: list[Any] = list(body.get("components") or [])
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            url = (node.get("file") or {}).get("url") if node.get("type") == 13 else None
            if isinstance(url, str) and url.startswith("attachment://"):
                pointed.append(url[len("attachment://"):])
            stack += node.get("components") or []
    return [pointed[i] if i < len(pointed) else str(a.get("filename") or "result.json")
            for i, a in enumerate(attachments)]


# ---- the channel ----------------------------------------------------------------------------

class _AskModal(discord.ui.Modal):
    """The message command's form: which agent, and the message's text (editable) as input."""

    def __init__(self, channel: "DiscordChannel", agents: list[str], text: str) -> None:
        super().__init__(title="Ask an agent", timeout=15 * 60)
        self.channel = channel
        if len(agents) <= MAX_CHOICES:
            picker: discord.ui.Item[Any] = discord.ui.Select(
                custom_id=AGENT_FIELD, options=[discord.SelectOption(label=a[:100], value=a) for a in agents])
        else:
            picker = discord.ui.TextInput(custom_id=AGENT_FIELD, max_length=100,
                                          placeholder="agent name (see /agents)")
        self.add_item(discord.ui.Label(text="Agent", component=picker))
        self.add_item(discord.ui.Label(text="Input", component=discord.ui.TextInput(
            custom_id=INPUT_FIELD, style=discord.TextStyle.paragraph, default=text[:MAX_INPUT_CHARS],
            max_length=MAX_INPUT_CHARS, required=False)))

    async def on_submit(self, interaction: discord.Interaction) -> None:
        await self.channel.ask(interaction)

    async def on_error(self, interaction: discord.Interaction, error: Exception, /) -> None:
        await self.channel.on_error(interaction, error)


class DiscordChannel:
    """The discord.py client, its command tree and what it does with each ask. One per process."""

    def __init__(self, runtime: Any, settings: DiscordSettings, *, policy: AccessPolicy | None = None,
                 token_lifetime_s: float = INTERACTION_TOKEN_S) -> None:
        self.runtime = runtime
        self.settings = settings
        self.policy = policy if policy is not None else AccessPolicy.load(runtime.home)
        self.token_lifetime_s = token_lifetime_s
        self.tasks = ChannelTasks("Discord", log=log, grace_s=STOP_GRACE_S)
        self._shared: set[str] = set()
        self._pending_interrupted: list[Any] = []
        self.logged_in = asyncio.Event()
        intents = discord.Intents.none()
        intents.guilds = True      # roles of the guilds, for access rules on roles; not privileged
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False  # oz0 has no voice
        options: dict[str, Any] = {"intents": intents, "allowed_mentions": discord.AllowedMentions.none()}
        if settings.sharded:
            self.client: discord.Client = discord.AutoShardedClient(
                shard_count=settings.shard_count, shard_ids=list(settings.shard_ids) if settings.shard_ids
                else None, **options)
        else:
            self.client = discord.Client(**options)
        self.client.setup_hook = self._setup_hook  # type: ignore[method-assign]
        self.client.on_ready = self._on_ready  # type: ignore[attr-defined]
        self.client.on_interaction = self._on_interaction  # type: ignore[attr-defined]
        self.tree = app_commands.CommandTree(self.client)
        self.tree.on_error = self.on_error  # type: ignore[method-assign]
        self._register_commands()

    # -- commands --

    def _register_commands(self) -> None:
        @app_commands.command(name="ask", description="Ask an agent; the answer shows to you first")
        @app_commands.guild_only()
        @app_commands.describe(agent="Which agent (start typing)", input="Text, or JSON for agents that take JSON")
        async def ask(interaction: discord.Interaction, agent: str, input: str = "") -> None:
            await self.ask(interaction)

        @ask.autocomplete("agent")
        async def ask_agent(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
            return self.agent_choices(interaction, current)

        @app_commands.command(name="agents", description="The agents you may run here, and what they take")
        @app_commands.guild_only()
        async def agents(interaction: discord.Interaction) -> None:
            await self.list_agents(interaction)

        @app_commands.context_menu(name=ASK_MESSAGE_COMMAND)
        @app_commands.guild_only()
        async def about(interaction: discord.Interaction, message: discord.Message) -> None:
            await self.ask_about(interaction, message)

        for command in (ask, agents, about):
            self.tree.add_command(command)

    async def _setup_hook(self) -> None:
        if self.settings.api_url:
            _count, url, _limits = await self.client.http.get_bot_gateway()
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
        owns_commands = not self.settings.shard_ids or 0 in self.settings.shard_ids
        if owns_commands:
            if self.settings.guild_ids:
                for guild_id in self.settings.guild_ids:
                    guild = discord.Object(id=guild_id)
                    self.tree.copy_global_to(guild=guild)
                    synced = await self.tree.sync(guild=guild)
                    log.info("Discord: %d commands synced to guild %s", len(synced), guild_id)
            else:
                synced = await self.tree.sync()
                log.info("Discord: %d commands synced globally (they can take up to an hour to show; set "
                         "DISCORD_GUILD_IDS for instant ones)", len(synced))
        self.logged_in.set()
        self._flush_interrupted()

    async def _on_ready(self) -> None:
        user = self.client.user
        log.info("Discord channel: connected as %s to %d guild(s)", user, len(self.client.guilds))

    # -- helpers --

    def spawn(self, coro: Any, *, name: str) -> asyncio.Task[Any]:
        """Run `coro` after the defer (see `ChannelTasks`)."""
        return self.tasks.spawn(coro, name=name)

    async def drain(self, *, timeout: float | None = None) -> None:
        """Let running jobs finish for a while (STOP_GRACE_S); the rest end as interrupted, and say so."""
        await self.tasks.drain(timeout=timeout)

    async def on_error(self, interaction: discord.Interaction, error: Exception) -> None:
        """Log the real error; the person gets a failure card with no traceback."""
        log.error("Discord interaction %s failed", interaction.id, exc_info=error)
        card = failure_card("oz0 could not handle this (internal error); the bot's log has the details.",
                            code="internal_error")
        body, _ = to_discord_payload(card)
        try:
            if interaction.response.is_done():
                await self._send(self._original(interaction), body)
            else:
                await interaction.response.send_message("oz0 could not handle this (internal error); the "
                                                        "bot's log has the details.", ephemeral=True,
                                                        allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException as exc:
            log.error("could not tell the asker about the error: %s", exc)

    def _agent_names(self) -> list[str]:
        return [spec.name for spec in self.runtime.agents()]

    @staticmethod
    def _wire(interaction: discord.Interaction) -> dict[str, Any]:
        """The interaction as Discord sent it, as far as `to_edge_request` needs it."""
        user = interaction.user
        roles = [str(r.id) for r in getattr(user, "roles", ()) if not r.is_default()]
        return {"id": str(interaction.id), "type": interaction.type.value, "token": interaction.token,
                "application_id": str(interaction.application_id), "guild_id": _str(interaction.guild_id),
                "channel_id": _str(interaction.channel_id), "data": interaction.data or {},
                "member": {"user": {"id": str(user.id)}, "roles": roles}}

    def _original(self, interaction: discord.Interaction) -> Route:
        return Route("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/@original",
                     webhook_id=interaction.application_id, webhook_token=interaction.token)

    async def _send(self, route: Route, body: Mapping[str, Any], files: list[tuple[str, bytes]] = ()) -> Any:
        """Send a message body as it is through discord.py's HTTP client (its rate limits, its retries)."""
        body = {**body, "allowed_mentions": dict(NO_MENTIONS)}
        if not files:
            return await self.client.http.request(route, json=body)
        body["attachments"] = [{"id": i, "filename": name} for i, (name, _data) in enumerate(files)]
        uploads = [discord.File(io.BytesIO(data), filename=name) for name, data in files]
        form = [{"name": "payload_json", "value": json.dumps(body, ensure_ascii=False)}]
        form += [{"name": f"files[{i}]", "value": f.fp, "filename": f.filename,
                  "content_type": "application/octet-stream"} for i, f in enumerate(uploads)]
        return await self.client.http.request(route, form=form, files=uploads)

    def _refusal(self, req: EdgeRequest) -> str | None:
        """None when the ask may go on; else what to tell the asker (a denial is audited)."""
        names = self._agent_names()
        if req.agent not in names:
            allowed = self.policy.allowed_agents(names, req.asker)
            known = ", ".join(allowed) if allowed else "none"
            return (f"There is no agent '{discord.utils.escape_markdown(req.agent[:100])}'. Agents you may run "
                    f"here: {known}. /agents lists them with their inputs.")
        if not self.policy.allows(req.agent, req.asker):
            self.runtime.audit("access.denied", actor=req.requester, detail={
                "platform": "discord", "agent": req.agent, "guild": req.asker.workspace,
                "channel": req.asker.channel, "user": req.asker.user, "roles": list(req.asker.groups)})
            return self.policy.explain_denial(req.agent, req.asker)
        return None

    # -- /ask and the modal --

    def agent_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Autocomplete: the agents this asker may run here whose name or description matches."""
        asker = asker_of(self._wire(interaction))
        allowed = set(self.policy.allowed_agents(self._agent_names(), asker))
        needle = current.strip().lower()
        choices = []
        for spec in self.runtime.agents():
            if spec.name not in allowed:
                continue
            if needle and needle not in spec.name.lower() and needle not in (spec.description or "").lower():
                continue
            label = f"{spec.name} - {spec.description}" if spec.description else spec.name
            choices.append(app_commands.Choice(name=label[:100], value=spec.name))
        return choices[:MAX_CHOICES]

    async def ask(self, interaction: discord.Interaction) -> None:
        """An `/ask` or a modal submit: check, journal, defer, run, answer with the card."""
        try:
            req = to_edge_request(self._wire(interaction))
        except ValueError as exc:
            await interaction.response.send_message(f"oz0 could not read this ask: {exc}", ephemeral=True,
                                                    allowed_mentions=discord.AllowedMentions.none())
            return
        refusal = self._refusal(req)
        if refusal is not None:
            await interaction.response.send_message(refusal, ephemeral=True,
                                                    allowed_mentions=discord.AllowedMentions.none())
            return
        job, new = self.runtime.submit(req.agent, req.text, requester=req.requester, channel=req.channel_name,
                                       dedupe_key=req.dedupe_key, reply_to=req.reply.to_dict())
        if not new:
            log.info("redelivered %s ignored: job %s already %s", req.dedupe_key, job.id, job.status)
            return
        await interaction.response.defer(ephemeral=True, thinking=True)
        self.spawn(self._finish(job.id, req.reply), name=f"discord-job-{job.id}")

    async def _finish(self, job_id: str, reply: ReplyTarget) -> None:
        job = None
        try:
            job = await self.runtime.execute(job_id)
            card = self.runtime.card(job)
        except asyncio.CancelledError:
            # The channel is stopping: the journal says "interrupted"; say so to the asker while we can.
            stopped = self.runtime.job(job_id)
            if stopped is not None and stopped.finished:
                await asyncio.wait_for(self.deliver(self.runtime.card(stopped), reply, job_id=job_id),
                                       STOP_GRACE_S)
            raise
        except Exception:
            log.exception("job %s could not run", job_id)
            card = failure_card(f"oz0 could not run this ask (internal error, job {job_id}); the bot's log "
                                "has the details.", code="internal_error")
        await self.deliver(card, reply, job=job, job_id=job_id)

    async def deliver(self, card: Card, reply: ReplyTarget, *, job: Any = None, job_id: str,
                      shareable: bool = True) -> None:
        """Edit the asker's private response into the card; after the token's 15 minutes, post in the channel."""
        if reply.token_usable(now=time.time(), lifetime_s=self.token_lifetime_s):
            body, attachments = to_discord_payload(card, share_job=job_id if shareable and job else None)
            files = self._files(body, attachments, card)
            route = Route("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/@original",
                          webhook_id=reply.application_id, webhook_token=reply.token)
            try:
                await self._send(route, body, files)
                return
            except discord.NotFound:
                log.warning("the response to job %s is gone (token expired?); posting in the channel", job_id)
            except discord.HTTPException as exc:
                log.error("Discord refused the card for job %s: %s %s", job_id, exc.status, exc.text)
                fallback = failure_card(f"oz0 could not show this result in Discord ({exc.status}: "
                                        f"{exc.text[:200]}); job {job_id} is in the journal.",
                                        code="discord_refused")
                await self._send(route, to_discord_payload(fallback)[0])
                return
        body, attachments = to_discord_payload(card)
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=reply.channel_id)
        try:
            await self._send(route, body, self._files(body, attachments, card))
        except discord.HTTPException as exc:
            log.error("could not post the card for job %s in channel %s: %s %s", job_id, reply.channel_id,
                      exc.status, exc.text)

    @staticmethod
    def _files(body: Mapping[str, Any], attachments: list[Mapping[str, Any]], card: Card) -> list[tuple[str, bytes]]:
        """The files the renderer asked for: the full result (see `renderers.attachments`)."""
        if not attachments:
            return []
        data = attachment_for(card).data
        return [(name, data) for name in upload_names(body, attachments)[:MAX_FILES]]

    # -- /agents --

    async def list_agents(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        asker = asker_of(self._wire(interaction))
        allowed = set(self.policy.allowed_agents(self._agent_names(), asker))
        card = agents_card(s for s in self.runtime.agents() if s.name in allowed)
        body, attachments = to_discord_payload(card)
        await self._send(self._original(interaction), body, self._files(body, attachments, card))

    # -- the message command --

    async def ask_about(self, interaction: discord.Interaction, message: discord.Message) -> None:
        asker = asker_of(self._wire(interaction))
        allowed = self.policy.allowed_agents(self._agent_names(), asker)
        if not allowed:
            await interaction.response.send_message(NO_AGENTS_TEXT, ephemeral=True,
                                                    allowed_mentions=discord.AllowedMentions.none())
            return
        if not message.content.strip():
            await interaction.response.send_message("That message has no text to ask about.", ephemeral=True,
                                                    allowed_mentions=discord.AllowedMentions.none())
            return
        await interaction.response.send_modal(_AskModal(self, allowed, message.content))

    # -- share --

    async def _on_interaction(self, interaction: discord.Interaction) -> None:
        if interaction.type is not discord.InteractionType.component:
            return
        custom_id = str((interaction.data or {}).get("custom_id", ""))
        if custom_id.startswith(SHARE_PREFIX):
            try:
                await self.share(interaction, custom_id[len(SHARE_PREFIX):])
            except Exception as exc:
                await self.on_error(interaction, exc)

    async def share(self, interaction: discord.Interaction, job_id: str) -> None:
        """Post the card for everyone in the channel, then mark the private copy as shared."""
        job = self.runtime.job(job_id)
        asker = asker_of(self._wire(interaction))
        problem = None
        if job is None or not job.finished:
            problem = "This result is no longer available; ask again."
        elif job.requester != f"discord:{asker.user}":
            problem = "Only the person who asked can share this result."
        elif job_id in self._shared:
            problem = "This result was already shared."
        elif not self.policy.allows(job.agent, asker):
            problem = self.policy.explain_denial(job.agent, asker)
        if problem:
            await interaction.response.send_message(problem, ephemeral=True,
                                                    allowed_mentions=discord.AllowedMentions.none())
            return
        self._shared.add(job_id)
        await interaction.response.defer()
        card = self.runtime.card(job)
        body, attachments = to_discord_payload(card)
        followup = Route("POST", "/webhooks/{webhook_id}/{webhook_token}",
                         webhook_id=interaction.application_id, webhook_token=interaction.token)
        await self._send(followup, body, self._files(body, attachments, card))
        marked, _ = to_discord_payload(card, share_job=job_id, shared=True)
        await self._send(self._original(interaction), marked)

    # -- restart --

    async def report_interrupted(self, jobs: Iterable[Any]) -> None:
        """Tell each asker whose job a restart cut short (in place while the token lives, else in the channel)."""
        async def deliver(job: Any, card: Card) -> None:
            await self.deliver(card, ReplyTarget.from_dict(job.reply_to), job=None, job_id=job.id, shareable=False)

        await report_each(jobs, platform="discord", log=log, card_for=self.runtime.card, deliver=deliver)

    def add_interrupted(self, jobs: list[Any]) -> None:
        self._pending_interrupted.extend(jobs)
        if self.logged_in.is_set():
            self._flush_interrupted()

    def _flush_interrupted(self) -> None:
        if self._pending_interrupted:
            jobs = list(self._pending_interrupted)
            self._pending_interrupted.clear()
            self.spawn(self.report_interrupted(jobs), name="discord-report-interrupted")

    # -- run --

    async def run(self, stop: asyncio.Event) -> None:
        """Log in, connect to the gateway and answer until `stop` is set; then close cleanly."""
        with _api_base(self.settings.api_url):
            async with self.client:
                await self.client.login(self.settings.token)
                connection = asyncio.create_task(self.client.connect(reconnect=True), name="discord-gateway")
                stopping = asyncio.create_task(stop.wait(), name="discord-stop")
                try:
                    await asyncio.wait({connection, stopping}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopping.cancel()
                    await self.drain()
                    await self.client.close()
                    if connection.done() and not connection.cancelled() and connection.exception():
                        raise connection.exception()  # type: ignore[misc]
                    connection.cancel()
                    await asyncio.gather(connection, return_exceptions=True)


@contextmanager
def _api_base(api_url: str | None) -> Iterator[None]:
    """discord.py's API base (and so the gateway found from it) for the life of the channel."""
    if not api_url:
        yield
        return
    old_base, old_gateway = Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = api_url
    try:
        yield
    finally:
        Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway


# ---- oz0 serve ------------------------------------------------------------------------------

_PENDING_INTERRUPTED: list[Any] = []
_ACTIVE: list[DiscordChannel] = []


def report_interrupted(jobs: Iterable[Any]) -> None:
    """Hook for `oz0 serve`: jobs a restart interrupted are reported to their askers once the channel
    has logged in (or at once, when it already has)."""
    jobs = [j for j in jobs if (j.reply_to or {}).get("platform") == "discord"]
    if not jobs:
        return
    if _ACTIVE:
        _ACTIVE[0].add_interrupted(jobs)
    else:
        _PENDING_INTERRUPTED.extend(jobs)


async def serve(runtime: Any, *, env: Mapping[str, str], stop: asyncio.Event,
                token_lifetime_s: float = INTERACTION_TOKEN_S) -> None:
    """Run the Discord channel over the gateway until `stop` is set."""
    settings = DiscordSettings.from_env(env)
    channel = DiscordChannel(runtime, settings, token_lifetime_s=token_lifetime_s)
    _ACTIVE.append(channel)
    if _PENDING_INTERRUPTED:
        channel.add_interrupted(list(_PENDING_INTERRUPTED))
        _PENDING_INTERRUPTED.clear()
    try:
        await channel.run(stop)
    finally:
        _ACTIVE.remove(channel)
