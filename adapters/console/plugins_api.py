"""The management API: list plugins, read one, check an upload against the installed version, install it.

The spec puts the upgrade check here, "before anything reaches a node". An upload is a plugin as a
.tar.gz or .zip (the raw body, or a multipart field `plugin`), unpacked safely (edge.plugins.archive)
into a temporary folder, linted, upgrade-checked and installed atomically (edge.runtime.install: files
copied beside their place and renamed, the version made current in one transaction). `POST
/v1/plugins/diff` runs the same checks and stores nothing.

Auth: reading and the diff need what the rest of the console needs (its token or login when
OZ0_CONSOLE_TOKEN is set; nothing on loopback without one). Installing needs `Authorization: Bearer
<OZ0_ADMIN_TOKEN>`; without that variable set, installs over HTTP are refused (use `oz0 plugin install`).
`allow_breaking=true` is therefore only ever taken with the admin token, and a breaking change it lets
through is audited as `plugin.contracts.breaking`. A version installed before with other content is
refused (409 `version_exists`) unless `force=true`, audited as `plugin.version.replaced`.

Every replica reads the installed versions from the shared store on each request (nothing is cached
per process but loaded plugin files, by their immutable version id), so a new version is seen at once.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from oz0.adapters.console.api_replies import API_PREFIX, failure, read_body
from oz0.edge import ConsoleRuntime
from oz0.edge.plugins.history import MAX_AUDIT_SCAN, latest_changes, latest_json
from oz0.edge.plugins.pack import MAX_ARCHIVE_BYTES
from oz0.edge.results.qzx import result_envelope

__all__ = [
    "MAX_UPLOAD_BYTES",
    "admin_flags",
    "admin_refusal",
    "operations",
    "plugin_audit",
    "plugin_detail",
    "plugin_summary",
    "refused_upgrade",
    "routes",
]

log = logging.getLogger("oz0.console.plugins")

MAX_UPLOAD_BYTES = MAX_ARCHIVE_BYTES  # an upload is stored as it is packed again: one limit for both
AUDIT_SHOWN = 100
ARCHIVE_TYPES = ("application/gzip", "application/x-gzip", "application/x-tar+gzip", "application/zip",
                 "application/x-zip-compressed", "application/octet-stream")


def routes(runtime: ConsoleRuntime) -> list[Route]:
    """The management API's routes over `runtime` (the diff's before the `{name}` one)."""
    api = _PluginsApi(runtime)
    return [
        Route(f"{API_PREFIX}/plugins", api.list, methods=["GET"]),
        Route(f"{API_PREFIX}/plugins", api.install, methods=["POST"]),
        Route(f"{API_PREFIX}/plugins/diff", api.diff, methods=["POST"]),
        Route(f"{API_PREFIX}/plugins/{{name}}", api.get, methods=["GET"]),
    ]


def _latest(runtime: ConsoleRuntime) -> dict[str, dict[str, Any]]:
    return latest_changes(runtime.audit_log(limit=MAX_AUDIT_SCAN))


def _contract(file: str | None, digest: str | None) -> dict[str, Any] | str:
    return "text" if file is None else {"file": file, "sha256": digest}


def plugin_summary(version: Any, latest: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One installed (current) version as the list shows it."""
    return {"name": version.plugin, "version": version.version, "description": version.description,
            "content_hash": version.content_hash, "installed_at": version.installed_at,
            "installed_by": version.installed_by, "agents": [a.name for a in version.agents],
            "latest_changes": latest_json(latest)}


def plugin_audit(runtime: ConsoleRuntime, name: str, *, limit: int = AUDIT_SHOWN) -> list[dict[str, Any]]:
    """The audit records about plugin `name`, newest first (of the newest MAX_AUDIT_SCAN records)."""
    found = [r for r in runtime.audit_log(limit=MAX_AUDIT_SCAN) if r.detail.get("plugin") == name]
    return [{"id": r.id, "at": r.at, "action": r.action, "actor": r.actor, "detail": dict(r.detail)}
            for r in found[:limit]]


def plugin_detail(runtime: ConsoleRuntime, name: str) -> dict[str, Any] | None:
    """Plugin `name`: whether it is installed, its versions (current marked), the current one's agents
    (once uninstalled, the uninstalled one's), its latest contract changes and its audit records; None
    when no plugin has this name."""
    versions = runtime.store.versions(name)
    if not versions:
        return None
    audit = plugin_audit(runtime, name)
    installed = next((v for v in versions if v.current), None)
    removed = next((r["detail"].get("content_hash") for r in audit if r["action"] == "plugin.uninstall"), None)
    current = installed or next((v for v in versions if v.content_hash == removed), versions[-1])
    agents = [{"name": a.name, "kind": a.kind, "description": a.description,
               "input": _contract(a.input_schema_file, a.input_hash),
               "output": _contract(a.output_schema_file, a.output_hash),
               "failures": dict(a.failures)} for a in current.agents]
    return {"name": name, "version": current.version, "installed": installed is not None,
            "description": current.description,
            "versions": [{"version": v.version, "content_hash": v.content_hash, "installed_at": v.installed_at,
                          "installed_by": v.installed_by, "current": v.current} for v in reversed(versions)],
            "agents": agents, "latest_changes": latest_json(_latest(runtime).get(name)),
            "audit": audit}


