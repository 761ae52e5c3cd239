"""The Slack channel end to end: the real HTTP endpoint (slack_http), fed signed requests, talking to a
loopback Slack Web API stand-in that records every call. Assertions are on the wire: what Slack was
asked to post, update, upload, and what the asker saw."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from paths import ROOT
from slack_harness import assert_valid_blocks, install_test_plugin, running_channel
from slack_standin import SIGNING_SECRET, SlackStandIn, block_action_body, signed_headers, slash_command_body
from waits import eventually

from oz0.adapters.chat import slack as slack_app
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.access import Asker

ACK_LIMIT_S = 3.0


@pytest.fixture
def home(oz0_home: Path) -> Path:
    install_test_plugin(oz0_home)
    return oz0_home


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def texts(blocks) -> str:
    """Every piece of text in a block list, for 'the asker sees X' assertions."""
    return json.dumps(blocks, ensure_ascii=False)


def share_values(blocks) -> list[str]:
    return [e["value"] for b in blocks if b["type"] == "actions" for e in b["elements"]
            if e.get("action_id") == slack_app.SHARE_ACTION]


# ---- /ask ---------------------------------------------------------------------------------------

def test_slash_command_acks_at_once_then_replaces_the_working_view_with_the_card(home):
    async def main():
        async with running_channel(home) as h:
            status, body, took = await h.command("echo hello <world> & co")
            assert status == 200 and took < ACK_LIMIT_S
            assert body["response_type"] == "ephemeral"
            assert body["text"].startswith("\u23f3 Working on echo...")
            assert_valid_blocks(body["blocks"])

            [answer] = await h.slack.wait_for("response")
            args = answer.args
            assert answer.path == "/response/1337.42.abcdef"
            assert args["replace_original"] is True and args["response_type"] == "ephemeral"
            assert_valid_blocks(args["blocks"])
            assert "echo: hello <world> & co" in texts(args["blocks"])  # Slack's &lt; &amp; decoded for the agent
            [job] = h.runtime.jobs()
            assert job.status == "succeeded" and job.input == "hello <world> & co"
            assert job.requester == "slack:U0ASKER" and job.dedupe_key == "slack:command:1337.42.abcdef"
            assert share_values(args["blocks"]) == [job.id]
            assert args["unfurl_links"] is False and "channel" not in args
            assert not [m for m in h.slack.methods() if m.startswith("chat.")]  # nothing public yet
    run(main())


def test_share_in_channel_posts_the_card_for_everyone_and_removes_the_private_view(home):
    async def main():
        async with running_channel(home) as h:
            await h.command("echo ship it")
            [answer] = await h.slack.wait_for("response")
            [job_id] = share_values(answer.args["blocks"])

            click = block_action_body(action_id=slack_app.SHARE_ACTION, value=job_id,
                                      response_url=h.slack.response_url("share-1"))
            status, _, took = await h.post(click, signed_headers(click))
            assert status == 200 and took < ACK_LIMIT_S
            [post] = await h.slack.wait_for("chat.postMessage")
            assert post.args["channel"] == "C0GENERAL" and "thread_ts" not in post.args
            assert_valid_blocks(post.args["blocks"])
            assert "echo: ship it" in texts(post.args["blocks"])
            assert "Asked by Ana Lima" in texts(post.args["blocks"])
            assert share_values(post.args["blocks"]) == []
            responses = await h.slack.wait_for("response", 2)
            assert responses[1].path == "/response/share-1" and responses[1].args == {"delete_original": True}

            # someone else's click (or a second one) never posts again
            other = block_action_body(action_id=slack_app.SHARE_ACTION, value=job_id, user="U0OTHER",
                                      response_url=h.slack.response_url("share-2"))
            await h.post(other, signed_headers(other))
            [refusal] = [c for c in await h.slack.wait_for("response", 3) if c.path == "/response/share-2"]
            assert "Only the person who asked" in refusal.args["text"]
            assert len(h.slack.of("chat.postMessage")) == 1
    run(main())


def test_help_lists_the_agents_this_user_may_run_with_contracts_and_examples(home):
    (home / "access.yaml").write_text("rules:\n  - deny: [boom]\n    users: [U0ASKER]\n")

    async def main():
        async with running_channel(home) as h:
            for text in ("", "help"):
                status, body, _ = await h.command(text, trigger_id=f"help-{text}")
                assert status == 200 and body["response_type"] == "ephemeral"
                assert_valid_blocks(body["blocks"])
                shown = texts(body["blocks"])
                assert "/ask echo hello there" in shown
                assert '/ask deploys {\\"service\\":\\"api\\",\\"rows\\":3}' in shown
                assert "service: string" in shown and "rows?: integer" in shown
                assert "boom" not in shown
            assert h.runtime.jobs() == []
    run(main())


def test_unknown_agent_names_the_ones_the_user_may_run(home):
    async def main():
        async with running_channel(home) as h:
            _, body, _ = await h.command("deploy {}")
            assert "There is no agent 'deploy'" in body["text"]
            assert "boom, deploys, echo" in texts(body["blocks"])
            assert h.runtime.jobs() == []
    run(main())


def test_invalid_input_is_a_failure_card_a_user_can_act_on(home):
    async def main():
        async with running_channel(home) as h:
            await h.command('deploys {"service": 42}')
            [answer] = await h.slack.wait_for("response")
            shown = texts(answer.args["blocks"])
            assert_valid_blocks(answer.args["blocks"])
            assert "Failed" in answer.args["text"]
            assert "$.service" in shown and "deploys.in.json" in shown and "invalid_input" in shown
            assert "Traceback" not in shown
    run(main())


def test_a_crashing_agent_is_a_failure_card_never_a_traceback_or_a_secret(home, monkeypatch):
    async def main():
        async with running_channel(home) as h:
            await h.command("boom now")
            [answer] = await h.slack.wait_for("response")
            wire = json.dumps(answer.args)
            assert "crashed" in wire.lower() and "Traceback" not in wire and 'File "' not in wire
            assert "xoxb-" not in wire and SIGNING_SECRET not in wire
    run(main())


def test_results_over_the_limits_are_sent_to_the_asker_as_a_file_and_the_card_says_so(home, monkeypatch):
    from oz0.adapters.chat import flow

    drawn: list[str] = []
    real = flow.render
    monkeypatch.setattr(flow, "render", lambda card, platform: drawn.append(card.form) or real(card, platform))

    async def main():
        async with running_channel(home) as h:
            await h.command('deploys {"service": "api", "rows": 300}')
            [answer] = await h.slack.wait_for("response")
            assert_valid_blocks(answer.args["blocks"])
            shown = texts(answer.args["blocks"])
            assert "more rows" in shown and "sent to you as a direct message" in shown
            assert drawn.count("table") == 1  # the card is drawn once, told where its file goes
            [dm] = await h.slack.wait_for("conversations.open")
            assert dm.args["users"] == "U0ASKER"
            [complete] = await h.slack.wait_for("files.completeUploadExternal")
            [upload] = h.slack.of("upload")
            assert complete.args["channel_id"] == "D0ASKER"
            uploaded = json.loads(upload.body)
            assert uploaded == [{"service": "api", "n": i, "status": "ok"} for i in range(300)]  # the full result
            [get_url] = h.slack.of("files.getUploadURLExternal")
            assert int(get_url.args["length"]) == len(upload.body)
    run(main())


# ---- @mentions --------------------------------------------------------------------------------

def test_mention_posts_working_in_the_thread_then_updates_it_with_the_card(home):
    async def main():
        async with running_channel(home) as h:
            status, _, took = await h.mention("echo from the thread", ts="1700000001.000200")
            assert status == 200 and took < ACK_LIMIT_S
            [working] = await h.slack.wait_for("chat.postMessage")
            assert working.args["channel"] == "C0GENERAL" and working.args["thread_ts"] == "1700000001.000200"
            assert working.args["text"].startswith("\u23f3 Working on echo...")
            [update] = await h.slack.wait_for("chat.update")
            assert update.args["channel"] == "C0GENERAL"
            assert_valid_blocks(update.args["blocks"])
            assert "echo: from the thread" in texts(update.args["blocks"])
            assert share_values(update.args["blocks"]) == []
            [job] = h.runtime.jobs()
            assert job.reply_to.data["ts"] == update.args["ts"] and job.reply_to.data["thread_ts"] == "1700000001.000200"
            assert working.at < update.at
    run(main())


def test_mention_over_the_limits_uploads_the_full_result_in_the_same_thread(home):
    async def main():
        async with running_channel(home) as h:
            await h.mention('deploys {"service": "api", "rows": 250}', thread_ts="1699999999.000001",
                            ts="1700000002.000300")
            [update] = await h.slack.wait_for("chat.update")
            assert "uploaded in this thread" in texts(update.args["blocks"])
            [complete] = await h.slack.wait_for("files.completeUploadExternal")
            assert complete.args["channel_id"] == "C0GENERAL"
            assert complete.args["thread_ts"] == "1699999999.000001"
            order = h.slack.methods()
            assert order.index("chat.update") < order.index("files.getUploadURLExternal") < order.index("upload")
    run(main())


def test_a_retried_event_never_runs_the_agent_twice(home):
    async def main():
        async with running_channel(home) as h:
            await h.mention("echo once", event_id="EvRETRY")
            await h.slack.wait_for("chat.update")
            status, _, _ = await h.mention("echo once", event_id="EvRETRY", retry_num=1)
            assert status == 200
            status, _, _ = await h.mention("echo once", event_id="EvRETRY", retry_num=2)
            await asyncio.sleep(0.3)
            assert len(h.runtime.jobs()) == 1
            assert len(h.slack.of("chat.postMessage")) == 1 and len(h.slack.of("chat.update")) == 1
    run(main())


def test_a_redelivered_slash_command_never_runs_the_agent_twice(home):
    async def main():
        async with running_channel(home) as h:
            _, first, _ = await h.command("echo only once", trigger_id="T-1")
            await h.slack.wait_for("response")
            status, _, _ = await h.command("echo only once", trigger_id="T-1")
            assert first["text"].startswith("\u23f3 Working") and status == 200
            await asyncio.sleep(0.3)
            assert len(h.runtime.jobs()) == 1 and len(h.slack.of("response")) == 1
    run(main())


# ---- who may ask ------------------------------------------------------------------------------

def test_a_denied_command_gets_an_ephemeral_explanation_and_an_audit_record_before_parsing(home):
    (home / "access.yaml").write_text("rules:\n  - deny: [deploys]\n    channels: [C0GENERAL]\n")

    async def main():
        async with running_channel(home) as h:
            status, body, took = await h.command("deploys this is not JSON")
            assert status == 200 and took < ACK_LIMIT_S and body["response_type"] == "ephemeral"
            assert "You may not run 'deploys' here" in body["text"]
            assert "not JSON" not in texts(body) and "deploys.in.json" not in texts(body)
            [record] = await eventually(lambda: [r for r in h.runtime.audit_log() if r.action == "access.denied"])
            assert h.runtime.jobs() == []
            assert record.actor == "slack:U0ASKER"
            assert record.detail["agent"] == "deploys" and record.detail["channel"] == "C0GENERAL"
            await asyncio.sleep(0.2)
            assert h.slack.of("response") == [] and h.slack.of("chat.postMessage") == []
    run(main())


def test_a_denied_mention_gets_an_ephemeral_message_to_the_asker_only(home):
    (home / "access.yaml").write_text("default: deny\nrules:\n  - allow: [echo]\n")

    async def main():
        async with running_channel(home) as h:
            await h.mention('deploys {"service": "api"}')
            [eph] = await h.slack.wait_for("chat.postEphemeral")
            assert eph.args["user"] == "U0ASKER" and eph.args["channel"] == "C0GENERAL"
            assert "thread_ts" not in eph.args  # a top-level mention has no thread to show it in yet
            assert "You may not run 'deploys'" in eph.args["text"]
            assert_valid_blocks(eph.args["blocks"])
            await eventually(lambda: [r for r in h.runtime.audit_log() if r.action == "access.denied"])
            assert h.slack.of("chat.postMessage") == [] and h.runtime.jobs() == []
            assert [r.action for r in h.runtime.audit_log()].count("access.denied") == 1
    run(main())


def test_user_group_rules_ask_slack_for_the_members_of_the_named_groups(home):
    (home / "access.yaml").write_text("default: deny\nrules:\n  - allow: [deploys]\n    groups: [S0OPS]\n")

    async def main():
        async with running_channel(home, usergroups={"S0OPS": ["U0OPS1"]}) as h:
            _, body, _ = await h.command('deploys {"service": "api"}', user="U0OPS1", trigger_id="g1")
            assert body["text"].startswith("\u23f3 Working")
            _, body, _ = await h.command('deploys {"service": "api"}', user="U0ASKER", trigger_id="g2")
            assert "You may not run 'deploys'" in body["text"]
            calls = h.slack.of("usergroups.users.list")
            assert [c.args["usergroup"] for c in calls] == ["S0OPS"]  # cached for the second ask
    run(main())


# ---- the wire ---------------------------------------------------------------------------------

def test_a_bad_signature_or_a_stale_request_is_refused(home):
    async def main():
        async with running_channel(home) as h:
            body = slash_command_body("echo hi", response_url=h.slack.response_url("x"))
            forged = signed_headers(body, secret="not-the-secret")
            status, _, _ = await h.post(body, forged)
            assert status == 401
            stale = signed_headers(body, timestamp=int(time.time()) - 600)
            status, _, _ = await h.post(body, stale)
            assert status == 401
            tampered = signed_headers(body)
            status, _, _ = await h.post(body.replace("echo", "boom"), tampered)
            assert status == 401
            await asyncio.sleep(0.2)
            assert h.runtime.jobs() == []
            assert [m for m in h.slack.methods() if m != "auth.test"] == []
    run(main())


def test_a_non_numeric_timestamp_is_a_401_without_a_traceback(home, caplog):
    """Issue 15 item 14: bolt's verifier calls int() on the header; a junk value must be refused, not a 500."""
    caplog.set_level("DEBUG")

    async def main():
        async with running_channel(home) as h:
            body = slash_command_body("echo hi", response_url=h.slack.response_url("x"))
            for junk in ("not-a-number", "", "1e9", "١٧٠٠٠٠٠٠٠٠", "99999999999999999999999999", " 1700000000"):
                headers = signed_headers(body)
                headers["X-Slack-Request-Timestamp"] = junk
                status, _, _ = await h.post(body, headers)
                assert status == 401, (junk, status)
            await asyncio.sleep(0.2)
            assert h.runtime.jobs() == []
            assert [m for m in h.slack.methods() if m != "auth.test"] == []
    run(main())
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()], \
        [r.getMessage() for r in caplog.records if r.exc_info]
    assert "Traceback" not in caplog.text


