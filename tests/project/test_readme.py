"""The docs document every manifest key with an example, and their manifest examples are valid.

A key a plugin author may write (a property anywhere in schemas/plugin, agent and flow .schema.json,
the top-level `schemas/`) must appear as `key:` in a YAML block of the docs (README.md and
docs/**/*.md; the reference is docs/reference/manifests.md); each block headed `# plugin.yaml`,
`# agents/NAME.yaml` or `# flows/NAME.yaml` must match its manifest shape. The README's set-up is
exactly the two commands `make run` and `make test`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from paths import ROOT

from oz0.edge.plugins.declared import manifest_contract
from oz0.edge.plugins.yaml_safe import safe_load

README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {"README.md": README} | {
    str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md"))}
BLOCKS = [(name, block) for name, text in PAGES.items() for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]
MANIFESTS = {"plugin": r"# plugin\.yaml", "agent": r"# agents/[a-z0-9-]+\.yaml", "flow": r"# flows/[a-z0-9-]+\.yaml"}


def _keys(schema: Any, out: set[str]) -> set[str]:
    if isinstance(schema, dict):
        for key, sub in (schema.get("properties") or {}).items():
            out.add(key)
            _keys(sub, out)
        for sub in (schema.get("$defs") or {}).values():
            _keys(sub, out)
        for word in ("items", "additionalProperties"):
            _keys(schema.get(word), out)
        for word in ("oneOf", "anyOf", "allOf"):
            for sub in schema.get(word) or ():
                _keys(sub, out)
    return out


@pytest.mark.parametrize("manifest", sorted(MANIFESTS))
def test_every_manifest_key_has_an_example_in_the_docs(manifest: str) -> None:
    keys = _keys(json.loads((ROOT / "schemas" / f"{manifest}.schema.json").read_text()), set())
    text = "\n".join(block for _, block in BLOCKS)
    missing = sorted(k for k in keys if not re.search(rf"(^|[\s{{,\-]){re.escape(k)}:", text, re.M))
    assert not missing, (f"no YAML example in README.md or docs/ has these {manifest} keys: {', '.join(missing)} "
                         "(document them in docs/reference/manifests.md)")


@pytest.mark.parametrize("manifest", sorted(MANIFESTS))
def test_the_docs_manifest_examples_match_their_shapes(manifest: str) -> None:
    contract = manifest_contract(manifest)
    blocks = [(name, b) for name, b in BLOCKS if re.match(MANIFESTS[manifest] + r"\b", b)]
    assert blocks, f"README.md and docs/ have no example of {manifest} files"
    for name, block in blocks:
        violations = contract.validate(safe_load(block))
        assert not violations, f"{name}: {block.splitlines()[0]}: " + "; ".join(v.describe() for v in violations)


def test_the_readme_sets_up_with_exactly_make_run_and_make_test() -> None:
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README.md's Set up section has no sh block"
    commands = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands == ["make run", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    for target in ("run", "test"):
        assert re.search(rf"^{target}:", makefile, re.M), f"the Makefile has no {target} target"
