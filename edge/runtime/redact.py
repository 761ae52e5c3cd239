"""One redactor for an agent's credentials, applied where data leaves the agent kind.

A server may echo a header back: in an error body, in a successful answer (a request echo), base64-
or URL-encoded, JSON-escaped, or cut in the middle. So a credential is never looked for whole: every
run of MIN_RUN characters of it, and of each of its encoded forms, is replaced, and runs that touch
are merged into one `[redacted]`. The redactor is applied to failure reasons, partial answers,
answers and progress lines alike, before anything is cut, journaled, drawn or logged.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Awaitable, Iterable
from typing import Any
from urllib.parse import quote, quote_plus

from oz0.edge.contracts.json_data import MAX_JSON_DEPTH
from oz0.edge.model.job import JobFailure
from oz0.edge.runtime.context import RunContext

__all__ = ["MIN_RUN", "REDACTED", "Redactor"]

MIN_RUN = 8
REDACTED = "[redacted]"
_MIN_SECRET = 4  # a shorter value (a flag, a region) is not treated as a credential


def _forms(secret: str) -> set[str]:
    """The secret as it may appear in text: plain, escaped, URL-encoded, hex, base64 at each offset."""
    forms = {secret, secret.strip(), repr(secret)[1:-1], json.dumps(secret)[1:-1],
             json.dumps(secret, ensure_ascii=False)[1:-1], quote(secret, safe=""), quote_plus(secret),
             quote(secret)}
    forms |= {f.replace("/", "\\/") for f in list(forms)}
    raw = secret.encode("utf-8", "surrogatepass")
    forms.add(binascii.hexlify(raw).decode())
    for offset in range(3):  # which of the secret's base64 characters are fixed depends on where it starts
        encoded = base64.b64encode(b"\0" * offset + raw).decode().rstrip("=")
        skip = (offset * 4 + 2) // 3 if offset else 0
        body = encoded[skip:len(encoded) - 2]
        forms.update({body, body.replace("+", "-").replace("/", "_")})
    return {f for f in forms if len(f) >= _MIN_SECRET}


class Redactor:
    """Replaces every run of MIN_RUN characters of the given secrets (in any of their forms)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        needles: set[str] = set()
        for secret in secrets:
            if len(secret.strip()) < _MIN_SECRET:
                continue
            for form in _forms(secret):
                if len(form) <= MIN_RUN:
                    needles.add(form)
                else:
                    needles.update(form[i:i + MIN_RUN] for i in range(len(form) - MIN_RUN + 1))
        self._needles = tuple(sorted(needles))

    def __bool__(self) -> bool:
        return bool(self._needles)

    @property
    def hold(self) -> int:
        """How many trailing characters of a redacted text still growing may change when more comes
        (a run of a secret cut at its end): a stream holds them back (edge.runtime.text_out)."""
        return MIN_RUN + len(REDACTED) if self._needles else 0

    def text(self, text: str) -> str:
        """The text with every run of a secret replaced by one `[redacted]`."""
        if not self._needles or not text:
            return text
        spans: list[tuple[int, int]] = []
        for needle in self._needles:
            start = text.find(needle)
            while start != -1:
                spans.append((start, start + len(needle)))
                start = text.find(needle, start + 1)
        if not spans:
            return text
        spans.sort()
        out: list[str] = []
        at = 0
        cur_start, cur_end = spans[0]
        for start, end in spans[1:]:
            if start <= cur_end:
                cur_end = max(cur_end, end)
                continue
            out += [text[at:cur_start], REDACTED]
            at, (cur_start, cur_end) = cur_end, (start, end)
        out += [text[at:cur_start], REDACTED, text[cur_end:]]
        return "".join(out)

    def data(self, value: Any, _depth: int = 0) -> Any:
        """JSON data with every string (keys too) redacted; data nested past MAX_JSON_DEPTH is left
        as it is, for the runtime refuses it whole (InvalidOutput) without quoting it."""
        if not self._needles or _depth > MAX_JSON_DEPTH:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.data(v, _depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v, _depth + 1) for v in value]
        return value

    def failure(self, failure: JobFailure) -> JobFailure:
        """The same failure, its reason and partial answer redacted."""
        return JobFailure(failure.kind, self.text(failure.reason), partial_output=self.data(failure.partial_output))

    def context(self, ctx: RunContext) -> RunContext:
        """A RunContext whose progress messages are redacted before they reach the sink."""
        sink = ctx.on_progress
        if sink is None or not self._needles:
            return ctx
        return dataclasses.replace(ctx, on_progress=lambda p: sink(dataclasses.replace(p, message=self.text(p.message))))

    async def run(self, work: Awaitable[Any]) -> Any:
        """Await an agent kind's work: its answer redacted, its failure redacted, and any other error
        turned into a redacted `Crashed` failure (so no traceback carrying a secret reaches a log)."""
        try:
            answer = await work
        except JobFailure as failure:
            raise self.failure(failure) from None
        except Exception as exc:
            raise JobFailure("Crashed", self.text(f"the agent raised {type(exc).__name__}: {exc}")) from None
        return self.data(answer)
