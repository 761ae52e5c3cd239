"""Teams over two real `oz0 serve` replicas sharing one real Postgres: the same signed activity
delivered to both (the connector retrying on another replica) runs the agent once, and the
conversation gets one working reply, updated once into the card."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import aiohttp
from replica_harness import Replica, install_replica_plugin, runs
from teams_standin import TeamsStandIn, cards, runs_text


def replica(tmp_path: Path, name: str, standin: TeamsStandIn, database_url: str) -> Replica:
    home = tmp_path / f"home-{name}"
    install_replica_plugin(home, database_url=database_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DISCORD_", "TEAMS_", "OZ0_"))}
    env.update(standin.env(), OZ0_HOME=str(home), OZ0_REPLICA_ID=name, OZ0_DATABASE_URL=database_url,
               OZ0_TEAMS_HOST="127.0.0.1", OZ0_TEAMS_PORT="0", OZ0_TEST_RUNS=str(tmp_path / "runs.txt"),
               OZ0_LEASE_S="2")
    return Replica(name, home, env)


def test_the_same_activity_posted_to_two_replicas_runs_once_and_is_answered_once(tmp_path, postgres_url):
    async def main() -> None:
        standin = await TeamsStandIn().start()
        a, b = replica(tmp_path, "replica-a", standin, postgres_url), replica(tmp_path, "replica-b", standin, postgres_url)
        try:
            ready = r"Teams channel: messaging endpoint on"
            await asyncio.gather(asyncio.to_thread(a.start, ready=ready), asyncio.to_thread(b.start, ready=ready))
            activity = standin.message("echo once")
            async with aiohttp.ClientSession() as http:
                async def post(r: Replica) -> int:
                    url = f"http://127.0.0.1:{r.port}/api/messages"
                    headers = {"Authorization": f"Bearer {standin.activity_token()}"}
                    async with http.post(url, json=activity, headers=headers) as response:
                        return response.status
                assert await asyncio.gather(post(a), post(b)) == [200, 200]
            await standin.wait_for(lambda calls: [c for c in calls if c.method == "PUT"
                                                  and "echo: once" in runs_text(cards(c))], timeout=30)
            await asyncio.sleep(1.5)   # room for a second run or post, which must not come
        finally:
            a.stop()
            b.stop()
            await standin.close()
        assert [r[2] for r in runs(tmp_path / "runs.txt") if r[0] == "end"] == ["once"]
        assert len([c for c in standin.calls if c.method == "POST"]) == 1
        assert len([c for c in standin.calls if c.method == "PUT" and "echo: once" in runs_text(cards(c))]) == 1
    asyncio.run(asyncio.wait_for(main(), 120))
