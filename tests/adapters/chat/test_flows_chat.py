"""A flow's person step asked and answered in Slack, end to end: `@oz0 approval {...}` in a channel,
the review runs, the question is posted in the thread with Yes / No, the asker clicks Yes, the
question's card says who decided, and the flow goes on to merge and posts its output's card."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from flow_kit import approval, flow_plugin
from slack_harness import assert_valid_blocks, running_channel
from slack_standin import block_action_body, signed_headers
from waits import eventually

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime


def test_a_flows_person_step_is_answered_with_slack_buttons_and_the_flow_goes_on(tmp_path: Path, oz0_home: Path):
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(flow_plugin(tmp_path / "acme", flows={"approval": approval()})), actor="test")
    runtime.close()

    async def main() -> None:
        async with running_channel(oz0_home) as h:
            await h.mention('approval {"repo": "acme/api", "pr": 42}', event_id="EvFLOW")
            question = await eventually(lambda: next((c for c in h.slack.of("chat.postMessage")
                                                      if "Merge acme/api#42?" in json.dumps(c.args)), None))
            assert "The review says approve." in json.dumps(question.args, ensure_ascii=False)
            assert_valid_blocks(question.args["blocks"])
            yes = next(e for b in question.args["blocks"] if b["type"] == "actions" for e in b["elements"]
                       if e["text"]["text"] == "Yes")
            body = block_action_body(action_id=yes["action_id"], value=yes["value"], user="U0ASKER",
                                     response_url=h.slack.response_url("yes"), block_id=yes["action_id"],
                                     trigger_id="trigger-yes")
            status, _, _ = await h.post(body, signed_headers(body))
            assert status == 200
            card = await eventually(lambda: next((c for c in h.slack.of("chat.update")
                                                  if "acme/api@42" in json.dumps(c.args)), None))
            shown = json.dumps(card.args["blocks"], ensure_ascii=False)
            assert "steps: review succeeded; approve" in shown and "merge succeeded" in shown
            decided = json.dumps([c.args for c in h.slack.of("chat.update")] + [c.args for c in h.slack.of("response")],
                                 ensure_ascii=False)
            assert "by Ana Lima" in decided

    asyncio.run(asyncio.wait_for(main(), 90))
    journal = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    try:
        [flow] = [j for j in journal.jobs() if j.agent == "approval"]
        assert flow.status == "succeeded"
        assert [(c.agent, c.status) for c in journal.children(flow.id)] == [
            ("acme-reviewer", "succeeded"), ("merger", "succeeded"), ("merger", "skipped")]
    finally:
        journal.close()