def test_429_with_retry_after_is_honoured(home):
    async def main():
        async with running_channel(home) as h:
            h.slack.rate_limit_once["chat.update"] = 1
            await h.mention("echo slowly please")
            first, second = await h.slack.wait_for("chat.update", 2)
            assert first.status == 429 and second.status == 200
            assert second.at - first.at >= 0.95
            assert "echo: slowly please" in texts(second.args["blocks"])
    run(main())


def test_a_job_cut_short_by_a_stop_is_reported_as_interrupted_in_its_thread(home, monkeypatch):
    monkeypatch.setattr(slack_app, "STOP_GRACE_S", 0.2)

    async def main():
        async with running_channel(home) as h:
            await h.mention("echo sleep 30")
            await h.slack.wait_for("chat.postMessage")
            await asyncio.sleep(0.2)
        # leaving the block set `stop` and waited for serve() to return
        [update] = h.slack.of("chat.update")
        assert "Failed" in update.args["text"] and "interrupted" in texts(update.args["blocks"])
    run(main())
    from oz0.edge.runtime.runner import Runtime
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    [job] = runtime.jobs()
    assert job.status == "interrupted"
    runtime.close()


def test_after_a_crash_a_running_job_is_reported_in_its_thread(home):
    from oz0.edge.runtime import recovery as runtime_module
    from oz0.edge.runtime.runner import Runtime

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)
    crashed = Runtime(home, flow_engine=FLOW_ENGINE)
    job, _ = crashed.submit("echo", "sleep 100", requester="slack:U0ASKER", channel="slack:C0GENERAL",
                            dedupe_key="slack:event:EvCRASH",
                            reply_to=ReplyRef("slack", 1, {"channel": "C0GENERAL", "user": "U0ASKER",
                                                           "thread_ts": "1700000000.000100", "ts": "1700000000.000900"}))
    crashed.store.update_job(job.id, status="running", started=time.time(),
                             runner=f"{runtime_module._HOST}:{dead_pid}:gone")
    crashed.close()

    async def main():
        async with SlackStandIn() as slack:
            restarted = Runtime(home, flow_engine=FLOW_ENGINE)
            jobs = restarted.recover_interrupted()
            restarted.close()
            assert [j.id for j in jobs] == [job.id]
            slack_app.report_interrupted(jobs)  # before the channel starts, as `oz0 serve` does
            async with running_channel(home, slack=slack) as h:
                [update] = await h.slack.wait_for("chat.update")
                assert update.args["ts"] == "1700000000.000900" and update.args["channel"] == "C0GENERAL"
                assert_valid_blocks(update.args["blocks"])
                assert "ask again" in texts(update.args["blocks"])
                # the redelivered event after the restart does not run it again
                await h.mention("echo sleep 100", event_id="EvCRASH")
                await asyncio.sleep(0.3)
                assert len(h.runtime.jobs()) == 1 and h.slack.of("chat.postMessage") == []
    run(main())


