"""A free loopback port for a server a test starts later, or in another process.

A port the system picks (bind to port 0) comes from its ephemeral range, the range every outgoing
connection's local port comes from too: between the pick and the server's bind, a connection (to the
test's Postgres, say) may take it, and the server fails with "address already in use". So the port is
drawn at random from just below that range, where the system never hands out a port by itself, and
checked free. A server that can listen on port 0 and say which it got is better still.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_SPAN = 10_000
_TRIES = 200
_pick = random.SystemRandom()   # not the suite's seeded `random`: two test processes draw apart


def _outside_ephemeral() -> range:
    """Up to 10,000 ports just below the ephemeral range (or above it, when it starts too low)."""
    try:
        first, last = (int(n) for n in _RANGE_FILE.read_text().split()[:2])
    except (OSError, ValueError):
        first, last = 32768, 60999   # Linux's defaults; other systems use 49152 and up
    if first - 1024 >= _SPAN // 10:
        return range(max(1024, first - _SPAN), first)
    return range(last + 1, min(65536, last + 1 + _SPAN))


def free_port() -> int:
    """A port on 127.0.0.1 that nothing holds now and the system will not give away by itself."""
    ports = _outside_ephemeral()
    if not ports:
        raise RuntimeError(f"the ephemeral port range ({_RANGE_FILE}) leaves no ports outside it")
    for _ in range(_TRIES):
        port = _pick.choice(ports)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port on 127.0.0.1 in {ports.start}-{ports.stop - 1} after {_TRIES} tries")
