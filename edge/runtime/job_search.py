"""Job search: the journal's jobs filtered by agent, status, asker and creation time, newest first.

One reading of the filters for every face (`oz0 jobs`, `GET /v1/jobs`, the console's Jobs page), so a
bad value gets the same error everywhere, naming the parameter. Pages are keyset pages over
(created, id): a page never repeats or skips a job while new ones arrive (they are newer than any
cursor), and each costs one index range scan however deep (revisions 0016 and 0025 add the indexes). The
cursor is opaque to callers: base64url of the last row's (created, id).

A page is read in two steps in one statement: the ids of the page from an index alone (each filter's
`(..., created, id)` index holds every column the step reads, so Postgres walks it backwards from the
cursor and stops after one page whatever the filter matches), then those jobs' rows by primary key. Read
in one step, the planner may walk the `created` index and filter each row instead, which is quick when
the filter's jobs are spread evenly over time and reads most of the journal when they are not (an agent
that last ran months ago: 340 ms over 1,000,000 jobs, bench/jobs_search.py).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, get_args

from sqlalchemy import select, tuple_
from sqlalchemy.engine import Engine

from oz0.edge.errors import Oz0Error
from oz0.edge.model.job import JobStatus
from oz0.edge.runtime.store import jobs

__all__ = ["DEFAULT_PAGE", "MAX_PAGE", "JobPage", "JobQuery", "SearchError", "parse_query", "search_jobs"]

DEFAULT_PAGE = 50
MAX_PAGE = 500
STATUSES: tuple[str, ...] = get_args(JobStatus)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_MAX_TEXT = 200


class SearchError(ValueError, Oz0Error):
    """A search parameter that cannot be read; `param` names it (`since`, `status`, `cursor`...)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class JobQuery:
    agent: str | None = None
    status: str | None = None
    asker: str | None = None
    since: float | None = None
    until: float | None = None
    limit: int = DEFAULT_PAGE
    after: tuple[float, str] | None = None  # the last row of the previous page


@dataclass(frozen=True)
class JobPage:
    rows: tuple[dict[str, Any], ...]
    next_cursor: str | None  # None: this was the last page


def parse_when(param: str, text: str, *, now: float) -> float:
    """A time as epoch seconds: a duration back from now (`90s`, `30m`, `2h`, `7d`, `1w`) or an ISO 8601
    time (`2026-12-01`, `2026-12-01T09:00`, `...+02:00`; without an offset it is UTC)."""
    found = _DURATION.match(text)
    if found:
        return now - float(found.group(1)) * _UNITS[found.group(2)]
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SearchError(param, f"{param}={text[:_MAX_TEXT]!r} is neither a duration (90s, 30m, 2h, 7d, 1w) "
                                 "nor an ISO 8601 time (2026-12-01T09:00Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def encode_cursor(created: float, job_id: str) -> str:
    raw = json.dumps([created, job_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> tuple[float, str]:
    bad = SearchError("cursor", "cursor is not one this server gave (pass next_cursor from the previous page "
                                "unchanged)")
    if len(text) > 400:
        raise bad
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise bad from None
    if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], (int, float))
            or isinstance(value[0], bool) or not isinstance(value[1], str)):
        raise bad
    return float(value[0]), value[1]


def _text(param: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if len(value) > _MAX_TEXT:
        raise SearchError(param, f"{param} is {len(value)} characters; the limit is {_MAX_TEXT}")
    return value


def parse_query(*, agent: str | None = None, status: str | None = None, asker: str | None = None,
                since: str | None = None, until: str | None = None, limit: str | int | None = None,
                cursor: str | None = None, now: float | None = None) -> JobQuery:
    """The search as its faces receive it (text), checked; a SearchError names the first bad parameter."""
    now = time.time() if now is None else now
    status = _text("status", status)
    if status is not None and status not in STATUSES:
        raise SearchError("status", f"status={status!r} is not a job status; one of: {', '.join(STATUSES)}")
    page = DEFAULT_PAGE
    if limit is not None and limit != "":
        try:
            page = int(limit)
        except ValueError:
            raise SearchError("limit", f"limit={str(limit)[:_MAX_TEXT]!r} is not a whole number") from None
        if not 1 <= page <= MAX_PAGE:
            raise SearchError("limit", f"limit={page} is out of range: from 1 to {MAX_PAGE} jobs a page")
    start = parse_when("since", since, now=now) if since else None
    end = parse_when("until", until, now=now) if until else None
    if start is not None and end is not None and start > end:
        raise SearchError("until", f"until ({until}) is before since ({since})")
    return JobQuery(agent=_text("agent", agent), status=status, asker=_text("asker", asker), since=start,
                    until=end, limit=page, after=decode_cursor(cursor) if cursor else None)


def search_jobs(engine: Engine, query: JobQuery) -> JobPage:
    """One page of the jobs matching `query`, newest first, and the cursor of the next page."""
    c = jobs.c
    newest_first = (c.created.desc(), c.id.desc())
    ids = select(c.id).order_by(*newest_first).limit(query.limit + 1)
    for column, value in ((c.agent, query.agent), (c.status, query.status), (c.requester, query.asker)):
        if value is not None:
            ids = ids.where(column == value)
    if query.since is not None:
        ids = ids.where(c.created >= query.since)
    if query.until is not None:
        ids = ids.where(c.created < query.until)
    if query.after is not None:
        ids = ids.where(tuple_(c.created, c.id) < tuple_(*query.after))  # a row comparison: an index bound
    page = ids.subquery("page")
    stmt = select(jobs).join(page, c.id == page.c.id).order_by(*newest_first)
    with engine.connect() as conn:
        rows = [dict(r) for r in conn.execute(stmt).mappings()]
    more = len(rows) > query.limit
    rows = rows[:query.limit]
    cursor = encode_cursor(rows[-1]["created"], rows[-1]["id"]) if more else None
    return JobPage(tuple(rows), cursor)
