"""Waiting in tests for what happens after an ack: poll a check until it holds, with a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

__all__ = ["eventually"]


async def eventually(check: Callable[[], Any], *, within: float = 20.0) -> Any:
    """`check()` once it is truthy; AssertionError naming the check when it is not within `within` s."""
    deadline = time.monotonic() + within
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {check}")
        await asyncio.sleep(0.02)
    return value
