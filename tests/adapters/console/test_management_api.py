"""The management API over real HTTP on loopback: list and read plugins, the upgrade check of an
upload (diff), installs with the admin token, and every refusal as a QZX failure naming what is wrong."""

from __future__ import annotations

import io
import tarfile
import tempfile
import zipfile
from pathlib import Path

import httpx
import pytest
from console_plugin import ConsoleThread
from openapi_spec_validator import validate
from test_compat import obj, write_plugin

from oz0.adapters.console.plugins_api import MAX_UPLOAD_BYTES
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

ADMIN = "admin-token-0123456789abcdef"
SCHEMA = obj({"q": {"type": "string"}})


def tgz(folder: Path, *, top: str | None = "team") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname=top or ".")
    return buf.getvalue()


def zipped(folder: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                z.write(path, path.relative_to(folder).as_posix())
    return buf.getvalue()


@pytest.fixture
def home(tmp_path):
    """team 0.1.0 installed (its agent `helper` takes and answers text)."""
    runtime = Runtime(tmp_path / "home", flow_engine=FLOW_ENGINE)
    install_plugin(runtime, load_plugin(write_plugin(tmp_path / "team-0.1.0", version="0.1.0",
                                                     agents={"helper": {}})), actor="test")
    yield runtime
    runtime.close()


@pytest.fixture
def console(home):
    with ConsoleThread(home, admin_token=ADMIN) as server:
        yield server


@pytest.fixture
def http(console):
    with httpx.Client(base_url=console.url, timeout=30) as client:
        yield client


def admin() -> dict[str, str]:
    return {"authorization": f"Bearer {ADMIN}"}


def upload(http, path: str, data: bytes, *, headers=None, params=None, media="application/gzip"):
    return http.post(path, content=data, headers={"content-type": media, **(headers or {})}, params=params)


def test_list_and_read_a_plugin_with_its_versions_agents_and_audit(http):
    body = http.get("/v1/plugins").json()
    assert body["success"] is True and body["meta"]["command"] == "plugins.list"
    assert [(p["name"], p["version"], p["agents"]) for p in body["plugins"]] == [("team", "0.1.0", ["helper"])]
    one = http.get("/v1/plugins/team").json()["plugin"]
    assert [v["version"] for v in one["versions"]] == ["0.1.0"] and one["versions"][0]["current"] is True
    assert one["agents"][0]["name"] == "helper" and one["agents"][0]["input"] == "text"
    assert [a["action"] for a in one["audit"]] == ["plugin.install"]
    missing = http.get("/v1/plugins/nope")
    assert missing.status_code == 404
    assert missing.json()["error_code"] == "unknown_plugin" and "'nope'" in missing.json()["error"]
    assert "team" in missing.json()["error"]


def test_an_install_with_the_admin_token_is_seen_by_another_replica_at_once(http, home, tmp_path):
    other = Runtime(home.home, flow_engine=FLOW_ENGINE)  # a second replica over the same store
    try:
        with ConsoleThread(other) as replica, httpx.Client(base_url=replica.url, timeout=30) as second:
            assert second.get("/v1/plugins").json()["plugins"][0]["version"] == "0.1.0"
            assert other.agent("helper").description == ""  # 0.1.0 loaded (and kept) by this replica
            new = write_plugin(tmp_path / "team-0.2.0", version="0.2.0",
                               agents={"helper": {"description": "now 0.2"}, "extra": {}})
            r = upload(http, "/v1/plugins", tgz(new), headers=admin())
            assert r.status_code == 201, r.text
            body = r.json()
            assert body["message"] == "installed team 0.2.0" and body["previous_version"] == "0.1.0"
            assert r.headers["location"] == "/v1/plugins/team"
            listed = second.get("/v1/plugins").json()["plugins"][0]
            assert (listed["version"], listed["agents"]) == ("0.2.0", ["extra", "helper"])
            assert other.agent("helper").description == "now 0.2"
            versions = second.get("/v1/plugins/team").json()["plugin"]["versions"]
            assert [(v["version"], v["current"]) for v in versions] == [("0.2.0", True), ("0.1.0", False)]
            again = upload(http, "/v1/plugins", tgz(new), headers=admin())
            assert again.status_code == 200 and again.json()["unchanged"] is True
    finally:
        other.close()


def test_a_zip_and_a_multipart_upload_install_too(http, tmp_path):
    v2 = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={"helper": {}})
    assert upload(http, "/v1/plugins", zipped(v2), headers=admin(), media="application/zip").status_code == 201
    v3 = write_plugin(tmp_path / "team-0.1.2", version="0.1.2", agents={"helper": {}})
    r = http.post("/v1/plugins", files={"plugin": ("team.tar.gz", tgz(v3), "application/gzip")}, headers=admin())
    assert r.status_code == 201, r.text
    assert http.get("/v1/plugins").json()["plugins"][0]["version"] == "0.1.2"