class _Upload:
    """A checked upload in a temporary folder: the loaded plugin and its lint warnings."""

    def __init__(self, plugin: Any, warnings: list[dict[str, str]], folder: Path) -> None:
        self.plugin = plugin
        self.warnings = warnings
        self.folder = folder


def _in_archive(text: str | None, folder: Path) -> str | None:
    """Paths under the upload's temporary `folder` as the archive's own (`team-1.2.0/agents/x.yaml`):
    a refusal never shows where the server unpacked it."""
    if text is None:
        return None
    for root in {str(folder / "plugin"), str((folder / "plugin").resolve())}:
        text = text.replace(root + os.sep, "").replace(root, ".")
    return text


class _PluginsApi:
    def __init__(self, runtime: ConsoleRuntime) -> None:
        self.runtime = runtime

    async def list(self, request: Request) -> Response:
        latest = _latest(self.runtime)
        plugins = [plugin_summary(v, latest.get(v.plugin)) for v in self.runtime.installed()]
        return JSONResponse(result_envelope("plugins.list", True, f"{len(plugins)} plugin(s) installed",
                                            data={"plugins": plugins}))

    async def get(self, request: Request) -> Response:
        name = request.path_params["name"]
        detail = plugin_detail(self.runtime, name)
        if detail is None:
            known = ", ".join(v.plugin for v in self.runtime.installed()) or "none installed"
            return failure(f"no plugin is named {name!r} (known: {known})", "unknown_plugin", status_code=404,
                           command="plugins.get")
        shown = f"{name} {detail['version']}" + ("" if detail["installed"] else " (uninstalled)")
        return JSONResponse(result_envelope("plugins.get", True, shown,
                                            data={"plugin": detail}))

    async def diff(self, request: Request) -> Response:
        from oz0.edge.contracts.changes import breaking_changes
        from oz0.edge.documents.compat import UpgradeRefused, check_upgrade, is_major_bump, required_version_bump

        command = "plugins.diff"
        upload = await self._upload(request, command)
        if isinstance(upload, Response):
            return upload
        try:
            plugin = upload.plugin
            previous = self.runtime.store.current_version(plugin.name)
            try:
                changes = check_upgrade(previous, plugin)
            except UpgradeRefused as exc:
                return refused_upgrade(exc, command, plugin.name, plugin.version, previous)
            data: dict[str, Any] = {
                "plugin": plugin.name, "version": plugin.version,
                "previous_version": previous.version if previous else None,
                "breaking": bool(breaking_changes(changes)),
                "required_version": required_version_bump(previous.version) if previous else None,
                "major_bump": bool(previous) and is_major_bump(previous.version, plugin.version),
                "changes": [c.to_dict() for c in changes], "lint_warnings": upload.warnings}
            was = f" over {previous.version}" if previous else " (not installed yet)"
            return JSONResponse(result_envelope(
                command, True, f"{plugin.name} {plugin.version}{was}: {len(changes)} change(s), "
                               f"{len(breaking_changes(changes))} breaking; it may be installed", data=data))
        finally:
            shutil.rmtree(upload.folder, ignore_errors=True)

    async def install(self, request: Request) -> Response:
        from oz0.edge.documents.compat import UpgradeRefused
        from oz0.edge.plugins.declared import PluginError
        from oz0.edge.runtime.install import VersionReused, install_plugin

        command = "plugins.install"
        flags = admin_flags(request, command, "installing a plugin", "oz0 plugin install")
        if isinstance(flags, Response):
            return flags
        upload = await self._upload(request, command)
        if isinstance(upload, Response):
            return upload
        plugin = upload.plugin
        previous = self.runtime.store.current_version(plugin.name)
        try:
            result = await run_in_threadpool(install_plugin, self.runtime, plugin, actor="api-admin", **flags)
        except UpgradeRefused as exc:
            return refused_upgrade(exc, command, plugin.name, plugin.version, previous)
        except VersionReused as exc:
            return failure(f"not installed: {exc.message}", "version_exists", status_code=409, command=command,
                           details={"plugin": plugin.name, "version": plugin.version,
                                    "installed_content_hash": exc.installed_hash, "content_hash": exc.new_hash})
        except PluginError as exc:
            return failure(f"not installed: {_in_archive(str(exc), upload.folder)}", "plugin_conflict",
                           status_code=409, command=command,
                           details={"file": _in_archive(exc.file, upload.folder), "location": exc.location})
        finally:
            shutil.rmtree(upload.folder, ignore_errors=True)
        v = result.version
        data = {"plugin": plugin_summary(v), "unchanged": result.unchanged,
                "previous_version": result.previous.version if result.previous else None,
                "changes": [c.to_dict() for c in result.changes], "lint_warnings": upload.warnings}
        if result.unchanged:
            return JSONResponse(result_envelope(command, True, f"{v.plugin} {v.version} is already installed "
                                                               "with the same content; nothing changed", data=data))
        log.info("plugin %s %s installed over the management API", v.plugin, v.version)
        return JSONResponse(result_envelope(command, True, f"installed {v.plugin} {v.version}", data=data),
                            status_code=201, headers={"location": f"{API_PREFIX}/plugins/{v.plugin}"})

    async def _upload(self, request: Request, command: str) -> _Upload | Response:
        """The uploaded archive unpacked, linted and loaded in a temporary folder (the caller removes it),
        or the failure to answer (the folder already removed)."""
        from oz0.edge import PluginError
        from oz0.edge.plugins.archive import ArchiveError, unpack_plugin
        from oz0.edge.plugins.lint import lint_plugin
        from oz0.edge.plugins.manifest import load_plugin

        data = await _archive_bytes(request, command)
        if isinstance(data, Response):
            return data
        folder = Path(tempfile.mkdtemp(prefix="oz0-upload-"))
        kept = False
        try:
            try:
                root = await run_in_threadpool(unpack_plugin, data, folder / "plugin")
            except ArchiveError as exc:
                return failure(f"the archive is refused: {exc}", "bad_archive", status_code=400, command=command)
            installed = {a.name: a for a in (*self.runtime.agents(), *self.runtime.flows())}  # a flow may use them
            report = await run_in_threadpool(lint_plugin, root, installed=installed)
            findings = [f.to_dict() for f in report.findings]
            if not report.ok:
                return failure(f"not a valid plugin: {report.errors[0].describe()}", "lint_errors", status_code=422,
                               command=command, details={"findings": findings})
            try:
                plugin = load_plugin(root)
            except PluginError as exc:
                return failure(f"not a valid plugin: {_in_archive(str(exc), folder)}", "invalid_plugin",
                               status_code=422, command=command,
                               details={"file": _in_archive(exc.file, folder), "location": exc.location})
            kept = True
            return _Upload(plugin, [f for f in findings if f["severity"] == "warning"], folder)
        finally:
            if not kept:
                shutil.rmtree(folder, ignore_errors=True)


