"""A Slack access rule naming user groups, when Slack will not say who is in them: the rule refuses,
saying why, and never lets the asker through (a `deny` by group is not passed by "in no group"); the
failure is not remembered, so the next ask reads the groups again. The real Slack endpoint against the
loopback Slack stand-in, which answers usergroups.users.list with an error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from slack_harness import install_test_plugin, running_channel


@pytest.fixture
def home(oz0_home: Path) -> Path:
    install_test_plugin(oz0_home)
    (oz0_home / "access.yaml").write_text("default: allow\nrules:\n  - deny: [deploys]\n    groups: [S0OPS]\n")
    return oz0_home


def test_a_deny_by_group_refuses_with_the_reason_when_slack_cannot_say_who_is_in_it(home: Path) -> None:
    async def main() -> None:
        async with running_channel(home, usergroups={"S0OPS": ["U0OPS1"]}) as h:
            h.slack.fail_once["usergroups.users.list"] = "ratelimited"
            _, body, _ = await h.command('deploys {"service": "api"}', user="U0OPS1", trigger_id="e1")
            assert "You may not run 'deploys' here now" in body["text"]
            assert "depends on your groups, and Slack answered ratelimited" in body["text"]
            assert h.runtime.jobs() == []
            _, body, _ = await h.command('deploys {"service": "api"}', user="U0OPS1", trigger_id="e2")
            assert "You may not run 'deploys' here (rule 1" in body["text"]  # read now: denied by the rule
            _, body, _ = await h.command('deploys {"service": "api"}', user="U0ASKER", trigger_id="e3")
            assert body["text"].startswith("\u23f3 Working")                 # not in the group: allowed
            assert len(h.slack.of("usergroups.users.list")) == 2            # the failure was not cached
    asyncio.run(asyncio.wait_for(main(), 60))
