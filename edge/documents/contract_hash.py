"""An agent's or flow's contract hash: what a caller pins, and what tells two versions' contracts apart.

The hash is SHA-256 of the canonical JSON (sorted keys, compact separators, UTF-8) of the contract parts:
the input and output schemas (each local `$ref` rewritten to one pointer into the hashed document, so
two spellings of the same reference hash alike and a recursive schema still has a finite form), the
answer schemas of its person steps, its declared annotations, its failure kinds and its limits (those over the job tree only where they differ from their
defaults, so contracts that leave them alone keep their hash). The
file it was read from, descriptions of the agent and its prose are not part of it: editing the words
changes nothing a caller relies on. A `contract_version` is the plugin version that introduced the
hash (edge.runtime.install keeps the previous one while the hash stays equal).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from oz0.edge.contracts.embed import embed_contract
from oz0.edge.model.agent import ANNOTATION_KEYS, TREE_LIMIT_DEFAULTS, AgentSpec

__all__ = ["canonical_json", "contract_hash", "contract_parts"]


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8: the same value gives the same bytes anywhere."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _schema(contract: Any, prefix: str) -> Any:
    return "text" if contract is None else embed_contract(contract, prefix)


def contract_parts(spec: AgentSpec) -> dict[str, Any]:
    """The parts of `spec`'s contract, as the hash reads them."""
    limits = spec.limits
    annotations = spec.config.get("annotations") or {}
    tools = {"tools": [t.as_json() for t in spec.tools]} if getattr(spec, "tools", ()) else {}
    return {**tools,
        "input": _schema(spec.input, "#/input"),
        "output": _schema(spec.output, "#/output"),
        "person_steps": [{"step": s.id, "answer_schema": _schema(s.answer_schema, f"#/person_steps/{i}/answer_schema")
                          if s.answer_schema is not None else {}}
                         for i, s in enumerate(s for s in getattr(spec, "steps", ()) if s.is_ask)]
        + [{"step": a.step, "answer_schema": _schema(a.answer_schema, f"#/asks/{a.step}")} for a in spec.asks],
        "annotations": {k: v for k, v in dict(annotations).items() if k in ANNOTATION_KEYS},
        "failures": {f.name: {"retryable": f.retryable, "partial": f.partial, "person": f.person}
                     for f in spec.failures},
        "limits": {"timeout_s": float(limits.timeout_s), "max_output_bytes": limits.max_output_bytes,
                   "max_attempts": limits.max_attempts, "concurrency": limits.concurrency, **_tree_limits(limits)},
    }


def _tree_limits(limits: Any) -> dict[str, Any]:
    """The limits over the job tree that differ from their defaults: a contract written before they
    existed (or that leaves them at their defaults) keeps the hash it had."""
    out = {key: getattr(limits, key) for key, default in TREE_LIMIT_DEFAULTS.items()
           if getattr(limits, key) != default}
    if out.get("tree_timeout_s") is not None:
        out["tree_timeout_s"] = float(out["tree_timeout_s"])
    return out


def contract_hash(spec: AgentSpec) -> str:
    """SHA-256 (hex) of the canonical JSON of `spec`'s contract parts, computed once per spec (a frozen value)."""
    known = spec.__dict__.get("_contract_hash")
    if known is None:
        known = hashlib.sha256(canonical_json(contract_parts(spec))).hexdigest()
        object.__setattr__(spec, "_contract_hash", known)
    return known
