"""What Slack sees from the HTTP endpoint (adapters/chat/slack_http.py): the status and body of each
kind of delivery, and that the ack never waits for the journal. Real channel, signed requests, the
loopback stand-in as the Web API; no timing thresholds."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest
from slack_harness import install_test_plugin, running_channel
from slack_sdk.signature import SignatureVerifier
from slack_standin import SIGNING_SECRET, block_action_body, signed_headers, slash_command_body

from oz0.adapters.chat import slack_http
from oz0.adapters.chat.slack_http import signature_problem
from oz0.edge.flows.engine import FLOW_ENGINE


@pytest.fixture
def home(oz0_home: Path) -> Path:
    install_test_plugin(oz0_home)
    return oz0_home


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def no_tracebacks(caplog) -> None:
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records if r.exc_info]
    assert "Traceback" not in caplog.text


def test_url_verification_answers_the_challenge_and_ssl_check_is_a_plain_200(home):
    async def main():
        async with running_channel(home) as h:
            body = json.dumps({"token": "t", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
                               "type": "url_verification"})
            status, payload, _ = await h.post(body, signed_headers(body, content_type="application/json"))
            assert (status, payload) == (200, {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
            forged = signed_headers(body, content_type="application/json", secret="not-the-secret")
            status, payload, _ = await h.post(body, forged)
            assert (status, payload) == (401, {"error": "invalid request"})
            status, payload, _ = await h.post("ssl_check=1&token=t", {"Content-Type": "application/x-www-form-urlencoded"})
            assert (status, payload) == (200, None)
            assert [m for m in h.slack.methods()] == []
    run(main())


def test_bad_signatures_are_401_with_the_same_body_and_no_traceback(home, caplog):
    caplog.set_level("DEBUG")

    async def main():
        async with running_channel(home) as h:
            body = slash_command_body("echo hi", response_url=h.slack.response_url("x"))
            cases = {"no signature": {"Content-Type": "application/x-www-form-urlencoded",
                                      "X-Slack-Request-Timestamp": str(int(time.time()))},
                     "wrong secret": signed_headers(body, secret="nope"),
                     "stale": signed_headers(body, timestamp=int(time.time()) - 301),
                     "from the future": signed_headers(body, timestamp=int(time.time()) + 301),
                     "no timestamp": {k: v for k, v in signed_headers(body).items()
                                      if k != "X-Slack-Request-Timestamp"}}
            for name, headers in cases.items():
                status, payload, _ = await h.post(body, headers)
                assert (status, payload) == (401, {"error": "invalid request"}), name
            await asyncio.sleep(0.2)
            assert h.runtime.jobs() == [] and h.slack.methods() == []
    run(main())
    no_tracebacks(caplog)
    assert "refused a Slack request: its timestamp is more than 300 s from now" in caplog.text
    assert SIGNING_SECRET not in caplog.text


def test_signature_problem_names_what_is_wrong():
    verifier = SignatureVerifier(SIGNING_SECRET)
    body = "a=1"
    good = signed_headers(body, timestamp=1_700_000_000)
    assert signature_problem(verifier, good, body, now=1_700_000_000) is None
    assert signature_problem(verifier, good, body, now=1_700_000_301) == "its timestamp is more than 300 s from now"
    assert signature_problem(verifier, good, "a=2", now=1_700_000_000) == \
        "its X-Slack-Signature does not match the body"
    assert signature_problem(verifier, {**good, "X-Slack-Request-Timestamp": "1e9"}, body) == \
        "its X-Slack-Request-Timestamp is not a number of seconds"


def test_a_signed_payload_that_is_not_ours_is_404_and_a_body_that_is_not_json_is_400(home, caplog):
    caplog.set_level("DEBUG")

    async def main():
        async with running_channel(home) as h:
            other = slash_command_body("echo hi", response_url=h.slack.response_url("x"), command="/other")
            status, payload, _ = await h.post(other, signed_headers(other))
            assert (status, payload) == (404, {"error": "unhandled request"})
            reaction = json.dumps({"type": "event_callback", "event_id": "Ev9", "event": {"type": "reaction_added"}})
            status, payload, _ = await h.post(reaction, signed_headers(reaction, content_type="application/json"))
            assert (status, payload) == (404, {"error": "unhandled request"})
            broken = "{not json"
            status, payload, _ = await h.post(broken, signed_headers(broken, content_type="application/json"))
            assert (status, payload) == (400, {"error": "invalid request"})
            await asyncio.sleep(0.2)
            assert h.runtime.jobs() == [] and h.slack.methods() == []
    run(main())
    no_tracebacks(caplog)


def test_an_event_is_acked_empty_before_its_listener_runs_and_a_retry_is_acked_the_same(home):
    async def main():
        async with running_channel(home) as h:
            replies = [await h.mention("echo hi", event_id="EvHTTP", retry_num=n) for n in (None, 1, 2)]
            assert [(status, payload) for status, payload, _ in replies] == [(200, None)] * 3
            await h.slack.wait_for("chat.update")
            await asyncio.sleep(0.3)
            assert len(h.runtime.jobs()) == 1 and len(h.slack.of("chat.postMessage")) == 1
    run(main())


def test_a_slash_command_is_acked_with_the_working_message_while_the_journal_is_still_busy(home):
    """The ack waits for no journal write: the command's working message comes back while the
    journal insert is held, and the job is journaled and answered once it is let go."""
    async def main():
        async with running_channel(home) as h:
            await h.command("echo warm", trigger_id="warm")        # the agents are read once, before
            await h.slack.wait_for("response")
            held, let_go = threading.Event(), threading.Event()
            submit = h.runtime.submit

            def slow_submit(*args, **kwargs):
                held.set()
                let_go.wait(10)
                return submit(*args, **kwargs)

            h.runtime.submit = slow_submit
            try:
                status, payload, _ = await h.command("echo while the journal waits", trigger_id="held-1")
                assert status == 200 and payload["response_type"] == "ephemeral"
                assert payload["text"].startswith("\u23f3 Working on echo")
                assert await asyncio.to_thread(held.wait, 10)
                assert [j for j in h.runtime.jobs() if j.dedupe_key == "slack:command:held-1"] == []
            finally:
                let_go.set()
            [_, card] = await h.slack.wait_for("response", 2)
            assert card.path == "/response/held-1" and "echo: while the journal waits" in json.dumps(card.args)
    run(main())


def test_an_interaction_is_acked_with_an_empty_200(home):
    async def main():
        async with running_channel(home) as h:
            body = block_action_body(action_id="oz0_share", value="nope", response_url=h.slack.response_url("c1"))
            status, payload, _ = await h.post(body, signed_headers(body))
            assert (status, payload) == (200, None)
            [notice] = await h.slack.wait_for("response")
            assert "no longer available" in notice.args["text"]
    run(main())


def test_a_listener_that_fails_before_its_ack_is_a_500_without_details(home, caplog):
    async def main():
        async with running_channel(home) as h:
            def broken(*args, **kwargs):
                raise RuntimeError("the secret plan")

            h.runtime.agents = broken   # the first read of the installed agents fails
            status, payload, _ = await h.command("echo hi", trigger_id="fails")
            assert (status, payload) == (500, {"error": "internal error"})
    run(main())
    assert "Slack listener failed for a" in caplog.text



def test_an_agent_installed_while_the_channel_runs_is_never_refused_as_unknown(home, tmp_path):
    """The ack answers from the channel's snapshot of the installed agents; a name it does not know
    is read again before it is refused."""
    from oz0.edge.plugins.manifest import load_plugin
    from oz0.edge.runtime.install import install_plugin
    from oz0.edge.runtime.runner import Runtime

    later = tmp_path / "later-plugin"
    (later / "agents").mkdir(parents=True)
    (later / "plugin.yaml").write_text("name: later\nversion: 1.0.0\ndescription: installed later\n")
    (later / "impl.py").write_text("def echo(text):\n    return text\n")
    (later / "agents/latecomer.yaml").write_text("description: Installed later\nkind: python\nentry: impl:echo\n"
                                                 "input: text\noutput: text\n")

    async def main():
        async with running_channel(home) as h:
            _, first, _ = await h.command("echo before", trigger_id="before")
            assert first["text"].startswith("\u23f3 Working on echo")
            other = Runtime(home, flow_engine=FLOW_ENGINE)
            try:
                install_plugin(other, load_plugin(later), actor="test")
            finally:
                other.close()
            _, payload, _ = await h.command("latecomer hi", trigger_id="after")
            assert payload["text"].startswith("\u23f3 Working on latecomer"), payload
            _, payload, _ = await h.command("nobody hi", trigger_id="unknown")
            assert "There is no agent 'nobody'" in payload["text"] and "latecomer" in json.dumps(payload)
    run(main())


def test_the_work_after_an_ack_waits_for_the_lull_but_the_ack_does_not(home, monkeypatch):
    """In a burst the journal writes and jobs wait until requests stop arriving (slack_http._Lull):
    with a lull made 2 s long, the ack comes back at once and the job is journaled only after it."""
    monkeypatch.setattr(slack_http, "QUIET_S", 2.0)
    monkeypatch.setattr(slack_http, "MAX_DEFER_S", 30.0)

    async def main():
        async with running_channel(home) as h:
            status, payload, _ = await h.command("echo after the lull", trigger_id="lull-1")
            assert status == 200 and payload["text"].startswith("\u23f3 Working on echo")
            assert h.runtime.jobs() == []          # still waiting for the lull
            [card] = await h.slack.wait_for("response", timeout=20)
            assert "echo: after the lull" in json.dumps(card.args)
            assert len(h.runtime.jobs()) == 1
    run(main())


def test_the_lull_is_open_without_requests_and_never_waits_past_its_cap(monkeypatch):
    monkeypatch.setattr(slack_http, "QUIET_S", 60.0)
    monkeypatch.setattr(slack_http, "MAX_DEFER_S", 0.05)

    async def main():
        lull = slack_http._Lull()
        await asyncio.wait_for(lull.wait(), 1)     # nothing arrived: no wait
        lull.arrived()
        await asyncio.wait_for(lull.wait(), 10)    # still arriving as far as it knows: the cap lets it go
    run(main())


def test_a_mention_by_the_bot_itself_or_another_app_is_acked_and_never_answered(home):
    from slack_standin import BOT_USER, mention_event_body

    async def main():
        async with running_channel(home) as h:
            own = mention_event_body("echo loop", event_id="EvOwn", user=BOT_USER)
            other = json.loads(mention_event_body("echo other", event_id="EvApp", user="U0OTHERAPP"))
            other["event"]["bot_id"] = "B0OTHER"
            other = json.dumps(other)
            for body in (own, other):
                status, payload, _ = await h.post(body, signed_headers(body, content_type="application/json"))
                assert (status, payload) == (200, None)
            person = await h.mention("echo hi", event_id="EvPerson")
            assert person[0] == 200
            await h.slack.wait_for("chat.update")
            await asyncio.sleep(0.3)
            assert [j.input for j in h.runtime.jobs()] == ["hi"]
    run(main())
