"""The Stop button on the working message, clicked on the replica that does not run the job: two real
`oz0 serve` replicas over one Postgres, the Slack stand-in. The stop reaches the replica running the
job (the event stream over Postgres), its command's processes end, and the working message becomes
the card "stopped by Ana Lima", once."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import aiohttp
from cancel_kit import SLEEPER_FILES, started, wait_gone
from replica_harness import Replica, install_replica_plugin
from slack_standin import SlackStandIn, block_action_body, mention_event_body, signed_headers

from oz0.edge.runtime.runner import Runtime


def _replicas(tmp_path: Path, slack: SlackStandIn, database_url: str) -> list[Replica]:
    made = []
    for name in ("replica-a", "replica-b"):
        home = tmp_path / f"home-{name}"
        install_replica_plugin(home, database_url=database_url, extra=SLEEPER_FILES)
        made.append(Replica.make(name, home, api_url=slack.api_url,
                                 runs_file=tmp_path / "runs.txt", database_url=database_url, OZ0_LEASE_S="2",
                                 OZ0_TEST_PIDS=str(tmp_path / "pids.jsonl")))
    return made


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_the_stop_button_on_the_other_replica_stops_the_job_where_it_runs(tmp_path, postgres_url):
    async def main() -> None:
        async with SlackStandIn() as slack, aiohttp.ClientSession() as http:
            a, b = _replicas(tmp_path, slack, postgres_url)
            try:
                await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
                body = mention_event_body("sleeper zzz", event_id="EvStop")
                async with http.post(a.events_url, data=body.encode(),
                                     headers=signed_headers(body, content_type="application/json")) as resp:
                    assert resp.status == 200
                sleeper = await asyncio.to_thread(started, tmp_path / "pids.jsonl")
                working = (await slack.wait_for("chat.postMessage", 1, timeout=30))[0]
                blocks = json.dumps(working.args.get("blocks"))
                assert '"action_id": "oz0_cancel"' in blocks and f'"value": "{sleeper["job"]}"' in blocks
                runner = a if _parent(sleeper["pids"][0]) == a.process.pid else b
                other = b if runner is a else a
                assert _parent(sleeper["pids"][0]) == runner.process.pid
                click = block_action_body(action_id="oz0_cancel", value=sleeper["job"],
                                          response_url=slack.response_url("stop1"), block_id="oz0_working")
                clicked = time.monotonic()
                async with http.post(other.events_url, data=click.encode(), headers=signed_headers(click)) as resp:
                    assert resp.status == 200
                await asyncio.to_thread(wait_gone, sleeper["pids"])
                stopped = time.monotonic() - clicked
                deadline = time.monotonic() + 30
                while not [c for c in slack.of("chat.update") if "stopped by" in json.dumps(c.args)]:
                    assert time.monotonic() < deadline, "the working message never said the job was stopped"
                    await asyncio.sleep(0.05)
                [card] = [c for c in slack.of("chat.update") if "stopped by" in json.dumps(c.args)]
                assert "stopped by Ana Lima" in json.dumps(card.args)
                assert "oz0_cancel" not in json.dumps(card.args)  # the card has no Stop button
                await asyncio.sleep(1.5)  # room for a second post, which must not come
                notices = [c for c in slack.of("response") if c.path.endswith("stop1")]
                assert [n.args.get("text") for n in notices] == [f"Stopping job {sleeper['job']}…"]
            finally:
                a.stop()
                b.stop()
            assert len([c for c in slack.of("chat.update") if "stopped by" in json.dumps(c.args)]) == 1
            assert stopped < 10, stopped
            runtime = Runtime(tmp_path / "home-replica-a", database_url=postgres_url)
            try:
                job = runtime.job(sleeper["job"])
                assert job is not None and job.status == "cancelled"
                assert job.failure_reason == "stopped by Ana Lima" and job.failure_kind == "Cancelled"
                audit = [r for r in runtime.audit_log(limit=50) if r.action == "job.cancel"]
                assert [(r.actor, r.detail["by_name"]) for r in audit] == [("slack:U0ASKER", "Ana Lima")]
            finally:
                runtime.close()
    asyncio.run(main())
