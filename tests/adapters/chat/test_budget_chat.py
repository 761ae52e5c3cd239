"""`on_exhausted: ask` in chat: a model agent whose budget is too small for its call, asked from Slack
and from Discord (the real channels against their loopback stand-ins, the model a loopback server).
The asker sees the question in the thread with Yes and No; Yes lets the call happen and the card
arrive, No ends the job with a BudgetExhausted failure card naming the budget."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from budget_kit import install_budget_plugin, model_server
from discord_harness import CHANNEL, buttons, texts
from discord_harness import running_channel as discord_running
from slack_harness import assert_valid_blocks, install_test_plugin, running_channel
from slack_standin import block_action_body, signed_headers
from waits import eventually

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.budget_view import budget_json, budget_lines
from oz0.edge.runtime.runner import Runtime

QUESTION = ("this job needs up to {} more of its 50 tokens budget (agent reviewer, per job); allow?")


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


# Slack --------------------------------------------------------------------------------------------

def slack_home(home: Path, url: str) -> Path:
    install_test_plugin(home)
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        install_budget_plugin(runtime, home.parent / "budget-plugin", url)
    finally:
        runtime.close()
    return home


def slack_buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def slack_click(h: Any, button: dict[str, Any]) -> None:
    body = block_action_body(action_id=button["action_id"], value=button["value"], user="U0ASKER",
                             response_url=h.slack.response_url("click"), block_id=button["action_id"],
                             trigger_id="trigger-click")
    status, _, _ = await h.post(body, signed_headers(body))
    assert status == 200


async def slack_question(h: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Mention the bot asking `reviewer`: the budget question in the thread, and its Yes and No."""
    await h.mention("reviewer please review acme/api#42")
    posts = await h.slack.wait_for("chat.postMessage", 2)
    question = posts[1].args
    assert question["thread_ts"] == "1700000000.000100" and question["channel"] == "C0GENERAL"
    assert_valid_blocks(question["blocks"])
    assert question["text"] == "Budget (agent reviewer, per job) asks\n" + QUESTION.format("156 tokens")
    yes, no = slack_buttons(question["blocks"])
    assert (yes["text"]["text"], no["text"]["text"]) == ("Yes", "No")
    return question, yes, no


async def slack_card(h: Any, working_ts: str, needle: str) -> dict[str, Any]:
    """The working message in the thread, updated into the job's card (the update that says `needle`)."""
    [card] = await eventually(lambda: [u.args for u in h.slack.of("chat.update")
                                       if u.args["ts"] == working_ts and needle in u.args["text"]])
    assert_valid_blocks(card["blocks"])
    return card


def test_slack_yes_lets_the_call_happen_and_the_card_arrive(oz0_home):
    with model_server("looks fine") as server:
        home = slack_home(oz0_home, server.url)

        async def main() -> None:
            async with running_channel(home) as h:
                _, yes, _ = await slack_question(h)
                assert server.requests == []               # nothing is sent before the asker allows it
                await slack_click(h, yes)
                [job] = h.runtime.jobs()
                card = await slack_card(h, job.reply_to.data["ts"], "looks fine")
                assert card["text"] == "reviewer\nlooks fine"
                asked_ts = h.runtime.job(job.id).question_shown["ts"]
                decided = await eventually(lambda: [u.args for u in h.slack.of("chat.update")
                                                    if u.args["ts"] == asked_ts])
                assert decided[0]["text"].startswith("Yes — by Ana Lima at")
                assert slack_buttons(decided[0]["blocks"]) == []
                assert h.runtime.job(job.id).status == "succeeded"
                [state] = h.runtime.budgets.report(job)
                assert (state.granted.tokens, state.grants[0]["granted_by"]) == (156, "slack:U0ASKER")
                # the grantor by name wherever oz0 shows the grant; the id kept in the journal and the JSON
                await eventually(lambda: h.runtime.people.names(["slack:U0ASKER"]))
                [state] = h.runtime.budgets.report(job)
                assert "  granted 156 tokens for this job by Ana Lima" in budget_lines(state)
                [grant] = budget_json(state)["grants"]
                assert (grant["by"], grant["by_name"]) == ("slack:U0ASKER", "Ana Lima")
        run(main())
        assert [r["json"]["messages"][-1]["content"] for r in server.requests] == ["please review acme/api#42"]


