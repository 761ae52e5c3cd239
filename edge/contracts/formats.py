"""Which `format` values a contract asserts: the same in every dialect it may declare.

JSON Schema makes `format` an annotation by default from 2019-09 on, and the validator follows the
dialect: without help a draft-07 contract enforces `email` and a 2020-12 one does not. A contract here
is a promise, so every dialect asserts formats (`validate_formats=True`). `duration` and `uuid` came
with 2019-09; a draft-07 contract gets the same two checks below, so a value passes or fails alike
whatever the `$schema`. A format the validator does not know is an annotation, as the spec says.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["CHECKED_FORMATS", "formats_for"]

CHECKED_FORMATS = ("date", "date-time", "time", "duration", "email", "idn-email", "hostname", "idn-hostname",
                   "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uri-template",
                   "json-pointer", "relative-json-pointer", "regex", "uuid")

_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"
_DURATION = re.compile(rf"P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:{_TIME})?|{_TIME}|\d+W)", re.ASCII)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _duration(value: str) -> bool:
    """RFC 3339 Appendix A's `duration`, as 2019-09 and 2020-12 define the format."""
    return _DURATION.fullmatch(value) is not None


def _uuid(value: str) -> bool:
    """RFC 4122's hyphenated form, as 2019-09 and 2020-12 define the format."""
    return _UUID.fullmatch(value) is not None


_DRAFT_07_EXTRA: dict[str, Callable[[str], bool]] = {"duration": _duration, "uuid": _uuid}


def formats_for(dialect: str) -> dict[str, Callable[[str], bool]] | None:
    """The checks the validator is given beyond its own for a contract of `dialect` (a `$schema` URI)."""
    return _DRAFT_07_EXTRA if "draft-07" in dialect else None
