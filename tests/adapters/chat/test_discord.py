"""The Discord channel against a loopback Discord: a real discord.py client, gateway and HTTP API."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from discord_harness import CHANNEL, GUILD, ROLE, TOKEN, running_channel, texts, working_stop
from discord_standin import DiscordStandIn, snowflake

from oz0.adapters.chat import discord as discord_client
from oz0.edge.flows.engine import FLOW_ENGINE

DEFERRED_WITH_SOURCE = 5
DEFERRED_UPDATE = 6
AUTOCOMPLETE_RESULT = 8
MODAL = 9
MESSAGE_WITH_SOURCE = 4
EPHEMERAL = 1 << 6
COMPONENTS_V2 = 1 << 15


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.fixture
def home(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OZ0_TEST_RUNS", str(oz0_home.parent / "runs.txt"))
    return oz0_home



def buttons(components: list[dict[str, Any]], *, feedback: bool = False) -> list[dict[str, Any]]:
    """The buttons of a message, less its 👍 / 👎 (unless `feedback`)."""
    found: list[dict[str, Any]] = []
    stack = list(components)
    while stack:
        node = stack.pop()
        if node.get("type") == 2 and (feedback or not str(node.get("custom_id", "")).startswith("oz0_feedback:")):
            found.append(node)
        stack += node.get("components") or []
    return found


def count(components: list[dict[str, Any]]) -> int:
    return sum(1 + count(c.get("components") or []) + (1 if c.get("accessory") else 0) for c in components)


def assert_within_discord_limits(body: dict[str, Any]) -> None:
    """What Discord checks on a Components V2 message, and our own rule: no mention is ever parsed."""
    assert body["allowed_mentions"] == {"parse": []}
    assert body["flags"] & COMPONENTS_V2
    assert "content" not in body and "embeds" not in body
    assert count(body["components"]) <= 40
    displays: list[str] = []
    stack = list(body["components"])
    while stack:
        node = stack.pop()
        displays += [node["content"]] if node.get("type") == 10 else []
        stack += node.get("components") or []
    assert sum(len(t.encode("utf-16-le")) // 2 for t in displays) <= 4000


def test_ask_answers_at_once_with_the_working_message_then_edits_it_into_the_card(home):
    async def scenario():
        async with running_channel(home) as h:
            sync = h.standin.calls("PUT", f"/guilds/{GUILD}/commands")
            assert sync, "commands are synced to DISCORD_GUILD_IDS"
            names = {c["name"]: c for c in sync[0].body}
            assert set(names) == {"ask", "agents", discord_client.ASK_MESSAGE_COMMAND}
            assert [o["name"] for o in names["ask"]["options"]] == ["agent", "input"]
            assert names["ask"]["options"][0]["autocomplete"] is True
            assert names[discord_client.ASK_MESSAGE_COMMAND]["type"] == 3
            assert h.standin.identifies[0]["intents"] == 1 | 1 << 9  # guilds, guild messages: nothing privileged

            started = time.monotonic()
            ask = await h.send(h.standin.slash("ask", {"agent": "deploys", "input": '{"service": "api", "rows": 2}'},
                                               **h.where()))
            working = await h.callback(ask)
            assert time.monotonic() - started < 3
            stop = working_stop(working, "deploys")
            job = h.runtime.jobs(limit=1)[0]
            assert stop["custom_id"] == f"oz0_cancel:{job.id}"
            edit = await h.edit(ask)
            assert_within_discord_limits(edit.body)
            shown = texts(edit.body["components"])
            assert "deploys" in shown and "api" in shown
            share = buttons(edit.body["components"])
            assert [b["label"] for b in share] == ["Share in channel"]
            assert sorted(b["custom_id"] for b in buttons(edit.body["components"], feedback=True)
                          if b not in share) == [f"oz0_feedback:bad:{job.id}", f"oz0_feedback:good:{job.id}"]
            assert share[0]["custom_id"].startswith(discord_client.SHARE_PREFIX)
            assert [r.method for r in h.to(ask)] == ["POST", "PATCH"]
    run(scenario())


def component(h: Any, custom_id: str, message: dict[str, Any], **where: Any) -> dict[str, Any]:
    return h.standin.interaction(3, {"custom_id": custom_id, "component_type": 2}, message=message,
                                 **h.where(**where))


def test_autocomplete_answers_only_the_agents_this_user_may_run(home):
    access = f"""\
        rules:
          - allow: ["ops-*"]
            groups: ["{ROLE}"]
          - deny: ["ops-*"]
        """

    async def scenario():
        async with running_channel(home, access=access) as h:
            plain = await h.send(h.standin.slash("ask", {"agent": "", "input": ""}, focused="agent", **h.where()))
            answer = await h.callback(plain)
            assert answer.body["type"] == AUTOCOMPLETE_RESULT
            assert [c["value"] for c in answer.body["data"]["choices"]] == ["boom", "deploys", "echo"]
            assert answer.body["data"]["choices"][1]["name"] == "deploys - Lists recent deploys of a service"

            with_role = await h.send(h.standin.slash("ask", {"agent": "OPS", "input": ""}, focused="agent",
                                                     **h.where(roles=(ROLE,))))
            answer = await h.callback(with_role)
            assert [c["value"] for c in answer.body["data"]["choices"]] == ["ops-restart"]
            assert h.runtime.jobs() == []
    run(scenario())


def test_a_denied_ask_gets_an_ephemeral_explanation_and_an_audit_record(home):
    access = f"""\
        rules:
          - allow: ["ops-*"]
            groups: ["{ROLE}"]
          - deny: ["ops-*"]
        """

    async def scenario():
        async with running_channel(home, access=access) as h:
            ask = await h.send(h.standin.slash("ask", {"agent": "ops-restart", "input": "api"},
                                               **h.where(user_id="4242")))
            denial = await h.callback(ask)
            assert denial.body["type"] == MESSAGE_WITH_SOURCE
            data = denial.body["data"]
            assert data["flags"] == EPHEMERAL
            assert data["allowed_mentions"]["parse"] == []
            assert "You may not run 'ops-restart' here (rule 2 of the access rules)" in data["content"]
            await asyncio.sleep(0.2)
            assert [r.method for r in h.to(ask)] == ["POST"]   # no edit, no job
            assert h.runtime.jobs() == [] and h.runs() == []
            [record] = [a for a in h.runtime.audit_log() if a.action == "access.denied"]
            assert record.actor == "discord:4242"
            assert record.detail == {"platform": "discord", "agent": "ops-restart", "guild": GUILD,
                                     "channel": CHANNEL, "user": "4242", "roles": []}

            allowed = await h.send(h.standin.slash("ask", {"agent": "ops-restart", "input": "api"},
                                                   **h.where(roles=(ROLE,))))
            working_stop(await h.callback(allowed), "ops-restart")
            assert "echo: api" in texts((await h.edit(allowed)).body["components"])
    run(scenario())


def test_the_same_interaction_delivered_twice_runs_once_and_is_answered_once(home):
    async def scenario():
        async with running_channel(home) as h:
            ask = h.standin.slash("ask", {"agent": "echo", "input": "only once"}, **h.where())
            await h.send(ask)
            await h.edit(ask)
            await h.send(ask)  # a gateway resume replays the event
            await asyncio.sleep(0.5)
            assert [r.method for r in h.to(ask)] == ["POST", "PATCH"]
            assert h.runs() == ["only once"]
            [job] = h.runtime.jobs()
            assert job.dedupe_key == f"discord:interaction:{ask['id']}"
    run(scenario())


def test_agents_lists_what_this_user_may_run_with_input_contracts(home):
    async def scenario():
        async with running_channel(home, access="rules:\n  - deny: [boom]\n") as h:
            cmd = await h.send(h.standin.slash("agents", {}, **h.where()))
            assert (await h.callback(cmd)).body == {"type": DEFERRED_WITH_SOURCE, "data": {"flags": EPHEMERAL}}
            edit = await h.edit(cmd)
            assert_within_discord_limits(edit.body)
            shown = texts(edit.body["components"])
            assert "deploys" in shown and "echo" in shown and "ops-restart" in shown
            assert "boom" not in shown
            assert ('**deploys**: Lists recent deploys of a service · input: JSON {service: string, rows?: integer} '
                    '· e.g. /ask agent:deploys input:{"service":"api","rows":3}') in shown
    run(scenario())


def test_failures_are_failure_cards_never_a_traceback_or_a_secret(home):
    async def scenario():
        async with running_channel(home) as h:
            boom = await h.send(h.standin.slash("ask", {"agent": "boom", "input": "x"}, **h.where()))
            bad = await h.send(h.standin.slash("ask", {"agent": "deploys", "input": '{"rows": 2}'}, **h.where()))
            nojson = await h.send(h.standin.slash("ask", {"agent": "deploys", "input": "api please"}, **h.where()))
            for payload in (boom, bad, nojson):
                edit = await h.edit(payload)
                assert_within_discord_limits(edit.body)
                wire = json.dumps(edit.body)
                assert "Traceback" not in wire and 'File \\"' not in wire and TOKEN not in wire
                assert edit.body["components"][0]["accent_color"] == 0xC62828
            assert "service" in texts((await h.edit(bad)).body["components"])
            assert "required" in texts((await h.edit(bad)).body["components"])
            assert "not JSON" in texts((await h.edit(nojson)).body["components"])

            unknown = await h.send(h.standin.slash("ask", {"agent": "nope", "input": "x"}, **h.where()))
            answer = (await h.callback(unknown)).body
            assert answer["data"]["flags"] == EPHEMERAL
            assert answer["data"]["content"].startswith("There is no agent 'nope'. Agents you may run here: boom, ")
    run(scenario())


def test_share_posts_the_card_for_everyone_and_marks_the_private_copy(home):
    async def scenario():
        async with running_channel(home) as h:
            ask = await h.send(h.standin.slash("ask", {"agent": "echo", "input": "hello team"}, **h.where()))
            private = (await h.edit(ask)).body
            [button] = buttons(private["components"])
            message = h.standin.message_from(private, channel_id=CHANNEL)
            message["flags"] = private["flags"] | EPHEMERAL

            stranger = await h.send(component(h, button["custom_id"], message, user_id="666"))
            refused = (await h.callback(stranger)).body
            assert refused["data"]["content"] == "Only the person who asked can share this result."
            assert refused["data"]["flags"] == EPHEMERAL

            click = await h.send(component(h, button["custom_id"], message))
            assert (await h.callback(click)).body == {"type": DEFERRED_UPDATE}
            [posted] = await h.standin.wait_for(
                lambda r: r.method == "POST" and r.path == f"/webhooks/{h.standin.app_id}/{click['token']}")
            assert_within_discord_limits(posted.body)
            assert not posted.body["flags"] & EPHEMERAL
            assert "echo: hello team" in texts(posted.body["components"])
            assert buttons(posted.body["components"]) == []
            marked = (await h.edit(click)).body
            [done] = buttons(marked["components"])
            assert done["disabled"] is True and done["label"] == "Shared in channel"

            again = await h.send(component(h, button["custom_id"], message))
            assert (await h.callback(again)).body["data"]["content"] == "This result was already shared."
            assert h.runs() == ["hello team"]
    run(scenario())


def test_the_message_command_asks_about_the_message_text_through_a_modal(home):
    async def scenario():
        async with running_channel(home, access="rules:\n  - deny: [boom]\n") as h:
            target = h.standin.message_from({"content": "why is **api** slow? @everyone"}, channel_id=CHANNEL,
                                            author=h.standin.user("3000", "colleague"))
            cmd = await h.send(h.standin.message_command(discord_client.ASK_MESSAGE_COMMAND, target, **h.where()))
            modal = (await h.callback(cmd)).body
            assert modal["type"] == MODAL
            agent_label, input_label = modal["data"]["components"]
            picker = agent_label["component"]
            assert picker["custom_id"] == discord_client.AGENT_FIELD
            assert [o["value"] for o in picker["options"]] == ["deploys", "echo", "ops-restart"]
            assert input_label["component"]["value"] == "why is **api** slow? @everyone"

            submit = await h.send(h.standin.interaction(5, {"custom_id": modal["data"]["custom_id"], "components": [
                {"type": 18, "component": {"type": 3, "custom_id": discord_client.AGENT_FIELD, "values": ["echo"]}},
                {"type": 18, "component": {"type": 4, "custom_id": discord_client.INPUT_FIELD,
                                           "value": "why is api slow?"}},
            ]}, **h.where()))
            working_stop(await h.callback(submit), "echo")
            edit = await h.edit(submit)
            assert_within_discord_limits(edit.body)
            assert "echo: why is api slow?" in texts(edit.body["components"])
            assert h.runs() == ["why is api slow?"]
    run(scenario())


def test_a_job_that_outlives_the_interaction_token_posts_its_card_in_the_channel(home):
    async def scenario():
        async with running_channel(home, token_lifetime_s=1.0) as h:
            ask = await h.send(h.standin.slash("ask", {"agent": "echo", "input": "sleep 1.2"}, **h.where()))
            await h.callback(ask)
            [posted] = await h.standin.wait_for(lambda r: r.method == "POST" and r.path == f"/channels/{CHANNEL}/messages")
            assert_within_discord_limits(posted.body)
            assert "echo: sleep 1.2" in texts(posted.body["components"])
            assert buttons(posted.body["components"]) == []
            assert [r.method for r in h.to(ask)] == ["POST"]  # the expired token is never used
    run(scenario())


def test_a_result_over_discords_limits_is_cut_and_attached_whole(home):
    big = " ".join(f"word{i}" for i in range(1500))

    async def scenario():
        async with running_channel(home) as h:
            ask = await h.send(h.standin.slash("ask", {"agent": "echo", "input": big}, **h.where()))
            edit = await h.edit(ask)
            assert_within_discord_limits(edit.body)
            [(field, filename, data)] = edit.files
            assert field == "files[0]"
            assert edit.body["attachments"] == [{"id": 0, "filename": filename}]
            files = [c for c in edit.body["components"][0]["components"] if c["type"] == 13]
            assert files[0]["file"]["url"] == f"attachment://{filename}"
            assert big in data.decode("utf-8")
            assert "word1499" not in texts(edit.body["components"])
    run(scenario())


def test_after_a_restart_a_job_that_was_running_is_reported_as_interrupted(home):
    import subprocess
    import sys

    from oz0.edge.runtime import recovery as runtime_module
    from oz0.edge.runtime.runner import Runtime

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    standin = DiscordStandIn(guilds=[DiscordStandIn.guild(GUILD, channel_ids=(CHANNEL,))])
    interaction_id = snowflake()
    crashed = Runtime(home, flow_engine=FLOW_ENGINE)
    from discord_harness import install_test_plugin
    install_test_plugin(crashed, home.parent / "plugin-src")
    reply = discord_client.ReplyTarget(application_id=standin.app_id, token="tok-crashed", channel_id=CHANNEL,
                                       user_id="2000", guild_id=GUILD,
                                       created=discord_client.snowflake_time(interaction_id))
    job, _ = crashed.submit("echo", "sleep 100", requester="discord:2000", channel=f"discord:{CHANNEL}",
                            dedupe_key=f"discord:interaction:{interaction_id}", reply_to=reply.to_ref())
    crashed.store.update_job(job.id, status="running", started=time.time(),
                             runner=f"{runtime_module._HOST}:{int(dead.stdout)}:gone")
    crashed.close()

    async def scenario():
        restarted = Runtime(home, flow_engine=FLOW_ENGINE)
        jobs = restarted.recover_interrupted()
        assert [j.id for j in jobs] == [job.id]
        discord_client.report_interrupted(jobs)   # before the channel starts, as `oz0 serve` does
        async with running_channel(home, standin=standin, runtime=restarted) as h:
            path = f"/webhooks/{standin.app_id}/tok-crashed/messages/@original"
            [edit] = await h.standin.wait_for(lambda r: r.path == path)
            assert_within_discord_limits(edit.body)
            assert "ask again" in texts(edit.body["components"])
            # the same interaction redelivered after the restart does not run it again
            await h.send(h.standin.slash("ask", {"agent": "echo", "input": "sleep 100"},
                                         interaction_id=interaction_id, **h.where()))
            await asyncio.sleep(0.3)
            assert len(h.runtime.jobs()) == 1 and h.runs() == []
        restarted.close()
    run(scenario())


def test_shards_from_the_environment_start_an_auto_sharded_client_on_those_shards(home):
    async def scenario():
        guild_id = next(g for g in iter(snowflake, None) if (int(g) >> 22) % 2 == 1)
        standin = DiscordStandIn(guilds=[DiscordStandIn.guild(guild_id, channel_ids=(CHANNEL,))], shards=2)
        async with running_channel(home, standin=standin,
                                   env={"DISCORD_SHARD_COUNT": "2", "DISCORD_SHARD_IDS": "1"}) as h:
            assert [i["shard"] for i in h.standin.identifies] == [[1, 2]]
            assert h.standin.calls("PUT", "/commands") == []   # shard 0's process syncs the commands
            ask = await h.send(h.standin.slash("ask", {"agent": "echo", "input": "from shard 1"},
                                               guild_id=guild_id, channel_id=CHANNEL), shard_id=1)
            assert "echo: from shard 1" in texts((await h.edit(ask)).body["components"])
    run(scenario())


# ---- pure translations and settings --------------------------------------------------------------

def test_to_edge_request_reads_a_slash_command_and_a_modal_submit():
    standin = DiscordStandIn()
    slash = standin.slash("ask", {"agent": " echo ", "input": "hi"}, guild_id="1", channel_id="2", user_id="3",
                          roles=("4", "5"))
    req = discord_client.to_ask(slash)
    assert (req.agent, req.text, req.delivery) == ("echo", "hi", f"discord:interaction:{slash['id']}")
    assert req.asker == discord_client.Asker("discord", workspace="1", channel="2", user="3", groups=("4", "5"))
    assert req.reply.token == slash["token"] and abs(req.reply.created - time.time()) < 5
    assert "token" not in repr(req.reply) or slash["token"] not in repr(req.reply)

    submit = standin.interaction(5, {"custom_id": "m", "components": [
        {"type": 1, "components": [{"type": 4, "custom_id": discord_client.INPUT_FIELD, "value": "text"}]},
        {"type": 18, "component": {"type": 3, "custom_id": discord_client.AGENT_FIELD, "values": ["deploys"]}},
    ]}, guild_id="1", channel_id="2")
    req = discord_client.to_ask(submit)
    assert (req.agent, req.text) == ("deploys", "text")

    with pytest.raises(ValueError, match="names no agent"):
        discord_client.to_ask(standin.slash("ask", {"input": "x"}, guild_id="1", channel_id="2"))
    with pytest.raises(ValueError, match="not an ask"):
        discord_client.to_ask({"type": 3, "data": {}})


@pytest.mark.parametrize("env, message", [
    ({}, "DISCORD_TOKEN is not set"),
    ({"DISCORD_TOKEN": "t", "DISCORD_GUILD_IDS": "123,abc"}, "DISCORD_GUILD_IDS must be numbers"),
    ({"DISCORD_TOKEN": "t", "DISCORD_SHARD_IDS": "0"}, "DISCORD_SHARD_IDS needs DISCORD_SHARD_COUNT"),
    ({"DISCORD_TOKEN": "t", "DISCORD_SHARD_COUNT": "2", "DISCORD_SHARD_IDS": "2"}, r"\[2\] are not below"),
    ({"DISCORD_TOKEN": "t", "DISCORD_SHARD_COUNT": "zero"}, "DISCORD_SHARD_COUNT must be a whole number"),
    ({"DISCORD_TOKEN": "t", "DISCORD_API_URL": "discord.test"}, "DISCORD_API_URL must be an http"),
])
def test_bad_settings_name_the_variable(env, message):
    with pytest.raises(discord_client.DiscordConfigError, match=message):
        discord_client.DiscordSettings.from_env(env)


def test_settings_from_the_environment():
    settings = discord_client.DiscordSettings.from_env({
        "DISCORD_TOKEN": " secret-token ", "DISCORD_GUILD_IDS": "1, 2", "DISCORD_SHARD_COUNT": "4",
        "DISCORD_SHARD_IDS": "0,2", "DISCORD_API_URL": "http://127.0.0.1:9/api/v10/"})
    assert settings.guild_ids == (1, 2) and settings.shard_ids == (0, 2) and settings.shard_count == 4
    assert settings.api_url == "http://127.0.0.1:9/api/v10" and settings.token == "secret-token"
    assert "secret-token" not in repr(settings)
    assert discord_client.configured({"DISCORD_TOKEN": "x"}) and not discord_client.configured({"DISCORD_TOKEN": " "})


def test_a_job_cut_short_by_a_stop_tells_the_asker_it_was_interrupted(home, monkeypatch):
    monkeypatch.setattr(discord_client, "STOP_GRACE_S", 0.3)

    async def scenario():
        async with running_channel(home) as h:
            ask = await h.send(h.standin.slash("ask", {"agent": "echo", "input": "sleep 30"}, **h.where()))
            await h.callback(ask)
            await asyncio.sleep(0.2)
        # leaving the block set `stop` and waited for serve() to return
        [edit] = [r for r in h.standin.requests if r.method == "PATCH" and ask["token"] in r.path]
        assert_within_discord_limits(edit.body)
        assert "stopped while the job was running" in texts(edit.body["components"])
        [job] = h.runtime.jobs()
        assert job.status == "interrupted"
    run(scenario())


def test_a_wrong_token_stops_the_channel_with_a_clear_error_and_no_token_in_it(home):
    import discord
    import discord.http

    from oz0.edge.runtime.runner import Runtime

    async def scenario():
        standin = await DiscordStandIn(token="the-right-one").start()
        runtime = Runtime(home, flow_engine=FLOW_ENGINE)
        try:
            with pytest.raises(discord.LoginFailure) as caught:
                await discord_client.serve(runtime, env={"DISCORD_TOKEN": "a-wrong-one",
                                                         "DISCORD_API_URL": standin.api_url},
                                           stop=asyncio.Event())
            assert str(caught.value) == "Improper token has been passed."
            assert [r.path for r in standin.requests] == ["/users/@me"]
        finally:
            runtime.close()
            await standin.close()
        assert discord.http.Route.BASE == "https://discord.com/api/v10"   # restored
    run(scenario())


def test_a_card_discord_refuses_becomes_a_failure_card_in_its_place(home):
    async def scenario():
        async with running_channel(home) as h:
            h.standin.fail_next[("PATCH", "webhooks")] = (400, {"message": "Invalid Form Body", "code": 50035})
            ask = await h.send(h.standin.slash("ask", {"agent": "echo", "input": "hi"}, **h.where()))
            [refused, fallback] = await h.standin.wait_for(lambda r: r.method == "PATCH" and ask["token"] in r.path,
                                                           count=2)
            assert "echo: hi" in texts(refused.body["components"])
            assert_within_discord_limits(fallback.body)
            shown = texts(fallback.body["components"])
            assert "oz0 could not show this result in Discord (400" in shown and "is in the journal" in shown
    run(scenario())
