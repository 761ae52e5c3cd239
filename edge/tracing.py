"""OpenTelemetry traces of asks: a trace per ask, a span for each of its parts, across replicas.

Exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set,
configured by the SDK's own variables (`OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`,
`OTEL_BSP_SCHEDULE_DELAY`, ...). Unset, nothing is traced and the SDK is never imported: `span()` is a
null context manager and `carrier()` is None, so an untraced run pays one environment lookup a span.

A job carries its ask's W3C trace context (`jobs.trace_context`, a `traceparent` mapping): the replica that
runs it, or delivers its card, continues that trace (`span(..., parent=job.trace_context)`).

This module is the ground under the floors (like errors.py): any floor may import it; it imports none.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the SDK's types only: it is imported when an endpoint is set
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

__all__ = ["SpanNote", "carrier", "current_trace_id", "enabled", "flush", "job_known", "log_fields", "span",
           "trace_id_of"]

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
SERVICE = "oz0"

_JOB: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("oz0_job", default=None)
_lock = threading.Lock()
_tracers: dict[str, tuple[TracerProvider, Tracer]] = {}  # endpoint -> (provider, tracer); a changed endpoint gets a provider of its own


class SpanNote:
    """What a caller may add to its span: attributes, and an error status (a failed job, a refused card)."""

    def __init__(self, span: Span | None = None) -> None:
        self._span = span

    def set(self, **attributes: str | int | float | bool | None) -> None:
        if self._span is not None:
            self._span.set_attributes({f"oz0.{k}": v for k, v in attributes.items() if v is not None})

    def failed(self, why: str) -> None:
        if self._span is not None:
            from opentelemetry.trace import Status, StatusCode  # the SDK is loaded: this span is real

            self._span.set_status(Status(StatusCode.ERROR, why))


def enabled() -> bool:
    return any(os.environ.get(name) for name in _ENDPOINTS)


def _tracer() -> Tracer:
    endpoint = next(os.environ[name] for name in _ENDPOINTS if os.environ.get(name))
    with _lock:
        held = _tracers.get(endpoint)
        if held is None:
            # the SDK and its OTLP exporter are imported only when an endpoint is set (~100 ms of imports)
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            resource = Resource.create({} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": SERVICE})
            provider = TracerProvider(resource=resource)
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # reads the OTEL_* variables
            held = _tracers[endpoint] = (provider, provider.get_tracer("oz0"))
        return held[1]


def flush(timeout_s: float = 5.0) -> None:
    """Export the spans still buffered (a stopping server, a test reading its receiver)."""
    with _lock:
        providers = [provider for provider, _ in _tracers.values()]
    for provider in providers:
        provider.force_flush(int(timeout_s * 1000))


@contextlib.contextmanager
def span(name: str, *, parent: Mapping[str, str] | None = None, **attributes: str | int | float | bool | None,
         ) -> Iterator[SpanNote]:
    """A span named `name`, child of the current span, or of `parent` (a job's journaled trace context)
    when given; attributes are prefixed `oz0.`. An exception leaving it marks it an error named by the
    exception's type alone (no message, no traceback: either may quote a secret)."""
    if not enabled():
        yield SpanNote()
        return
    context = None
    if parent:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        context = TraceContextTextMapPropagator().extract(dict(parent))
    attrs = {f"oz0.{k}": v for k, v in attributes.items() if v is not None}
    with _tracer().start_as_current_span(name, context=context, attributes=attrs, record_exception=False,
                                         set_status_on_exception=False) as current:
        try:
            yield SpanNote(current)
        except BaseException as exc:
            SpanNote(current).failed(type(exc).__name__)  # its type only: a message may quote a secret
            raise


def carrier() -> dict[str, str] | None:
    """The current span's W3C trace context (`{"traceparent": ...}`), for a job to carry; None untraced."""
    if not enabled():
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    out: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(out)
    return out or None


def trace_id_of(context: Mapping[str, object] | None) -> str | None:
    """The 32-hex-digit trace id in a journaled trace context, or None."""
    found = _TRACEPARENT.match(str((context or {}).get("traceparent", "")))
    return found.group(1) if found else None


def current_trace_id() -> str | None:
    """The trace id of the current span (a log line's), or None untraced."""
    return trace_id_of(carrier())


@contextlib.contextmanager
def job_known(job_id: str, agent: str) -> Iterator[None]:
    """Inside: every log line knows the job it is about (`log_fields`), traced or not."""
    token = _JOB.set((job_id, agent))
    try:
        yield
    finally:
        _JOB.reset(token)


def log_fields() -> dict[str, str]:
    """What a log line knows of where it is: the job and agent, and the trace, when known."""
    fields: dict[str, str] = {}
    job = _JOB.get()
    if job is not None:
        fields["job_id"], fields["agent"] = job
    trace = current_trace_id()
    if trace is not None:
        fields["trace_id"] = trace
    return fields
