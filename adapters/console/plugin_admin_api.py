"""The management API's uninstall and rollback: `DELETE /v1/plugins/{name}` and
`POST /v1/plugins/{name}/rollback`, with the admin token as for an install (adapters.console.plugins_api).

Both act on the journal's database, so every replica serves the change within its next poll
(edge.runtime.plugin_watch); both are audited (`plugin.uninstall`, `plugin.rollback`). A rollback is an
install of the previous stored version: the upgrade check runs here, once, and `allow_breaking` and
`force` are taken as for an install. The console's plugin page has the same two as buttons
(adapters.console.plugin_actions), which call `uninstall` and `rollback` below.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from oz0.adapters.console.api_replies import API_PREFIX, failure
from oz0.adapters.console.plugins_api import admin_flags, admin_refusal, plugin_summary, refused_upgrade
from oz0.edge import ConsoleRuntime
from oz0.edge.results.qzx import result_envelope

__all__ = ["operations", "rollback", "routes", "uninstall"]

log = logging.getLogger("oz0.console.plugins")


def routes(runtime: ConsoleRuntime) -> list[Route]:
    async def delete(request: Request) -> Response:
        command = "plugins.uninstall"
        refused = admin_refusal(request, command, "uninstalling a plugin", "oz0 plugin uninstall")
        return refused or await uninstall(runtime, request.path_params["name"], actor="api-admin")

    async def post_rollback(request: Request) -> Response:
        flags = admin_flags(request, "plugins.rollback", "rolling a plugin back", "oz0 plugin rollback")
        if isinstance(flags, Response):
            return flags
        return await rollback(runtime, request.path_params["name"], actor="api-admin", **flags)

    return [Route(f"{API_PREFIX}/plugins/{{name}}", delete, methods=["DELETE"]),
            Route(f"{API_PREFIX}/plugins/{{name}}/rollback", post_rollback, methods=["POST"])]


async def uninstall(runtime: ConsoleRuntime, name: str, *, actor: str) -> JSONResponse:
    """Uninstall `name` as `actor`: 200 with the version removed, 404 not installed, 409 in use."""
    from oz0.edge.runtime.plugin_admin import PluginStateError, uninstall_plugin

    command = "plugins.uninstall"
    try:
        removed = await run_in_threadpool(uninstall_plugin, runtime, name, actor=actor)  # type: ignore[arg-type]
    except PluginStateError as exc:
        return _state_failure(exc, command)
    log.info("plugin %s %s uninstalled by %s", removed.plugin, removed.version, actor)
    return JSONResponse(result_envelope(command, True, f"uninstalled {removed.plugin} {removed.version}",
                                        data={"plugin": plugin_summary(removed)}))


async def rollback(runtime: ConsoleRuntime, name: str, *, actor: str, allow_breaking: bool = False,
                   force: bool = False) -> JSONResponse:
    """Roll `name` back as `actor`: 200 with the version now installed; 404 not installed, 409 no
    earlier version, the upgrade check's refusal, or a version number stored with other content."""
    from oz0.edge.documents.compat import UpgradeRefused
    from oz0.edge.plugins.declared import PluginError
    from oz0.edge.runtime.install import VersionReused
    from oz0.edge.runtime.plugin_admin import PluginStateError, rollback_plugin, rollback_target

    command = "plugins.rollback"
    previous = runtime.store.current_version(name)
    try:
        target = rollback_target(runtime, name)  # type: ignore[arg-type]
        result = await run_in_threadpool(rollback_plugin, runtime, name, actor=actor,  # type: ignore[arg-type]
                                         allow_breaking=allow_breaking, force=force)
    except PluginStateError as exc:
        return _state_failure(exc, command)
    except UpgradeRefused as exc:
        return refused_upgrade(exc, command, name, target.version, previous)
    except VersionReused as exc:
        return failure(f"not rolled back: {exc.message}", "version_exists", status_code=409, command=command,
                       details={"plugin": name, "installed_content_hash": exc.installed_hash,
                                "content_hash": exc.new_hash})
    except PluginError as exc:
        return failure(f"not rolled back: {exc}", "plugin_conflict", status_code=409, command=command)
    v = result.version
    log.info("plugin %s rolled back to %s by %s", v.plugin, v.version, actor)
    data = {"plugin": plugin_summary(v), "previous_version": previous.version if previous else None,
            "changes": [c.to_dict() for c in result.changes]}
    return JSONResponse(result_envelope(command, True, f"rolled {v.plugin} back to {v.version}", data=data))


_STATE_ANSWERS = {"not_installed": (404, "unknown_plugin"), "no_earlier_version": (409, "no_earlier_version"),
                  "in_use": (409, "plugin_in_use")}


def _state_failure(exc: Any, command: str) -> JSONResponse:
    """A PluginStateError as its status and error code (from its `why`)."""
    status, code = _STATE_ANSWERS[exc.why]
    return failure(exc.message, code, status_code=status, command=command, details={"plugin": exc.plugin})


def operations() -> dict[str, Any]:
    """The two operations for the console's OpenAPI document (relative to `/v1`), merged into its
    `/plugins/{name}` path item and a path of their own."""
    failure_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Failure"}}}
    ok = {"application/json": {"schema": {"$ref": "#/components/schemas/PluginResult"}}}
    name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    forbidden = {"description": "The admin token is missing or wrong.", "content": failure_ref}
    flag = {"in": "query", "required": False, "schema": {"type": "boolean", "default": False}}
    return {
        "/plugins/{name}": {"delete": {
            "operationId": "plugins.uninstall", "summary": "Uninstall a plugin on every replica",
            "description": "Needs `Authorization: Bearer <OZ0_ADMIN_TOKEN>`. Its stored versions are kept; "
                           "audited as plugin.uninstall.",
            "tags": ["plugins"], "security": [{"adminToken": []}], "parameters": [name],
            "responses": {"200": {"description": "Uninstalled: the version that was installed", "content": ok},
                          "403": forbidden,
                          "404": {"description": "No plugin of this name is installed", "content": failure_ref},
                          "409": {"description": "A flow of another installed plugin runs one of its agents "
                                                 "(plugin_in_use)", "content": failure_ref}}}},
        "/plugins/{name}/rollback": {"post": {
            "operationId": "plugins.rollback", "summary": "Install again the version stored before the current one",
            "description": "Needs `Authorization: Bearer <OZ0_ADMIN_TOKEN>`. The upgrade check applies as for an "
                           "install; audited as plugin.rollback.",
            "tags": ["plugins"], "security": [{"adminToken": []}],
            "parameters": [name, {"name": "allow_breaking", **flag,
                                  "description": "Roll back even when it breaks the installed contracts."},
                           {"name": "force", **flag, "description": "Roll back to a version whose number was "
                                                                    "stored again with other content."}],
            "responses": {"200": {"description": "Rolled back: the version now installed", "content": ok},
                          "400": {"description": "A flag is neither true nor false", "content": failure_ref},
                          "403": forbidden,
                          "404": {"description": "No plugin of this name is installed", "content": failure_ref},
                          "409": {"description": "No earlier version (no_earlier_version), a breaking change "
                                                 "(breaking_change; details.changes), or version_exists",
                                  "content": failure_ref}}}},
    }
