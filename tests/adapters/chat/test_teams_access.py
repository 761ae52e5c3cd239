"""Access rules on Teams: by team and channel (the activity's `channelData`), and by Entra group, read
from a loopback Microsoft Graph (`checkMemberGroups`, an app token of the same token endpoint), once per
person per hour; a Graph failure refuses with the reason, never allows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from teams_harness import home, run, running_channel  # noqa: F401 (home is a fixture)
from teams_standin import cards, runs_text

from oz0.edge.runtime.access import AccessError, AccessPolicy, Asker


async def said_to(h: Any, activity: dict[str, Any], expect: str) -> str:
    """Post the ask; the first card the bot sent since that holds `expect` (its answer, or the refusal)."""
    before = len(h.standin.calls)
    await h.post(activity)
    found = await h.standin.wait_for(lambda calls: [t for c in calls[before:] if c.body.get("attachments")
                                                    and expect in (t := runs_text(cards(c)))])
    return str(found[0])



def test_rules_by_team_and_by_channel(home: Path) -> None:
    access = """\
        default: deny
        rules:
          - allow: [echo]
            platform: teams
            teams: ["19:team-ops"]
          - allow: [echo]
            platform: teams
            channels: ["19:open@thread.tacv2"]
    """

    async def scenario() -> None:
        async with running_channel(home, access=access) as h:
            s = h.standin
            await said_to(h, s.message("echo in ops", team="19:team-ops"), "echo: in ops")
            await said_to(h, s.message("echo elsewhere", team="19:team-sales"),
                          "You may not run 'echo' here (the default of the access rules)")
            opened = s.message("echo open", team="19:team-sales", conversation="19:open@thread.tacv2")
            await said_to(h, opened, "echo: open")
            assert h.runs() == ["in ops", "open"]
            assert s.graph_calls == []                      # no rule names a group: Graph is never asked
    run(scenario())


def test_rules_by_entra_group_ask_graph_once_per_person_an_hour(home: Path) -> None:
    access = """\
        rules:
          - allow: [echo]
            platform: teams
            groups: ["g-oncall"]
          - deny: ["*"]
            platform: teams
    """

    async def scenario() -> None:
        async with running_channel(home, access=access) as h:
            s = h.standin
            s.graph_groups = {"aad-user-1": {"g-oncall", "g-other"}, "aad-user-2": {"g-other"}}
            await said_to(h, s.message("echo one"), "echo: one")
            await said_to(h, s.message("echo two"), "echo: two")
            await said_to(h, s.message("echo three", user="aad-user-2"),
                          "You may not run 'echo' here (rule 2 of the access rules)")
            assert s.graph_calls == ["aad-user-1", "aad-user-2"]   # one question per person, then kept
            assert s.graph_tokens_issued == 1 and h.runs() == ["one", "two"]
    run(scenario())


@pytest.mark.parametrize("failure", [503, 403, "unknown user"])
def test_a_graph_failure_refuses_with_the_reason_and_never_allows(home: Path, failure: Any) -> None:
    access = """\
        rules:
          - deny: [echo]
            platform: teams
            groups: ["g-contractors"]
        default: allow
    """

    async def scenario() -> None:
        async with running_channel(home, access=access) as h:
            s = h.standin
            if failure == "unknown user":
                s.graph_groups = {}
                reason = "Microsoft Graph answered 404 (Request_ResourceNotFound)"
            else:
                s.graph_failure = failure
                reason = f"Microsoft Graph answered {failure} (serviceNotAvailable)"   # its error code, no more
            await said_to(h, s.message("echo let me in"),
                          f"You may not run 'echo' here now: rule 1 of the access rules depends on your groups, "
                          f"and {reason}. Nothing was run; ask again in a minute.")
            assert h.runs() == []
            s.graph_failure, s.graph_groups = 0, {"aad-user-1": set()}
            await said_to(h, s.message("echo later"), "echo: later")   # a failure is not kept: asked again
    run(scenario())


def test_the_teams_condition_and_an_unreadable_group_in_the_policy() -> None:
    policy = AccessPolicy.from_dict({"rules": [
        {"allow": ["x"], "platform": "teams", "teams": ["19:t1"], "users": ["u-boss"], "groups": ["g1"]},
        {"deny": ["*"], "platform": "teams"}]})
    assert policy.rules[0].teams == ("19:t1",)
    here = Asker("teams", workspace="tenant", channel="19:c", user="u-1", team="19:t1")
    assert policy.allows("x", Asker(**{**here.__dict__, "groups": ("g1",)}))
    assert not policy.allows("x", Asker(**{**here.__dict__, "team": "19:t2", "groups": ("g1",)}))
    unread = Asker(**{**here.__dict__, "groups_error": "Microsoft Graph answered 503"})
    assert not policy.allows("x", unread)
    assert "depends on your groups, and Microsoft Graph answered 503" in policy.explain_denial("x", unread)
    assert policy.allows("x", Asker(**{**unread.__dict__, "user": "u-boss"}))   # named by user: no group needed
    with pytest.raises(AccessError, match="conditions are platform, workspace, teams, channels, users, groups"):
        AccessPolicy.from_dict({"rules": [{"allow": ["x"], "team": "19:t1"}]})