# ---- Socket Mode ------------------------------------------------------------------------------

def test_socket_mode_acks_the_envelope_and_answers_through_the_response_url(home):
    async def main():
        async with running_channel(home, socket_mode=True) as h:
            payload = dict(urllib.parse.parse_qsl(slash_command_body(
                "echo over the socket", response_url=h.slack.response_url("sock"), trigger_id="S-1")))
            envelope = {"envelope_id": "env-1", "type": "slash_commands", "payload": payload,
                        "accepts_response_payload": True}
            sent = time.monotonic()
            await h.slack.socket_envelopes.put(envelope)
            ack = await asyncio.wait_for(h.slack.socket_acks.get(), 5)
            assert time.monotonic() - sent < ACK_LIMIT_S
            assert ack["envelope_id"] == "env-1" and ack["payload"]["text"].startswith("\u23f3 Working on echo...")
            [answer] = await h.slack.wait_for("response")
            assert "echo: over the socket" in texts(answer.args["blocks"])
            # Socket Mode redelivers an envelope it thinks was lost: the job does not run twice
            await h.slack.socket_envelopes.put({**envelope, "envelope_id": "env-2", "retry_attempt": 1})
            await asyncio.wait_for(h.slack.socket_acks.get(), 5)
            await asyncio.sleep(0.3)
            assert len(h.runtime.jobs()) == 1 and len(h.slack.of("response")) == 1
    run(main())