def test_a_breaking_change_without_a_major_version_is_409_with_the_message_and_the_changes(http, home, tmp_path):
    before = home.store.versions("team")
    new = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={"helper": {"input": SCHEMA}})
    for path, headers in (("/v1/plugins", admin()), ("/v1/plugins/diff", {})):
        r = upload(http, path, tgz(new), headers=headers)
        assert r.status_code == 409, r.text
        body = r.json()
        assert body["success"] is False and body["error_code"] == "breaking_change"
        assert body["error"] == ("invalid request: team 0.1.1 breaks the contracts of 0.1.0: helper: input: takes "
                                 "JSON that matches a schema instead of text; give it a new major version, or "
                                 "install it with --allow-breaking")
        assert [(c["agent"], c["direction"], c["breaking"]) for c in body["details"]["changes"]] == [
            ("helper", "input", True)]
    assert home.store.versions("team") == before
    r = upload(http, "/v1/plugins", tgz(new), headers=admin(), params={"allow_breaking": "true"})
    assert r.status_code == 201, r.text
    audit = http.get("/v1/plugins/team").json()["plugin"]["audit"]
    assert [a["action"] for a in audit[:2]] == ["plugin.contracts.breaking", "plugin.install"]
    assert audit[0]["actor"] == "api-admin" and audit[0]["detail"]["allow_breaking"] is True


def test_the_diff_stores_nothing_and_lists_the_changes(http, home, tmp_path):
    before = (home.store.versions("team"), home.audit_log())
    new = write_plugin(tmp_path / "team-1.0.0", version="1.0.0", agents={"helper": {"input": SCHEMA}})
    r = upload(http, "/v1/plugins/diff", tgz(new, top=None))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["breaking"] is True and body["major_bump"] is True and body["previous_version"] == "0.1.0"
    assert body["changes"][0]["what"] == "takes JSON that matches a schema instead of text"
    assert (home.store.versions("team"), home.audit_log()) == before


def test_installs_need_the_admin_token(http, console, tmp_path):
    new = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={"helper": {}})
    for headers in ({}, {"authorization": "Bearer wrong-token-0123456789"}):
        r = upload(http, "/v1/plugins", tgz(new), headers=headers)
        assert r.status_code == 403
        assert r.json()["error_code"] == "admin_token_required" and "OZ0_ADMIN_TOKEN" in r.json()["error"]
    assert http.get("/v1/plugins").json()["plugins"][0]["version"] == "0.1.0"


def test_without_an_admin_token_set_installs_over_http_are_refused(home, tmp_path):
    with ConsoleThread(home) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        new = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={"helper": {}})
        r = upload(http, "/v1/plugins", tgz(new), headers=admin())
        assert r.status_code == 403 and "needs OZ0_ADMIN_TOKEN set on the server" in r.json()["error"]


def test_behind_a_console_token_the_admin_token_also_reads(home):
    console_token = "console-token-0123456789"
    with ConsoleThread(home, token=console_token, admin_token=ADMIN) as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/v1/plugins").status_code == 401
        assert http.get("/v1/plugins", headers={"authorization": f"Bearer {console_token}"}).status_code == 200
        assert http.get("/v1/plugins", headers=admin()).status_code == 200


