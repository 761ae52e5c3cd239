"""A command run on a real terminal (a pty), answered as a person at its prompts would answer."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time

__all__ = ["on_a_pty"]


def on_a_pty(argv: list[str], env: dict[str, str], answers: list[tuple[bytes, int, bytes]], *,
             timeout_s: float = 90) -> tuple[int, str]:
    """Run `argv` with a pty as its stdin, stdout and stderr; each answer `(prompt, nth, typed)` is
    typed, in order, once `prompt` has shown `nth` times. Returns the exit code and all it wrote."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(argv, stdin=secondary, stdout=secondary, stderr=secondary, env=env, close_fds=True)
    os.close(secondary)
    seen, left = b"", list(answers)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(primary, 4096)
                except OSError:  # the command ended and closed the terminal
                    break
            if left and seen.count(left[0][0]) >= left[0][1]:
                os.write(primary, left.pop(0)[2])
            if proc.poll() is not None and not ready:
                break
        code = proc.wait(timeout=30)
    finally:
        os.close(primary)
        if proc.poll() is None:
            proc.kill()
    return code, seen.decode("utf-8", "replace")