# ---- pure translations and settings ---------------------------------------------------------

def test_to_edge_request_reads_commands_and_mentions():
    cmd = dict(urllib.parse.parse_qsl(slash_command_body(
        "deploys {&quot;a&quot;: &lt;b&gt;} <https://x.example/a|x.example/a>", response_url="http://r/1",
        trigger_id="TR")))
    req = slack_app.to_ask(cmd)
    assert req.agent == "deploys" and req.source == "command"
    assert req.text == "{&quot;a&quot;: <b>} https://x.example/a"
    assert req.asker == Asker("slack", workspace="T0OZ0TEST", channel="C0GENERAL", user="U0ASKER")
    assert req.delivery == "slack:command:TR" and req.reply.response_url == "http://r/1"

    mention = json.loads(slack_app_mention("  echo   hi there ", thread_ts="1.5"))
    req = slack_app.to_ask(mention)
    assert (req.agent, req.text, req.source) == ("echo", "hi there", "mention")
    assert req.reply.thread_ts == "1.5" and req.delivery == "slack:event:Ev0001"
    wants = slack_app.to_ask(json.loads(slack_app_mention("help")))
    assert wants.help and wants.agent is None
    wants = slack_app.to_ask(json.loads(slack_app_mention("help deploys")))
    assert wants.help and wants.agent == "deploys"
    with pytest.raises(ValueError, match="not an ask"):
        slack_app.to_ask({"type": "event_callback", "event": {"type": "reaction_added"}})


