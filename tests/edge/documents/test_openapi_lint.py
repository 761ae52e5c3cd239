"""Both OpenAPI documents, checked as API tooling reads them: the plugin document (`oz0 plugin openapi`,
what the upgrade check compares) and the console's `/openapi.json`, for the example plugin. Each is
valid OpenAPI 3.1 (openapi-spec-validator) and clean under Redocly CLI's `recommended` ruleset (pinned
in tests/support/node): a Bearer security scheme where the API takes a token, `servers`, budgets items that
define their required fields, a 4XX response on every operation, descriptions and tags.

The plugin document keeps one warning, `info-license`, when plugin.yaml has no `license:` to fill it from."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from node_tools import redocly_argv
from openapi_spec_validator import validate
from paths import ROOT

from oz0.adapters.cli import main
from oz0.adapters.console.api import plugin_versions
from oz0.adapters.console.api_doc import api_document
from oz0.edge.flows.engine import FLOW_ENGINE
from oz0.edge.plugins.manifest import load_plugin
from oz0.edge.runtime.install import install_plugin
from oz0.edge.runtime.runner import Runtime

EXAMPLE = ROOT / "edge" / "example_plugin"


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    home = tmp_path_factory.mktemp("home")
    runtime = Runtime(home, flow_engine=FLOW_ENGINE)
    try:
        install_plugin(runtime, load_plugin(EXAMPLE), actor="test")
        console = api_document((*runtime.agents(), *runtime.flows()), versions=plugin_versions(runtime))
    finally:
        runtime.close()
    return {"console": console}


@pytest.fixture(scope="module")
def plugin_document() -> dict[str, Any]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["plugin", "openapi", str(EXAMPLE)]) == 0
    return json.loads(buffer.getvalue())


def redocly(document: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    """The problems Redocly's recommended ruleset finds in `document` (no network: telemetry and the
    update check are off)."""
    path = folder / "openapi.json"
    path.write_text(json.dumps(document, indent=1))
    (folder / "redocly.yaml").write_text("extends:\n  - recommended\n")
    run = subprocess.run([*redocly_argv(), "lint", str(path), "--config", str(folder / "redocly.yaml"),
                          "--format=json"], capture_output=True, text=True, timeout=120, cwd=folder,
                         env={**os.environ, "REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"})
    report = json.loads(run.stdout)
    assert run.returncode in (0, 1), run.stderr
    return report["problems"]


def test_both_documents_are_valid_openapi(documents, plugin_document) -> None:
    validate(plugin_document)
    validate(documents["console"])


def test_the_console_document_is_clean_under_redocly_recommended(documents, tmp_path) -> None:
    problems = redocly(documents["console"], tmp_path)
    assert problems == [], [(p["ruleId"], p["location"][0]["pointer"]) for p in problems]


def test_the_plugin_document_is_clean_but_for_its_license(plugin_document, tmp_path) -> None:
    problems = redocly(plugin_document, tmp_path)
    assert [(p["ruleId"], p["severity"]) for p in problems] == [("info-license", "warn")]


def test_a_plugin_that_declares_its_license_gets_a_clean_document(tmp_path) -> None:
    folder = tmp_path / "licensed"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = folder / "plugin.yaml"
    manifest.write_text(manifest.read_text() + "license: apache-2.0 OR mit\n")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["plugin", "openapi", str(folder)]) == 0
    document = json.loads(buffer.getvalue())
    assert document["info"]["license"] == {"name": "Apache-2.0 OR MIT", "identifier": "Apache-2.0 OR MIT"}
    validate(document)
    problems = redocly(document, tmp_path)
    assert problems == [], [(p["ruleId"], p["location"][0]["pointer"]) for p in problems]


def test_a_license_that_is_not_spdx_is_a_lint_error_naming_the_key(tmp_path, capsys) -> None:
    folder = tmp_path / "unlicensed"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = folder / "plugin.yaml"
    manifest.write_text(manifest.read_text() + "license: Apache 2\n")
    assert main(["plugin", "lint", str(folder)]) != 0
    out = capsys.readouterr()
    shown = out.out + out.err
    assert "license 'Apache 2' is not an SPDX license expression" in shown and "$.license" in shown, shown


def test_a_bearer_token_is_declared_where_the_api_takes_one(documents, plugin_document) -> None:
    for doc in (documents["console"], plugin_document):
        scheme = doc["components"]["securitySchemes"]["consoleToken"]
        assert (scheme["type"], scheme["scheme"]) == ("http", "bearer") and "OZ0_CONSOLE_TOKEN" in scheme["description"]
        assert doc["security"] == [{"consoleToken": []}, {}]  # a token, or none on loopback
        assert doc["servers"][0]["url"] == "/v1"
    console = documents["console"]
    install = console["paths"]["/plugins"]["post"]
    assert install["security"] == [{"adminToken": []}]
    assert console["components"]["securitySchemes"]["adminToken"]["scheme"] == "bearer"


def test_budgets_items_define_their_required_fields(documents) -> None:
    items = documents["console"]["components"]["schemas"]["Job"]["properties"]["budgets"]["items"]
    assert set(items["required"]) <= set(items["properties"])
    assert items["properties"]["per"] == {"enum": ["job", "day"]}


def test_every_operation_has_a_4xx_response_a_description_and_known_tags(documents, plugin_document) -> None:
    for doc in (documents["console"], plugin_document):
        declared = {t["name"] for t in doc["tags"]}
        for path, item in doc["paths"].items():
            for method, op in item.items():
                where = f"{method.upper()} {path}"
                assert any(code.startswith("4") for code in op["responses"]), where
                assert op.get("description") and op.get("summary"), where
                assert op.get("tags") and set(op["tags"]) <= declared, where
    assert "401" in documents["console"]["paths"]["/agents"]["get"]["responses"]
    assert "401" in documents["console"]["paths"]["/plugins"]["get"]["responses"]
