"""A flow whose reads between its steps meet a database fault loses nothing: its job and its flow are
read inside its checkpointed steps (its start returns where its flow file is; each child's step reads
the flow's job and where the child runs), retried under the one rule of a job's steps, never between
steps, where the fault ended the workflow ERROR, the flow stuck `running` and no card posted. Real
processes, real DBOS, a real SQLite journal whose reads are refused at the SQLite layer."""

from __future__ import annotations

from engine_script import run_script
from flow_kit import RELEASE, flow_plugin
from paths import SUPPORT
from plugin_kit import install_at
from test_faults_reads import reads_env

SCRIPT = SUPPORT / "fault_reads_engine.py"


def test_a_flow_whose_reads_meet_a_locked_database_ends_once_with_one_card(tmp_path):
    install_at(tmp_path / "home", flow_plugin(tmp_path / "acme"))
    ended = run_script(SCRIPT, "flow", env=reads_env(tmp_path / "home"), timeout_s=120)
    assert ended["refused"] == ["catalog", "catalog", "job", "job"], ended
    assert (ended["error"], ended["workflow"]) == (None, "SUCCESS"), ended
    assert (ended["status"], ended["output"]) == ("succeeded", {
        "merged": True, "sha": "acme/api@42", "note": "reviewed approve"}), ended
    assert ended["posted"] == [True], ended


def test_a_flow_whose_tree_watch_meets_a_locked_database_ends_once_with_one_card(tmp_path):
    bounded = {**RELEASE, "limits": {"tree_timeout_s": 120}}  # its children waited for under the tree's watch
    install_at(tmp_path / "home", flow_plugin(tmp_path / "acme", flows={"release": bounded}))
    ended = run_script(SCRIPT, "flowwatch", env=reads_env(tmp_path / "home"), timeout_s=120)
    assert ended["refused"] == ["job", "job", "job", "job"], ended
    assert (ended["error"], ended["workflow"]) == (None, "SUCCESS"), ended
    assert (ended["status"], ended["output"]) == ("succeeded", {
        "merged": True, "sha": "acme/api@42", "note": "reviewed approve"}), ended
    assert ended["posted"] == [True], ended
