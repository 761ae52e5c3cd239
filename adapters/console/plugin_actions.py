"""The console plugin page's Uninstall and Roll back buttons: forms posted to
`/plugins/{name}/uninstall` and `/plugins/{name}/rollback`, each with its CSRF token, a ticked confirm
box (and a confirm dialog where scripts run) and the admin token typed in, since a browser carries no
bearer token. They do what the management API does (adapters.console.plugin_admin_api), audited as
done by `console-admin`, and land back on the plugin page, or on an error page saying why not.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from oz0.adapters.console import plugin_admin_api
from oz0.adapters.console.security import Guard
from oz0.edge import ConsoleRuntime

__all__ = ["ACTOR", "routes"]

ACTOR = "console-admin"

CheckedForm = Callable[[Request], Awaitable["Mapping[str, str] | Response"]]


def routes(runtime: ConsoleRuntime, guard: Guard, checked_form: CheckedForm,
           error: Callable[..., Response]) -> list[Route]:
    async def act(request: Request, doing: str) -> Response:
        name = request.path_params["name"]
        values = await checked_form(request)
        if isinstance(values, Response):
            return values
        if guard.admin_token is None:
            return error(request, "Not allowed", f"To {doing} a plugin here the server needs OZ0_ADMIN_TOKEN set "
                                                 f"(or use `oz0 plugin {doing}`).", 403)
        if not guard.is_admin({"authorization": f"Bearer {values.get('admin_token', '')}"}):
            return error(request, "Not allowed", f"To {doing} a plugin, type the admin token (OZ0_ADMIN_TOKEN).",
                         403)
        if values.get("confirm") != "yes":
            return error(request, "Not confirmed", f"Tick the box to confirm that {name} should {doing}.", 400)
        if doing == "uninstall":
            done = await plugin_admin_api.uninstall(runtime, name, actor=ACTOR)
        else:
            done = await plugin_admin_api.rollback(runtime, name, actor=ACTOR)
        return _landing(request, done, name, error)

    async def uninstall(request: Request) -> Response:
        return await act(request, "uninstall")

    async def rollback(request: Request) -> Response:
        return await act(request, "rollback")

    return [Route("/plugins/{name}/uninstall", uninstall, methods=["POST"]),
            Route("/plugins/{name}/rollback", rollback, methods=["POST"])]


def _landing(request: Request, done: JSONResponse, name: str, error: Callable[..., Response]) -> Response:
    """Back to the plugin page after a success; the API's refusal as an error page otherwise."""
    result = json.loads(bytes(done.body))
    if done.status_code == 200:
        return RedirectResponse(f"/plugins/{quote(name, safe='')}", status_code=303)
    return error(request, "Not done", str(result["message"]), done.status_code)
