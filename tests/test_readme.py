"""The README documents every manifest key with an example, and its manifest examples are valid.

A key a plugin author may write (a property anywhere in schemas/plugin, agent and flow .schema.json)
must appear as `key:` in one of the README's YAML blocks; each block headed `# plugin.yaml`,
`# agents/NAME.yaml` or `# flows/NAME.yaml` must match its manifest shape.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from oz0.edge.plugins.declared import manifest_contract
from oz0.edge.plugins.yaml_safe import safe_load

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```yaml\n(.*?)```", README, re.S)
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
def test_every_manifest_key_has_an_example_in_the_readme(manifest: str) -> None:
    keys = _keys(json.loads((ROOT / "schemas" / f"{manifest}.schema.json").read_text()), set())
    text = "\n".join(BLOCKS)
    missing = sorted(k for k in keys if not re.search(rf"(^|[\s{{,\-]){re.escape(k)}:", text, re.M))
    assert not missing, f"README.md has no YAML example with these {manifest} keys: {', '.join(missing)}"


@pytest.mark.parametrize("manifest", sorted(MANIFESTS))
def test_the_readmes_manifest_examples_match_their_shapes(manifest: str) -> None:
    contract = manifest_contract(manifest)
    blocks = [b for b in BLOCKS if re.match(MANIFESTS[manifest] + r"\b", b)]
    assert blocks, f"README.md has no example of {manifest} files"
    for block in blocks:
        violations = contract.validate(safe_load(block))
        assert not violations, f"{block.splitlines()[0]}: " + "; ".join(v.describe() for v in violations)
