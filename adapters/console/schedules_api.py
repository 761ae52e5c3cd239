"""The plugins' schedules over HTTP (edge.runtime.schedules): `GET /v1/schedules` (next runs, last
result), `POST /v1/schedules/{name}/pause` and `/resume` (the admin token: pausing changes what every
replica runs; audited), and the console's Schedules page."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from oz0.adapters.console.answers import operator
from oz0.edge import ConsoleRuntime
from oz0.edge.results.qzx import result_envelope
from oz0.edge.runtime.schedules import ScheduleError

__all__ = ["routes"]

API_PREFIX = "/v1"
ERROR_HTTP = {"unknown": (404, "unknown_schedule"), "no_engine": (409, "not_started")}


def routes(runtime: ConsoleRuntime, page: Callable[..., Response]) -> list[Route]:
    api = _Schedules(runtime, page)
    return [
        Route("/schedules", api.page, methods=["GET"]),
        Route(f"{API_PREFIX}/schedules", api.list, methods=["GET"]),
        Route(f"{API_PREFIX}/schedules/{{name}}/pause", api.pause, methods=["POST"]),
        Route(f"{API_PREFIX}/schedules/{{name}}/resume", api.resume, methods=["POST"]),
    ]


def _failure(command: str, message: str, code: str, status: int) -> JSONResponse:
    return JSONResponse(result_envelope(command, False, message, error=message, error_code=code), status_code=status)


class _Schedules:
    def __init__(self, runtime: ConsoleRuntime, page: Callable[..., Response]) -> None:
        self.runtime = runtime
        self.render = page

    async def list(self, request: Request) -> Response:
        states = await asyncio.to_thread(self.runtime.schedules.states)
        return JSONResponse(result_envelope("schedules.list", True, f"{len(states)} schedule(s)",
                                            data={"schedules": [s.to_dict() for s in states]}))

    async def pause(self, request: Request) -> Response:
        return await self._set(request, paused=True)

    async def resume(self, request: Request) -> Response:
        return await self._set(request, paused=False)

    async def _set(self, request: Request, *, paused: bool) -> Response:
        command = f"schedules.{'pause' if paused else 'resume'}"
        guard = request.state.guard
        if not guard.is_admin(request.headers):
            return _failure(command, "pausing or resuming a schedule needs the admin token: send Authorization: "
                                     "Bearer <OZ0_ADMIN_TOKEN>", "admin_token_required", 403)
        name = request.path_params["name"]
        try:
            state = await asyncio.to_thread(self.runtime.schedules.set_paused, name, paused,
                                            by=operator(request, prefix="api"))
        except ScheduleError as exc:
            status, code = ERROR_HTTP[exc.why]
            return _failure(command, exc.message, code, status)
        return JSONResponse(result_envelope(command, True, f"schedule {name} {state.status}",
                                            data={"schedule": state.to_dict()}))

    async def page(self, request: Request) -> Response:
        states = await asyncio.to_thread(self.runtime.schedules.states)
        rows = [{**s.to_dict(), "next": s.next_runs[0].strftime("%Y-%m-%d %H:%M %Z") if s.status != "paused" else "",
                 "last_when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.last_job.created))
                 if s.last_job else ""} for s in states]
        return self.render(request, "schedules.html", nav="schedules", schedules=rows)
