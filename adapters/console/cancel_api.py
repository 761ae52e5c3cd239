"""`POST /v1/jobs/{id}/cancel`: stop a job wherever it runs (edge.runtime.cancel).

Its asker may stop it (the console and the API are one operator, as for answers), or an admin (the
`OZ0_ADMIN_TOKEN` bearer). 200 with the ended job; 404 for no such job, 403 for anyone else, 409 for a
job that has already ended. The stop is audited (`job.cancel`) by the runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from oz0.adapters.console.answers import as_asker, operator
from oz0.edge import ConsoleRuntime
from oz0.edge.results.qzx import result_envelope
from oz0.edge.runtime.cancel import CancelRefused, CancelWhy

__all__ = ["CANCEL_HTTP", "cancel_json"]

COMMAND = "jobs.cancel"
CANCEL_HTTP: dict[CancelWhy, tuple[int, str]] = {
    "unknown": (404, "unknown_job"),
    "forbidden": (403, "forbidden"),
    "finished": (409, "already_ended"),
}


async def cancel_json(runtime: ConsoleRuntime, request: Request, *, job_json: Callable[[Any], Any]) -> Response:
    job_id = request.path_params["job_id"]
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media and media != "application/json":  # a cross-site form cannot send JSON without a preflight
        message = f"send no body, or application/json, not {media}"
        return JSONResponse(result_envelope(COMMAND, False, message, error=message, error_code="unsupported_media_type"),
                            status_code=415)
    job = runtime.job(job_id)
    by = as_asker(job, operator(request, prefix="api")) if job is not None else operator(request, prefix="api")
    guard = getattr(request.state, "guard", None)
    admin = bool(guard is not None and guard.is_admin(request.headers))
    try:
        ended = await runtime.stops.cancel(job.id if job is not None else job_id, by=by, admin=admin)
    except CancelRefused as refused:
        status, code = CANCEL_HTTP[refused.why]
        body = result_envelope(COMMAND, False, refused.message, error=refused.message, error_code=code)
        return JSONResponse(body, status_code=status)
    message = f"job {ended.id} {ended.status}" + (f": {ended.failure_reason}" if ended.failure_reason else "")
    return JSONResponse(result_envelope(COMMAND, True, message, data={"job": job_json(ended)}))
