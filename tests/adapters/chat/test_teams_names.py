"""People by name on Teams: the sender's `from.name` kept from every activity, anyone else asked of the
connector (`GET v3/conversations/{id}/members/{memberId}`) in a conversation of their tenant, both cached
an hour by the shared names cache (adapters.chat.names)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
from ask_plugin import install_ask_plugin
from teams_harness import home, run, running_channel  # noqa: F401 (home is a fixture)
from teams_standin import TENANT, TeamsStandIn, cards, runs_text

from oz0.adapters.chat.names import Names
from oz0.adapters.chat.teams_auth import TokenSource
from oz0.adapters.chat.teams_settings import TeamsSettings
from oz0.adapters.chat.teams_wire import Reply, TeamsWire


def member_calls(standin: TeamsStandIn) -> list[str]:
    return [c.path.rsplit("/", 1)[1] for c in standin.calls if c.method == "GET" and "/members/" in c.path]


def test_names_come_from_the_activity_or_the_connector_and_are_kept_an_hour() -> None:
    async def scenario() -> None:
        standin = await TeamsStandIn().start()
        try:
            async with aiohttp.ClientSession() as session:
                wire = TeamsWire(TokenSource(TeamsSettings.from_env(standin.env()), session), public_url=None)
                names = Names("teams", wire.display_name, ttl_s=0.3)
                assert await names.of("teams:aad-user-2", workspace=TENANT) == "@aad-user-2"   # no conversation yet
                assert member_calls(standin) == []
                wire.seen(Reply(service_url=standin.service_url, conversation="19:chan@thread.tacv2;messageid=1",
                                activity="1", user="aad-user-1", channel="19:chan@thread.tacv2", tenant=TENANT,
                                kind="channel"))
                standin.member("aad-user-3", "Bo Chen")
                assert await names.of("teams:aad-user-3", workspace=TENANT) == "Bo Chen"
                assert await names.of("teams:aad-user-3", workspace=TENANT) == "Bo Chen"
                assert member_calls(standin) == ["aad-user-3"]                             # once, then cached
                assert await names.of("teams:aad-gone", workspace=TENANT) == "@aad-gone"   # 404: not a member
                names.heard("aad-user-1", "Ada <at>Lovelace</at>", workspace=TENANT)
                assert await names.of("teams:aad-user-1", workspace=TENANT) == "Ada <at>Lovelace</at>"
                assert member_calls(standin) == ["aad-user-3", "aad-gone"]                # from.name: no call
                [path] = [c.path for c in standin.calls if c.path.endswith("/aad-user-3")]
                assert path == "/connector/v3/conversations/19:chan@thread.tacv2;messageid=1/members/aad-user-3"
                await asyncio.sleep(0.35)
                assert await names.of("teams:aad-user-3", workspace=TENANT) == "Bo Chen"
                assert member_calls(standin) == ["aad-user-3", "aad-gone", "aad-user-3"]  # asked again past the TTL
                await wire.close()
        finally:
            await standin.close()
    run(scenario())


def test_the_answered_question_names_the_clicker_by_the_name_teams_sent(home: Path) -> None:
    async def scenario() -> None:
        async with running_channel(home, before_serve=lambda rt: install_ask_plugin(rt, home.parent / "ask-plugin")) as h:
            ask = h.standin.message("approve bool")
            await h.post(ask)
            found = await h.standin.wait_for(lambda calls: [c for c in calls if c.method == "POST"
                                                             and "Merge" in runs_text(cards(c))])
            yes = cards(found[0])["actions"][0]
            click = h.standin.invoke(yes["data"])
            click["from"]["name"] = "Ada Lima"          # the name Teams sends with the click itself
            status, body = await h.post(click)
            assert status == 200, body

            def answered(calls: list[Any]) -> list[str]:
                return [t for c in calls if c.method == "PUT" and "— by " in (t := runs_text(cards(c)))]
            [title] = (await h.standin.wait_for(answered))[:1]
            assert "Yes — by Ada Lima at" in title
            assert member_calls(h.standin) == []
    run(scenario())
