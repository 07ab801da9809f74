"""``$jsonSchema`` in the engine: the keywords the simulator supports, as a query operator and
as document validation's ``schemaRulesNotSatisfied``, and the keywords it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from mongo_sansio.bson import Int64
from mongo_sansio.testing.engine import CommandError, matches
from mongo_sansio.testing.engine.json_schema import compile_schema
from mongo_sansio.testing.engine.validation import explain


def _ok(schema: dict[str, Any], document: dict[str, Any]) -> bool:
    return matches(document, {"$jsonSchema": schema})


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        ({"bsonType": "object"}, {"a": 1}, None),
        ({"properties": {"a": {"bsonType": "string"}}}, {"a": "s"}, {"a": 1}),
        ({"properties": {"a": {"bsonType": ["int", "long"]}}}, {"a": Int64(1)}, {"a": 1.5}),
        ({"properties": {"a": {"bsonType": "number"}}}, {"a": 1.5}, {"a": "1"}),
        ({"properties": {"a": {"type": "number"}}}, {"a": 2}, {"a": True}),
        ({"properties": {"a": {"type": "boolean"}}}, {"a": False}, {"a": 0}),
        ({"required": ["a", "b"]}, {"a": 1, "b": None}, {"a": 1}),
        ({"properties": {"a": {"enum": [1, "x", None]}}}, {"a": 1.0}, {"a": 2}),
        ({"properties": {"a": {"minimum": 0, "maximum": 10}}}, {"a": 10}, {"a": 11}),
        ({"properties": {"a": {"minimum": 0, "exclusiveMinimum": True}}}, {"a": 1}, {"a": 0}),
        ({"properties": {"a": {"maximum": 5, "exclusiveMaximum": True}}}, {"a": 4}, {"a": 5}),
        ({"properties": {"a": {"minimum": 3}}}, {"a": "not a number: not constrained"}, {"a": 2}),
        ({"properties": {"s": {"minLength": 2, "maxLength": 3}}}, {"s": "héé"}, {"s": "abcd"}),
        ({"properties": {"s": {"pattern": "^a+$"}}}, {"s": "aaa"}, {"s": "ab"}),
        ({"properties": {"l": {"items": {"bsonType": "int"}}}}, {"l": [1, 2]}, {"l": [1, "2"]}),
        ({"properties": {"l": {"items": [{"bsonType": "int"}, {"bsonType": "string"}]}}}, {"l": [1, "a", None]},
         {"l": ["a", 1]}),
        ({"properties": {"l": {"minItems": 1, "maxItems": 2}}}, {"l": [1]}, {"l": []}),
        ({"properties": {"l": {"uniqueItems": True}}}, {"l": [1, 2]}, {"l": [1, 1.0]}),
        ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1}, {"a": 1, "b": 2}),
        ({"additionalProperties": {"bsonType": "int"}}, {"a": 1}, {"a": "x"}),
        ({"patternProperties": {"^n_": {"bsonType": "int"}}}, {"n_a": 1, "s": "x"}, {"n_a": "x"}),
        ({"minProperties": 2}, {"a": 1, "b": 2}, {"a": 1}),
        ({"properties": {"n": {"multipleOf": 3}}}, {"n": 9}, {"n": 10}),
        ({"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"b": 1}, {"c": 1}),
        ({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"b": 1}, {"a": 1, "b": 1}),
        ({"allOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"a": 1, "b": 1}, {"b": 1}),
        ({"not": {"required": ["secret"]}, "title": "t", "description": "d"}, {"a": 1}, {"secret": 1}),
        ({"properties": {"o": {"bsonType": "object", "required": ["z"]}}}, {"o": {"z": 1}}, {"o": {}}),
    ],
)
def test_keywords(schema: dict[str, Any], good: dict[str, Any], bad: dict[str, Any] | None) -> None:
    assert _ok(schema, good)
    if bad is not None:
        assert not _ok(schema, bad)


def test_failures_are_mongods_details() -> None:
    # (properties are reported before required, as mongod orders them)
    schema = {
        "bsonType": "object",
        "required": ["name", "year"],
        "properties": {
            "name": {"bsonType": "string", "description": "must be a string"},
            "year": {"bsonType": "int", "minimum": 2017},
            "tags": {"items": {"bsonType": "string"}, "maxItems": 3},
        },
    }
    document = {"_id": 1, "name": 5, "tags": ["a", 2]}
    assert explain({"$jsonSchema": schema}, document) == {
        "operatorName": "$jsonSchema",
        "schemaRulesNotSatisfied": [
            {"operatorName": "properties", "propertiesNotSatisfied": [
                {"propertyName": "name", "description": "must be a string", "details": [
                    {"operatorName": "bsonType", "specifiedAs": {"bsonType": "string"}, "reason": "type did not match",
                     "consideredValue": 5, "consideredType": "int"}]},
                {"propertyName": "tags", "details": [
                    {"operatorName": "items", "reason": "At least one item did not match the sub-schema", "itemIndex": 1,
                     "details": [{"operatorName": "bsonType", "specifiedAs": {"bsonType": "string"},
                                  "reason": "type did not match", "consideredValue": 2, "consideredType": "int"}]}]},
            ]},
            {"operatorName": "required", "specifiedAs": {"required": ["name", "year"]}, "missingProperties": ["year"]},
        ],
    }
    extra = explain({"$jsonSchema": {"properties": {"a": {}}, "additionalProperties": False}}, {"a": 1, "b": 2, "c": 3})
    assert extra["schemaRulesNotSatisfied"] == [
        {"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": False},
         "additionalProperties": ["b", "c"]},
    ]
    bounded = explain({"$jsonSchema": {"properties": {"s": {"maxLength": 2}, "n": {"maximum": 1}}}}, {"s": "abc", "n": 3})
    details = [p["details"][0] for p in bounded["schemaRulesNotSatisfied"][0]["propertiesNotSatisfied"]]
    assert [(d["operatorName"], d["reason"], d["consideredValue"]) for d in details] == [
        ("maxLength", "specified string length was not satisfied", "abc"), ("maximum", "comparison failed", 3),
    ]


@pytest.mark.parametrize(
    ("schema", "code", "errmsg"),
    [
        ({"format": "date"}, 9, "$jsonSchema keyword 'format' is not currently supported"),
        ({"$ref": "#/a"}, 9, "$jsonSchema keyword '$ref' is not currently supported"),
        ({"dependencies": {"a": ["b"]}}, 9, "$jsonSchema keyword 'dependencies' is not supported by the simulated server"),
        ({"nonsense": 1}, 9, "Unknown $jsonSchema keyword: nonsense"),
        ({"type": "integer"}, 2, "$jsonSchema type 'integer' is not currently supported."),
        ({"bsonType": "float"}, 2, "Unknown type name alias: float"),
        ({"required": []}, 2, "$jsonSchema keyword 'required' cannot be an empty array"),
        ({"required": "a"}, 14, "$jsonSchema keyword 'required' must be an array"),
        ({"minimum": "0"}, 14, "$jsonSchema keyword 'minimum' must be a number"),
        ({"minLength": -1}, 9, "$jsonSchema keyword 'minLength' must be a representable, non-negative integer"),
        ({"type": "string", "bsonType": "string"}, 9, "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'"),
        ({"properties": {"a": {"format": "x"}}}, 9, "$jsonSchema keyword 'format' is not currently supported"),
    ],
)
def test_refused_schemas(schema: dict[str, Any], code: int, errmsg: str) -> None:
    with pytest.raises(CommandError) as raised:
        compile_schema(schema)
    assert (raised.value.code, raised.value.errmsg) == (code, errmsg)
