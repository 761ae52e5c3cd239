"""What the chat channels share around a job: tasks that are never lost and never fail silently."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from oz0.adapters.chat.restarts import report_interrupted
from oz0.adapters.chat.tasks import ChannelTasks
from oz0.edge.model.reply_ref import ReplyRef

log = logging.getLogger("oz0.test.chat_jobs")


def test_a_failing_task_is_logged_and_a_slow_one_is_cancelled_on_drain(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> list[str]:
        tasks = ChannelTasks("Test", log=log, grace_s=0.05)
        ended: list[str] = []

        async def boom() -> None:
            raise RuntimeError("boom inside")

        async def slow() -> None:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                ended.append("cancelled")
                raise

        tasks.spawn(boom(), name="boom-task")
        tasks.spawn(slow(), name="slow-task")
        await asyncio.sleep(0)
        await tasks.drain()
        assert len(tasks) == 0
        return ended

    with caplog.at_level(logging.WARNING, logger=log.name):
        assert asyncio.run(main()) == ["cancelled"]
    assert "Test task boom-task failed" in caplog.text and "boom inside" in caplog.text
    assert "stopped with 1 Test job(s) still running" in caplog.text


def test_report_interrupted_reaches_every_asker_of_its_platform_even_when_one_fails(
        caplog: pytest.LogCaptureFixture) -> None:
    jobs = [SimpleNamespace(id="j1", reply_to=ReplyRef("slack", 1, {"channel": "C1"}), channel_id="C1"),
            SimpleNamespace(id="j2", reply_to=ReplyRef("discord", 1, {"channel": "D1"}), channel_id="D1"),
            SimpleNamespace(id="j3", reply_to=None, channel_id=None),
            SimpleNamespace(id="j4", reply_to=ReplyRef("slack", 1, {"channel": "C2"}), channel_id="C2")]
    delivered: list[tuple[str, str | None]] = []

    def card_for(job: SimpleNamespace):
        raise LookupError("agent uninstalled")

    async def deliver(job: SimpleNamespace, card) -> None:
        if job.id == "j1":
            raise ConnectionError("slack is down")
        delivered.append((job.id, card.status.message))

    with caplog.at_level(logging.ERROR, logger=log.name):
        asyncio.run(report_interrupted(jobs, platform="slack", log=log, card_for=card_for, deliver=deliver))
    assert delivered == [("j4", "oz0 restarted while job j4 was running; ask again.")]
    assert "could not report interrupted job j1 to slack channel C1" in caplog.text


def test_drain_waits_for_the_tasks_a_task_spawns_while_draining() -> None:
    """A listener's task spawns the job's task after its ack: a stop must let that one finish too."""
    async def main() -> list[str]:
        tasks = ChannelTasks("Test", log=log, grace_s=5.0)
        ended: list[str] = []

        async def job() -> None:
            await asyncio.sleep(0.05)
            ended.append("job")

        async def listener() -> None:
            await asyncio.sleep(0.05)
            tasks.spawn(job(), name="job-task")
            ended.append("listener")

        tasks.spawn(listener(), name="listener-task")
        await tasks.drain()
        return ended

    assert asyncio.run(main()) == ["listener", "job"]
