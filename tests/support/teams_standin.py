"""Loopback stand-ins of what a Teams bot talks to, behaving as the real services do at the wire:

- the Bot Framework's OpenID metadata and JWKS (`/openid`, `/keys`), with its own RSA key, and
  `activity_token(...)` signing inbound activity JWTs as the Bot Framework does (RS256, `kid`,
  issuer `https://api.botframework.com`, audience the app id, `serviceUrl` claim, expiry);
- the Entra token endpoint (`/token`): the client-credentials grant, refusing a wrong secret, for the
  connector's scope or Graph's;
- Microsoft Graph's `POST /graph/v1.0/users/{id}/checkMemberGroups` (at most 20 ids, 404 for an unknown
  user, `graph_failure` making every call answer that status);
- OneDrive's upload URL of a file consent (`PUT /upload/{name}`, one Content-Range);
- the Bot Framework connector at the activity's `serviceUrl` (`/v3/conversations/{id}/activities[/{id}]`):
  reply (POST), send (POST), update (PUT), and a member by id (`GET .../members/{id}`), each needing the
  token it issued; `throttle(n, after_s)`
  makes the next n calls answer 429 with `Retry-After`, as the connector does;
- Teams' streaming protocol in personal chats (`typing` activities with a `streaminfo` entity, then
  the `final` message), checked as Teams documents it: a stream only in a personal chat; the start
  (no streamId) with sequence 1 and text, answered 201 with the streamId; each update naming it with a
  higher sequence (a stale one is answered 202 `ContentStreamSequenceOrderPreConditionFailed` and
  dropped), its text containing the text before, at most one a second (else 429 "API calls quota
  exceeded"), no attachments; the final without a sequence, ending the stream (anything after it:
  403 "...already completed streamed message"); past `stream_max_s` 403 "Content stream finished due
  to exceeded streaming time."; `stop_stream(id)` is the person's Stop button (then 403 "Content
  stream was cancelled by user.").
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://api.botframework.com"
APP_ID = "11111111-2222-3333-4444-555555555555"
TENANT = "99999999-8888-7777-6666-555555555555"
SECRET = "test-secret.not-a-real-one"
GRAPH_SCOPE = "https://graph.microsoft.com/.default"
SCOPES = ("https://api.botframework.com/.default", GRAPH_SCOPE)


def _b64(n: int) -> str:
    return base64.urlsafe_b64encode(n.to_bytes((n.bit_length() + 7) // 8, "big")).rstrip(b"=").decode()


@dataclass
class Call:
    method: str
    path: str
    body: Any
    auth: str
    at: float = field(default_factory=time.monotonic)


class TeamsStandIn:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "standin-key-1"
        self.calls: list[Call] = []
        self.tokens_issued = 0
        self.graph_tokens_issued = 0
        self.graph_groups: dict[str, set[str]] = {}   # Entra object id -> the groups they are in
        self.graph_calls: list[str] = []
        self.graph_failure = 0                         # a status every Graph call answers, when set
        self._throttle: list[float] = []
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._ids = 0
        self.changed = asyncio.Event()
        self.uploaded: dict[str, tuple[bytes, str]] = {}
        self.members: dict[str, dict[str, str]] = {}   # Entra object id -> the member's account, in every conversation
        self.personal: set[str] = set()                 # conversation ids of personal chats
        self.streams: dict[str, dict[str, Any]] = {}   # streamId -> its texts, sequence, final, state
        self.stream_min_gap_s = 0.9                     # Teams throttles a stream to one request a second
        self.stream_max_s = 120.0                       # and ends it after two minutes
        self.deleted: list[str] = []
        self.stream_refusals: list[tuple[int, str]] = []   # what the streaming protocol refused, in order

    async def start(self) -> TeamsStandIn:
        app = web.Application()
        app.router.add_get("/openid", self._openid)
        app.router.add_get("/keys", self._keys)
        app.router.add_post("/token", self._token)
        app.router.add_put("/upload/{name}", self._upload)
        app.router.add_post("/graph/v1.0/users/{user}/checkMemberGroups", self._check_member_groups)
        app.router.add_get("/connector/v3/conversations/{conversation}/members/{member}", self._member)
        app.router.add_route("*", "/connector/v3/conversations/{conversation}/activities", self._connector)
        app.router.add_route("*", "/connector/v3/conversations/{conversation}/activities/{activity}", self._connector)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def service_url(self) -> str:
        return self.base + "/connector/"

    def env(self) -> dict[str, str]:
        return {"TEAMS_APP_ID": APP_ID, "TEAMS_APP_PASSWORD": SECRET, "TEAMS_TENANT_ID": TENANT,
                "TEAMS_OPENID_METADATA_URL": self.base + "/openid", "TEAMS_TOKEN_URL": self.base + "/token",
                "TEAMS_GRAPH_URL": self.base + "/graph"}

    # -- the issuer --

    def activity_token(self, *, service_url: str | None = None, audience: str = APP_ID, expires_in: float = 300,
                       issuer: str = ISSUER, key: Any = None, omit: tuple[str, ...] = ()) -> str:
        now = int(time.time())
        claims = {"iss": issuer, "aud": audience, "exp": now + int(expires_in), "nbf": now - 10,
                  "serviceUrl": service_url or self.service_url}
        for name in omit:
            claims.pop(name, None)
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.kid})

    async def _openid(self, request: web.Request) -> web.Response:
        return web.json_response({"issuer": ISSUER, "jwks_uri": self.base + "/keys",
                                  "id_token_signing_alg_values_supported": ["RS256"]})

    async def _keys(self, request: web.Request) -> web.Response:
        numbers = self.key.public_key().public_numbers()
        return web.json_response({"keys": [{"kty": "RSA", "use": "sig", "kid": self.kid, "n": _b64(numbers.n),
                                            "e": _b64(numbers.e), "endorsements": ["msteams"]}]})

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("grant_type") != "client_credentials" or form.get("client_id") != APP_ID \
                or form.get("client_secret") != SECRET:
            return web.json_response({"error": "invalid_client"}, status=401)
        scope = form.get("scope")
        if scope not in SCOPES:
            return web.json_response({"error": "invalid_scope"}, status=400)
        if scope == GRAPH_SCOPE:
            self.graph_tokens_issued += 1
            return web.json_response({"token_type": "Bearer", "expires_in": 3600,
                                      "access_token": f"graph-token-{self.graph_tokens_issued}"})
        self.tokens_issued += 1
        return web.json_response({"token_type": "Bearer", "expires_in": 3600, "access_token": f"bot-token-{self.tokens_issued}"})

    # -- Microsoft Graph --

    async def _check_member_groups(self, request: web.Request) -> web.Response:
        """`POST /v1.0/users/{id}/checkMemberGroups`: which of `groupIds` (at most 20) the user is in."""
        self.graph_calls.append(request.match_info["user"])
        if not request.headers.get("Authorization", "").startswith("Bearer graph-token-"):
            return web.json_response({"error": {"code": "InvalidAuthenticationToken",
                                                "message": "Access token is empty."}}, status=401)
        if self.graph_failure:
            status = self.graph_failure
            return web.json_response({"error": {"code": "serviceNotAvailable", "message": "Try again later."}},
                                     status=status, headers={"Retry-After": "10"} if status in (429, 503) else {})
        user = request.match_info["user"]
        if user not in self.graph_groups:
            return web.json_response({"error": {"code": "Request_ResourceNotFound", "message":
                                                f"Resource '{user}' does not exist or one of its queried reference-property "
                                                "objects are not present."}}, status=404)
        wanted = (await request.json()).get("groupIds")
        if not isinstance(wanted, list) or not 1 <= len(wanted) <= 20:
            return web.json_response({"error": {"code": "Request_BadRequest",
                                                "message": "groupIds must hold 1 to 20 ids."}}, status=400)
        return web.json_response({"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#Collection(Edm.String)",
                                  "value": [g for g in wanted if g in self.graph_groups[user]]})

    # -- OneDrive's upload session (the file consent's uploadUrl) --

    async def _upload(self, request: web.Request) -> web.Response:
        data = await request.read()
        self.uploaded[request.match_info["name"]] = (data, request.headers.get("Content-Range", ""))
        self.changed.set()
        return web.json_response({"id": "drive-item-1", "name": request.match_info["name"], "size": len(data)},
                                 status=201)

    # -- the connector --

    def throttle(self, count: int, after_s: float) -> None:
        self._throttle += [after_s] * count

    async def _connector(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer bot-token-"):
            return web.json_response({"error": {"code": "Unauthorized"}}, status=401)
        body = await request.json() if request.method != "DELETE" else {}
        self.calls.append(Call(request.method, request.path, body, auth))
        self.changed.set()
        if self._throttle:
            after = self._throttle.pop(0)
            return web.json_response({"error": {"code": "TooManyRequests"}}, status=429,
                                     headers={"Retry-After": f"{after:g}"})
        if request.method == "DELETE":
            self.deleted.append(request.match_info["activity"])
            return web.json_response({})
        info = next((e for e in body.get("entities") or () if e.get("type") == "streaminfo"), None)
        if request.method == "POST" and info is not None:
            return self._stream(request.match_info["conversation"], body, info)
        if request.method == "PUT":
            return web.json_response({"id": request.match_info["activity"]})
        self._ids += 1
        return web.json_response({"id": f"1:{self._ids}"})

    # -- the streaming protocol --

    def stop_stream(self, stream_id: str) -> None:
        """The person pressed Stop on this streamed message."""
        self.streams[stream_id]["cancelled"] = True

    def _stream(self, conversation: str, body: dict[str, Any], info: dict[str, Any]) -> web.Response:
        def refuse(status: int, code: str, message: str, **headers: str) -> web.Response:
            self.stream_refusals.append((status, message))
            return web.json_response({"error": {"code": code, "message": message}}, status=status, headers=headers)

        kind, text, sequence = info.get("streamType", "streaming"), body.get("text"), info.get("streamSequence")
        if body.get("type") not in ("typing", "message") or (body["type"] == "message") != (kind == "final"):
            return refuse(400, "BadRequest", "A final streaming activity is a message, the others typing activities")
        if conversation not in self.personal:
            return refuse(403, "ContentStreamNotAllowed", "Content stream is not allowed")
        stream_id = info.get("streamId")
        if stream_id is None:
            if kind == "final" or sequence != 1:
                return refuse(400, "BadRequest", "Start streaming activities should have streamSequence 1")
            if not text:
                return refuse(400, "BadRequest", "Start streaming activities should include text")
            self._ids += 1
            stream_id = f"stream-{self._ids}"
            self.streams[stream_id] = {"conversation": conversation, "texts": [text], "sequence": 1, "final": None,
                                       "started": time.monotonic(), "last": time.monotonic(), "cancelled": False,
                                       "dropped": 0}
            return web.json_response({"id": stream_id}, status=201)
        stream = self.streams.get(stream_id)
        if stream is None or stream["conversation"] != conversation:
            return refuse(400, "BadRequest", "Unknown streamId")
        if stream["final"] is not None:
            return refuse(403, "ContentStreamNotAllowed",
                          "Content stream is not allowed on an already completed streamed message")
        if stream["cancelled"]:
            return refuse(403, "ContentStreamNotAllowed", "Content stream was cancelled by user.")
        now = time.monotonic()
        if now - stream["started"] > self.stream_max_s:
            return refuse(403, "ContentStreamNotAllowed", "Content stream finished due to exceeded streaming time.")
        if now - stream["last"] < self.stream_min_gap_s:
            return refuse(429, "TooManyRequests", "API calls quota exceeded", **{"Retry-After": "1"})
        if kind == "final":
            if sequence is not None:
                return refuse(400, "BadRequest", "The final streaming activity must not have a streamSequence")
            if not text:
                return refuse(400, "BadRequest", "Final streaming activities should include text")
            stream["final"], stream["last"] = body, now
            return web.json_response({}, status=202)
        if body.get("attachments"):
            return refuse(400, "BadRequest", "Attachments are allowed only in the final streaming message")
        if not isinstance(sequence, int) or sequence <= stream["sequence"]:
            stream["dropped"] += 1
            return web.json_response({"error": {"code": "ContentStreamSequenceOrderPreConditionFailed", "message":
                                                "PreCondition failed exception when processing streaming activity."}},
                                     status=202)
        if not text or not text.startswith(stream["texts"][-1]):
            return refuse(400, "BadRequest", "A streaming update must contain the content streamed before it")
        stream["texts"].append(text)
        stream["sequence"], stream["last"] = sequence, now
        return web.json_response({}, status=202)

    def member(self, user: str, name: str) -> None:
        """A person in the tenant's conversations, as the connector describes a member (TeamsChannelAccount)."""
        self.members[user] = {"id": f"29:{user}", "name": name, "aadObjectId": user, "givenName": name.split()[0],
                              "surname": name.split()[-1], "email": f"{user}@contoso.example",
                              "userPrincipalName": f"{user}@contoso.example", "tenantId": TENANT, "userRole": "user"}

    async def _member(self, request: web.Request) -> web.Response:
        """`GET v3/conversations/{id}/members/{memberId}`: by Entra object id or the 29: id; 404 when the
        conversation has no such member."""
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer bot-token-"):
            return web.json_response({"error": {"code": "Unauthorized"}}, status=401)
        self.calls.append(Call(request.method, request.path, {}, auth))
        wanted = request.match_info["member"]
        found = self.members.get(wanted) or next((m for m in self.members.values() if m["id"] == wanted), None)
        if found is None:
            return web.json_response({"error": {"code": "MemberNotFoundInConversation",
                                                "message": "The member was not found in the conversation."}},
                                     status=404)
        return web.json_response(found)

    async def wait_for(self, predicate: Callable[[list[Call]], Any], *, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            found = predicate(self.calls)
            if found:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"not seen in {timeout} s; calls: {[(c.method, c.path) for c in self.calls]}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 0.1)
            except TimeoutError:
                pass

    # -- activities --

    def message(self, text: str, *, conversation: str = "19:chan@thread.tacv2", kind: str = "channel",
                user: str = "aad-user-1", mention: bool = True, activity_id: str | None = None,
                thread: str | None = None, name: str = "Ada", team: str = "19:team") -> dict[str, Any]:
        """A message activity as Teams sends it. In a channel, the conversation id names the root post
        of the reply chain (`;messageid=ROOT`): `thread`, or the message itself for a new post."""
        activity_id = activity_id or f"act-{uuid.uuid4().hex[:8]}"
        if kind == "personal":
            self.personal.add(conversation)
        conversation_id = f"{conversation};messageid={thread or activity_id}" if kind == "channel" else conversation
        body: dict[str, Any] = {
            "type": "message", "id": activity_id, "channelId": "msteams",
            "serviceUrl": self.service_url, "timestamp": "2026-12-01T21:00:00.000Z",
            "from": {"id": f"29:{user}", "aadObjectId": user, "name": name},
            "recipient": {"id": f"28:{APP_ID}", "name": "oz0"},
            "conversation": {"id": conversation_id, "conversationType": kind, "tenantId": TENANT},
            "channelData": {"tenant": {"id": TENANT}, **({"channel": {"id": conversation}, "team": {"id": team}}
                                                          if kind == "channel" else {})},
            "text": (f"<at>oz0</at> {text}" if mention else text), "textFormat": "plain",
        }
        if mention:
            body["entities"] = [{"type": "mention", "text": "<at>oz0</at>",
                                 "mentioned": {"id": f"28:{APP_ID}", "name": "oz0"}}]
        return body

    def invoke(self, data: dict[str, Any], *, conversation: str = "19:chan@thread.tacv2", user: str = "aad-user-1",
               verb: str | None = None) -> dict[str, Any]:
        body = self.message("", conversation=conversation, user=user, mention=False)
        body.update({"type": "invoke", "name": "adaptiveCard/action", "text": None,
                     "value": {"action": {"type": "Action.Execute", "verb": verb or data.get("id"), "data": data},
                               "trigger": "manual"}})
        body["replyToId"] = "1:1"
        return body


def cards(call: Call) -> dict[str, Any]:
    """The Adaptive Card a connector call carried."""
    return call.body["attachments"][0]["content"]


def runs_text(card: dict[str, Any]) -> str:
    out: list[str] = []
    stack: list[Any] = [card]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            if node.get("type") == "TextRun":
                out.append(node["text"])
            if "title" in node and "value" in node and "type" not in node:   # a FactSet's fact
                out.append(f"{node['title']}: {node['value']}\n")
            stack[0:0] = list(node.values())
        elif isinstance(node, list):
            stack[0:0] = node
    return "".join(out)


__all__ = ["APP_ID", "SECRET", "TENANT", "Call", "TeamsStandIn", "cards", "json", "runs_text"]
