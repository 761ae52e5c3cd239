"""Cases of the official JSON Schema Test Suite the load-time `$ref` check once refused falsely.

The schemas and instances below are copied verbatim from
github.com/json-schema-org/JSON-Schema-Test-Suite, tests/draft7/ref.json (commit 44401e0c),
cases "Location-independent identifier" and "URN base URI with URN and anchor ref"; only the
`$schema` line is added, since the suite runs each file under its own draft.
"""

from __future__ import annotations

import pytest

from oz0.edge.contracts.schema import ContractError, load_contract

DRAFT7 = "http://json-schema.org/draft-07/schema#"

SUITE_CASES = [
    pytest.param(
        {"allOf": [{"$ref": "#foo"}], "definitions": {"A": {"$id": "#foo", "type": "integer"}}},
        [(1, True), ("a", False)],
        id="draft7-location-independent-identifier",
    ),
    pytest.param(
        {"$id": "urn:uuid:deadbeef-1234-ff00-00ff-4321feebdaed",
         "properties": {"foo": {"$ref": "urn:uuid:deadbeef-1234-ff00-00ff-4321feebdaed#something"}},
         "definitions": {"bar": {"$id": "#something", "type": "string"}}},
        [({"foo": "bar"}, True), ({"foo": 12}, False)],
        id="draft7-urn-base-with-urn-and-anchor-ref",
    ),
]


@pytest.mark.parametrize(("schema", "tests"), SUITE_CASES)
def test_suite_cases_load_and_agree(schema, tests):
    contract = load_contract({"$schema": DRAFT7, **schema}, source="ref.json")
    assert [(data, contract.is_valid(data)) for data, _ in tests] == tests


def test_location_independent_identifier_is_followed_for_card_order():
    contract = load_contract({"$schema": DRAFT7, "$id": "urn:example:card",
                              "allOf": [{"$ref": "#row"}],
                              "definitions": {"row": {"$id": "#row", "type": "object",
                                                      "properties": {"name": {"type": "string"}}}}})
    assert contract.resolve("#row")["properties"] == {"name": {"type": "string"}}
    assert contract.resolve("urn:example:card#row")["type"] == "object"


def test_missing_anchor_under_a_urn_base_is_still_refused_naming_it():
    with pytest.raises(ContractError) as info:
        load_contract({"$schema": DRAFT7, "$id": "urn:example:x", "items": {"$ref": "#nowhere"},
                       "definitions": {"a": {"$id": "#somewhere"}}}, source="x.json")
    assert info.value.location == "/items/$ref"
    assert "'#nowhere'" in str(info.value) and "nowhere" in info.value.message


@pytest.mark.parametrize("ref", [
    "https://json-schema.org/draft/2020-12/meta/../../../evil.json",
    "https://json-schema.org/draft/2020-12/meta/../../../../draft/2020-12/../x/schema",
    "https://json-schema.org/draft/2020-12/schema/../../../evil.json",
    "http://json-schema.org/draft-07/schema/../../evil.json",
])
def test_meta_schema_ref_whose_dot_segments_leave_the_namespace_is_refused_at_load(ref):
    with pytest.raises(ContractError) as info:
        load_contract({"properties": {"a": {"$ref": ref}}}, source="tool.json")
    assert info.value.location == "/properties/a/$ref"
    assert ref in str(info.value)
    assert "cannot compile" not in str(info.value)


@pytest.mark.parametrize("ref", [
    "https://json-schema.org/draft/2020-12/meta/../schema",
    "https://json-schema.org/draft/2020-12/meta/./validation",
])
def test_meta_schema_ref_whose_dot_segments_stay_inside_still_resolves_locally(ref):
    contract = load_contract({"$ref": ref})
    assert not contract.is_valid({"type": 1})
    assert contract.is_valid({"type": "string"})