def slack_app_mention(text: str, **kw) -> str:
    from slack_standin import mention_event_body
    return mention_event_body(text, **kw)


def test_settings_name_what_is_missing():
    assert not slack_app.configured({}) and slack_app.configured({"SLACK_BOT_TOKEN": "xoxb-1"})
    with pytest.raises(slack_app.SlackConfigError, match="SLACK_SIGNING_SECRET is not set"):
        slack_app.SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1"})
    with pytest.raises(slack_app.SlackConfigError, match="OZ0_SLACK_PORT"):
        slack_app.SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s",
                                          "OZ0_SLACK_PORT": "http"})
    socket = slack_app.SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert socket.socket_mode and socket.port == 3000 and socket.api_url == "https://slack.com/api/"
    http = slack_app.SlackSettings.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s",
                                             "SLACK_API_URL": "http://127.0.0.1:9/api"})
    assert not http.socket_mode and http.api_url == "http://127.0.0.1:9/api/"


def test_the_app_manifest_asks_for_what_the_channel_uses():
    import yaml

    manifest = yaml.safe_load((ROOT / "deploy/slack/manifest.yaml").read_text())
    [command] = manifest["features"]["slash_commands"]
    assert command["command"] == slack_app.COMMAND and command["url"].endswith(slack_app.EVENTS_PATH)
    settings = manifest["settings"]
    assert settings["event_subscriptions"]["bot_events"] == ["app_mention", "message.channels", "message.groups",
                                                             "message.im", "assistant_thread_started"]
    assert "assistant_description" in manifest["features"]["assistant_view"]
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["interactivity"]["request_url"].endswith(slack_app.EVENTS_PATH)
    needed = {"commands", "app_mentions:read", "chat:write", "files:write", "im:write", "usergroups:read",
              "channels:history", "groups:history", "im:history", "assistant:write", "users:read"}
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == needed


def test_no_adapter_builds_slack_markup():
    """Adapters post what the renderer drew (the working message is a card too): none imports slack_sdk.models."""
    import ast

    root = ROOT / "adapters"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(root)}: {n}" for n in names if n.startswith("slack_sdk.models")]
    assert not offenders
