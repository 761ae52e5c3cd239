"""A job that asks a person, in Slack: the real bolt app fed signed requests, the loopback Slack Web
API stand-in, a real Runtime whose python agent calls `ctx.ask_person`. Assertions are on the wire:
the question's buttons and modal, what the clicker alone was told, and the card updated to say who
decided."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from ask_plugin import install_ask_plugin
from slack_harness import assert_valid_blocks, install_test_plugin, running_channel
from slack_standin import block_action_body, signed_headers, view_submission_body
from waits import eventually

from oz0.adapters.chat import slack as slack_app
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

ACK_LIMIT_S = 3.0


@pytest.fixture
def home(oz0_home: Path) -> Path:
    install_test_plugin(oz0_home)
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        install_ask_plugin(runtime, oz0_home.parent / "ask-plugin")
    finally:
        runtime.close()
    return oz0_home


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def buttons(blocks) -> list[dict]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def click(h, button: dict, *, user: str = "U0ASKER", name: str = "click") -> tuple[int, float]:
    body = block_action_body(action_id=button["action_id"], value=button["value"], user=user,
                             response_url=h.slack.response_url(name), block_id=button["action_id"],
                             trigger_id=f"trigger-{name}")
    status, _, took = await h.post(body, signed_headers(body))
    return status, took


def responses(h, name: str) -> list[dict]:
    return [c.args for c in h.slack.of("response") if c.path == f"/response/{name}"]


async def question_in_thread(h, text: str):
    """Mention the bot with `text`; the question posted in the thread (after the working message)."""
    await h.mention(text)
    posts = await h.slack.wait_for("chat.postMessage", 2)
    question = posts[1]
    assert question.args["thread_ts"] == "1700000000.000100"
    assert_valid_blocks(question.args["blocks"])
    return question


def test_a_question_answered_by_its_buttons_updates_its_card_and_a_second_click_is_refused(home):
    async def main():
        async with running_channel(home) as h:
            question = await question_in_thread(h, "approve bool")
            assert "Merge &lt;!here&gt; #12" in question.args["text"]   # drawn as written: no @here ping
            assert not [b for b in question.args["blocks"] if "<!here>" in json.dumps(b) and b["type"] != "rich_text"]
            yes, no = buttons(question.args["blocks"])
            assert (yes["text"]["text"], no["text"]["text"]) == ("Yes", "No")
            [job] = h.runtime.jobs()
            assert job.status == "waiting"
            shown = await eventually(lambda: h.runtime.job(job.id).question_shown)

            status, took = await click(h, yes)
            assert status == 200 and took < ACK_LIMIT_S
            [answered] = await eventually(lambda: [u for u in h.slack.of("chat.update")
                                                   if "by Ana Lima at" in json.dumps(u.args["blocks"], ensure_ascii=False)])
            assert answered.args["ts"] == shown["ts"] and answered.args["channel"] == "C0GENERAL"
            assert_valid_blocks(answered.args["blocks"])
            assert "Yes — by Ana Lima at" in json.dumps(answered.args["blocks"], ensure_ascii=False)
            assert buttons(answered.args["blocks"]) == []
            final = await eventually(lambda: [u for u in h.slack.of("chat.update")
                                              if "accept" in json.dumps(u.args.get("blocks"))])
            assert 'accept {\\"approved\\": true} by slack:U0ASKER' in json.dumps(final[0].args["blocks"])
            assert h.runtime.job(job.id).status == "succeeded"

            await click(h, no, name="again")
            [said] = await eventually(lambda: responses(h, "again"))
            assert said["response_type"] == "ephemeral" and said["replace_original"] is False
            assert "no longer open" in said["text"]
            audits = [a for a in h.runtime.audit_log() if a.action == "flow.answered"]
            assert len(audits) == 1 and audits[0].actor == "slack:U0ASKER"
    run(main())


def test_someone_not_among_the_answerers_is_refused_privately_and_audited(home):
    async def main():
        async with running_channel(home) as h:
            question = await question_in_thread(h, "approve bool U0BOSS")
            yes, _ = buttons(question.args["blocks"])
            await click(h, yes, user="U0ASKER", name="asker")
            [said] = await eventually(lambda: responses(h, "asker"))
            assert said["response_type"] == "ephemeral" and said["replace_original"] is False
            assert "you are not among those who may answer" in said["text"]
            [denied] = [a for a in h.runtime.audit_log() if a.action == "access.denied"]
            assert denied.actor == "slack:U0ASKER"
            assert h.runtime.jobs()[0].status == "waiting"
            assert len(h.slack.of("chat.update")) == 0   # nothing public changed

            await click(h, yes, user="U0BOSS", name="boss")
            await eventually(lambda: [u for u in h.slack.of("chat.update")
                                      if "Yes — by @U0BOSS at" in json.dumps(u.args["blocks"], ensure_ascii=False)])
    run(main())


def test_an_enum_gets_a_button_per_value(home):
    async def main():
        async with running_channel(home) as h:
            question = await question_in_thread(h, "approve enum")
            labels = [b["text"]["text"] for b in buttons(question.args["blocks"])]
            assert labels == ["prod", "staging", "dev"]
            await click(h, buttons(question.args["blocks"])[1])
            await eventually(lambda: [u for u in h.slack.of("chat.update")
                                      if "staging — by Ana Lima" in json.dumps(u.args["blocks"], ensure_ascii=False)])
    run(main())


def test_a_private_question_is_answered_in_a_modal_and_an_invalid_answer_shows_the_path_and_rule(home):
    async def main():
        async with running_channel(home) as h:
            await h.command("approve form", trigger_id="ask-1")
            [question] = await eventually(lambda: [r for r in responses(h, "ask-1") if r.get("blocks")
                                                   and buttons(r["blocks"])])
            assert question["response_type"] == "ephemeral" and question["replace_original"] is False
            [answer] = buttons(question["blocks"])
            assert answer["text"]["text"] == "Answer…"

            status, took = await click(h, answer, name="form")
            assert status == 200 and took < ACK_LIMIT_S
            [opened] = await h.slack.wait_for("views.open")
            assert opened.args["trigger_id"] == "trigger-form"
            view = opened.args["view"] if isinstance(opened.args["view"], dict) else json.loads(opened.args["view"])
            inputs = [b for b in view["blocks"] if b["type"] == "input"]
            assert [(b["label"]["text"], b["element"]["type"], b["optional"]) for b in inputs] == [
                ("reason", "plain_text_input", False), ("count", "number_input", False),
                ("urgent", "checkboxes", True)]

            values = {"oz0_f0": {"value": {"type": "plain_text_input", "value": "ok go"}},
                      "oz0_f1": {"value": {"type": "number_input", "value": "0"}},
                      "oz0_f2": {"value": {"type": "checkboxes", "selected_options": []}}}
            body = view_submission_body(view, values)
            status, refused, took = await h.post(body, signed_headers(body))
            assert status == 200 and took < ACK_LIMIT_S
            assert refused["response_action"] == "errors"
            assert list(refused["errors"]) == ["oz0_f1"]
            assert "$.count" in refused["errors"]["oz0_f1"] and "minimum" in refused["errors"]["oz0_f1"]
            assert h.runtime.jobs()[0].status == "waiting"

            values["oz0_f1"]["value"]["value"] = "3"
            values["oz0_f2"]["value"]["selected_options"] = [{"value": "true"}]
            body = view_submission_body(view, values)
            status, closed, _ = await h.post(body, signed_headers(body))
            assert status == 200 and not closed          # an empty ack closes the modal
            [updated] = await eventually(lambda: [r for r in responses(h, "form") if r.get("replace_original")])
            assert "by Ana Lima" in json.dumps(updated["blocks"]) and buttons(updated["blocks"]) == []
            final = await eventually(lambda: [r for r in responses(h, "ask-1") if r.get("replace_original")])
            assert '{\\"count\\": 3, \\"reason\\": \\"ok go\\", \\"urgent\\": true}' in json.dumps(final[-1]["blocks"])
    run(main())


def test_to_answer_click_reads_only_question_buttons():
    body = {"type": "block_actions", "user": {"id": "U1"}, "channel": {"id": "C1"}, "team": {"id": "T1"},
            "actions": [{"action_id": slack_app.SHARE_ACTION, "value": "abc"}]}
    with pytest.raises(ValueError):
        slack_app.to_answer_click(body)
    body["actions"] = [{"action_id": "oz0_answer_yes", "value": "job1/0123abcd/yes"}]
    click = slack_app.to_answer_click(body)
    assert (click.pick.job_id, click.pick.choice, click.asker.user) == ("job1", "yes", "U1")


def test_a_question_answered_elsewhere_still_updates_its_card_in_the_thread(home):
    async def main():
        async with running_channel(home) as h:
            await question_in_thread(h, "approve bool")
            [job] = h.runtime.jobs()
            shown = await eventually(lambda: h.runtime.job(job.id).question_shown)
            assert shown["step"] == "approve" and shown["ts"]
            await asyncio.to_thread(h.runtime.answer, job.id, "approve", action="decline", content=None,
                                    by=job.requester)
            [updated] = await eventually(lambda: [u for u in h.slack.of("chat.update") if u.args["ts"] == shown["ts"]])
            assert "Declined by Ana Lima at" in json.dumps(updated.args["blocks"], ensure_ascii=False)
            assert buttons(updated.args["blocks"]) == []
    run(main())


def test_a_private_ask_whose_answerers_are_others_asks_in_the_channel(home):
    async def main():
        async with running_channel(home) as h:
            await h.command("approve bool U0BOSS", trigger_id="ask-2")
            [posted] = await h.slack.wait_for("chat.postMessage")
            assert posted.args["channel"] == "C0GENERAL" and "thread_ts" not in posted.args
            assert [b["text"]["text"] for b in buttons(posted.args["blocks"])] == ["Yes", "No"]
            assert not [r for r in responses(h, "ask-2") if r.get("blocks") and buttons(r["blocks"])]
            [job] = h.runtime.jobs()
            await asyncio.to_thread(h.runtime.answer, job.id, "approve", action="decline", content=None,
                                    by="slack:U0BOSS")
            await eventually(lambda: h.runtime.job(job.id).finished)
    run(main())


def test_a_private_question_answered_elsewhere_is_told_to_the_asker_privately(home):
    async def main():
        async with running_channel(home) as h:
            await h.command("approve bool", trigger_id="ask-3")
            await eventually(lambda: [r for r in responses(h, "ask-3") if r.get("blocks") and buttons(r["blocks"])])
            [job] = h.runtime.jobs()
            await eventually(lambda: h.runtime.job(job.id).question_shown)
            await asyncio.to_thread(h.runtime.answer, job.id, "approve", action="accept",
                                    content={"approved": False}, by=job.requester)
            [told] = await h.slack.wait_for("chat.postEphemeral")
            assert told.args["user"] == "U0ASKER"
            assert "No — by Ana Lima at" in json.dumps(told.args["blocks"], ensure_ascii=False)
    run(main())
