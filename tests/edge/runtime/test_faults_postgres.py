"""Faults of the database, as a user meets them: two real `oz0 serve` replicas, a real Postgres of the
test's own that is stopped and started under them, signed Slack HTTP deliveries, the Slack stand-in.

- Postgres stopped while jobs run: every job ends, one card each, no job runs twice.
- An ask made while Postgres is down is never acked and then forgotten: the mention gets a 5xx (Slack
  redelivers it), the slash command a "could not start" answer.
- After a Postgres restart each replica takes its lease back: a replica killed afterwards has its jobs
  taken over by the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from replica_harness import Replica, runs
from slack_standin import SlackStandIn, signed_headers, slash_command_body
from test_replicas import LEASE_S, cards, post_mention, replicas, wait_runs

OUTAGE_S = 4.0


@contextlib.asynccontextmanager
async def _two_replicas(tmp_path, slack: SlackStandIn, url: str) -> AsyncIterator[tuple[Replica, Replica]]:
    a, b = replicas(tmp_path, slack, ["replica-a", "replica-b"], database_url=url)
    try:
        await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
        yield a, b
    finally:
        a.kill()
        b.kill()


def _journal(url: str) -> dict[str, str]:
    from oz0.edge.runtime.store import Store

    store = Store(url)
    try:
        return {row["input"]: row["status"] for row in store.jobs(limit=1000)}
    finally:
        store.close()


@pytest.mark.parametrize("count, outage_s", [
    (10, OUTAGE_S),
    pytest.param(50, 15.0, marks=pytest.mark.slow, id="issue-30-figure"),   # the 15 s under 50 jobs
])
def test_postgres_stopped_while_jobs_run_loses_no_job_and_runs_none_twice(tmp_path, own_postgres, count, outage_s):
    url = own_postgres.database()

    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            async with _two_replicas(tmp_path, slack, url) as (a, b):
                for i in range(count):
                    assert await post_mention(http, (a, b)[i % 2], f"echo sleep 1.{i:02d}", event_id=f"EvOut{i}") == 200
                await wait_runs(tmp_path / "runs.txt", "start", count, timeout=60)
                await asyncio.to_thread(own_postgres.halt)   # the agents end while the journal is gone
                await asyncio.sleep(outage_s)
                await asyncio.to_thread(own_postgres.resume)
                back = time.monotonic()
                await slack.wait_for("chat.update", count, timeout=30)
                took = time.monotonic() - back
                await asyncio.sleep(2 * LEASE_S + 1)   # room for a takeover of a live replica, which must not come
            ends = [r[2] for r in runs(tmp_path / "runs.txt") if r[0] == "end"]
            assert sorted(ends) == sorted(f"sleep 1.{i:02d}" for i in range(count)), ends
            for i in range(count):
                # one message shows each card: a delivery step whose checkpoint met the reconnecting
                # database after its post runs again (at least once), and updates the same message with
                # the same card, which its reader sees once; a second message would fail here
                shown = cards(slack, f"echo: sleep 1.{i:02d}")
                assert len({(c.args["channel"], c.args["ts"]) for c in shown}) == 1, (i, shown)
                assert len({str(c.args.get("blocks")) for c in shown}) == 1, (i, shown)
                assert not [c for c in slack.of("chat.postMessage")
                            if f"echo: sleep 1.{i:02d}" in str(c.args.get("blocks") or c.args.get("text"))], i
            assert set(_journal(url).values()) == {"succeeded"}
            assert took < 30, took
            leases = [line for line in a.lines + b.lines if "lease" in line]
            assert not any("its lease expired" in line for line in leases), leases
    asyncio.run(main())


def test_asks_made_while_postgres_is_down_are_redelivered_or_told_to_ask_again(tmp_path, own_postgres):
    url = own_postgres.database()

    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            (a,) = replicas(tmp_path, slack, ["solo"], database_url=url)
            try:
                await asyncio.to_thread(a.start)
                assert await post_mention(http, a, "echo warm", event_id="EvWarm") == 200  # the agents read once
                await slack.wait_for("chat.update", 1, timeout=30)
                await asyncio.to_thread(own_postgres.halt)
                try:
                    # Slack resends an event that was not acked: a 5xx, never a 200 and then nothing
                    assert await post_mention(http, a, "echo lost?", event_id="EvDown") >= 500
                    # a slash command is never resent: its asker is told, in its private view (in the ack
                    # when the journal fails before it, else through the command's response_url)
                    body = slash_command_body("echo later", response_url=slack.response_url("9.9.down"),
                                              trigger_id="9.9.down")
                    async with http.post(a.events_url, data=body.encode(), headers=signed_headers(body)) as resp:
                        assert resp.status == 200
                        told = await resp.text()
                    if "could not start" not in told:
                        told = str((await slack.wait_for("response", 1, timeout=10))[-1].args)
                finally:
                    await asyncio.to_thread(own_postgres.resume)
                assert "could not start this ask" in told and "ask again" in told, told
                # Slack's redelivery of the event, once the journal is back: answered once
                assert await post_mention(http, a, "echo lost?", event_id="EvDown") == 200
                await slack.wait_for("chat.update", 2, timeout=30)
            finally:
                a.stop()
            assert len(cards(slack, "echo: lost?")) == 1
            ends = [r[2] for r in runs(tmp_path / "runs.txt") if r[0] == "end"]
            assert ends == ["warm", "lost?"], ends
            assert "later" not in _journal(url)
    asyncio.run(main())


def test_after_a_postgres_restart_a_replica_killed_has_its_jobs_taken_over(tmp_path, own_postgres):
    url = own_postgres.database()

    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            async with _two_replicas(tmp_path, slack, url) as (a, b):
                marks = (len(a.lines), len(b.lines))
                await asyncio.to_thread(own_postgres.halt)
                await asyncio.sleep(2)
                await asyncio.to_thread(own_postgres.resume)
                for replica, mark in zip((a, b), marks):   # each takes its own lease back, before any peer could
                    await asyncio.to_thread(replica.wait_log, f"replica {replica.name} holds its lease again",
                                            timeout=LEASE_S * 4 + 10, since=mark)
                assert await post_mention(http, a, "echo sleep 2", event_id="EvAfter") == 200
                await wait_runs(tmp_path / "runs.txt", "start", 1)
                first = runs(tmp_path / "runs.txt")[0][1]
                victim, survivor = (a, b) if first == a.process.pid else (b, a)
                await asyncio.to_thread(victim.kill)
                killed = time.monotonic()
                posted = (await slack.wait_for("chat.update", 1, timeout=LEASE_S + 20))[0]
                assert posted.at - killed <= LEASE_S + 10, posted.at - killed
            assert "echo: sleep 2" in str(posted.args)
            assert any(f"replica {victim.name} stopped (its lease expired)" in line for line in survivor.lines)
    asyncio.run(main())
