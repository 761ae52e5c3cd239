"""DBOS's own event loop, where its queues run their coroutine workflows and which its stop waits for.

A job started at once (edge.runtime.durable `Engine.execute`, not through its queue's next poll) must
run there too, or a graceful stop cancels it mid-step (DBOS's synchronous start runs it there, but a
stop then cancels it as well). DBOS has no public accessor for that loop, so this module alone reaches
the private one; the DBOS version is pinned by deploy/requirements.lock, and every engine test fails if
the name moves.
"""

from __future__ import annotations

import asyncio

from dbos._dbos import _get_dbos_instance

__all__ = ["engine_loop"]


def engine_loop() -> asyncio.AbstractEventLoop | None:
    """The launched DBOS instance's background loop (None before it runs)."""
    loop: asyncio.AbstractEventLoop | None = _get_dbos_instance()._background_event_loop.target_loop()
    return loop
