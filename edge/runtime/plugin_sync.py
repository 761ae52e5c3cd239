"""What `oz0 serve` does with the stored plugins at start and while it runs.

1. Import: the installs made before revision 0024 under this replica's OZ0_HOME/plugins get their
   archive stored in the database (edge.runtime.plugin_cache.PluginCache.import_local), so the other
   replicas can run them too.
2. Pre-install: each plugin folder under OZ0_PREINSTALL (a folder of plugin folders, or one plugin
   folder) is linted and installed, unless its content was stored before (idempotent by content hash:
   a restart neither installs it twice nor undoes a later install, rollback or uninstall). A plugin
   that does not lint or is refused by the upgrade check is logged and skipped; the server still starts.
3. Watch: the installed versions are polled (edge.runtime.plugin_watch) and each new one's cache
   folder is filled before its first ask.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError

from oz0.edge.errors import Oz0Error
from oz0.edge.plugins.declared import PluginError
from oz0.edge.plugins.lint import lint_plugin
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.plugins.pack import content_hash
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.plugin_store import InstalledState
from oz0.edge.runtime.plugin_watch import PluginWatch

if TYPE_CHECKING:
    from oz0.edge.runtime.runner import Runtime

__all__ = ["PREINSTALL_ACTOR", "Preinstalled", "preinstall", "sync_plugins"]

log = logging.getLogger("oz0.plugins")

PREINSTALL_ACTOR = "preinstall"


def _folders(root: Path) -> list[Path]:
    if (root / "plugin.yaml").is_file():
        return [root]
    return sorted(p for p in root.iterdir() if (p / "plugin.yaml").is_file()) if root.is_dir() else []


@dataclass(frozen=True)
class Preinstalled:
    """What a pre-install did: `name version` of each plugin installed, (folder, why) of each refused."""

    installed: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()


def preinstall(runtime: Runtime, root: Path) -> Preinstalled:
    """Install each plugin folder under `root` whose content was never stored; each refusal is logged
    too, and the next folder tried."""
    if not root.is_dir():
        log.error("OZ0_PREINSTALL=%s is not a folder; nothing pre-installed", root)
        return Preinstalled(refused=((str(root), "not a folder"),))
    stored = {v.content_hash for v in runtime.plugin_store.all_versions()}
    done: list[str] = []
    refused: list[tuple[str, str]] = []
    for folder in _folders(root):
        try:
            if content_hash(folder) in stored:
                continue
            report = lint_plugin(folder, installed={a.name: a for a in (*runtime.agents(), *runtime.flows())})
            if not report.ok:
                raise PluginError(report.errors[0].describe(), file=str(folder))
            result = install_plugin(runtime, load_plugin(folder), actor=PREINSTALL_ACTOR)
        except Oz0Error as exc:  # PluginError, UpgradeRefused, VersionReused: said, and the next one tried
            log.error("pre-install of %s refused: %s", folder, exc)
            refused.append((str(folder), str(exc)))
            continue
        except IntegrityError:  # replicas starting at once: another one stored this version a moment before
            log.info("pre-install of %s: another replica installed it at the same moment", folder)
            continue
        done.append(f"{result.version.plugin} {result.version.version}")
        log.info("pre-installed %s %s from %s", result.version.plugin, result.version.version, folder)
    return Preinstalled(tuple(done), tuple(refused))


def sync_plugins(runtime: Runtime, env: Mapping[str, str]) -> PluginWatch:
    """Import, pre-install (OZ0_PREINSTALL), and start the watch that fills the cache; the caller stops it."""
    for version in runtime.plugin_cache.import_local():
        runtime.audit("plugin.imported", actor="import", detail={
            "plugin": version.plugin, "version": version.version, "content_hash": version.content_hash})
    if env.get("OZ0_PREINSTALL"):
        preinstall(runtime, Path(env["OZ0_PREINSTALL"]))

    def fill(_state: InstalledState) -> None:
        for version in runtime.installed():
            try:
                runtime.plugin_cache.folder(version)
            except PluginError as exc:
                log.error("installed plugin %s %s cannot be run here: %s", version.plugin, version.version, exc)

    watch = PluginWatch(runtime.plugin_store.state)
    watch.watch(fill)
    watch.start()
    return watch
