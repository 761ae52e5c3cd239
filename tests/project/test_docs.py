"""The user docs in docs/ build with MkDocs in strict mode, so every link and anchor resolves.

The README stays short and links into docs/; the docs name every dependency, every environment
variable the code reads, and their access.yaml examples load.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from markdown.extensions.toc import slugify
from paths import ROOT

from oz0.edge.runtime.access import AccessPolicy

DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = sorted(DOCS.rglob("*.md"))
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_IMAGE_BYTES = 200_000


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, timeout=120, cwd=config.parent)


def test_the_docs_build_strict_with_every_link_and_anchor_resolved(tmp_path: Path) -> None:
    built = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "reference" / "manifests" / "index.html").is_file()


def test_links_and_anchors_are_checked_so_strict_fails_on_them() -> None:
    validation = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["validation"]
    for check in ("omitted_files", "absolute_links", "unrecognized_links", "anchors", "not_found"):
        assert validation.get(check) == "warn", f"mkdocs.yml: validation.{check} must be warn for --strict to fail on it"


def test_a_broken_anchor_or_page_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    page = tmp_path / "docs" / "explanation" / "safety.md"
    page.write_text(page.read_text() + "\n[a](cards.md#no-such-heading) [b](no-such-page.md)\n")
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 1
    assert "does not contain an anchor '#no-such-heading'" in built.stderr
    assert "'no-such-page.md'" in built.stderr


def test_the_readme_is_short_and_its_links_lead_to_docs_that_exist() -> None:
    lines = README.count("\n")
    assert lines <= 200, f"README.md has {lines} lines; keep it under 200 and move the rest into docs/"
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert any(link.startswith("docs/") for link in local), "README.md does not link into docs/"
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.is_file(), f"README.md links to {link}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in {slugify(h, "-") for h in headings}, f"README.md: {path} has no heading #{anchor}"


def test_every_dependency_has_its_reason_in_the_docs() -> None:
    page = (DOCS / "explanation" / "dependencies.md").read_text().lower()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for requirement in (*project["dependencies"], *project["optional-dependencies"]["test"]):
        name = re.match(r"[A-Za-z0-9_.\-]+", requirement).group(0).lower()
        assert name in page, f"docs/explanation/dependencies.md does not say why {name} is a dependency"


def test_every_environment_variable_the_code_reads_is_in_the_configuration_reference() -> None:
    page = (DOCS / "reference" / "configuration.md").read_text()
    read = set()
    for folder in ("edge", "adapters", "renderers"):
        for source in (ROOT / folder).rglob("*.py"):
            read |= set(re.findall(r"[\"']((?:OZ0|SLACK|DISCORD)_[A-Z0-9_]+)[\"']", source.read_text(encoding="utf-8")))
    assert read, "found no environment variable in the code: the pattern is stale"
    missing = sorted(name for name in read if f"`{name}`" not in page)
    assert not missing, f"docs/reference/configuration.md does not list {', '.join(missing)}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_the_access_yaml_examples_load(page: Path, tmp_path: Path) -> None:
    for block in re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
        if not (block.startswith("# OZ0_HOME/access.yaml") or block.startswith("default:")):
            continue
        (tmp_path / "access.yaml").write_text(block)
        policy = AccessPolicy.load(tmp_path)
        assert policy.rules or policy.budgets, f"{page.name}: an access.yaml example with no rule or budget"


def test_every_image_the_docs_show_is_a_png_in_docs_images_with_alt_text_and_under_200_kb() -> None:
    shown = set()
    for page in PAGES:
        for alt, link in IMAGE.findall(page.read_text(encoding="utf-8")):
            where = f"docs/{page.relative_to(DOCS)} shows {link}"
            target = (page.parent / link).resolve()
            assert alt.strip(), f"{where} with no alt text"
            assert target.is_file(), f"{where}, which does not exist"
            assert target.read_bytes()[:8] == PNG_SIGNATURE, f"{where}, which is not a PNG"
            size = target.stat().st_size
            assert size <= MAX_IMAGE_BYTES, f"{where}: {size} bytes; keep a docs image under {MAX_IMAGE_BYTES}"
            shown.add(target)
    assert shown, "no page shows an image: docs/how-to/conversations.md shows the console's screenshots"
    unshown = sorted(p.name for p in (DOCS / "images").iterdir() if p.resolve() not in shown)
    assert not unshown, f"docs/images/ holds {', '.join(unshown)}, which no page shows"
