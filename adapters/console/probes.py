"""The console's probes: `GET /healthz`, `GET /readyz` and `GET /metrics`.

- /healthz: the process answers (liveness). No login, no checks, nothing about the installation.
- /readyz: the database answers within 2 s, every chat channel of `oz0 serve` is up, and the job
  engine is launched; 200, or 503 naming the failed checks (by kind only: an exception's type, a
  channel's state; never a message that could carry a host or a secret). No login: load balancers
  and the kubelet probe it.
- /metrics: the Prometheus text format (oz0.edge.runtime.metrics). It follows the console's token:
  open on loopback without one, `Authorization: Bearer <OZ0_CONSOLE_TOKEN>` when one is set, because
  agent names and job volumes are the installation's business, and the console bound off loopback is
  reachable by more than the scraper.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from oz0.adapters.readiness import channel_states
from oz0.edge.runtime.metrics import metrics_registry
from oz0.edge import RuntimeFace

__all__ = ["OPEN_PATHS", "READY_DB_TIMEOUT_S", "routes"]

log = logging.getLogger("oz0.console")

OPEN_PATHS = ("/healthz", "/readyz")
READY_DB_TIMEOUT_S = 2.0


def routes(runtime: RuntimeFace) -> list[Route]:
    """The three probe routes over `runtime`."""
    registry = metrics_registry(runtime)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def readyz(request: Request) -> Response:
        checks = {"database": await _database(runtime), "channels": _channels(runtime),
                  "engine": _engine(runtime)}
        ready = all(check["ok"] for check in checks.values())
        return JSONResponse({"ok": ready, "checks": checks}, status_code=200 if ready else 503)

    async def metrics(request: Request) -> Response:
        try:
            body = await run_in_threadpool(generate_latest, registry)
        except SQLAlchemyError as exc:
            log.warning("metrics: the journal cannot be read: %s", type(exc).__name__)
            return PlainTextResponse(f"the journal cannot be read ({type(exc).__name__})\n", status_code=503)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"])]


async def _database(runtime: RuntimeFace) -> dict[str, Any]:
    def ping() -> None:
        with runtime.store.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    try:
        await asyncio.wait_for(run_in_threadpool(ping), timeout=READY_DB_TIMEOUT_S)
    except asyncio.TimeoutError:
        log.warning("readyz: the database did not answer within %.0f s", READY_DB_TIMEOUT_S)
        return {"ok": False, "error": f"no answer within {READY_DB_TIMEOUT_S:.0f} s"}
    except SQLAlchemyError as exc:
        log.warning("readyz: the database cannot be reached: %s", type(exc).__name__)
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True}


def _channels(runtime: RuntimeFace) -> dict[str, Any]:
    states = channel_states(runtime)
    problems = states.problems()
    return {"ok": not problems, "states": states.snapshot()}


def _engine(runtime: RuntimeFace) -> dict[str, Any]:
    launched = bool(getattr(runtime, "engine_launched", True))
    return {"ok": launched} if launched else {"ok": False, "error": "the job engine is not launched"}
