"""A loopback stand-in for Discord: the HTTP API and the gateway websocket, just enough for discord.py.

The tests point a real discord.py client at it (`DISCORD_API_URL`) and assert on what it records:
every HTTP request (method, path, JSON body or `payload_json`, uploaded files) and every gateway
IDENTIFY. Interactions are delivered as INTERACTION_CREATE dispatches built by the helpers below,
shaped like Discord's payloads. Heartbeats are answered; the heartbeat interval is long so that a
test never waits on one.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

__all__ = ["DiscordStandIn", "Recorded", "snowflake"]

DISCORD_EPOCH_MS = 1420070400000
_counter = itertools.count()


MESSAGE_CONTENT = 1 << 15    # the privileged gateway intent
DIRECT_MESSAGES = 1 << 12


def _json(data: Any, status: int = 200) -> web.Response:
    """Exactly `application/json`, as Discord answers: discord.py parses nothing else (not even with a charset)."""
    return web.Response(body=json.dumps(data).encode(), status=status, content_type="application/json")


def snowflake() -> str:
    """A fresh id whose time part is now, as Discord's are (the interaction token's clock starts there)."""
    return str(((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (next(_counter) & 0xFFF))


@dataclass
class Recorded:
    """One HTTP request the client made."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    files: list[tuple[str, str, bytes]] = field(default_factory=list)
    authorization: str | None = None
    at: float = field(default_factory=time.monotonic)   # when the stand-in received it

    @property
    def callback_type(self) -> int | None:
        return self.body.get("type") if isinstance(self.body, dict) else None


