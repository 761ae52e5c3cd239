"""The Teams channel end to end: signed activities into the real endpoint (`oz0 serve`'s Teams module),
replies and updates out to the loopback connector, the bot's token from the loopback token endpoint,
and what is refused before anything runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from renderer_oracles import check_teams
from teams_harness import home, run, running_channel  # noqa: F401 (home is a fixture)
from teams_standin import cards, runs_text

from oz0.adapters.chat.flow import PROGRESS_EVERY_S
from oz0.renderers import Rendered


def updates(h: Any, message: str) -> list[Any]:
    return [c for c in h.standin.calls if c.method == "PUT" and c.path.endswith("/activities/" + message)]


async def answered(h: Any, activity: dict[str, Any], text: str) -> tuple[Any, Any]:
    """The working reply to `activity` and the update that put `text` in it."""
    replies = await h.standin.wait_for(lambda calls: [c for c in calls if c.method == "POST"
                                                       and c.path.endswith("/activities/" + activity["id"])])
    reply = replies[-1]
    message = "1:1"                        # the stand-in numbers the messages it accepted
    [final] = (await h.standin.wait_for(lambda calls: [c for c in updates(h, message)
                                                        if text in runs_text(cards(c))]))[-1:]
    return reply, final


def test_a_mention_is_answered_with_a_working_reply_updated_into_the_card(home):
    async def scenario():
        async with running_channel(home) as h:
            ask = h.standin.message("echo hello <at>Ada</at> **there** [x](https://evil.example)")
            status, _ = await h.post(ask)
            assert status == 200
            reply, final = await answered(h, ask, "echo: hello")
            assert "Working on echo" in runs_text(cards(reply))
            assert reply.auth == "Bearer bot-token-1"                  # the token endpoint's token
            check_teams(Rendered({k: final.body[k] for k in ("type", "summary", "attachments")}))
            shown = runs_text(cards(final))
            assert "echo: hello Ada there" in shown and "x (https://evil.example)" in shown   # the real URL shown
            assert "entities" not in final.body                        # no mention is ever live
            assert h.runs() == ["hello Ada **there** [x](https://evil.example)"]   # the bot's mention removed
            assert h.standin.tokens_issued == 1
    run(scenario())


def test_help_in_a_personal_chat_needs_no_mention(home):
    async def scenario():
        async with running_channel(home) as h:
            ask = h.standin.message("help", conversation="a:personal-chat", kind="personal", mention=False)
            assert (await h.post(ask))[0] == 200
            [said] = await h.standin.wait_for(lambda calls: [c for c in calls if c.path.endswith(ask["id"])])
            shown = runs_text(cards(said))
            assert "echo" in shown and "deploys" in shown and "@oz0 echo hello there" in shown
    run(scenario())


@pytest.mark.parametrize("why,token", [
    ("missing", None),
    ("garbage", "not-a-jwt"),
    ("expired", "expired"),
    ("wrong audience", "audience"),
    ("foreign key", "key"),
    ("wrong issuer", "issuer"),
    ("another serviceUrl", "service"),
])
def test_a_bad_token_is_401_and_runs_nothing(home, why, token):
    async def scenario():
        async with running_channel(home) as h:
            s = h.standin
            tokens = {"expired": lambda: s.activity_token(expires_in=-400),
                      "audience": lambda: s.activity_token(audience="someone-else"),
                      "key": lambda: s.activity_token(key=s.other_key),
                      "issuer": lambda: s.activity_token(issuer="https://evil.example"),
                      "service": lambda: s.activity_token(service_url="https://evil.example/connector/")}
            value = tokens[token]() if token in tokens else token
            status, body = await h.post(s.message("echo nope"), token=value)
            assert (status, body) == (401, {"error": "unauthorized"}), why
            await asyncio.sleep(0.3)
            assert s.calls == [] and h.runs() == [] and s.tokens_issued == 0
    run(scenario())


def test_a_redelivered_activity_is_answered_once(home):
    async def scenario():
        async with running_channel(home) as h:
            ask = h.standin.message("echo once")
            assert (await h.post(ask))[0] == 200
            assert (await h.post(ask))[0] == 200
            await answered(h, ask, "echo: once")
            await asyncio.sleep(0.3)
            replies = [c for c in h.standin.calls if c.method == "POST"]
            assert len(replies) == 1 and h.runs() == ["once"]
    run(scenario())


def test_progress_updates_the_working_message_at_most_every_2_s(home):
    async def scenario():
        async with running_channel(home) as h:
            ask = h.standin.message("echo count 40 0.1")
            assert (await h.post(ask))[0] == 200
            _, final = await answered(h, ask, "echo: count 40 0.1")
            done = updates(h, "1:1")
            progress = [c for c in done if "item" in runs_text(cards(c))]
            assert len(progress) >= 1 and done[-1] is final
            at = [c.at for c in progress]
            assert all(b - a >= PROGRESS_EVERY_S - 0.05 for a, b in zip(at, at[1:])), at
            assert all(c.at < final.at for c in progress)
    run(scenario())


def test_a_429_from_the_connector_is_waited_out_and_the_card_still_arrives(home):
    async def scenario():
        async with running_channel(home) as h:
            h.standin.throttle(1, 0.5)
            ask = h.standin.message("echo slow down")
            assert (await h.post(ask))[0] == 200
            calls = await h.standin.wait_for(lambda calls: len([c for c in calls if c.method == "POST"]) >= 2 and calls)
            first, second = [c for c in calls if c.method == "POST"][:2]
            assert second.at - first.at >= 0.45                       # Retry-After: 0.5 honoured
            await answered(h, ask, "echo: slow down")
    run(scenario())


def test_an_unknown_agent_and_a_denied_one_are_refused_in_words(home):
    async def scenario():
        access = """\
            rules:
              - deny: [deploys]
                platform: teams
        """
        async with running_channel(home, access=access) as h:
            unknown = h.standin.message("nosuch x")
            await h.post(unknown)
            [said] = await h.standin.wait_for(lambda calls: [c for c in calls if c.path.endswith(unknown["id"])])
            assert "There is no agent 'nosuch'" in runs_text(cards(said))
            denied = h.standin.message('deploys {"service": "api"}')
            await h.post(denied)
            [said] = await h.standin.wait_for(lambda calls: [c for c in calls if c.path.endswith(denied["id"])])
            assert "not allowed" in runs_text(cards(said)).lower() or "denied" in runs_text(cards(said)).lower()
            assert h.runs() == []
    run(scenario())


def test_in_a_personal_chat_a_cut_card_offers_the_full_result_as_a_file_and_uploads_it_once_accepted(home):
    async def scenario():
        async with running_channel(home, env={"OZ0_PUBLIC_URL": "https://oz0.example.com"}) as h:
            ask = h.standin.message('deploys {"service": "api", "rows": 400}', conversation="a:personal", kind="personal",
                                    mention=False)
            assert (await h.post(ask))[0] == 200
            [consent] = await h.standin.wait_for(lambda calls: [
                c for c in calls if c.body.get("attachments", [{}])[0].get("contentType", "").endswith("file.consent")])
            offered = consent.body["attachments"][0]
            assert offered["name"] == "result.json" and offered["content"]["sizeInBytes"] > 10_000
            _, final = await answered(h, ask, "more rows, full result attached")
            shown = runs_text(cards(final))
            job = offered["content"]["acceptContext"]["job"]
            assert ("📎 Full result: result.json (application/json, " in shown and
                    f"), offered to you as a file below, and on the console: https://oz0.example.com/jobs/{job}"
                    in shown)
            invoke = h.standin.invoke({}, conversation="a:personal")
            invoke.update({"name": "fileConsent/invoke", "value": {
                "type": "fileUpload", "action": "accept", "context": offered["content"]["acceptContext"],
                "uploadInfo": {"name": "result.json", "uploadUrl": h.standin.base + "/upload/result.json",
                               "contentUrl": "https://contoso.sharepoint.example/result.json", "uniqueId": "u1",
                               "fileType": "json"}}})
            status, _ = await h.post(invoke)
            assert status == 200
            data, span = h.standin.uploaded["result.json"]
            rows = json.loads(data)
            assert len(rows) == 400 and span == f"bytes 0-{len(data) - 1}/{len(data)}"
            [info] = await h.standin.wait_for(lambda calls: [
                c for c in calls if c.body.get("attachments", [{}])[0].get("contentType", "").endswith("file.info")])
            assert info.body["attachments"][0]["contentUrl"] == "https://contoso.sharepoint.example/result.json"
    run(scenario())


def test_unreadable_signing_keys_are_503_and_run_nothing(home):
    async def scenario():
        from ports import free_port
        async with running_channel(home, env={"TEAMS_OPENID_METADATA_URL": f"http://127.0.0.1:{free_port()}/openid"}) as h:
            status, body = await h.post(h.standin.message("echo nope"))
            assert (status, body) == (503, {"error": "the signing keys are unavailable"})
            await asyncio.sleep(0.2)
            assert h.standin.calls == [] and h.runs() == []
    run(scenario())
