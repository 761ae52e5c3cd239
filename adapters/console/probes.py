"""The console's probes: `GET /healthz`, `GET /readyz` and `GET /metrics`.

- /healthz: the process answers (liveness). No login, no checks, nothing about the installation.
- /readyz: the database takes a write within 2 s (a row written and taken back, so a full disk or a
  read-only server fails it; a SQLite journal also needs READY_MIN_FREE_BYTES free), every chat channel of `oz0 serve` is up, and the job
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
import os
import shutil
import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import delete, insert
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from oz0.adapters.readiness import channel_states
from oz0.edge import RuntimeFace
from oz0.edge.runtime.metrics import metrics_registry
from oz0.edge.runtime.store import claims

__all__ = ["OPEN_PATHS", "READY_DB_TIMEOUT_S", "routes"]

log = logging.getLogger("oz0.console")

OPEN_PATHS = ("/healthz", "/readyz")
READY_DB_TIMEOUT_S = 2.0
READY_MIN_FREE_BYTES = 4 << 20   # a SQLite journal's disk with less free is not ready (the next writes would fail)


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
    def probe() -> int | None:
        _write_probe(runtime.store.engine, f"readyz:{os.getpid()}")
        return _free_bytes(runtime.store.engine)

    try:
        free = await asyncio.wait_for(run_in_threadpool(probe), timeout=READY_DB_TIMEOUT_S)
    except TimeoutError:
        log.warning("readyz: the database did not answer within %.0f s", READY_DB_TIMEOUT_S)
        return {"ok": False, "error": f"no answer within {READY_DB_TIMEOUT_S:.0f} s"}
    except (SQLAlchemyError, OSError) as exc:
        log.warning("readyz: the database cannot be written: %s", type(exc).__name__)
        return {"ok": False, "error": type(exc).__name__}
    if free is not None and free < READY_MIN_FREE_BYTES:
        log.warning("readyz: the journal's disk has %d bytes free", free)
        return {"ok": False, "error": f"the journal's disk has {free // 1024} KiB free (under "
                                      f"{READY_MIN_FREE_BYTES >> 20} MiB)"}
    return {"ok": True}


def _write_probe(engine: Engine, key: str) -> None:
    """A row written and taken back in one transaction: raises where the database cannot be written
    (a read-only or failed-over server, a full disk), though it may still answer reads."""
    with engine.begin() as conn:
        conn.execute(delete(claims).where(claims.c.key == key))
        conn.execute(insert(claims).values(key=key, at=time.time()))
        conn.execute(delete(claims).where(claims.c.key == key))


def _free_bytes(engine: Engine) -> int | None:
    """Free space on a SQLite journal's disk (None for a server database)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    return shutil.disk_usage(os.path.dirname(os.path.abspath(database))).free


def _channels(runtime: RuntimeFace) -> dict[str, Any]:
    states = channel_states(runtime)
    problems = states.problems()
    return {"ok": not problems, "states": states.snapshot()}


def _engine(runtime: RuntimeFace) -> dict[str, Any]:
    launched = bool(getattr(runtime, "engine_launched", True))
    return {"ok": launched} if launched else {"ok": False, "error": "the job engine is not launched"}
