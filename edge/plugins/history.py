"""What each plugin's latest install changed, read back from the audit log: one reader for `oz0 plugin
list` and the console's plugin pages and management API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from oz0.edge.contracts.changes import Change

__all__ = ["MAX_AUDIT_SCAN", "latest_changes", "latest_json"]

INSTALLS = ("plugin.install", "plugin.rollback")  # the audit actions that made a version current
MAX_AUDIT_SCAN = 10_000  # audit records read, newest first, to find each plugin's latest changes


def latest_changes(audit: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Per plugin, the changes its latest install (or rollback) recorded (newest audit records first, as the
    store lists them): {"previous_version", "version", "changes": [Change]}."""
    latest: dict[str, dict[str, Any]] = {}
    for record in audit:
        detail: Mapping[str, Any] = record.detail
        if record.action not in INSTALLS or detail.get("plugin") in latest:
            continue
        latest[str(detail.get("plugin"))] = {
            "previous_version": detail.get("previous_version"), "version": detail.get("version"),
            "changes": [Change(**c) for c in detail.get("changes") or []],
        }
    return latest


def latest_json(entry: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """One plugin's latest changes for `plugin list --json`."""
    if entry is None:
        return None
    return {"previous_version": entry["previous_version"], "version": entry["version"],
            "changes": [c.to_dict() for c in entry["changes"]]}