def test_bad_uploads_are_refused_naming_what_is_wrong_and_leave_no_temporary_folder(http, tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    bad = io.BytesIO()
    with tarfile.open(fileobj=bad, mode="w:gz") as tar:
        info = tarfile.TarInfo("../../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    r = upload(http, "/v1/plugins/diff", bad.getvalue())
    assert r.status_code == 400 and r.json()["error_code"] == "bad_archive"
    assert "entry '../../escape': a `..` in a path is refused" in r.json()["error"]
    r = upload(http, "/v1/plugins/diff", b"x" * 10, media="text/plain")
    assert r.status_code == 415 and r.json()["error_code"] == "unsupported_media_type"
    r = upload(http, "/v1/plugins/diff", b"\x1f\x8b" + b"\0" * (MAX_UPLOAD_BYTES + 10))
    assert r.status_code == 413 and f"{MAX_UPLOAD_BYTES:,}" in r.json()["error"]
    broken = write_plugin(tmp_path / "broken", version="not-a-version", agents={"helper": {}})
    r = upload(http, "/v1/plugins/diff", tgz(broken))
    assert r.status_code == 422 and r.json()["error_code"] == "lint_errors"
    assert "plugin.yaml" in r.json()["error"] and r.json()["details"]["findings"]
    r = http.post("/v1/plugins/diff", files={"other": ("x", b"y")})
    assert r.status_code == 400 and "no file field `plugin`" in r.json()["error"]
    r = upload(http, "/v1/plugins", tgz(broken), headers=admin(), params={"allow_breaking": "maybe"})
    assert r.status_code == 400 and "allow_breaking='maybe'" in r.json()["error"]
    good = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={"helper": {}})
    assert upload(http, "/v1/plugins/diff", tgz(good)).status_code == 200
    assert upload(http, "/v1/plugins", tgz(good), headers=admin()).status_code == 201
    assert list(scratch.iterdir()) == []


def test_the_openapi_document_lists_the_management_operations(http):
    doc = http.get("/openapi.json").json()
    validate(doc)
    assert doc["paths"]["/plugins"]["post"]["operationId"] == "plugins.install"
    assert set(doc["paths"]["/plugins"]) == {"get", "post"}
    assert doc["paths"]["/plugins/diff"]["post"]["responses"]["409"]
    assert doc["paths"]["/plugins/{name}"]["get"]["operationId"] == "plugins.get"


def test_an_empty_archive_or_a_header_bomb_is_a_400_with_one_line(http):
    from test_plugin_archive import _extended_header_bomb

    empty, dot = io.BytesIO(), io.BytesIO()
    with tarfile.open(fileobj=empty, mode="w:gz"):
        pass
    with tarfile.open(fileobj=dot, mode="w:gz") as tar:
        info = tarfile.TarInfo("./")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    for data in (empty.getvalue(), dot.getvalue()):
        r = upload(http, "/v1/plugins/diff", data)
        assert r.status_code == 400, r.text
        assert r.json()["error"] == ("the archive is refused: the archive holds no file or folder: it is empty "
                                     "(a plugin needs plugin.yaml)")
    r = upload(http, "/v1/plugins/diff", _extended_header_bomb(tarfile.XHDTYPE, 40 << 20))
    assert r.status_code == 400 and r.json()["error_code"] == "bad_archive"
    assert "a pax or GNU long-name header claims 41,943,040 bytes, over 65,536" in r.json()["error"]
    assert http.get("/healthz").status_code == 200


def test_an_install_refusal_names_the_archives_own_path_never_the_servers_temporary_one(http, tmp_path):
    other = write_plugin(tmp_path / "other", version="0.1.0", agents={"helper": {}})
    (other / "plugin.yaml").write_text("name: other\nversion: 0.1.0\n")
    r = upload(http, "/v1/plugins", tgz(other, top="other-0.1.0"), headers=admin())
    assert r.status_code == 409, r.text
    assert r.json()["error"] == ("not installed: other-0.1.0/agents/helper.yaml at $.name: agent 'helper' is already "
                                 "installed by plugin 'team'; agent names are unique across plugins, so rename one")
    assert r.json()["details"] == {"file": "other-0.1.0/agents/helper.yaml", "location": "$.name"}
    assert tempfile.gettempdir() not in r.text


def test_the_same_version_with_other_content_is_refused_unless_forced_and_the_replacement_is_audited(http, home,
                                                                                                    tmp_path):
    team = write_plugin(tmp_path / "team-0.1.1", version="0.1.1", agents={"helper": {}})
    assert upload(http, "/v1/plugins", tgz(team), headers=admin()).status_code == 201
    (team / "agents" / "helper.yaml").write_text((team / "agents" / "helper.yaml").read_text()
                                                  + "description: quietly changed\n")
    r = upload(http, "/v1/plugins", tgz(team), headers=admin())
    assert r.status_code == 409 and r.json()["error_code"] == "version_exists", r.text
    assert r.json()["error"].startswith("not installed: team 0.1.1 is already installed with other content")
    assert "or replace it with --force (force=true over the API)" in r.json()["error"]
    assert http.get("/v1/plugins/team").json()["plugin"]["agents"][0]["description"] != "quietly changed"
    r = upload(http, "/v1/plugins", tgz(team), headers=admin(), params={"force": "true"})
    assert r.status_code == 201, r.text
    assert http.get("/v1/plugins/team").json()["plugin"]["agents"][0]["description"] == "quietly changed"
    [replaced] = [a for a in home.audit_log() if a.action == "plugin.version.replaced"]
    assert replaced.actor == "api-admin" and replaced.detail["version"] == "0.1.1"
    assert replaced.detail["content_hash"] == r.json()["plugin"]["content_hash"] != replaced.detail["replaced_content_hash"]
    assert upload(http, "/v1/plugins", tgz(team), headers=admin(), params={"force": "maybe"}).status_code == 400


def test_oz0_plugin_install_refuses_a_changed_plugin_of_the_same_version_unless_force(tmp_path, monkeypatch, capsys):
    from oz0.adapters.cli import main

    monkeypatch.setenv("OZ0_HOME", str(tmp_path / "home"))
    team = write_plugin(tmp_path / "team", version="0.1.0", agents={"helper": {}})
    assert main(["plugin", "install", str(team)]) == 0
    (team / "agents" / "helper.yaml").write_text((team / "agents" / "helper.yaml").read_text() + "description: x\n")
    capsys.readouterr()
    assert main(["plugin", "install", str(team)]) == 1
    err = capsys.readouterr().err
    assert "team 0.1.0 is already installed with other content" in err and "--force" in err
    assert main(["plugin", "install", str(team), "--force"]) == 0
    assert "content replaced, same version 0.1.0, --force" in capsys.readouterr().out
    runtime = Runtime(tmp_path / "home")
    try:
        assert [a.action for a in runtime.audit_log()].count("plugin.version.replaced") == 1
    finally:
        runtime.close()