class DiscordStandIn:
    """Serves `/api/v10/...` and `/gateway` on 127.0.0.1; `api_url` is what discord.py's Route.BASE becomes."""

    def __init__(self, *, guilds: list[dict[str, Any]] | None = None, shards: int = 1,
                 token: str | None = None, message_content_allowed: bool = True) -> None:
        self.token = token               # when set, bot-authenticated routes refuse any other token
        # the Developer Portal's "Message Content Intent" switch: off, an IDENTIFY asking for it is closed 4014
        self.message_content_allowed = message_content_allowed
        # GET /guilds/{guild}/members/{user}: user id -> {"username", "global_name", "nick"}; others 404 Unknown Member
        self.people: dict[str, dict[str, str | None]] = {"2000": {"username": "ana", "global_name": "Ana",
                                                                   "nick": "Ana Lima"}}
        self.app_id = snowflake()
        self.bot_id = self.app_id
        self.guilds = guilds or []
        self.shards = shards
        self.requests: list[Recorded] = []
        self.identifies: list[dict[str, Any]] = []
        self.sockets: dict[int, web.WebSocketResponse] = {}
        self.messages: dict[str, dict[str, Any]] = {}
        self._seq = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.fail_next: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> DiscordStandIn:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._api)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def close(self) -> None:
        for ws in list(self.sockets.values()):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # -- what tests wait on ------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[Recorded], bool], *, timeout: float = 10.0,
                       count: int = 1) -> list[Recorded]:
        """The first `count` recorded requests that satisfy `predicate`, waiting for them to arrive."""
        async def found() -> list[Recorded]:
            async with self._changed:
                while True:
                    hits = [r for r in self.requests if predicate(r)]
                    if len(hits) >= count:
                        return hits[:count]
                    await self._changed.wait()
        return await asyncio.wait_for(found(), timeout)

    async def wait_identified(self, shard_ids: tuple[int, ...] = (0,), *, timeout: float = 10.0) -> None:
        async def done() -> None:
            async with self._changed:
                while not all(s in self.sockets and self._ready(s) for s in shard_ids):
                    await self._changed.wait()
        await asyncio.wait_for(done(), timeout)

    def _ready(self, shard_id: int) -> bool:
        return any((i.get("shard") or [0, 1])[0] == shard_id for i in self.identifies)

    def calls(self, method: str, path_part: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and path_part in r.path]

    async def _record(self, rec: Recorded) -> None:
        async with self._changed:
            self.requests.append(rec)
            self._changed.notify_all()

    # -- HTTP API ----------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        body: Any = None
        files: list[tuple[str, str, bytes]] = []
        if request.content_type == "multipart/form-data":
            reader = await request.multipart()
            async for part in reader:
                if part.name == "payload_json":
                    body = json.loads(await part.text())
                else:
                    files.append((part.name or "", part.filename or "", bytes(await part.read())))
        elif request.can_read_body:
            raw = await request.read()
            body = json.loads(raw) if raw else None
        rec = Recorded(request.method, path, dict(request.query), body, files,
                       request.headers.get("Authorization"))
        await self._record(rec)
        bot_route = not path.startswith(("/interactions/", "/webhooks/"))
        if self.token is not None and bot_route and rec.authorization != f"Bot {self.token}":
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        forced = self.fail_next.pop((request.method, path.split("/")[1]), None)
        if forced is not None:
            if forced[0] == 429:   # as Discord answers one (discord.py reads a 429 without `Via` as Cloudflare's ban)
                wait = str(forced[1].get("retry_after", 1))
                return web.Response(body=json.dumps(forced[1]).encode(), status=429, content_type="application/json",
                                    headers={"Via": "1.1 google", "Retry-After": wait, "X-RateLimit-Scope": "user",
                                             "X-RateLimit-Global": str(bool(forced[1].get("global"))).lower()})
            return _json(forced[1], status=forced[0])
        return self._answer(request.method, path, body, rec)

    def _answer(self, method: str, path: str, body: Any, rec: Recorded) -> web.Response:
        parts = path.strip("/").split("/")
        if method == "GET" and path == "/users/@me":
            return _json(self.bot_user())
        if method == "GET" and path == "/oauth2/applications/@me":
            return _json({
                "id": self.app_id, "name": "oz0-test", "description": "", "icon": None,
                "bot_public": False, "bot_require_code_grant": False, "verify_key": "0" * 64,
                "owner": self.user("1000", "owner"), "flags": 0})
        if method == "GET" and path in ("/gateway/bot", "/gateway"):
            return _json({"url": self.gateway_url, "shards": self.shards,
                                      "session_start_limit": {"total": 1000, "remaining": 1000,
                                                              "reset_after": 0, "max_concurrency": 1}})
        if method == "PUT" and parts[0] == "applications" and parts[-1] == "commands":
            guild_id = parts[3] if len(parts) == 5 else None
            out = []
            for cmd in body or []:
                out.append({"id": snowflake(), "application_id": self.app_id, "version": snowflake(),
                            "description": "", **cmd, **({"guild_id": guild_id} if guild_id else {})})
            return _json(out)
        if method == "POST" and parts[0] == "interactions" and parts[-1] == "callback":
            data = (body or {}).get("data") or {}
            return _json({"interaction": {
                "id": parts[1], "type": 2,
                "response_message_loading": body.get("type") == 5,
                "response_message_ephemeral": bool((data.get("flags") or 0) & 64)}})
        if parts[0] == "webhooks" and method in ("PATCH", "POST"):
            return _json(self.message_from(body, channel_id="0"))
        if method == "POST" and parts[0] == "channels" and parts[-1] == "messages":
            return _json(self.message_from(body, channel_id=parts[1]))
        if method in ("PATCH", "GET") and parts[0] == "channels" and len(parts) == 4 and parts[2] == "messages":
            msg = self.messages.get(parts[3])
            if msg is None or msg["channel_id"] != parts[1]:
                return _json({"message": "Unknown Message", "code": 10008}, status=404)
            if method == "PATCH":   # an edit: the fields it names replace the message's
                msg.update({k: v for k, v in (body or {}).items() if k in ("content", "embeds", "components", "flags")},
                           edited_timestamp="2024-01-01T00:00:01+00:00")
            return _json(msg)
        if method == "GET" and parts[0] == "guilds" and len(parts) == 4 and parts[2] == "members":
            person = self.people.get(parts[3])
            if person is None:
                return _json({"message": "Unknown Member", "code": 10007}, status=404)
            return _json({"user": self.user(parts[3], person.get("username", f"user{parts[3]}"),
                                            global_name=person.get("global_name")),
                          "nick": person.get("nick"), "roles": [], "joined_at": "2024-01-01T00:00:00+00:00",
                          "deaf": False, "mute": False, "flags": 0})
        if method == "POST" and parts[0] == "channels" and parts[-1] == "typing":
            return web.Response(status=204)
        return _json({"message": f"stand-in has no {method} {path}", "code": 0}, status=404)

    # -- gateway -----------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 600_000}, "s": None, "t": None})
        shard_id = None
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                continue
            frame = json.loads(msg.data)
            if frame["op"] == 1:
                await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
            elif frame["op"] == 2:
                if int(frame["d"].get("intents") or 0) & MESSAGE_CONTENT and not self.message_content_allowed:
                    await ws.close(code=4014, message=b"Disallowed intent(s).")
                    break
                shard = frame["d"].get("shard") or [0, 1]
                shard_id = shard[0]
                self.sockets[shard_id] = ws
                await self._send(ws, "READY", {
                    "v": 10, "user": self.bot_user(), "session_id": f"s{shard_id}", "shard": shard,
                    "resume_gateway_url": self.gateway_url,
                    "guilds": [{"id": g["id"], "unavailable": True} for g in self._guilds_of(shard)],
                    "application": {"id": self.app_id, "flags": 0}})
                for guild in self._guilds_of(shard):
                    await self._send(ws, "GUILD_CREATE", guild)
                async with self._changed:
                    self.identifies.append(frame["d"])
                    self._changed.notify_all()
        if shard_id is not None and self.sockets.get(shard_id) is ws:
            del self.sockets[shard_id]
        return ws

    def _guilds_of(self, shard: list[int]) -> list[dict[str, Any]]:
        return [g for g in self.guilds if (int(g["id"]) >> 22) % shard[1] == shard[0]]

    async def _send(self, ws: web.WebSocketResponse, event: str, data: Any) -> None:
        await ws.send_json({"op": 0, "t": event, "s": next(self._seq), "d": data})

    async def dispatch(self, event: str, data: dict[str, Any], *, shard_id: int = 0) -> None:
        await self._send(self.sockets[shard_id], event, data)

    async def post_message(self, content: str, *, guild_id: str | None, channel_id: str, user_id: str = "2000",
                           mentions_bot: bool = False, shard_id: int = 0, reply_to: str | None = None,
                           reply_ping: bool = False) -> dict[str, Any]:
        """A person's message (MESSAGE_CREATE) as Discord delivers it: without the message-content intent
        a guild message that does not mention the bot arrives with its content empty (a DM keeps its
        content). A DM (`guild_id` None) reaches a bot only with the direct-messages intent."""
        if guild_id is None and not int((self.identifies[-1] if self.identifies else {}).get("intents") or 0) & DIRECT_MESSAGES:
            return {}
        intents = int((self.identifies[-1] if self.identifies else {}).get("intents") or 0)
        text = f"<@{self.bot_id}> {content}" if mentions_bot else content
        msg = {"id": snowflake(), "channel_id": channel_id, **({"guild_id": guild_id} if guild_id else {}), "type": 0,
               "content": text if intents & MESSAGE_CONTENT or mentions_bot or guild_id is None else "",
               "embeds": [], "attachments": [], "components": [], "timestamp": "2024-01-01T00:00:00+00:00",
               "edited_timestamp": None, "pinned": False, "mention_everyone": False, "tts": False,
               "mentions": [self.bot_user()] if mentions_bot else [], "mention_roles": [], "flags": 0,
               "author": self.user(user_id, f"user{user_id}"),
               "member": {"roles": [], "joined_at": "2024-01-01T00:00:00+00:00", "deaf": False, "mute": False,
                          "flags": 0}}
        if guild_id is None:
            del msg["member"]
        if reply_to is not None:
            # a reply (type 19): its message_reference, and the message replied to as Discord sends it
            # (with that message's own message_reference, but not its referenced_message)
            answered = {k: v for k, v in self.messages[reply_to].items() if k != "referenced_message"}
            msg.update(type=19, message_reference={"type": 0, "message_id": reply_to, "channel_id": channel_id,
                                                    **({"guild_id": guild_id} if guild_id else {})},
                       referenced_message=answered)
            if reply_ping and answered["author"]["id"] == self.bot_id:
                msg["mentions"] = [self.bot_user()]   # the reply pings the bot: its content is sent without the intent
                msg["content"] = content
        self.messages[msg["id"]] = msg
        await self.dispatch("MESSAGE_CREATE", msg, shard_id=shard_id)
        return msg

    async def interact(self, payload: dict[str, Any], *, shard_id: int = 0) -> dict[str, Any]:
        await self.dispatch("INTERACTION_CREATE", payload, shard_id=shard_id)
        return payload

    # -- payload builders --------------------------------------------------------------------

    def bot_user(self) -> dict[str, Any]:
        return {**self.user(self.bot_id, "oz0"), "bot": True, "verified": True, "mfa_enabled": False,
                "flags": 0}

    @staticmethod
    def user(user_id: str, name: str, *, global_name: str | None = "") -> dict[str, Any]:
        return {"id": user_id, "username": name, "discriminator": "0",
                "global_name": name if global_name == "" else global_name,
                "avatar": None, "public_flags": 0}

    @staticmethod
    def guild(guild_id: str, *, channel_ids: tuple[str, ...], role_ids: tuple[str, ...] = (),
              thread_ids: tuple[str, ...] = ()) -> dict[str, Any]:
        roles = [{"id": guild_id, "name": "@everyone", "permissions": "0", "position": 0, "color": 0,
                  "hoist": False, "managed": False, "mentionable": False, "flags": 0}]
        roles += [{"id": r, "name": f"role-{r}", "permissions": "0", "position": i + 1, "color": 0,
                   "hoist": False, "managed": False, "mentionable": False, "flags": 0}
                  for i, r in enumerate(role_ids)]
        channels = [{"id": c, "type": 0, "name": f"chan-{c}", "position": i, "guild_id": guild_id,
                     "permission_overwrites": [], "nsfw": False, "parent_id": None}
                    for i, c in enumerate(channel_ids)]
        threads = [{"id": t, "type": 11, "name": f"thread-{t}", "guild_id": guild_id, "parent_id": channel_ids[0],
                    "owner_id": "2000", "message_count": 0, "member_count": 1, "rate_limit_per_user": 0,
                    "thread_metadata": {"archived": False, "auto_archive_duration": 1440, "locked": False,
                                        "archive_timestamp": "2024-01-01T00:00:00+00:00"}} for t in thread_ids]
        return {"id": guild_id, "name": f"guild-{guild_id}", "unavailable": False, "member_count": 2,
                "roles": roles, "channels": channels, "threads": threads, "members": [], "emojis": [],
                "stickers": [], "features": [], "owner_id": "1000", "icon": None, "large": False,
                "voice_states": [], "presences": [], "stage_instances": [], "guild_scheduled_events": [],
                "premium_tier": 0, "verification_level": 0, "default_message_notifications": 0,
                "explicit_content_filter": 0, "mfa_level": 0, "nsfw_level": 0, "preferred_locale": "en-US",
                "system_channel_flags": 0, "afk_timeout": 300, "joined_at": "2024-01-01T00:00:00+00:00"}

    def interaction(self, kind: int, data: dict[str, Any], *, guild_id: str, channel_id: str,
                    user_id: str = "2000", roles: tuple[str, ...] = (), message: dict[str, Any] | None = None,
                    interaction_id: str | None = None, channel_type: int = 0) -> dict[str, Any]:
        """An INTERACTION_CREATE payload: kind 2 command, 3 component, 4 autocomplete, 5 modal submit."""
        payload: dict[str, Any] = {
            "id": interaction_id or snowflake(), "application_id": self.app_id, "type": kind, "data": data,
            "guild_id": guild_id, "channel_id": channel_id,
            "channel": {"id": channel_id, "type": channel_type, "guild_id": guild_id, "name": f"chan-{channel_id}",
                        "position": 0, "permission_overwrites": [], "nsfw": False, "parent_id": None,
                        "rate_limit_per_user": 0, "topic": None, "last_message_id": None, "flags": 0},
            "member": {"user": self.user(user_id, f"user{user_id}"), "roles": list(roles),
                       "joined_at": "2024-01-01T00:00:00+00:00", "deaf": False, "mute": False,
                       "flags": 0, "permissions": "2248473465835073"},
            "token": f"tok-{snowflake()}", "version": 1, "locale": "en-US", "guild_locale": "en-US",
            "app_permissions": "2248473465835073", "attachment_size_limit": 10 * 1024 * 1024,
            "entitlements": [], "authorizing_integration_owners": {"0": guild_id}, "context": 0}
        if message is not None:
            payload["message"] = message
        return payload

    def slash(self, name: str, options: dict[str, str], *, focused: str | None = None,
              **where: Any) -> dict[str, Any]:
        """A slash command (or, with `focused`, its autocomplete) as Discord sends it."""
        opts = [{"name": k, "type": 3, "value": v, **({"focused": True} if k == focused else {})}
                for k, v in options.items()]
        data = {"id": snowflake(), "name": name, "type": 1, "options": opts}
        return self.interaction(4 if focused else 2, data, **where)

    def message_command(self, name: str, message: dict[str, Any], **where: Any) -> dict[str, Any]:
        data = {"id": snowflake(), "name": name, "type": 3, "target_id": message["id"],
                "resolved": {"messages": {message["id"]: message}}}
        return self.interaction(2, data, **where)

    def message_from(self, body: Any, *, channel_id: str, content: str | None = None,
                     author: dict[str, Any] | None = None) -> dict[str, Any]:
        body = body if isinstance(body, dict) else {}
        msg = {"id": snowflake(), "channel_id": channel_id, "type": 0,
               "content": content if content is not None else body.get("content") or "",
               "embeds": body.get("embeds") or [], "attachments": [], "components": body.get("components") or [],
               "timestamp": "2024-01-01T00:00:00+00:00", "edited_timestamp": None, "pinned": False,
               "mention_everyone": False, "tts": False, "mentions": [], "mention_roles": [],
               "flags": body.get("flags") or 0, "author": author or self.bot_user()}
        reference = body.get("message_reference")
        if isinstance(reference, dict) and reference.get("message_id"):
            msg.update(type=19, message_reference={"type": 0, "message_id": str(reference["message_id"]),
                                                   "channel_id": channel_id})
        self.messages[msg["id"]] = msg
        return msg
