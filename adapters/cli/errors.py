"""The command line's error type, kept apart (importing nothing) so that any command module may
raise it without importing the command table."""

from __future__ import annotations

__all__ = ["CommandError"]


class CommandError(Exception):
    """A failure the user can act on: printed as one line on stderr, exit code `code`, no traceback."""

    def __init__(self, message: str, *, code: int = 2, error_code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.error_code = error_code or ("usage_error" if code == 2 else "command_failed")  # under --json
