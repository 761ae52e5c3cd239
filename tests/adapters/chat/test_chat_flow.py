"""The ask flow shared by every chat channel, seen on both wires: dedupe before every branch (help
included), `help AGENT`, share once (durably), restart reports once, progress, and where agents run."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from discord_harness import running_channel as discord_channel
from slack_harness import assert_valid_blocks, install_test_plugin, running_channel
from slack_standin import SlackStandIn, block_action_body, signed_headers

from oz0.adapters.chat import slack as slack_app
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.runtime.runner import Runtime

DEFERRED_WITH_SOURCE = 5


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def texts(blocks: Any) -> str:
    return json.dumps(blocks, ensure_ascii=False)


@pytest.fixture
def home(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OZ0_TEST_RUNS", str(oz0_home.parent / "runs.txt"))
    return oz0_home


def test_a_claim_is_granted_once_across_runtimes(tmp_path: Path) -> None:
    first = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    assert first.claim("delivery:slack:event:Ev1") is True
    assert first.claim("delivery:slack:event:Ev1") is False
    first.close()
    second = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    assert second.claim("delivery:slack:event:Ev1") is False and second.claim("shared:abc") is True
    second.close()


# ---- dedupe before every branch -----------------------------------------------------------------

def test_a_slack_help_mention_redelivered_five_times_is_answered_once(home: Path) -> None:
    install_test_plugin(home)

    async def main() -> None:
        async with running_channel(home) as h:
            for retry in (None, 1, 2, 3, 4):
                status, _, _ = await h.mention("help", event_id="EvHELP", retry_num=retry)
                assert status == 200
            [answer] = await h.slack.wait_for("chat.postEphemeral")
            assert "Agents you may run" in texts(answer.args["blocks"])
            await asyncio.sleep(0.3)
            assert len(h.slack.of("chat.postEphemeral")) == 1 and h.runtime.jobs() == []
    run(main())


def test_a_slack_refusal_redelivered_is_answered_once(home: Path) -> None:
    install_test_plugin(home)

    async def main() -> None:
        async with running_channel(home) as h:
            for retry in (None, 1, 2):
                await h.mention("nope at all", event_id="EvNOPE", retry_num=retry)
            [answer] = await h.slack.wait_for("chat.postEphemeral")
            assert "There is no agent 'nope'" in answer.args["text"]
            await asyncio.sleep(0.3)
            assert len(h.slack.of("chat.postEphemeral")) == 1
            # a slash command's redelivery is still acked (Slack wants a 200), with nothing in it
            _, first, _ = await h.command("help", trigger_id="T-HELP")
            status, again, _ = await h.command("help", trigger_id="T-HELP")
            assert "Agents you may run" in texts(first["blocks"]) and status == 200 and not again
    run(main())


def test_discord_agents_delivered_five_times_is_answered_once(home: Path) -> None:
    async def main() -> None:
        async with discord_channel(home) as h:
            cmd = h.standin.slash("agents", {}, **h.where())
            for _ in range(5):
                await h.send(cmd)
            edit = await h.edit(cmd)
            assert "deploys" in json.dumps(edit.body)
            await asyncio.sleep(0.5)
            assert [r.method for r in h.to(cmd)] == ["POST", "PATCH"]
    run(main())


# ---- help AGENT -----------------------------------------------------------------------------------

def test_help_agent_shows_its_contract_and_an_example(home: Path) -> None:
    install_test_plugin(home)
    (home / "access.yaml").write_text("rules:\n  - deny: [boom]\n    users: [U0ASKER]\n")

    async def main() -> None:
        async with running_channel(home) as h:
            _, body, _ = await h.command("help deploys", trigger_id="H-1")
            assert_valid_blocks(body["blocks"])
            shown = texts(body["blocks"])
            assert "JSON {service: string, rows?: integer} (schemas/deploys.in.json)" in shown
            assert "array of object" in shown and "schemas/deploys.out.json" in shown
            assert '/ask deploys {\\"service\\":\\"api\\",\\"rows\\":3}' in shown
            # the contract of an agent the asker may not run stays hidden
            _, body, _ = await h.command("help boom", trigger_id="H-2")
            assert "You may not run 'boom'" in body["text"] and "Always fails" not in texts(body)
            assert h.runtime.jobs() == []
    run(main())


# ---- share once, durably --------------------------------------------------------------------------

def test_a_result_is_shared_once_even_after_the_channel_restarts(home: Path) -> None:
    install_test_plugin(home)

    async def main() -> None:
        async with SlackStandIn() as slack, running_channel(home, slack=slack) as h:
            await h.command("echo ship it", trigger_id="SH-1")
            [answer] = await h.slack.wait_for("response")
            [job_id] = [e["value"] for b in answer.args["blocks"] if b["type"] == "actions" for e in b["elements"]]
            click = block_action_body(action_id=slack_app.SHARE_ACTION, value=job_id,
                                      response_url=h.slack.response_url("share-1"))
            await h.post(click, signed_headers(click))
            await h.slack.wait_for("chat.postMessage")
            await h.slack.wait_for("response", 2)   # the private copy deleted
        async with SlackStandIn() as slack, running_channel(home, slack=slack) as h:
            again = block_action_body(action_id=slack_app.SHARE_ACTION, value=job_id,
                                      response_url=h.slack.response_url("share-2"))
            await h.post(again, signed_headers(again))
            [refusal] = await h.slack.wait_for("response")
            assert refusal.path == "/response/share-2"
            assert refusal.args["text"] == "This result was already shared."
            await asyncio.sleep(0.2)
            assert h.slack.of("chat.postMessage") == []   # this stand-in is the restarted channel's
    run(main())


# ---- restart reports once -------------------------------------------------------------------------

def test_an_interrupted_job_is_reported_once_however_often_it_is_handed_over(home: Path) -> None:
    install_test_plugin(home)
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    job, _ = runtime.submit("echo", "sleep 100", requester="slack:U0ASKER", channel="slack:C0GENERAL",
                            dedupe_key="slack:event:EvTWICE",
                            reply_to=ReplyRef("slack", 1, {"channel": "C0GENERAL", "user": "U0ASKER",
                                                           "thread_ts": "1700000000.000100", "ts": "1700000000.000900"}))
    runtime.store.update_job(job.id, status="interrupted", failure_kind="Interrupted",
                             failure_reason="the bot stopped before this job ended", ended=time.time())
    stopped = runtime.job(job.id)
    runtime.close()

    async def main() -> None:
        slack_app.report_interrupted([stopped])
        slack_app.report_interrupted([stopped])       # `oz0 serve` twice, or two replicas
        async with running_channel(home) as h:
            [update] = await h.slack.wait_for("chat.update")
            assert update.args["ts"] == "1700000000.000900"
            slack_app.report_interrupted([stopped])   # while the channel is up
            await asyncio.sleep(0.5)
            assert len(h.slack.of("chat.update")) == 1
    run(main())


# ---- progress and where agents run ----------------------------------------------------------------

def test_progress_shows_in_the_working_message_before_the_card(home: Path) -> None:
    install_test_plugin(home)

    async def main() -> None:
        async with running_channel(home) as h:
            await h.mention("echo progress warming up", event_id="EvPROG")
            progress, card = await h.slack.wait_for("chat.update", 2)
            assert "Working on echo" in texts(progress.args) and "step 1 of 2: warming up" in texts(progress.args)
            assert "echo: progress warming up" in texts(card.args["blocks"]) and progress.at < card.at
    run(main())


def test_agents_run_on_the_jobs_thread_never_on_the_channel_loop(home: Path) -> None:
    install_test_plugin(home)

    async def main() -> None:
        async with running_channel(home) as h:
            await h.command("echo which thread", trigger_id="TH-1")
            [answer] = await h.slack.wait_for("response")
            assert "echo: on oz0-slack-jobs" in texts(answer.args["blocks"])
        async with discord_channel(home.parent / "discord-home") as d:
            ask = await d.send(d.standin.slash("ask", {"agent": "echo", "input": "hi"}, **d.where()))
            await d.edit(ask)
            assert d.threads() == ["oz0-discord-jobs"]
    (home.parent / "discord-home").mkdir()
    run(main())


def test_a_card_the_platform_refuses_is_counted_as_a_channel_error(home: Path) -> None:
    """/metrics' oz0_channel_errors_total counts what a channel could not deliver, by platform and kind."""
    from oz0.edge.runtime.metrics import CHANNEL_ERRORS

    install_test_plugin(home)
    before = CHANNEL_ERRORS.labels("slack", "refused")._value.get()

    async def main() -> None:
        async with running_channel(home) as h:
            h.slack.fail_once["chat.update"] = "invalid_blocks"
            await h.mention("echo refused please", event_id="EvREFUSED")
            _refused, fallback = await h.slack.wait_for("chat.update", 2)
            assert "could not show this result in Slack" in texts(fallback.args)
    run(main())
    assert CHANNEL_ERRORS.labels("slack", "refused")._value.get() == before + 1
