"""`oz0 teams package`: the Teams app package to upload (Teams admin center, or Apps > Manage your apps >
Upload an app): `manifest.json` with the bot's app id, and its two icons, in one zip.

The manifest is `deploy/teams/manifest.json` (valid against the Teams app manifest schema v1.29; the
tests check it) with the placeholder GUIDs replaced by TEAMS_APP_ID, and `validDomains` set to the
host of OZ0_PUBLIC_URL when it is set (so the console links in cards open without a warning).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["APP_DIR", "build_manifest", "register"]

APP_DIR = Path(__file__).resolve().parents[2] / "deploy" / "teams"
PLACEHOLDER = "00000000-0000-0000-0000-000000000000"
_GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = "The Microsoft Teams app: `oz0 teams package` writes the zip to upload."
    actions = parser.add_subparsers(dest="teams_command", metavar="ACTION", required=True)
    package = actions.add_parser("package", help="write the Teams app package (manifest.json and icons) as a zip",
                                 description="Write the Teams app package: deploy/teams/manifest.json with the "
                                             "bot's app id, and its icons, zipped for upload.")
    package.add_argument("--app-id", help="the bot's Application (client) ID (default: TEAMS_APP_ID)")
    package.add_argument("--out", default="oz0-teams.zip", help="where to write the zip (default: oz0-teams.zip)")
    package.add_argument("--public-url", help="the console's public URL for validDomains (default: OZ0_PUBLIC_URL)")
    package.set_defaults(func=_package)


def build_manifest(app_id: str, public_url: str | None) -> dict[str, object]:
    """The manifest for this bot: ValueError when the app id is not a GUID or the URL not https."""
    if not _GUID.fullmatch(app_id):
        raise ValueError(f"the app id must be the Application (client) ID, a GUID; {app_id!r} is not one")
    manifest = json.loads((APP_DIR / "manifest.json").read_text(encoding="utf-8"))
    manifest["id"] = app_id
    for bot in manifest["bots"]:
        bot["botId"] = app_id
    manifest["webApplicationInfo"]["id"] = app_id   # the app whose RSC permissions a team owner consents to
    if public_url:
        parts = urlsplit(public_url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"OZ0_PUBLIC_URL must be an https URL for Teams to open it, not {public_url!r}")
        manifest["validDomains"] = [parts.hostname]
    return manifest


def _package(args: argparse.Namespace) -> int:
    from oz0.adapters.cli.errors import CommandError

    app_id = (args.app_id or os.environ.get("TEAMS_APP_ID", "")).strip()
    if not app_id:
        raise CommandError("no app id: pass --app-id or set TEAMS_APP_ID (Azure portal > App registrations > "
                           "your app > Application (client) ID)", code=2)
    try:
        manifest = build_manifest(app_id, (args.public_url or os.environ.get("OZ0_PUBLIC_URL", "")).strip() or None)
    except ValueError as exc:
        raise CommandError(str(exc), code=2) from None
    out = Path(args.out)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
        for icon in ("color.png", "outline.png"):
            zf.write(APP_DIR / icon, icon)
    print(f"wrote {out} (manifest for app {app_id}); upload it in Teams: Apps > Manage your apps > Upload an app")
    return 0
