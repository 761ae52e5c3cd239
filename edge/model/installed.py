"""A plugin version and its agents as the store keeps them (their contracts themselves, so versions can be
compared later): what the journal's readers and the upgrade check (edge.documents.compat) share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["InstalledAgent", "InstalledVersion"]


@dataclass(frozen=True)
class InstalledAgent:
    """An agent as the store keeps it: its contracts themselves, so versions can be compared later."""

    name: str
    kind: str
    description: str
    input_schema_file: str | None
    input_schema: Any
    input_hash: str | None
    output_schema_file: str | None
    output_schema: Any
    output_hash: str | None
    failures: Mapping[str, Any]
    limits: Mapping[str, Any]
    contract_hash: str | None = None     # None: installed before revision 0006
    contract_version: str | None = None
    annotations: Mapping[str, Any] | None = None  # an mcp tool's, listed at install (revision 0013)


@dataclass(frozen=True)
class InstalledVersion:
    id: int
    plugin: str
    version: str
    content_hash: str
    path: str
    description: str
    installed_at: float
    installed_by: str
    agents: tuple[InstalledAgent, ...]
    current: bool = False