def admin_refusal(request: Request, command: str, doing: str, cli: str) -> Response | None:
    """403 unless the request carries the admin token (and the server has one); None when it may go on."""
    guard = request.state.guard
    if guard.admin_token is None:
        return failure(f"{doing} over the management API needs OZ0_ADMIN_TOKEN set on the server "
                       f"(or use `{cli}`)", "admin_token_required", status_code=403, command=command)
    if not guard.is_admin(request.headers):
        return failure(f"{doing} needs the admin token: send Authorization: Bearer <OZ0_ADMIN_TOKEN>",
                       "admin_token_required", status_code=403, command=command)
    return None


def admin_flags(request: Request, command: str, doing: str, cli: str) -> dict[str, bool] | Response:
    """An admin's install or rollback: the query's `allow_breaking` and `force` (true/false/1/0, default
    false), or the 403 without the admin token, or the 400 naming a bad flag."""
    refused = admin_refusal(request, command, doing, cli)
    if refused is not None:
        return refused
    flags = {}
    for name in ("allow_breaking", "force"):
        given = request.query_params.get(name, "false").lower()
        if given not in ("true", "false", "1", "0"):
            return failure(f"{name}={given!r} is not true or false", "invalid_argument", status_code=400,
                           command=command, details={"parameter": name})
        flags[name] = given in ("true", "1")
    return flags


