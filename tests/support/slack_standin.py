"""A loopback stand-in for the Slack cloud, for tests and the ack benchmark.

`SlackStandIn` is a real aiohttp server on 127.0.0.1 that answers the Web API methods the Slack
channel uses the way Slack does (`{"ok": true, ...}` or `{"ok": false, "error": ...}` with HTTP 200,
429 with `Retry-After` when told to), the file upload URLs that `files.getUploadURLExternal` hands
out, `response_url`s, and a Socket Mode WebSocket. It records every call so tests can assert on the
exact wire traffic. Block Kit payloads are checked with slack_sdk's own models, as Slack would refuse
them (`invalid_blocks`).

`signed_headers`, `slash_command_body`, `mention_event_body` and `block_action_body` build what Slack
sends to an app: signed with the v0 HMAC scheme that `slack_sdk.signature.SignatureVerifier` checks.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web
from slack_sdk.models.blocks import Block
from slack_sdk.signature import SignatureVerifier

__all__ = [
    "BOT_USER",
    "TEAM",
    "Call",
    "SlackStandIn",
    "block_action_body",
    "mention_event_body",
    "signed_headers",
    "slash_command_body",
    "thread_message_body",
    "view_submission_body",
]

TEAM = "T0OZ0TEST"
BOT_USER = "U0BOT"
BOT_TOKEN = "xoxb-test-token"
APP_TOKEN = "xapp-test-token"
SIGNING_SECRET = "test-signing-secret"
MAX_BLOCKS = 50
MAX_MARKDOWN = 12_000   # markdown_text of one chat.*Stream call


@dataclass
class Call:
    """One request the stand-in received: `method` is the Web API method, 'upload', 'response' or 'ws.ack'."""

    method: str
    args: dict[str, Any]
    at: float
    headers: dict[str, str] = field(default_factory=dict)
    path: str = ""
    body: bytes = b""
    status: int = 200


class SlackStandIn:
    """Run with `async with SlackStandIn() as slack:`; `slack.api_url` is the SLACK_API_URL to use."""

    def __init__(self, *, usergroups: dict[str, list[str]] | None = None,
                 people: dict[str, dict[str, str]] | None = None) -> None:
        self.calls: list[Call] = []
        self.usergroups = dict(usergroups or {})
        # users.info: user id -> {"name", "real_name", "display_name"}; any other id is user_not_found
        self.assistant_threads: set[tuple[str, str]] = set()
        self.people = dict(people or {"U0ASKER": {"name": "ana", "real_name": "Ana Lima", "display_name": "Ana Lima"}})
        self.rate_limit_once: dict[str, int] = {}   # method -> Retry-After seconds, for the next call only
        self.fail_once: dict[str, str] = {}          # method -> Slack error code, for the next call only
        self.socket_envelopes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.socket_acks: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.changed = asyncio.Condition()
        # chat.startStream's messages: ts -> {"channel", "thread_ts", "text", "streaming", "blocks"}
        self.streams: dict[str, dict[str, Any]] = {}
        self.stream_min_gap_s: float | None = None   # calls on one stream closer than this: 429 (a test's limit)
        self._stream_last: dict[str, float] = {}
        self.deleted: list[tuple[str, str]] = []
        self._ts = itertools.count(1)
        self._files = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.base = ""

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def response_url(self, name: str) -> str:
        return f"{self.base}/response/{name}"

    async def __aenter__(self) -> SlackStandIn:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_post("/response/{name}", self._response)
        app.router.add_get("/socket", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- what tests read --------------------------------------------------------------------

    def of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def methods(self) -> list[str]:
        return [c.method for c in self.calls]

    async def wait_for(self, method: str, count: int = 1, *, timeout: float = 10.0) -> list[Call]:
        """Wait until `count` calls of `method` arrived (a test that waits forever is a failure)."""
        async def enough() -> list[Call]:
            async with self.changed:
                await self.changed.wait_for(lambda: len(self.of(method)) >= count)
            return self.of(method)
        try:
            return await asyncio.wait_for(enough(), timeout)
        except TimeoutError:
            raise AssertionError(f"expected {count} {method} call(s) within {timeout}s; got {self.methods()}") from None

    # ---- the wire ---------------------------------------------------------------------------

    async def _record(self, call: Call) -> None:
        async with self.changed:
            self.calls.append(call)
            self.changed.notify_all()

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = await request.read()
        args = _args(request, body)
        call = Call(method, args, time.monotonic(), dict(request.headers), request.path, body)
        if method in self.rate_limit_once:
            call.status = 429
            retry_after = self.rate_limit_once.pop(method)
            await self._record(call)
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": str(retry_after)})
        await self._record(call)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or args.get("token", "")
        expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token != expected:
            return _error("invalid_auth" if token else "not_authed")
        if method in self.fail_once:
            return _error(self.fail_once.pop(method))
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return _error("unknown_method")
        return await handler(args)

    async def _upload(self, request: web.Request) -> web.Response:
        body = await request.read()
        await self._record(Call("upload", {"file_id": request.match_info["file_id"]}, time.monotonic(),
                                dict(request.headers), request.path, body))
        return web.Response(text=f"OK - {len(body)}")

    async def _response(self, request: web.Request) -> web.Response:
        body = await request.read()
        args = json.loads(body or b"{}")
        await self._record(Call("response", args, time.monotonic(), dict(request.headers), request.path, body))
        if "blocks" in args:
            problem = _blocks_problem(args["blocks"])
            if problem:
                return web.Response(status=400, text="invalid_blocks")
        return web.Response(text="ok")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        await ws.send_json({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0OZ0"},
                            "debug_info": {"host": "standin"}})

        async def pump() -> None:
            while not ws.closed:
                envelope = await self.socket_envelopes.get()
                await ws.send_json(envelope)

        sender = asyncio.create_task(pump())
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    data = json.loads(msg.data)
                    await self._record(Call("ws.ack", data, time.monotonic()))
                    await self.socket_acks.put(data)
        finally:
            sender.cancel()
        return ws

    # ---- Web API methods --------------------------------------------------------------------

    def _next_ts(self) -> str:
        n = next(self._ts)
        return f"{1700000000 + n}.{n:06d}"

    async def _m_auth_test(self, args: dict[str, Any]) -> web.Response:
        return _ok(url="https://oz0-test.slack.com/", team="oz0 test", user="oz0", team_id=TEAM,
                   user_id=BOT_USER, bot_id="B0BOT", is_enterprise_install=False)

    async def _m_apps_connections_open(self, args: dict[str, Any]) -> web.Response:
        return _ok(url=self.base.replace("http://", "ws://") + "/socket")

    async def _message(self, args: dict[str, Any], *, need_ts: bool = False) -> str | None:
        if not args.get("channel"):
            return "channel_not_found"
        if need_ts and not args.get("ts"):
            return "message_not_found"
        if not args.get("text") and not args.get("blocks"):
            return "no_text"
        if "blocks" in args:
            return _blocks_problem(args["blocks"])
        return None

    async def _m_chat_postMessage(self, args: dict[str, Any]) -> web.Response:
        problem = await self._message(args)
        if problem:
            return _error(problem)
        ts = self._next_ts()
        message = {"type": "message", "user": BOT_USER, "text": args.get("text", ""), "ts": ts}
        if args.get("thread_ts"):
            message["thread_ts"] = args["thread_ts"]
        return _ok(channel=args["channel"], ts=ts, message=message)

    async def _m_chat_update(self, args: dict[str, Any]) -> web.Response:
        problem = await self._message(args, need_ts=True)
        if problem:
            return _error(problem)
        return _ok(channel=args["channel"], ts=args["ts"], text=args.get("text", ""))

    async def _m_chat_delete(self, args: dict[str, Any]) -> web.Response:
        if not args.get("channel"):
            return _error("channel_not_found")
        if not args.get("ts") or (args["channel"], args["ts"]) in self.deleted:
            return _error("message_not_found")
        self.deleted.append((args["channel"], args["ts"]))
        return _ok(channel=args["channel"], ts=args["ts"])

    # chat.startStream / appendStream / stopStream, as docs.slack.dev describes them: markdown_text of at
    # most 12,000 characters a call, a stream in a channel names its recipient, calls on a stopped stream
    # are refused (message_not_in_streaming_state), and stopStream may end it with blocks.

    def _stream_problem(self, args: dict[str, Any], *, start: bool = False) -> str | None:
        if not args.get("channel"):
            return "channel_not_found"
        if len(str(args.get("markdown_text") or "")) > MAX_MARKDOWN:
            return "msg_too_long"
        if "blocks" in args:
            problem = _blocks_problem(args["blocks"])
            if problem:
                return problem
        if start:
            if not args.get("thread_ts"):
                return "invalid_arguments"
            if args["channel"][:1] in "CG" and not (args.get("recipient_user_id") and args.get("recipient_team_id")):
                return "invalid_arguments"   # streaming into a channel names who receives it
            return None
        stream = self.streams.get(str(args.get("ts")))
        if stream is None or stream["channel"] != args["channel"]:
            return "message_not_found"
        if not stream["streaming"]:
            return "message_not_in_streaming_state"
        return None

    def _chunks(self, args: dict[str, Any]) -> tuple[str, list[dict[str, Any]]] | str:
        """The text and the task updates of a call's `chunks` (markdown_text, task_update, plan_update,
        blocks, as docs.slack.dev lists them), or the error Slack answers a malformed one with."""
        text, tasks = "", []
        for chunk in args.get("chunks") or ():
            kind = chunk.get("type") if isinstance(chunk, dict) else None
            if kind == "markdown_text" and isinstance(chunk.get("text"), str):
                text += chunk["text"]
            elif kind == "task_update" and chunk.get("id") and chunk.get("title") \
                    and chunk.get("status") in ("pending", "in_progress", "complete", "error"):
                tasks.append(chunk)
            elif kind not in ("plan_update", "blocks"):
                return "invalid_chunks"
        if len(text) > MAX_MARKDOWN:
            return "msg_too_long"
        return text, tasks

    def _take_chunks(self, ts: str, args: dict[str, Any]) -> str | None:
        taken = self._chunks(args)
        if isinstance(taken, str):
            return taken
        text, tasks = taken
        stream = self.streams[ts]
        stream["text"] += text
        for task in tasks:
            stream.setdefault("tasks", {})[task["id"]] = (task["title"], task["status"])
        return None

    def _stream_too_fast(self, ts: str) -> bool:
        now = time.monotonic()
        last = self._stream_last.get(ts)
        self._stream_last[ts] = now
        return self.stream_min_gap_s is not None and last is not None and now - last < self.stream_min_gap_s

    async def _m_chat_startStream(self, args: dict[str, Any]) -> web.Response:
        problem = self._stream_problem(args, start=True)
        if problem:
            return _error(problem)
        ts = self._next_ts()
        self.streams[ts] = {"channel": args["channel"], "thread_ts": args["thread_ts"],
                            "text": str(args.get("markdown_text") or ""), "streaming": True, "blocks": None}
        self._stream_last[ts] = time.monotonic()
        return _ok(channel=args["channel"], ts=ts)

    async def _m_chat_appendStream(self, args: dict[str, Any]) -> web.Response:
        if not args.get("markdown_text") and not args.get("chunks"):
            return _error("invalid_arguments")
        problem = self._stream_problem(args)
        if problem:
            return _error(problem)
        if self._stream_too_fast(args["ts"]):
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": "1"})
        problem = self._take_chunks(args["ts"], args)
        if problem:
            return _error(problem)
        self.streams[args["ts"]]["text"] += str(args.get("markdown_text") or "")
        return _ok(channel=args["channel"], ts=args["ts"])

    async def _m_chat_stopStream(self, args: dict[str, Any]) -> web.Response:
        problem = self._stream_problem(args)
        if problem:
            return _error(problem)
        if self._stream_too_fast(args["ts"]):
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": "1"})
        problem = self._take_chunks(args["ts"], args)
        if problem:
            return _error(problem)
        stream = self.streams[args["ts"]]
        stream["text"] += str(args.get("markdown_text") or "")
        stream["streaming"], stream["blocks"] = False, args.get("blocks")
        return _ok(channel=args["channel"], ts=args["ts"], message={"ts": args["ts"], "text": stream["text"]})

    async def _m_chat_postEphemeral(self, args: dict[str, Any]) -> web.Response:
        if not args.get("user"):
            return _error("user_not_found")
        problem = await self._message(args)
        if problem:
            return _error(problem)
        return _ok(message_ts=self._next_ts())

    # assistant.threads.*: only in a direct message's thread the assistant pane started
    # (`assistant_threads`: (channel, thread_ts) pairs); elsewhere Slack answers invalid_thread_ts
    def _assistant_problem(self, args: dict[str, Any]) -> str | None:
        if not args.get("channel_id") or not args.get("thread_ts"):
            return "invalid_arguments"
        if (args["channel_id"], args["thread_ts"]) not in self.assistant_threads:
            return "invalid_thread_ts"
        return None

    async def _m_assistant_threads_setStatus(self, args: dict[str, Any]) -> web.Response:
        problem = self._assistant_problem(args) or (None if isinstance(args.get("status"), str) else "invalid_arguments")
        return _error(problem) if problem else _ok()

    async def _m_assistant_threads_setTitle(self, args: dict[str, Any]) -> web.Response:
        problem = self._assistant_problem(args) or (None if args.get("title") else "invalid_arguments")
        return _error(problem) if problem else _ok()

    async def _m_assistant_threads_setSuggestedPrompts(self, args: dict[str, Any]) -> web.Response:
        prompts = args.get("prompts")
        if isinstance(prompts, str):
            prompts = json.loads(prompts)
        well_formed = (isinstance(prompts, list) and 1 <= len(prompts) <= 4
                       and all(isinstance(p, dict) and p.get("title") and p.get("message") for p in prompts))
        problem = self._assistant_problem(args) or (None if well_formed else "invalid_arguments")
        return _error(problem) if problem else _ok()

    async def _m_users_info(self, args: dict[str, Any]) -> web.Response:
        """users.info as Slack answers it: the profile's display_name may be "" (then people see real_name)."""
        person = self.people.get(str(args.get("user", "")))
        if person is None:
            return _error("user_not_found")
        return _ok(user={"id": args["user"], "team_id": TEAM, "name": person.get("name", ""), "deleted": False,
                         "real_name": person.get("real_name", ""), "is_bot": False,
                         "profile": {"display_name": person.get("display_name", ""),
                                     "real_name": person.get("real_name", "")}})

    async def _m_conversations_open(self, args: dict[str, Any]) -> web.Response:
        users = str(args.get("users", ""))
        if not users:
            return _error("users_list_not_supplied")
        return _ok(channel={"id": "D" + users.split(",")[0].lstrip("U")})

    async def _m_files_getUploadURLExternal(self, args: dict[str, Any]) -> web.Response:
        if not args.get("filename") or not str(args.get("length", "")).isdigit():
            return _error("invalid_arguments")
        file_id = f"F{next(self._files):07d}"
        return _ok(upload_url=f"{self.base}/upload/{file_id}", file_id=file_id)

    async def _m_files_completeUploadExternal(self, args: dict[str, Any]) -> web.Response:
        files = args.get("files")
        if isinstance(files, str):
            files = json.loads(files)
        if not files:
            return _error("invalid_arguments")
        return _ok(files=[{"id": f["id"], "title": f.get("title", ""), "name": f.get("title", "")} for f in files])

    async def _m_views_open(self, args: dict[str, Any]) -> web.Response:
        if not args.get("trigger_id"):
            return _error("invalid_trigger_id")
        view = args.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not isinstance(view, dict) or view.get("type") != "modal" or _view_problem(view):
            return _error("invalid_arguments")
        return _ok(view={**view, "id": f"V{next(self._files):07d}"})

    async def _m_usergroups_users_list(self, args: dict[str, Any]) -> web.Response:
        group = args.get("usergroup")
        if group not in self.usergroups:
            return _error("no_such_subteam")
        return _ok(users=self.usergroups[group])


