"""Where a schedule posts, as `oz0 plugin lint` checks it: one destination table for every platform
(edge.plugins.schedules.DESTINATIONS); Teams takes a conversation id and the connector's service URL
(the Teams SDK's global endpoint when it is left out), and refuses a service URL on any host but the
Bot Framework connector's, since the bot's token is sent there."""

from __future__ import annotations

from typing import Any

from oz0.edge.plugins.schedules import TEAMS_SERVICE_URL, lint_schedule

BASE = {"cron": "0 9 * * 1-5", "agent": "standup"}


def _problems(data: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    lint_schedule(data, lambda path, message, fix: found.setdefault(path, message), input_check=None,
                  known=lambda name: True)
    return found


def test_a_teams_destination_names_a_conversation_and_a_connector_service_url() -> None:
    assert _problems({**BASE, "teams": {"conversation": "19:abc@thread.tacv2",
                                        "service_url": "https://smba.trafficmanager.net/emea/"}}) == {}
    assert _problems({**BASE, "teams": {"conversation": "a:1pBx-personal"}}) == {}   # the global endpoint
    assert TEAMS_SERVICE_URL == "https://smba.trafficmanager.net/teams/"


def test_a_teams_destination_that_would_send_the_token_elsewhere_is_refused_naming_the_key() -> None:
    found = _problems({**BASE, "teams": {"conversation": "19:abc@thread.tacv2",
                                         "service_url": "https://smba.trafficmanager.net.evil.example/teams/"}})
    assert list(found) == ["$.teams.service_url"]
    assert found["$.teams.service_url"].startswith("'https://smba.trafficmanager.net.evil.example/teams/' is not "
                                                   "the Bot Framework connector's service URL")
    assert "the bot's token is sent there" in found["$.teams.service_url"]
    found = _problems({**BASE, "teams": {"conversation": "general"}})
    assert list(found) == ["$.teams.conversation"]
    assert found["$.teams.conversation"].startswith("'general' is not a Teams conversation id such as 19:")
    found = _problems({**BASE, "teams": {"channel": "19:abc@thread.tacv2"}})
    assert found == {"$.teams": "teams: is a mapping with one key conversation (and optionally service_url)"}


def test_every_platform_reads_from_one_table_and_a_schedule_that_posts_nowhere_says_each() -> None:
    assert _problems({**BASE, "slack": {"channel": "C0GENERAL"}}) == {}
    assert _problems({**BASE, "discord": {"channel": "123456789012345678"}}) == {}
    assert _problems({**BASE, "slack": {"channel": "general"}})["$.slack.channel"].startswith(
        "'general' is not a Slack channel id")
    assert _problems(BASE) == {"$": "the schedule posts nowhere"}
    fixes: list[str] = []
    lint_schedule(BASE, lambda path, message, fix: fixes.append(fix), input_check=None, known=lambda name: True)
    assert fixes == ["add slack: {channel: ...} or discord: {channel: ...} or teams: {conversation: ...}"]
