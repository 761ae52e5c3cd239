"""The Teams app package: the manifest valid against the official Teams app manifest schema (v1.29,
bundled from OfficeDev/microsoft-teams-app-schema), icons of the sizes Teams asks for, and
`oz0 teams package` writing the zip a user uploads."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zipfile

import jsonschema_rs
import pytest
from paths import SUPPORT

from oz0.adapters.cli.teams import APP_DIR, build_manifest

SCHEMA = SUPPORT / "schemas" / "teams-manifest-1.29.json"
APP_ID = "11111111-2222-3333-4444-555555555555"


def _validator():
    def refuse(uri: str):
        raise AssertionError(f"the manifest schema asked to fetch {uri}")
    return jsonschema_rs.Draft4Validator(json.loads(SCHEMA.read_text(encoding="utf-8")), retriever=refuse)


def _errors(manifest: dict) -> list[str]:
    return [f"{list(e.instance_path)}: {e.message[:160]}" for e in _validator().iter_errors(manifest)]


def test_the_bundled_manifest_is_valid_and_the_schema_refuses_a_broken_one():
    manifest = json.loads((APP_DIR / "manifest.json").read_text(encoding="utf-8"))
    assert _errors(manifest) == []
    assert _errors({**manifest, "bots": [{"botId": "not-a-guid", "scopes": ["team"]}]})
    assert _errors({**manifest, "surprise": True})


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_icons_are_the_sizes_teams_asks_for():
    assert _png_size((APP_DIR / "color.png").read_bytes()) == (192, 192)
    assert _png_size((APP_DIR / "outline.png").read_bytes()) == (32, 32)


def test_oz0_teams_package_writes_the_zip_with_the_bots_id(tmp_path):
    out = tmp_path / "app.zip"
    done = subprocess.run([sys.executable, "-m", "oz0.adapters.cli", "teams", "package", "--out", str(out),
                           "--public-url", "https://oz0.corp.example/"],
                          capture_output=True, text=True, timeout=60, env={"PATH": "", "TEAMS_APP_ID": APP_ID})
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(out) as zf:
        assert sorted(zf.namelist()) == ["color.png", "manifest.json", "outline.png"]
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["id"] == manifest["bots"][0]["botId"] == manifest["webApplicationInfo"]["id"] == APP_ID
    assert manifest["authorization"]["permissions"]["resourceSpecific"] == [
        {"name": "ChannelMessage.Read.Group", "type": "Application"}]   # replies in a thread without a mention
    assert manifest["validDomains"] == ["oz0.corp.example"]
    assert _errors(manifest) == []


@pytest.mark.parametrize("args,said", [((), "no app id: pass --app-id or set TEAMS_APP_ID"),
                                       (("--app-id", "my-bot"), "'my-bot' is not one"),
                                       (("--app-id", APP_ID, "--public-url", "http://x.example"), "must be an https URL")])
def test_oz0_teams_package_says_what_is_wrong(tmp_path, args, said):
    done = subprocess.run([sys.executable, "-m", "oz0.adapters.cli", "teams", "package", "--out",
                           str(tmp_path / "a.zip"), *args], capture_output=True, text=True, timeout=60, env={"PATH": ""})
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert not (tmp_path / "a.zip").exists()


def test_build_manifest_keeps_the_template_whole():
    assert build_manifest(APP_ID, None)["validDomains"] == []
