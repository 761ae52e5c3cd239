"""A schedule posts to Teams as it does to Slack: `teams: {conversation, service_url}` in
`schedules/NAME.yaml`, and each tick's card arrives in that conversation as a proactive message (the Bot
Framework connector's `POST v3/conversations/{id}/activities`, with the bot's token), once; a second
destination of the same schedule (Slack) gets the same card. A real `oz0 serve`, the Bot Framework and
Slack stand-ins, a real SQLite journal."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from replica_harness import Replica, install_replica_plugin
from slack_standin import SlackStandIn
from teams_standin import TeamsStandIn

from oz0.edge.runtime.runner import Runtime

CONVERSATION = "19:ops@thread.tacv2"


def test_a_schedule_posts_each_tick_to_a_teams_conversation_and_to_slack(tmp_path: Path) -> None:
    async def main() -> None:
        async with SlackStandIn() as slack:
            teams = await TeamsStandIn().start()
            try:
                home = tmp_path / "home"
                install_replica_plugin(home, extra={"schedules/pulse.yaml": (
                    'cron: "*/2 * * * * *"\nagent: echo\ninput: to the team\n'
                    f'teams: {{conversation: "{CONVERSATION}", service_url: "{teams.service_url}"}}\n'
                    "slack: {channel: C0GENERAL}\n")})
                solo = Replica.make("solo", home, api_url=slack.api_url,
                                    runs_file=tmp_path / "runs.txt", OZ0_SHUTDOWN_S="1", OZ0_TEAMS_HOST="127.0.0.1",
                                    OZ0_TEAMS_PORT="0", **teams.env())
                path = f"/connector/v3/conversations/{CONVERSATION}/activities"
                try:
                    await asyncio.to_thread(solo.start)
                    posts = await teams.wait_for(lambda calls: [c for c in calls if c.method == "POST"
                                                                and c.path == path] or None, timeout=30)
                    await slack.wait_for("chat.postMessage", 1, timeout=15)
                finally:
                    solo.stop()
                first = posts[0]
                assert first.auth.startswith("Bearer bot-token-")   # the bot's own token, to the connector
                assert "echo: to the team" in json.dumps(first.body)
                assert first.body["attachments"][0]["contentType"] == "application/vnd.microsoft.card.adaptive"
                runtime = Runtime(home)
                try:
                    jobs = [j for j in runtime.jobs(limit=100) if j.requester == "schedule:pulse" and j.finished]
                finally:
                    runtime.close()
                teams_posts = [c for c in teams.calls if c.method == "POST" and c.path == path]
                slack_posts = [c for c in slack.of("chat.postMessage") if "echo: to the team" in json.dumps(c.args)]
                assert jobs and len(teams_posts) <= len(jobs) and len(slack_posts) <= len(jobs)  # a tick posts once
                assert jobs[0].reply_to is not None and jobs[0].reply_to.platform == "teams"
            finally:
                await teams.close()
    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 90
