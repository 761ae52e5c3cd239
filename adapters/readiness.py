"""Whether the chat channels of `oz0 serve` are up, for the console's `GET /readyz`.

`oz0 serve` marks each channel running when it starts it, and ended (or failed) when its task ends;
on a stop signal every channel is stopping, so a load balancer drains the replica before it exits.
A channel that connects to something (a Socket Mode websocket, the Discord gateway) may report
`disconnected(runtime, "discord", "gateway reconnecting")` and `connected(runtime, "discord")`; until
it reports a disconnection, a running channel counts as ready.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from oz0.edge import RuntimeFace

__all__ = ["ChannelStates", "channel_states", "connected", "disconnected"]

READY = ("running", "connected")
ENDED = ("ended", "failed")


class ChannelStates:
    """The state of each channel of one runtime: running, connected, disconnected: WHY, stopping, ended, failed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}

    def set(self, name: str, state: str) -> None:
        with self._lock:
            self._states[name] = state

    def running(self, name: str) -> None:
        self.set(name, "running")

    def ended(self, name: str, *, failed: bool) -> None:
        self.set(name, "failed" if failed else "ended")

    def stopping(self) -> None:
        """Every channel still up is stopping (one that already ended keeps saying how)."""
        with self._lock:
            for name, state in self._states.items():
                if state not in ENDED:
                    self._states[name] = "stopping"

    def snapshot(self) -> dict[str, str]:
        with self._lock:
            return dict(self._states)

    def problems(self) -> dict[str, str]:
        """The channels that are not ready, each with its state."""
        return {name: state for name, state in self.snapshot().items() if state not in READY}


_by_runtime: weakref.WeakKeyDictionary[Any, ChannelStates] = weakref.WeakKeyDictionary()
_by_runtime_lock = threading.Lock()


def channel_states(runtime: RuntimeFace) -> ChannelStates:
    """The channel states of `runtime` (one set per runtime, made on first use)."""
    with _by_runtime_lock:
        states = _by_runtime.get(runtime)
        if states is None:
            states = _by_runtime[runtime] = ChannelStates()
        return states


def connected(runtime: RuntimeFace, channel: str) -> None:
    """A channel says it is connected (again)."""
    channel_states(runtime).set(channel, "connected")


def disconnected(runtime: RuntimeFace, channel: str, why: str) -> None:
    """A channel says it lost its connection (or has not made it yet): /readyz answers 503 until it reconnects."""
    channel_states(runtime).set(channel, f"disconnected: {why}"[:200])