def test_slack_no_ends_with_a_budget_exhausted_card_naming_the_budget(oz0_home):
    with model_server("looks fine") as server:
        home = slack_home(oz0_home, server.url)

        async def main() -> None:
            async with running_channel(home) as h:
                _, _, no = await slack_question(h)
                await slack_click(h, no)
                [job] = h.runtime.jobs()
                card = await slack_card(h, job.reply_to.data["ts"], "Failed: ")
                text = json.dumps(card["blocks"], ensure_ascii=False)
                assert "error code: budget_exhausted" in text
                assert "the 50 tokens budget (agent reviewer, per job) has no room for the next call" in text
                assert "its tokens limit is 50 tokens" in text and "this call needs up to 206 tokens" in text
                assert "slack:U0ASKER said no when asked to allow more" in text
                ended = h.runtime.job(job.id)
                assert (ended.status, ended.failure_kind) == ("failed", "BudgetExhausted")
        run(main())
        assert server.requests == []


# Discord ------------------------------------------------------------------------------------------

@pytest.fixture
def runs(oz0_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OZ0_TEST_RUNS", str(oz0_home.parent / "runs.txt"))  # the Discord harness's echo writes it


def discord_channel(home: Path, url: str) -> Any:
    return discord_running(home, before_serve=lambda rt: install_budget_plugin(rt, home.parent / "budget-plugin", url))


async def discord_question(h: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """/ask reviewer: the ask's interaction, the budget question (a follow-up to the asker), Yes, No."""
    ask = await h.send(h.standin.slash("ask", {"agent": "reviewer", "input": "please review"}, **h.where()))
    followup = f"/webhooks/{h.standin.app_id}/{ask['token']}"
    [posted] = await h.standin.wait_for(lambda r: r.method == "POST" and r.path == followup)
    question = posted.body
    assert question["allowed_mentions"] == {"parse": []}
    assert texts(question["components"]).splitlines()[:3] == [
        "## Budget (agent reviewer, per job) asks", QUESTION.format("144 tokens"), f"-# Job {ask_job(h)}, step "
        + h.runtime.questions.question(ask_job(h)).step + "."]
    yes, no = buttons(question["components"])
    assert (yes["label"], no["label"]) == ("Yes", "No")
    return ask, question, yes, no


def ask_job(h: Any) -> str:
    [job] = h.runtime.jobs()
    return job.id


async def discord_click(h: Any, custom_id: str, question: dict[str, Any]) -> dict[str, Any]:
    message = h.standin.message_from(question, channel_id=CHANNEL)
    click = await h.send(h.standin.interaction(3, {"custom_id": custom_id, "component_type": 2}, message=message,
                                               **h.where(user_id="2000")))
    assert (await h.callback(click)).body == {"type": 6}  # a deferred update
    return click


async def discord_card(h: Any, ask: dict[str, Any], needle: str) -> str:
    """The text of the ask's reply edited into the job's card (the edit that says `needle`)."""
    [edit] = await h.standin.wait_for(lambda r: r.method == "PATCH" and ask["token"] in r.path
                                      and needle in texts((r.body or {}).get("components") or []))
    return texts(edit.body["components"])


def test_discord_yes_lets_the_call_happen_and_the_card_arrive(oz0_home, runs):
    with model_server("looks fine") as server:
        async def main() -> None:
            async with discord_channel(oz0_home, server.url) as h:
                ask, question, yes, _ = await discord_question(h)
                assert server.requests == []
                click = await discord_click(h, yes["custom_id"], question)
                decided = texts((await h.edit(click)).body["components"])
                assert "Yes — by Ana Lima at" in decided
                assert "looks fine" in await discord_card(h, ask, "looks fine")
                job = h.runtime.job(ask_job(h))
                assert job.status == "succeeded"
                [state] = h.runtime.budgets.report(job)
                assert (state.granted.tokens, state.grants[0]["granted_by"]) == (144, "discord:2000")
        run(main())
        assert [r["json"]["messages"][-1]["content"] for r in server.requests] == ["please review"]


def test_discord_no_ends_with_a_budget_exhausted_card_naming_the_budget(oz0_home, runs):
    with model_server("looks fine") as server:
        async def main() -> None:
            async with discord_channel(oz0_home, server.url) as h:
                ask, question, _, no = await discord_question(h)
                click = await discord_click(h, no["custom_id"], question)
                assert "No — by Ana Lima at" in texts((await h.edit(click)).body["components"])
                card = await discord_card(h, ask, "Failed")
                assert "the 50 tokens budget (agent reviewer, per job) has no room for the next call" in card
                assert "its tokens limit is 50 tokens" in card and "this call needs up to 194 tokens" in card
                assert "discord:2000 said no when asked to allow more" in card
                assert "-# error code: budget\\_exhausted" in card  # markdown-escaped, as Discord shows it
                job = h.runtime.job(ask_job(h))
                assert (job.status, job.failure_kind) == ("failed", "BudgetExhausted")
        run(main())
        assert server.requests == []
