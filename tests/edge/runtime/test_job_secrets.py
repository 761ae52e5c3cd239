"""A channel's credential in a job's reply_to (a Discord interaction token, a Slack response_url) is
kept in the journal for answering, and never shown by `oz0 jobs`."""

from __future__ import annotations

import json

from oz0.adapters.cli import main
from oz0.adapters.cli.plugin import example_plugin_dir
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.model.reply_ref import ReplyRef
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

SECRET = "interaction-token-7f3a9c"


def test_jobs_json_shows_where_the_answer_went_but_not_the_token(oz0_home, capsys):
    runtime = Runtime(oz0_home, flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(example_plugin_dir()))
    job, created = runtime.submit("deploys", "all", requester="discord:1", channel="discord:2",
                                  reply_to=ReplyRef("discord", 1, {"channel": "2", "token": SECRET,
                                                                   "response_url": f"https://hooks.example.com/{SECRET}"}),
                                  channel_id="2")
    assert created
    assert runtime.job(job.id).reply_to.data["token"] == SECRET  # kept for answering

    assert main(["jobs", "show", job.id, "--json"]) == 0
    shown = capsys.readouterr().out
    assert SECRET not in shown
    assert json.loads(shown)["job"]["reply_to"] == {"platform": "discord", "channel": "2"}

    assert main(["jobs", "--json"]) == 0
    listed = capsys.readouterr().out
    assert SECRET not in listed and '"channel": "2"' in listed
