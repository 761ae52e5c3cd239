"""access.yaml: who may ask which agent, where; first matching rule decides; broken files fail loudly."""

from __future__ import annotations

import pytest

from oz0.edge.runtime.access import AccessError, AccessPolicy, Asker

ALICE = Asker("slack", workspace="T1", channel="C1", user="U_ALICE", groups=("S_OPS",))
BOB = Asker("slack", workspace="T1", channel="C2", user="U_BOB")


def test_no_file_allows_everything(tmp_path):
    policy = AccessPolicy.load(tmp_path)
    assert policy.allows("anything", BOB)


def test_first_matching_rule_decides_and_default_applies(tmp_path):
    (tmp_path / "access.yaml").write_text(
        "default: deny\n"
        "rules:\n"
        "  - deny: [deploy-*]\n"
        "    channels: [C2]\n"
        "  - allow: [deploy-*, incident]\n"
        "    workspace: T1\n"
        "  - allow: ['*']\n"
        "    groups: [S_OPS]\n"
    )
    policy = AccessPolicy.load(tmp_path)
    assert policy.allows("deploy-prod", ALICE)
    assert not policy.allows("deploy-prod", BOB)
    assert policy.allows("incident", BOB)
    assert policy.allows("secrets", ALICE)  # via the group
    assert not policy.allows("secrets", BOB)  # the default
    assert policy.allowed_agents(["deploy-prod", "incident", "secrets"], BOB) == ["incident"]
    assert "rule 1" in policy.explain_denial("deploy-prod", BOB)
    assert "default" in policy.explain_denial("secrets", BOB)
    assert "'secrets'" in policy.explain_denial("secrets", BOB)


def test_platform_condition():
    policy = AccessPolicy.from_dict({"default": "deny", "rules": [{"allow": ["*"], "platform": "discord"}]})
    assert policy.allows("x", Asker("discord", user="1"))
    assert not policy.allows("x", Asker("slack", user="1"))


@pytest.mark.parametrize("text, message", [
    ("default: maybe\n", "default must be 'allow' or 'deny'"),
    ("rules:\n  - allow: [a]\n    deny: [b]\n", "rules[0]: a rule has exactly one of"),
    ("rules:\n  - allow: [a]\n    chanels: [C1]\n", "unknown keys ['chanels']"),
    ("rules: [\n", "cannot read access rules"),
    ("rules:\n  - allow: {a: 1}\n", "rules[0].allow: expected a list"),
])
def test_broken_file_is_a_clear_error(tmp_path, text, message):
    (tmp_path / "access.yaml").write_text(text)
    with pytest.raises(AccessError, match=message.replace("[", "\\[").replace("]", "\\]")):
        AccessPolicy.load(tmp_path)