def _ok(**fields: Any) -> web.Response:
    return web.json_response({"ok": True, **fields})


def _error(code: str) -> web.Response:
    return web.json_response({"ok": False, "error": code})


def _args(request: web.Request, body: bytes) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query)
    ctype = request.headers.get("Content-Type", "")
    if ctype.startswith("application/json"):
        args.update(json.loads(body or b"{}"))
    elif ctype.startswith("application/x-www-form-urlencoded"):
        args.update(dict(urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True)))
    elif ctype.startswith("multipart/form-data"):
        args["_multipart"] = True
    for key in ("blocks", "attachments"):
        if isinstance(args.get(key), str):
            args[key] = json.loads(args[key])
    return args


def _blocks_problem(blocks: Any) -> str | None:
    """What Slack would say about these blocks, using slack_sdk's own validation; None when fine."""
    if not isinstance(blocks, list) or len(blocks) > MAX_BLOCKS:
        return "invalid_blocks"
    try:
        for raw in blocks:
            block = Block.parse(raw)
            if block is None:
                return "invalid_blocks"
            block.validate_json()
    except Exception:  # slack_sdk raises SlackObjectFormationError (and KeyError on broken input)
        return "invalid_blocks"
    return None


def _view_problem(view: dict[str, Any]) -> str | None:
    """What Slack would say about a modal, using slack_sdk's View model; None when fine."""
    from slack_sdk.models.views import View

    try:
        View(**view).validate_json()
    except Exception:  # slack_sdk raises SlackObjectFormationError (and TypeError on unknown fields)
        return "invalid_arguments"
    return _blocks_problem(view.get("blocks"))


