"""Waiting in tests for what happens after an ack, always with a deadline: poll a check until it holds, or
await a reader of a stream; past the deadline, a failing assert saying what was seen, never a hang."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["bounded", "eventually"]


async def eventually(check: Callable[[], Any], *, within: float = 20.0,
                     seen: Callable[[], Any] | None = None) -> Any:
    """`check()` once it is truthy; AssertionError naming the check (and `seen()`, the state it read last)
    when it is not within `within` s."""
    deadline = time.monotonic() + within
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {check}" + ("" if seen is None else f"; seen: {seen()!r}"))
        await asyncio.sleep(0.02)
    return value


async def bounded(reading: Awaitable[Any], seen: list[Any], *, within: float = 20.0) -> Any:
    """What `reading` (a reader appending to `seen`) returns; AssertionError with `seen` when it has not
    finished within `within` s (a stream that never ends, a job that never asks)."""
    try:
        return await asyncio.wait_for(reading, within)
    except TimeoutError:
        raise AssertionError(f"not finished within {within}s; seen: {seen!r}") from None
