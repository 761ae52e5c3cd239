"""`OZ0_LOG_FORMAT=json`: one JSON object per log line, for a log pipeline to read without parsing text.

Each line has `time` (UTC, RFC 3339), `level`, `logger`, `message`, the `replica`, and where known the
`job_id`, `agent` and `trace_id` (edge/tracing.py's context of the code that logged). The message and
any exception summary go through the runtime's one Redactor over this process's credentials (each
environment variable whose name says it holds one), so a secret a log line quotes is `[redacted]`
here as everywhere else. An exception is its type and message, never a traceback (set OZ0_DEBUG=1 and
the text format for that).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

from oz0.edge import tracing
from oz0.edge.runtime.recovery import runner_id
from oz0.edge.runtime.redact import Redactor

__all__ = ["JsonFormatter", "environment_secrets", "wants_json"]

_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY|CREDENTIAL|SIGNING|_KEY$", re.I)


def wants_json(env: Mapping[str, str] | None = None) -> bool:
    return ((os.environ if env is None else env).get("OZ0_LOG_FORMAT") or "").strip().lower() == "json"


def environment_secrets(env: Mapping[str, str] | None = None) -> list[str]:
    """The credentials in the environment: values of variables named like one, and URL passwords
    (a database URL's)."""
    env = os.environ if env is None else env
    found = [value for name, value in env.items() if _SECRET_NAME.search(name) and value]
    for value in env.values():
        if "://" in value:
            try:
                password = urlsplit(value).password
            except ValueError:
                continue
            if password:
                found.append(password)
    return found


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON, redacted."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor if redactor is not None else Redactor(environment_secrets())
        self.replica = runner_id().split(":")[0]

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message += f" ({type(error).__name__}: {error})"
        line = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name, "message": self.redactor.text(message),
            "replica": self.replica, **tracing.log_fields(),
        }
        return json.dumps(line, ensure_ascii=False)