async def _archive_bytes(request: Request, command: str) -> bytes | Response:
    """The archive's bytes: the whole body (an archive media type) or the multipart field `plugin`."""
    size = int(request.headers.get("content-length") or 0)
    too_large = failure(f"the upload is over {MAX_UPLOAD_BYTES:,} bytes, the limit", "too_large", status_code=413,
                        command=command, headers={"connection": "close"})
    if size > MAX_UPLOAD_BYTES:
        return too_large
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in ARCHIVE_TYPES and media != "multipart/form-data":
        return failure(f"send the plugin as a .tar.gz or .zip body ({', '.join(ARCHIVE_TYPES)}) or as the "
                       f"multipart field `plugin`, not {media or 'a body without Content-Type'}",
                       "unsupported_media_type", status_code=415, command=command)
    body = await read_body(request, limit=MAX_UPLOAD_BYTES)
    if body is None:
        return too_large
    if media != "multipart/form-data":
        return body

    async def replay() -> Any:
        yield body

    try:
        form = await MultiPartParser(request.headers, replay(), max_files=1, max_fields=10,
                                     max_part_size=MAX_UPLOAD_BYTES).parse()
    except MultiPartException as exc:
        return failure(f"the multipart body cannot be read: {exc.message}", "bad_request", status_code=400,
                       command=command)
    field = form.get("plugin")
    if field is None or isinstance(field, str):
        return failure("the multipart body has no file field `plugin` (curl -F plugin=@team.tar.gz)",
                       "bad_request", status_code=400, command=command, details={"field": "plugin"})
    try:
        return await field.read()
    finally:
        await field.close()


def refused_upgrade(exc: Any, command: str, name: str, version: str, previous: Any) -> JSONResponse:
    """409: the upgrade check refuses version `version` of plugin `name`; its message and every change."""
    return failure(str(exc), "breaking_change", status_code=409, command=command, details={
        "plugin": name, "version": version,
        "previous_version": previous.version if previous else None,
        "changes": [c.to_dict() for c in exc.changes]})


def operations() -> dict[str, Any]:
    """The management API's paths for the console's OpenAPI document (relative to `/v1`)."""
    failure_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Failure"}}}
    ok = {"application/json": {"schema": {"$ref": "#/components/schemas/PluginResult"}}}
    upload_body = {"required": True, "description": "The plugin as a .tar.gz or .zip archive.", "content": {
        "application/gzip": {"schema": {"type": "string", "format": "binary"}},
        "application/zip": {"schema": {"type": "string", "format": "binary"}},
        "multipart/form-data": {"schema": {"type": "object", "required": ["plugin"], "properties": {
            "plugin": {"type": "string", "format": "binary"}}}}}}

    def refusals(*extra: tuple[str, str]) -> dict[str, Any]:
        codes = [("400", "The archive is refused (an unsafe entry, over a limit) or unreadable."),
                 ("413", f"The upload is over {MAX_UPLOAD_BYTES:,} bytes."),
                 ("415", "The body is neither an archive nor multipart/form-data."),
                 ("422", "The plugin does not lint or load; details.findings lists why."),
                 ("409", "A breaking change without a new major version (details.changes lists them), or "
                         "the version installed before with other content (version_exists; force=true)."),
                 *extra]
        return {code: {"description": text, "content": failure_ref} for code, text in codes}

    return {
        "/plugins": {
            "get": {"operationId": "plugins.list", "summary": "The installed plugins: current version, agents, "
                    "latest contract changes", "description": "Every installed plugin with its current version, agents and "
                    "the contract changes of its latest install.",
                    "responses": {"200": {"description": "The plugins", "content": ok}}},
            "post": {"operationId": "plugins.install", "summary": "Lint, upgrade-check and install an uploaded plugin",
                     "description": "Needs `Authorization: Bearer <OZ0_ADMIN_TOKEN>`.",
                     "parameters": [{"name": "allow_breaking", "in": "query", "required": False,
                                     "schema": {"type": "boolean", "default": False},
                                     "description": "Install even when it breaks the installed contracts "
                                                    "(audited as plugin.contracts.breaking)."},
                                    {"name": "force", "in": "query", "required": False,
                                     "schema": {"type": "boolean", "default": False},
                                     "description": "Replace a version installed before with other content "
                                                    "(audited as plugin.version.replaced); without it, 409 "
                                                    "version_exists."}],
                     "requestBody": upload_body,
                     "responses": {"201": {"description": "Installed", "content": ok},
                                   "200": {"description": "The same content was already installed", "content": ok},
                                   **refusals(("403", "The admin token is missing or wrong."))}},
        },
        "/plugins/diff": {"post": {
            "operationId": "plugins.diff", "summary": "The upgrade check of an uploaded plugin; nothing is stored",
            "description": "Lint the uploaded plugin and compare its contracts with the installed version's.",
            "requestBody": upload_body,
            "responses": {"200": {"description": "It may be installed; its changes", "content": ok}, **refusals()}}},
        "/plugins/{name}": {"get": {
            "operationId": "plugins.get", "summary": "One plugin: versions, agents, latest changes, audit",
            "description": "One installed plugin: each version installed, its agents, its latest changes and its "
                           "audit events.",
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "The plugin", "content": ok},
                          "404": {"description": "No plugin has this name", "content": failure_ref}}}},
    }
