"""A loopback OTLP/HTTP trace receiver: what a collector would get, decoded from the wire.

It answers `POST /v1/traces` (protobuf ExportTraceServiceRequest, the OTLP/HTTP exporter's default) on
127.0.0.1 from a thread of its own, and keeps every span as a plain `Span` (hex ids, name, attributes),
so a test asserts on what an operator's tracing backend would show."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["OtlpReceiver", "Span"]


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    service: str
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind in ("string_value", "bool_value", "int_value", "double_value") else str(v)


class OtlpReceiver:
    """`with OtlpReceiver() as otlp:` a receiver at `otlp.endpoint` (for OTEL_EXPORTER_OTLP_ENDPOINT)."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.requests = 0
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.endpoint = ""

    async def _traces(self, request: web.Request) -> web.Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        found = []
        for resource_spans in message.resource_spans:
            attrs = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for s in scope.spans:
                    found.append(Span(
                        s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex() or None, s.name,
                        str(attrs.get("service.name", "")), {a.key: _value(a.value) for a in s.attributes},
                        s.status.message if s.status.code == 2 else None))
        with self._lock:
            self.spans += found
            self.requests += 1
        return web.Response(body=ExportTraceServiceResponse().SerializeToString(),
                            content_type="application/x-protobuf")

    def _serve(self) -> None:
        async def main() -> None:
            app = web.Application()
            app.router.add_post("/v1/traces", self._traces)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.endpoint = f"http://127.0.0.1:{port}"
            self._stop = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            self._ready.set()
            await self._stop.wait()
            await runner.cleanup()

        asyncio.run(main())

    def __enter__(self) -> OtlpReceiver:
        self._thread = threading.Thread(target=self._serve, name="otlp-receiver", daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "the OTLP receiver did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def named(self, name: str) -> list[Span]:
        with self._lock:
            return [s for s in self.spans if s.name == name]

    def wait_for(self, *names: str, within: float = 20.0) -> list[Span]:
        """Every span once one of each name has arrived; AssertionError with what did arrive otherwise."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self._lock:
                have = {s.name for s in self.spans}
                if set(names) <= have:
                    return list(self.spans)
            time.sleep(0.05)
        with self._lock:
            raise AssertionError(f"spans {sorted(set(names) - {s.name for s in self.spans})} not received within "
                                 f"{within}s; got {[s.name for s in self.spans]}")
