"""The JSON Schema dialects a contract may declare, and the meta-schemas each resolves without a fetch.

The validator ships the meta-schemas of each dialect and knows only those of the contract's own
dialect; any other URI under json-schema.org (a query, a percent-encoded `..`, an unknown name, another
dialect's meta-schema) would be a fetch, which a contract never makes, so it is refused at load.
"""

from __future__ import annotations

__all__ = ["DEFAULT_DIALECT", "DIALECTS", "META_NAMESPACES", "META_SCHEMAS", "meta_schema_refusal"]

DIALECTS: dict[str, str] = {
    "https://json-schema.org/draft/2020-12/schema": "2020-12",
    "https://json-schema.org/draft/2019-09/schema": "2019-09",
    "http://json-schema.org/draft-07/schema": "draft-07",
}
DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"

META_NAMESPACES = tuple(k.rsplit("/", 1)[0] + "/" for k in DIALECTS)
# The meta-schemas the validator ships for each dialect, by exact URI: the only remote refs that resolve
META_SCHEMAS: dict[str, frozenset[str]] = {
    DIALECTS[dialect]: frozenset({dialect} | {f"{dialect.rsplit('/', 1)[0]}/meta/{name}" for name in names})
    for dialect, names in {
        "https://json-schema.org/draft/2020-12/schema": ("core", "applicator", "unevaluated", "validation",
                                                         "meta-data", "format-annotation", "format-assertion",
                                                         "content"),
        "https://json-schema.org/draft/2019-09/schema": ("core", "applicator", "validation", "meta-data",
                                                         "format", "content"),
        "http://json-schema.org/draft-07/schema": (),
    }.items()
}


def meta_schema_refusal(doc: str, dialect: str) -> str | None:
    """Why a reference into the meta-schema namespace does not resolve locally, None when it does: only
    the exact URI of a meta-schema of the contract's own dialect does (no query, no encoded segment)."""
    if doc.rstrip("#") in META_SCHEMAS[dialect]:
        return None
    other = next((d for d, known in META_SCHEMAS.items() if doc.rstrip("#") in known), None)
    if other is not None:
        return (f"is a meta-schema of {other}, but this contract is {dialect}; only its own dialect's "
                "meta-schemas resolve, and nothing is fetched")
    return f"is not a meta-schema of {dialect} (a query, an encoded segment or an unknown name); nothing is fetched"
