"""The Stop button on a working message: stop the job it names (edge.runtime.cancel), from any channel.

Not a conversation's Stop (adapters/chat/conversing.py), which ends a thread's conversation and stops
no job: this one stops the running job wherever it runs. Only the job's asker may click it; anyone
else is told so, privately. The clicker is told at once that the stop is under way (a platform's
click must be answered within seconds, a stop may take longer); the working message then becomes the
job's card, "stopped by Ana Lima" (the display name from the channel's names cache), posted once by
the job's own delivery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oz0.edge.runtime.cancel import CancelRefused

if TYPE_CHECKING:
    from oz0.adapters.chat.flow import AskFlow

__all__ = ["JobStopping"]


class JobStopping:
    """One channel's Stop clicks."""

    def __init__(self, flow: AskFlow) -> None:
        self.flow = flow

    async def click(self, job_id: str, by: str, reply: object, *, workspace: str | None = None) -> None:
        flow = self.flow
        stops = flow.runtime.stops
        refused = await flow.jobs.call(lambda: stops.refusal(job_id, by=by))
        if refused is not None:
            await flow.wire.notice(reply, f"Not stopped: {refused.message}.")
            return
        name = await flow.names.of(by, workspace=workspace)
        await flow.wire.notice(reply, f"Stopping job {job_id}…")
        flow.tasks.spawn(self._stop(job_id, by, name), name=f"{flow.wire.platform}-stop-{job_id}")

    async def _stop(self, job_id: str, by: str, name: str) -> None:
        try:
            ended = await self.flow.jobs.run(self.flow.runtime.stops.cancel(job_id, by=by, name=name))
        except CancelRefused as refused:  # it ended between the click and the stop
            self.flow.log.info("job %s was not stopped: %s", job_id, refused.message)
            return
        self.flow.log.info("job %s %s: %s", job_id, ended.status, ended.failure_reason)
