"""The Discord channel: `/ask`, `/agents` and "Ask an agent about this"; the answer is a card.

Wire translation only, around a thin discord.py client (gateway + `app_commands`): `to_ask(data)`
and `to_share_click(data)` turn an interaction's wire payload into the ask flow's neutral requests,
and `DiscordWire` turns the flow's calls into Discord calls. What is decided (access, help, dedupe,
the job, share, restart reports) is in `oz0.adapters.chat.flow`, the same for every chat channel.

What is Discord's here:
- Discord wants an answer within 3 seconds: an ask is answered with the working message (ephemeral,
  with the job's Stop) and that original response edited into the card; a refusal is an ephemeral line. The delivery id is the
  interaction id (a gateway resume replays INTERACTION_CREATE).
- The renderer's Create Message body goes out as it is through discord.py's own HTTP client
  (`client.http.request(Route(...))`): the same rate-limit buckets, 429 handling and multipart
  upload as everything else the library sends, and no markup rebuilt here.
- The interaction token lives 15 minutes. A job that ends after that (less a margin) posts its card
  as a new message in the channel instead of editing the expired response.
- The client's `allowed_mentions` parses nothing (the renderer's bodies say so themselves).
- A job's question is answered with its buttons or its modal (sent as the "Answer…" click's first
  answer); a click or submit is deferred (the message with the buttons is then edited into what
  was decided) and a refusal is an ephemeral follow-up.
- `DISCORD_API_URL` replaces discord.py's `Route.BASE` (a class attribute: one per process, restored
  when the channel stops) and the gateway URL then comes from that API's `/gateway/bot`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import discord
import yarl
from discord import app_commands
from discord.http import Route

from oz0.adapters.chat.asking import ANSWER_ACTION
from oz0.adapters.chat.cards import CANCEL_ACTION, NO_AGENTS_TEXT, failure_card
from oz0.adapters.chat.conversing import STOP_ACTION
from oz0.adapters.chat.discord_events import (
    AGENT_FIELD,
    INPUT_FIELD,
    SHARE_PREFIX,
    asker_of,
    referenced,
    reply_of,
    share_job,
    snowflake_time,
    str_or_none,
    to_answer_click,
    to_ask,
    to_direct_message,
    to_share_click,
    to_thread_message,
)
from oz0.adapters.chat.discord_settings import DiscordConfigError, DiscordSettings, api_base, configured
from oz0.adapters.chat.discord_wire import ASK_MESSAGE_COMMAND, INTERACTION_TOKEN_S, DiscordWire, ReplyTarget
from oz0.adapters.chat.flow import AskFlow
from oz0.adapters.chat.restarts import Restarts
from oz0.adapters.chat.wire import ChatRuntime
from oz0.edge.cards.model import FEEDBACK_ACTION
from oz0.edge.runtime.access import AccessPolicy, Asker
from oz0.renderers import discord_modal

__all__ = [
    "AGENT_FIELD",
    "ASK_MESSAGE_COMMAND",
    "INPUT_FIELD",
    "INTERACTION_TOKEN_S",
    "SHARE_PREFIX",
    "Asker",
    "DiscordChannel",
    "DiscordConfigError",
    "DiscordSettings",
    "ReplyTarget",
    "configured",
    "report_interrupted",
    "serve",
    "snowflake_time",
    "to_answer_click",
    "to_ask",
    "to_share_click",
]

log = logging.getLogger("oz0.discord")

MAX_CHOICES = 25                 # autocomplete answers and select options: at most 25
STOP_GRACE_S = 5.0               # how long running jobs may finish when the channel stops
STOP_PREFIX = f"{STOP_ACTION}:"     # the Stop button under an answer in a conversation
CANCEL_PREFIX = f"{CANCEL_ACTION}:"  # the Stop button on a working message: stops its job
FEEDBACK_PREFIX = f"{FEEDBACK_ACTION}:"   # 👍 / 👎 under an answer


# ---- the channel ----------------------------------------------------------------------------

class DiscordChannel:
    """The discord.py client and its command tree: each handler translates and hands the
    interaction to the ask flow. One per process."""

    def __init__(self, runtime: ChatRuntime, settings: DiscordSettings, *, policy: AccessPolicy | None = None,
                 token_lifetime_s: float = INTERACTION_TOKEN_S) -> None:
        self.settings = settings
        policy = policy if policy is not None else AccessPolicy.load(runtime.home)
        intents = discord.Intents.none()
        intents.guilds = True      # roles of the guilds, for access rules on roles; not privileged
        intents.guild_messages = True    # messages in a conversation's thread (their content: the next one)
        intents.message_content = settings.message_content   # privileged: without it, only mentions are read
        intents.dm_messages = policy.dms   # direct messages, when access.yaml says `dms: true`
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
        self.client.on_message = self._on_message  # type: ignore[attr-defined]
        self.tree = app_commands.CommandTree(self.client)
        self.tree.on_error = self.on_error  # type: ignore[method-assign]
        self._register_commands()
        self.wire = DiscordWire(self.client, token_lifetime_s=token_lifetime_s)
        self.flow = AskFlow(runtime, self.wire, policy=policy, log=log, grace_s=STOP_GRACE_S)

    # -- commands --

    def _register_commands(self) -> None:
        @app_commands.command(name="ask", description="Ask an agent; the answer shows to you first")
        @app_commands.guild_only()
        @app_commands.describe(agent="Which agent (start typing)", input="Text, or JSON for agents that take JSON")
        async def ask(interaction: discord.Interaction, agent: str, input: str = "") -> None:
            await self.ask(interaction)

        @ask.autocomplete("agent")
        async def ask_agent(interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
            return await self.agent_choices(interaction, current)

        @app_commands.command(name="agents", description="The agents you may run here, and what they take")
        @app_commands.guild_only()
        async def agents(interaction: discord.Interaction) -> None:
            await self.ask(interaction)

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
        _RESTARTS.attach(self.flow)

    async def _on_ready(self) -> None:
        user = self.client.user
        log.info("Discord channel: connected as %s to %d guild(s)", user, len(self.client.guilds))

    # -- interactions in --

    @staticmethod
    def _wire(interaction: discord.Interaction) -> dict[str, Any]:
        """The interaction as Discord sent it, as far as `to_ask` needs it."""
        user = interaction.user
        roles = [str(r.id) for r in getattr(user, "roles", ()) if not r.is_default()]
        channel_type = getattr(getattr(interaction.channel, "type", None), "value", None)
        return {"id": str(interaction.id), "type": interaction.type.value, "token": interaction.token,
                "application_id": str(interaction.application_id), "guild_id": str_or_none(interaction.guild_id),
                "channel_id": str_or_none(interaction.channel_id), "channel": {"type": channel_type},
                "data": interaction.data or {},
                "member": {"user": {"id": str(user.id)}, "roles": roles}}

    async def ask(self, interaction: discord.Interaction) -> None:
        """`/ask`, `/agents` or a modal submit, for the flow."""
        try:
            ask = to_ask(self._wire(interaction), interaction=interaction)
        except ValueError as exc:
            await interaction.response.send_message(f"oz0 could not read this ask: {exc}", ephemeral=True)
            return
        await self.flow.ask(ask)

    async def agent_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Autocomplete: the agents this asker may run here whose name or description matches."""
        needle = current.strip().lower()
        choices = []
        for spec in await self.flow.allowed(asker_of(self._wire(interaction))):
            if needle and needle not in spec.name.lower() and needle not in (spec.description or "").lower():
                continue
            label = f"{spec.name} - {spec.description}" if spec.description else spec.name
            choices.append(app_commands.Choice(name=label[:100], value=spec.name))
        return choices[:MAX_CHOICES]

    async def ask_about(self, interaction: discord.Interaction, message: discord.Message) -> None:
        """The message command: a modal to pick the agent, the message's text as the input."""
        allowed = [s.name for s in await self.flow.allowed(asker_of(self._wire(interaction)))]
        if not allowed:
            await interaction.response.send_message(NO_AGENTS_TEXT, ephemeral=True)
            return
        if not message.content.strip():
            await interaction.response.send_message("That message has no text to ask about.", ephemeral=True)
            return
        await self.wire.open_ask_form(interaction, discord_modal.ask_modal(allowed, message.content))

    async def _on_message(self, message: discord.Message) -> None:
        """A message the gateway delivered: a conversation's follow-up, or a mention in a thread."""
        me = self.client.user
        if me is None or message.author.id == me.id:
            return
        data = {"id": str(message.id), "channel_id": str(message.channel.id), "guild_id": str_or_none(message.guild and
                message.guild.id), "channel_type": getattr(message.channel.type, "value", None),
                "content": message.content, "author": {"id": str(message.author.id), "bot": message.author.bot},
                "mentions": [{"id": str(m.id)} for m in message.mentions], "referenced": referenced(message),
                "member": {"roles": [str(r.id) for r in getattr(message.author, "roles", ()) if not r.is_default()]}}
        try:
            if message.guild is None:
                if not self.flow.policy.dms:
                    return   # not subscribed to DMs then; one that arrives anyway is nobody's ask
                ask = to_direct_message(data)
            else:
                ask = to_thread_message(data, bot_id=str(me.id))
        except ValueError:
            return   # most messages are nobody's ask
        self.flow.tasks.spawn(self.flow.ask(ask), name=f"discord-message-{message.id}")

    async def _on_interaction(self, interaction: discord.Interaction) -> None:
        kinds = (discord.InteractionType.component, discord.InteractionType.modal_submit)
        if interaction.type not in kinds:
            return
        custom_id = str((interaction.data or {}).get("custom_id", ""))
        try:
            if interaction.type is discord.InteractionType.modal_submit and custom_id == discord_modal.ASK_MODAL_ID:
                await self.ask(interaction)
            elif custom_id.startswith(f"{ANSWER_ACTION}_"):
                await self.flow.answer(to_answer_click(self._wire(interaction), interaction=interaction))
            elif interaction.type is discord.InteractionType.component and share_job(custom_id) is not None:
                await self.flow.buttons.share(to_share_click(self._wire(interaction), interaction=interaction))
            elif interaction.type is discord.InteractionType.component and custom_id.startswith(FEEDBACK_PREFIX):
                data = self._wire(interaction)
                asker = asker_of(data)
                await self.flow.buttons.feedback(custom_id[len(FEEDBACK_PREFIX):], asker, reply_of(data, asker, interaction))
            elif interaction.type is discord.InteractionType.component and custom_id.startswith(STOP_PREFIX):
                data = self._wire(interaction)
                asker = asker_of(data)
                await self.flow.conversing.stop_click(custom_id[len(STOP_PREFIX):], f"discord:{asker.user}",
                                                      reply_of(data, asker, interaction))
            elif interaction.type is discord.InteractionType.component and custom_id.startswith(CANCEL_PREFIX):
                data = self._wire(interaction)
                asker = asker_of(data)
                await self.flow.stopping.click(custom_id[len(CANCEL_PREFIX):], f"discord:{asker.user}",
                                               reply_of(data, asker, interaction), workspace=asker.workspace)
        except Exception as exc:
            await self.on_error(interaction, exc)

    async def on_error(self, interaction: discord.Interaction, error: Exception) -> None:
        """Log the real error; the person gets a failure card with no traceback."""
        log.error("Discord interaction %s failed", interaction.id, exc_info=error)
        text = "oz0 could not handle this (internal error); the bot's log has the details."
        try:
            if interaction.response.is_done():
                body = self.flow.draw(failure_card(text, code="internal_error")).payload
                await self.client.http.request(Route(
                    "PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/@original",
                    webhook_id=interaction.application_id, webhook_token=interaction.token), json=body)
            else:
                await interaction.response.send_message(text, ephemeral=True)
        except discord.HTTPException as exc:
            log.error("could not tell the asker about the error: %s", exc)

    # -- run --

    async def run(self, stop: asyncio.Event) -> None:
        """Log in, connect to the gateway and answer until `stop` is set; then close cleanly."""
        self.flow.deliver_durably()
        self.flow.listen_questions()
        with api_base(self.settings.api_url):
            async with self.client:
                await self.client.login(self.settings.token)
                connection = asyncio.create_task(self.client.connect(reconnect=True), name="discord-gateway")
                stopping = asyncio.create_task(stop.wait(), name="discord-stop")
                try:
                    await asyncio.wait({connection, stopping}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopping.cancel()
                    _RESTARTS.detach(self.flow)
                    await self.flow.close()
                    await self.client.close()
                    if connection.done() and not connection.cancelled() and connection.exception():
                        failed = connection.exception()
                        if isinstance(failed, discord.PrivilegedIntentsRequired):
                            raise DiscordConfigError(
                                "DISCORD_MESSAGE_CONTENT is on, but Discord refused the Message Content Intent: "
                                "switch it on in the Developer Portal (your application > Bot > Privileged "
                                "Gateway Intents), or unset DISCORD_MESSAGE_CONTENT to follow up with mentions"
                            ) from None
                        raise failed  # type: ignore[misc]
                    connection.cancel()
                    await asyncio.gather(connection, return_exceptions=True)


# ---- oz0 serve ------------------------------------------------------------------------------

_RESTARTS = Restarts("discord")


def report_interrupted(jobs: Iterable[Any]) -> None:
    """Hook for `oz0 serve`: jobs a restart interrupted are reported to their askers once the channel
    has logged in (or at once, when it already has)."""
    _RESTARTS.report(jobs)


async def serve(runtime: ChatRuntime, *, env: Mapping[str, str], stop: asyncio.Event,
                token_lifetime_s: float = INTERACTION_TOKEN_S) -> None:
    """Run the Discord channel over the gateway until `stop` is set."""
    settings = DiscordSettings.from_env(env)
    await DiscordChannel(runtime, settings, token_lifetime_s=token_lifetime_s).run(stop)
