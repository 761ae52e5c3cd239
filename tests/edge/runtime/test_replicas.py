"""Durable jobs, as a user deploys them: real `oz0 serve` processes, a real journal (a SQLite file, or a
real Postgres shared by two replicas), signed Slack HTTP deliveries, and the loopback Slack stand-in.
A delivery redelivered to another replica runs the agent once and posts once; a replica killed with
SIGKILL mid-job has its job finished by the other within the lease; a restarted single replica resumes."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import aiohttp
from mcp_harness import SERVER
from replica_harness import Replica, install_replica_plugin, runs
from slack_standin import SlackStandIn, mention_event_body, signed_headers, slash_command_body

from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.runtime.runner import Runtime

LEASE_S = 2.0


async def post_mention(http: aiohttp.ClientSession, replica: Replica, text: str, *, event_id: str) -> int:
    body = mention_event_body(text, event_id=event_id)
    async with http.post(replica.events_url, data=body.encode(),
                         headers=signed_headers(body, content_type="application/json")) as resp:
        return resp.status


async def post_command(http: aiohttp.ClientSession, replica: Replica, slack: SlackStandIn, text: str, *,
                       trigger_id: str) -> tuple[int, float]:
    body = slash_command_body(text, response_url=slack.response_url(trigger_id), trigger_id=trigger_id)
    started = time.perf_counter()
    async with http.post(replica.events_url, data=body.encode(), headers=signed_headers(body)) as resp:
        await resp.read()
        return resp.status, time.perf_counter() - started


def replicas(tmp_path: Path, slack: SlackStandIn, names: list[str], *, database_url: str | None,
             files: dict[str, str] | None = None, **extra: str) -> list[Replica]:
    made = []
    for name in names:
        home = tmp_path / f"home-{name}"
        install_replica_plugin(home, database_url=database_url, extra=files)
        made.append(Replica.make(name, home, api_url=slack.api_url,
                                 runs_file=tmp_path / "runs.txt", database_url=database_url,
                                 OZ0_LEASE_S=str(LEASE_S), **extra))
    return made


async def wait_runs(path: Path, what: str, count: int, *, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while sum(1 for r in runs(path) if r[0] == what) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {count} '{what}' runs; the runs file has {runs(path)}")
        await asyncio.sleep(0.05)


def cards(slack: SlackStandIn, text: str) -> list:
    return [c for c in slack.of("chat.update") if text in str(c.args.get("blocks") or c.args.get("text"))]


def test_the_same_delivery_posted_to_two_replicas_runs_once_and_posts_once(tmp_path, postgres_url):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            a, b = replicas(tmp_path, slack, ["replica-a", "replica-b"], database_url=postgres_url)
            try:
                await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
                statuses = await asyncio.gather(post_mention(http, a, "echo once", event_id="EvSame"),
                                                post_mention(http, b, "echo once", event_id="EvSame"))
                assert statuses == [200, 200]
                await slack.wait_for("chat.update", 1, timeout=30)
                # the command's trigger_id is its delivery id: the same command on both, one answer
                trigger = "777.42.same"
                acks = await asyncio.gather(post_command(http, a, slack, "echo twice", trigger_id=trigger),
                                            post_command(http, b, slack, "echo twice", trigger_id=trigger))
                assert [s for s, _ in acks] == [200, 200]
                await slack.wait_for("response", 1, timeout=30)
                await asyncio.sleep(1.5)  # room for a second run or post, which must not come
            finally:
                a.stop()
                b.stop()
            assert [r[2] for r in runs(tmp_path / "runs.txt") if r[0] == "end"] == ["once", "twice"]
            assert len(slack.of("chat.postMessage")) == 1 and len(cards(slack, "echo: once")) == 1
            answers = [c for c in slack.of("response") if "echo: twice" in str(c.args)]
            assert len(answers) == 1 and answers[0].path.endswith(trigger)
            assert any("redelivered slack:event:EvSame ignored" in line for line in a.lines + b.lines)
    asyncio.run(main())


def test_a_replica_killed_mid_job_has_its_job_finished_by_the_other_within_the_lease(tmp_path, postgres_url):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            a, b = replicas(tmp_path, slack, ["replica-a", "replica-b"], database_url=postgres_url)
            try:
                await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
                assert await post_mention(http, a, "echo sleep 3", event_id="EvSlow") == 200
                await wait_runs(tmp_path / "runs.txt", "start", 1)
                first = runs(tmp_path / "runs.txt")[0][1]
                # any replica may take a job from the queue: kill the one running it
                victim, survivor = (a, b) if first == a.process.pid else (b, a)
                assert first == victim.process.pid
                await asyncio.to_thread(victim.kill)
                killed = time.monotonic()
                posted = (await slack.wait_for("chat.update", 1, timeout=LEASE_S + 20))[0]
                took = posted.at - killed
                assert "echo: sleep 3" in str(posted.args)
                await asyncio.sleep(1.5)
            finally:
                a.kill()
                b.kill()
            done = runs(tmp_path / "runs.txt")
            assert [(w, pid) for w, pid, _ in done] == [("start", first), ("start", survivor.process.pid),
                                                        ("end", survivor.process.pid)]
            assert len(slack.of("chat.postMessage")) == 1 and len(slack.of("chat.update")) == 1
            # taken over once the lease expired, and finished (3 s of work) soon after
            assert LEASE_S <= took <= LEASE_S + 3 + 6, took
            assert any(f"replica {victim.name} stopped (its lease expired)" in line for line in survivor.lines)
    asyncio.run(main())


def test_the_only_replica_restarted_mid_job_on_sqlite_resumes_the_job(tmp_path):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            (a,) = replicas(tmp_path, slack, ["solo"], database_url=None)
            try:
                await asyncio.to_thread(a.start)
                assert await post_mention(http, a, "echo sleep 2", event_id="EvRestart") == 200
                await wait_runs(tmp_path / "runs.txt", "start", 1)
                await asyncio.to_thread(a.kill)
                await asyncio.to_thread(a.start)
                posted = await slack.wait_for("chat.update", 1, timeout=30)
                assert "echo: sleep 2" in str(posted[0].args)
                await asyncio.sleep(1.5)
            finally:
                a.stop()
            assert [w for w, _, _ in runs(tmp_path / "runs.txt")] == ["start", "start", "end"]
            assert len(slack.of("chat.postMessage")) == 1 and len(slack.of("chat.update")) == 1
            assert (tmp_path / "home-solo" / "oz0-engine.db").exists()
            assert not any("Interrupted" in str(c.args) for c in slack.calls)
    asyncio.run(main())


def test_limits_concurrency_holds_across_replicas_and_200_asks_are_each_answered_once(tmp_path, postgres_url):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            a, b = replicas(tmp_path, slack, ["replica-a", "replica-b"], database_url=postgres_url)
            try:
                await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
                # `single` declares limits.concurrency: 1: four slow asks over two replicas never overlap
                await asyncio.gather(*(post_command(http, (a, b)[i % 2], slack, f"single sleep 0.5 #{i}",
                                                    trigger_id=f"1.{i}.single") for i in range(4)))
                await wait_runs(tmp_path / "runs.txt", "end", 4, timeout=60)
                order = [w for w, _, _ in runs(tmp_path / "runs.txt")]
                assert order == ["start", "end"] * 4, runs(tmp_path / "runs.txt")
                acks = await asyncio.gather(*(post_command(http, (a, b)[i % 2], slack, f"noop ask {i}",
                                                           trigger_id=f"2.{i}.many") for i in range(200)))
                assert {s for s, _ in acks} == {200}
                await slack.wait_for("response", 4 + 200, timeout=120)
                await asyncio.sleep(1.0)
            finally:
                a.stop()
                b.stop()
            answered: dict[str, int] = {}
            for call in slack.of("response"):
                answered[call.path.rsplit("/", 1)[1]] = answered.get(call.path.rsplit("/", 1)[1], 0) + 1
                trigger = call.path.rsplit("/", 1)[1]
                if trigger.endswith(".many"):
                    assert f"ask {trigger.split('.')[1]}" in str(call.args)
            assert answered == {**{f"1.{i}.single": 1 for i in range(4)}, **{f"2.{i}.many": 1 for i in range(200)}}
    asyncio.run(main())


def test_a_live_mcp_call_cut_short_by_a_restart_is_reported_interrupted_once(tmp_path):
    files = {"cards_server.py": SERVER.read_text(encoding="utf-8"),
             "agents/slowtool.yaml": f"description: An MCP tool that takes its time\nkind: mcp\nserver:\n"
                                     f"  command: {json.dumps(sys.executable)}\n  args: [cards_server.py]\n"
                                     "tool: sleep\nlimits: {timeout_s: 60}\n"}

    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            (a,) = replicas(tmp_path, slack, ["solo"], database_url=None, files=files)
            journal = Runtime(a.home, flow_engine=FLOW_ENGINE)
            try:
                await asyncio.to_thread(a.start)
                assert await post_mention(http, a, 'slowtool {"seconds": 30}', event_id="EvMcp") == 200
                deadline = time.monotonic() + 30
                while not any(j.status == "running" and j.attempts for j in journal.jobs()):
                    assert time.monotonic() < deadline, journal.jobs()
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.5)  # the tool call is under way
                await asyncio.to_thread(a.kill)
                await asyncio.to_thread(a.start)
                try:
                    deadline = time.monotonic() + 30
                    while not (posted := [c for c in slack.of("chat.update") if "live mcp call" in str(c.args)]):
                        assert time.monotonic() < deadline, "no card said the live MCP call was cut short"
                        await asyncio.sleep(0.1)
                except AssertionError as exc:
                    raise AssertionError(f"{exc}\n{[j.to_dict() for j in journal.jobs()]}\n" + "\n".join(a.lines)) from exc
                await asyncio.sleep(1.5)
            finally:
                a.stop()
                journal.close()
            cards = [c for c in slack.of("chat.update") if not str(c.args.get("text", "")).startswith("⏳ Working")]
            assert len(cards) == 1, [c.args.get("text") for c in cards]  # progress may update "working..." first
            assert "live mcp call, which cannot be resumed" in str(posted[0].args)
            job = Runtime(a.home, flow_engine=FLOW_ENGINE).jobs()[0]
            assert (job.status, job.failure_kind) == ("interrupted", "Interrupted")
    asyncio.run(main())


def test_a_job_that_keeps_its_bot_stopping_ends_interrupted_after_limits_max_restarts(tmp_path):
    restless = {"agents/restless.yaml": "description: Like echo, resumed at most once\nkind: python\n"
                                        "entry: impl:echo\ninput: text\noutput: text\nlimits: {max_restarts: 1}\n"}

    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            (a,) = replicas(tmp_path, slack, ["solo"], database_url=None, files=restless)
            try:
                await asyncio.to_thread(a.start)
                assert await post_mention(http, a, "restless sleep 30", event_id="EvRestless") == 200
                for started in (1, 2):   # the first run, then its one restart: each killed mid-run
                    await wait_runs(tmp_path / "runs.txt", "start", started)
                    await asyncio.to_thread(a.kill)
                    await asyncio.to_thread(a.start)
                posted = await slack.wait_for("chat.update", 1, timeout=30)
                await asyncio.sleep(1.5)
            finally:
                a.stop()
            assert [w for w, _, _ in runs(tmp_path / "runs.txt")] == ["start", "start"]
            assert "stopped 2 times in a row" in str(posted[0].args) and "max_restarts is 1" in str(posted[0].args)
            assert len(slack.of("chat.update")) == 1
            rt = Runtime(tmp_path / "home-solo")
            try:
                (job,) = rt.jobs()
            finally:
                rt.close()
            assert (job.status, job.failure_kind) == ("interrupted", "Interrupted")
    asyncio.run(main())
