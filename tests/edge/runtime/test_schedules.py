"""Schedules as an operator runs them: a plugin's schedules/NAME.yaml linted (exit 1 naming the file and
the key), real `oz0 serve` replicas over one Postgres firing each tick once and posting it to the
Slack stand-in once, a replica SIGKILLed during a tick (the tick still runs and posts once), a tick
missed while the only replica was down run once at start with `catch_up: true` (and not without it),
pause and resume (audited) from the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from replica_harness import Replica, install_replica_plugin, runs
from slack_standin import SlackStandIn

from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.runtime.runner import Runtime

OZ0 = str(Path(sys.executable).with_name("oz0"))


def _schedule(name: str, cron: str, text: str, *, catch_up: bool = False) -> dict[str, str]:
    return {f"schedules/{name}.yaml": f"description: {name}\ncron: \"{cron}\"\ntimezone: Europe/Lisbon\n"
                                      f"agent: echo\ninput: {text}\nslack: {{channel: C0GENERAL}}\n"
                                      f"catch_up: {'true' if catch_up else 'false'}\n"}


def _replicas(tmp_path: Path, slack: SlackStandIn, names: list[str], files: dict[str, str],
              database_url: str | None) -> list[Replica]:
    made = []
    for name in names:
        home = tmp_path / f"home-{name}"
        install_replica_plugin(home, database_url=database_url, extra=files)
        made.append(Replica.make(name, home, api_url=slack.api_url,
                                 runs_file=tmp_path / "runs.txt", database_url=database_url, OZ0_LEASE_S="2",
                                 OZ0_SHUTDOWN_S="1"))
    return made


def _schedule_jobs(home: Path, name: str, database_url: str | None = None) -> list:
    runtime = Runtime(home, database_url=database_url)
    try:
        return sorted((j for j in runtime.jobs(limit=500) if j.requester == f"schedule:{name}"),
                      key=lambda j: j.dedupe_key or "")
    finally:
        runtime.close()


def _tick(job) -> datetime:
    return datetime.fromisoformat(job.dedupe_key.split(":", 2)[2])


def test_a_schedule_that_breaks_its_agents_contract_is_refused_naming_the_file_and_key(tmp_path):
    folder = tmp_path / "plugin"
    files = {"plugin.yaml": "name: sched\nversion: 1.0.0\ndescription: x\n",
             "agents/report.yaml": "description: r\nkind: python\nentry: impl:report\n"
                                   "input_schema: schemas/in.json\noutput: text\n",
             "schemas/in.json": json.dumps({"type": "object", "required": ["team"], "additionalProperties": False,
                                            "properties": {"team": {"type": "string"}}}),
             "impl.py": "def report(v):\n    return v['team']\n",
             "schedules/standup.yaml": "cron: '0 9 * * 1-5'\ntimezone: Europe/Lisbon\nagent: report\n"
                                       "input: {team: 7}\nslack: {channel: C0GENERAL}\n",
             "schedules/nightly.yaml": "cron: '0 25 * * *'\ntimezone: Moon/Base\nagent: nobody\n"
                                       "discord: {channel: general}\ncatch_up: maybe\n"}
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    found = {(f.file, f.path): f.message for f in lint_plugin(folder, installed={}).errors}
    assert found == {
        ("schedules/nightly.yaml", "$.cron"): "'0 25 * * *' is not a cron of 5 fields (minute hour day-of-month "
                                              "month day-of-week), or 6 with seconds first",
        ("schedules/nightly.yaml", "$.timezone"): "'Moon/Base' is not an IANA time zone",
        ("schedules/nightly.yaml", "$.agent"): "no agent 'nobody' in this plugin or installed",
        ("schedules/nightly.yaml", "$.discord.channel"): "'general' is not a Discord channel id: digits "
                                                         "(Developer Mode, Copy Channel ID)",
        ("schedules/nightly.yaml", "$.catch_up"): "catch_up is true or false, not 'maybe'",
        ("schedules/standup.yaml", "$.input.team"): '7 is not of type "string"',
    }
    done = subprocess.run([OZ0, "plugin", "lint", str(folder)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "error: schedules/standup.yaml $.input.team: 7 is not of type \"string\"" in done.stdout + done.stderr
    refused = subprocess.run([OZ0, "plugin", "install", str(folder)], capture_output=True, text=True, timeout=60,
                             env={"OZ0_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"})
    assert refused.returncode != 0


def test_two_replicas_over_postgres_run_each_tick_once_and_post_it_once(tmp_path, postgres_url):
    async def main() -> None:
        async with SlackStandIn() as slack:
            a, b = _replicas(tmp_path, slack, ["replica-a", "replica-b"],
                             _schedule("pulse", "*/3 * * * * *", "pulse"), postgres_url)
            try:
                await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
                await slack.wait_for("chat.postMessage", 3, timeout=40)
            finally:
                a.kill()
                b.kill()
            jobs = _schedule_jobs(a.home, "pulse", postgres_url)
            posts = [c for c in slack.of("chat.postMessage") if "echo: pulse" in json.dumps(c.args)]
            finished = [j for j in jobs if j.status == "succeeded"]
            assert len(finished) >= 3 and all(c.args["channel"] == "C0GENERAL" for c in posts)
            assert len({_tick(j) for j in jobs}) == len(jobs)  # one job a tick, whichever replica fired it
            assert len(posts) == len(finished)                 # and each posted once
            assert all(_tick(j).second % 3 == 0 for j in jobs)
            ran = [r for r in runs(tmp_path / "runs.txt") if r[0] == "end"]
            assert len(ran) == len(finished)
    asyncio.run(main())


def test_a_replica_killed_during_a_tick_leaves_the_tick_to_run_once_on_the_other(tmp_path, postgres_url):
    async def main() -> None:
        async with SlackStandIn() as slack:
            a, b = _replicas(tmp_path, slack, ["replica-a", "replica-b"],
                             _schedule("slow", "*/20 * * * * *", "sleep 3"), postgres_url)
            try:
                await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
                deadline = time.monotonic() + 60
                while not runs(tmp_path / "runs.txt"):
                    assert time.monotonic() < deadline, "the tick never ran"
                    await asyncio.sleep(0.05)
                first = runs(tmp_path / "runs.txt")[0][1]
                victim, survivor = (a, b) if first == a.process.pid else (b, a)
                await asyncio.to_thread(victim.kill)
                posted = await slack.wait_for("chat.postMessage", 1, timeout=40)
                assert "echo: sleep 3" in json.dumps(posted[0].args)
                await asyncio.sleep(1)  # room for a second post of that tick, which must not come
            finally:
                a.kill()
                b.kill()
            jobs = _schedule_jobs(a.home, "slow", postgres_url)
            killed = jobs[0]  # the first tick's: it ran when the victim died
            assert killed.status == "succeeded" and killed.attempts >= 1
            posts = [c for c in slack.of("chat.postMessage") if "echo: sleep 3" in json.dumps(c.args)]
            assert len(posts) == len([j for j in jobs if j.status == "succeeded"])
            done = runs(tmp_path / "runs.txt")
            assert done[:3] == [("start", first, "sleep 3"), ("start", survivor.process.pid, "sleep 3"),
                                ("end", survivor.process.pid, "sleep 3")]
    asyncio.run(main())


def test_a_tick_missed_while_the_only_replica_was_down_runs_once_at_start_with_catch_up(tmp_path):
    files = {**_schedule("caught", "*/2 * * * * *", "caught", catch_up=True),
             **_schedule("skipped", "*/2 * * * * *", "skipped")}

    async def main() -> None:
        async with SlackStandIn() as slack:
            (solo,) = _replicas(tmp_path, slack, ["solo"], files, None)
            try:
                await asyncio.to_thread(solo.start)
                await slack.wait_for("chat.postMessage", 2, timeout=40)
                await asyncio.to_thread(solo.kill)
                down = datetime.now(UTC)
                await asyncio.sleep(7)  # three ticks or more go by with no replica up
                up = datetime.now(UTC)
                await asyncio.to_thread(solo.start)
                started = datetime.now(UTC)
                await asyncio.sleep(3)
            finally:
                solo.kill()

            [said] = [line for line in solo.lines if "missed its tick" in line]
            assert "schedule caught missed its tick at" in said  # catch_up: false says nothing of its own
            tick = datetime.fromisoformat(said.split("missed its tick at ")[1].split()[0])
            assert tick > down + timedelta(seconds=4)  # the latest missed tick, not the first ones

            def missed(name: str) -> list:  # ticks from the stop to the start's catch-up
                return [j for j in _schedule_jobs(solo.home, name) if down < _tick(j) <= tick]
            assert [_tick(j) for j in missed("caught")] == [tick]
            assert missed("skipped") == []
            assert started > up
    asyncio.run(main())


def test_pause_and_resume_from_the_cli_are_audited_and_listed(tmp_path):
    home = tmp_path / "home"
    install_replica_plugin(home, extra=_schedule("pulse", "0 9 * * 1-5", "pulse"))
    env = {"OZ0_HOME": str(home), "PATH": "/usr/bin:/bin", "OZ0_TEST_RUNS": str(tmp_path / "runs.txt")}
    listed = subprocess.run([OZ0, "schedules", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    [pulse] = json.loads(listed.stdout)["schedules"]
    assert pulse["status"] == "not started" and pulse["cron"] == "0 9 * * 1-5" and pulse["agent"] == "echo"
    assert pulse["post_to"] == [{"platform": "slack", "channel": "C0GENERAL"}]
    first = datetime.fromisoformat(pulse["next_runs"][0])
    assert (first.hour, first.minute, first.weekday() < 5) == (9, 0, True)
    early = subprocess.run([OZ0, "schedules", "pause", "pulse"], capture_output=True, text=True, env=env, timeout=60)
    assert early.returncode == 1 and "has not been started by oz0 serve yet" in early.stderr
    serve = subprocess.Popen([OZ0, "serve", "--port", "0"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert serve.stderr is not None
        for line in serve.stderr:
            if "console listening" in line:
                break
        paused = subprocess.run([OZ0, "schedules", "pause", "pulse"], capture_output=True, text=True, env=env,
                                timeout=60)
        assert paused.returncode == 0, paused.stderr
        assert paused.stdout.strip() == "schedule pulse paused"
        shown = json.loads(subprocess.run([OZ0, "schedules", "--json"], capture_output=True, text=True, env=env,
                                          timeout=60).stdout)["schedules"][0]
        assert shown["status"] == "paused" and shown["next_runs"] == []
        resumed = subprocess.run([OZ0, "schedules", "resume", "pulse"], capture_output=True, text=True, env=env,
                                 timeout=60)
        assert resumed.stdout.strip() == "schedule pulse active"
        unknown = subprocess.run([OZ0, "schedules", "pause", "nope"], capture_output=True, text=True, env=env,
                                 timeout=60)
        assert unknown.returncode == 1 and "no installed schedule is named 'nope'" in unknown.stderr
    finally:
        serve.kill()
        serve.wait(timeout=30)
    audit = subprocess.run([OZ0, "audit", "--json"], capture_output=True, text=True, env=env, timeout=60)
    actions = [r["action"] for r in json.loads(audit.stdout)["records"]]
    assert actions[:2] == ["schedule.resume", "schedule.pause"]


def test_the_api_and_the_console_list_schedules_and_guard_pause_with_the_admin_token(tmp_path):
    import httpx
    from console_plugin import ConsoleThread

    home = tmp_path / "home"
    install_replica_plugin(home, extra=_schedule("pulse", "0 9 * * 1-5", "pulse"))
    runtime = Runtime(home)
    admin = {"authorization": "Bearer " + "b" * 32}
    try:
        with ConsoleThread(runtime, admin_token="b" * 32) as console, \
                httpx.Client(base_url=console.url, timeout=30) as http:
            listed = http.get("/v1/schedules").json()
            assert listed["success"] is True and listed["meta"]["command"] == "schedules.list"
            [pulse] = listed["schedules"]
            assert (pulse["name"], pulse["status"], pulse["timezone"]) == ("pulse", "not started", "Europe/Lisbon")
            r = http.post("/v1/schedules/pulse/pause")
            assert r.status_code == 403 and r.json()["error_code"] == "admin_token_required"
            r = http.post("/v1/schedules/pulse/pause", headers=admin)
            assert r.status_code == 409 and r.json()["error_code"] == "not_started"
            r = http.post("/v1/schedules/nope/pause", headers=admin)
            assert r.status_code == 404 and r.json()["error_code"] == "unknown_schedule"
            page = http.get("/schedules")
            assert page.status_code == 200
            assert "pulse" in page.text and "0 9 * * 1-5" in page.text and "not started" in page.text
            doc = http.get("/openapi.json").json()
            assert {"/schedules", "/schedules/{name}/pause", "/jobs/{job_id}/cancel"} <= set(doc["paths"])
    finally:
        runtime.close()
