"""The console's Plugins, plugin and Audit pages: what the management API answers, for people.

Each page reads the shared store when it is asked (so every replica shows a new version at once) and
is drawn by the console's Jinja2 templates with autoescape on, under its CSP; audit details are shown
as JSON text, never as markup.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from oz0.adapters.console.plugins_api import plugin_detail, plugin_summary
from oz0.edge import ConsoleRuntime

__all__ = ["AUDIT_SHOWN", "routes"]

AUDIT_SHOWN = 200
DETAIL_CHARS = 2_000


def routes(runtime: ConsoleRuntime, page: Callable[..., Response], error: Callable[..., Response]) -> list[Route]:
    """The pages' routes: `page(request, template, **context)` and `error(request, title, message, status)`
    are the console's renderers."""
    pages = _PluginPages(runtime, page, error)
    return [
        Route("/plugins", pages.plugins, methods=["GET"]),
        Route("/plugins/{name}", pages.plugin, methods=["GET"]),
        Route("/audit", pages.audit, methods=["GET"]),
    ]


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _audit_row(record: Mapping[str, Any]) -> dict[str, Any]:
    detail = json.dumps(record["detail"], ensure_ascii=False, indent=2, default=str)
    if len(detail) > DETAIL_CHARS:
        detail = detail[:DETAIL_CHARS] + f"\n… {len(detail) - DETAIL_CHARS:,} more characters"
    plugin = record["detail"].get("plugin")
    return {"when": _when(record["at"]), "action": record["action"], "actor": record["actor"],
            "plugin": plugin if isinstance(plugin, str) else None,
            "version": str(record["detail"].get("version") or ""), "detail": detail}


class _PluginPages:
    def __init__(self, runtime: ConsoleRuntime, page: Callable[..., Response], error: Callable[..., Response]) -> None:
        self.runtime = runtime
        self.page = page
        self.error = error

    async def plugins(self, request: Request) -> Response:
        from oz0.edge.plugins.history import MAX_AUDIT_SCAN, latest_changes

        latest = latest_changes(self.runtime.audit_log(limit=MAX_AUDIT_SCAN))
        plugins = [plugin_summary(v, latest.get(v.plugin)) for v in self.runtime.installed()]
        for p in plugins:
            p["when"] = _when(p["installed_at"])
        return self.page(request, "plugins.html", nav="plugins", plugins=plugins)

    async def plugin(self, request: Request) -> Response:
        name = request.path_params["name"]
        detail = plugin_detail(self.runtime, name)
        if detail is None:
            known = ", ".join(v.plugin for v in self.runtime.installed()) or "none installed"
            return self.error(request, "No such plugin", f"No installed plugin is named {name!r} (known: {known}).",
                              404)
        for v in detail["versions"]:
            v["when"] = _when(v["installed_at"])
        for a in detail["agents"]:
            a["failure_names"] = sorted(a["failures"])
        audit = [_audit_row(r) for r in detail["audit"]]
        return self.page(request, "plugin.html", nav="plugins", plugin=detail, audit=audit)

    async def audit(self, request: Request) -> Response:
        records = self.runtime.audit_log(limit=AUDIT_SHOWN)
        rows = [_audit_row({"at": r.at, "action": r.action, "actor": r.actor, "detail": dict(r.detail)})
                for r in records]
        return self.page(request, "audit.html", nav="audit", records=rows, shown=AUDIT_SHOWN)