# ---- what Slack sends to the app -------------------------------------------------------------

def signed_headers(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None,
                   content_type: str = "application/x-www-form-urlencoded", retry_num: int | None = None
                   ) -> dict[str, str]:
    """Headers Slack sends with `body`: the v0 signature (HMAC-SHA256 of 'v0:ts:body') and timestamp."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier(secret).generate_signature(timestamp=ts, body=body),
    }
    if retry_num is not None:
        headers["X-Slack-Retry-Num"] = str(retry_num)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    return headers


def slash_command_body(text: str, *, response_url: str, user: str = "U0ASKER", channel: str = "C0GENERAL",
                       trigger_id: str = "1337.42.abcdef", team: str = TEAM, command: str = "/ask") -> str:
    return urllib.parse.urlencode({
        "token": "deprecated-verification-token", "team_id": team, "team_domain": "oz0-test",
        "channel_id": channel, "channel_name": "general", "user_id": user, "user_name": "asker",
        "command": command, "text": text, "api_app_id": "A0OZ0", "is_enterprise_install": "false",
        "response_url": response_url, "trigger_id": trigger_id,
    })


def mention_event_body(text: str, *, event_id: str = "Ev0001", user: str = "U0ASKER",
                       channel: str = "C0GENERAL", ts: str = "1700000000.000100", thread_ts: str | None = None,
                       team: str = TEAM) -> str:
    event: dict[str, Any] = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER}> {text}", "ts": ts,
                             "channel": channel, "event_ts": ts, "team": team}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return json.dumps({
        "token": "deprecated-verification-token", "team_id": team, "api_app_id": "A0OZ0", "event": event,
        "type": "event_callback", "event_id": event_id, "event_time": int(float(ts)),
        "authorizations": [{"team_id": team, "user_id": BOT_USER, "is_bot": True, "is_enterprise_install": False}],
        "is_ext_shared_channel": False,
    })


def thread_message_body(text: str, *, event_id: str, thread_ts: str, ts: str, user: str = "U0ASKER",
                        channel: str = "C0GENERAL", **extra: Any) -> str:
    """A `message` event in a thread, without a mention (a follow-up in a conversation)."""
    event = {"type": "message", "user": user, "text": text, "ts": ts, "thread_ts": thread_ts, "channel": channel,
             "channel_type": "channel", "event_ts": ts, "team": TEAM, **extra}
    return json.dumps({"token": "x", "team_id": TEAM, "api_app_id": "A0OZ0", "event": event, "type": "event_callback",
                       "event_id": event_id, "event_time": int(float(ts)),
                       "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]})


def block_action_body(*, action_id: str, value: str, response_url: str, user: str = "U0ASKER",
                      channel: str = "C0GENERAL", team: str = TEAM, block_id: str = "oz0_share",
                      trigger_id: str = "2000.42.share") -> str:
    payload = {
        "type": "block_actions", "user": {"id": user, "team_id": team}, "api_app_id": "A0OZ0",
        "team": {"id": team}, "channel": {"id": channel}, "container": {"type": "message", "is_ephemeral": True},
        "trigger_id": trigger_id, "response_url": response_url,
        "actions": [{"type": "button", "action_id": action_id, "block_id": block_id, "value": value,
                     "action_ts": str(time.time())}],
    }
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


def view_submission_body(view: dict[str, Any], values: dict[str, Any], *, user: str = "U0ASKER",
                         team: str = TEAM) -> str:
    """The submit of a modal the app opened: its callback_id and private_metadata come back, and
    `values` as `view.state.values` ({block_id: {action_id: {"type": ..., ...}}})."""
    payload = {
        "type": "view_submission", "user": {"id": user, "team_id": team}, "api_app_id": "A0OZ0",
        "team": {"id": team}, "trigger_id": "3000.42.submit",
        "view": {"id": "V0000001", "type": "modal", "callback_id": view["callback_id"],
                 "private_metadata": view.get("private_metadata", ""), "blocks": view.get("blocks", []),
                 "state": {"values": values}, "hash": "1.abc"},
    }
    return urllib.parse.urlencode({"payload": json.dumps(payload)})
