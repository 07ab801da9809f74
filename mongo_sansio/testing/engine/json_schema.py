"""``$jsonSchema``: mongod's dialect of JSON Schema draft 4, as a query operator.

A schema compiles once (:func:`compile_schema`), refusing what mongod refuses with its codes
(FailedToParse 9 for an unknown keyword or one mongod does not support, TypeMismatch 14 or
BadValue 2 for a keyword's bad argument).  The compiled :class:`Schema` answers two questions:
does a value satisfy it (:meth:`Schema.matches`, the query operator), and which of its rules
does a value break (:meth:`Schema.failures`, the ``schemaRulesNotSatisfied`` list of a
document validation error, shaped as mongod 5.0+ reports it: ``operatorName``,
``specifiedAs``, ``reason``, ``consideredValue`` and the keyword's own fields).

As in mongod, each keyword constrains only values of the kind it is about: ``minimum`` only
numbers, ``minLength`` only strings, ``items`` only arrays, ``properties`` and ``required``
only objects; a value of another kind passes it.  Property names are field names, never
dotted paths, and arrays are not traversed.

Supported keywords: bsonType, type, required, properties, additionalProperties,
patternProperties, enum, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf,
minLength, maxLength, pattern, items (one schema or a list), additionalItems, minItems,
maxItems, uniqueItems, minProperties, maxProperties, allOf, anyOf, oneOf, not, title and
description.  ``dependencies`` and the encryption keywords are refused as not simulated.
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Callable, Mapping, Sized
from typing import Any, cast

from mongo_sansio.testing.engine.errors import (
    CommandError,
    bad_value,
    failed_to_parse,
    type_mismatch,
)
from mongo_sansio.testing.engine.order import (
    TYPE_NUMBERS,
    copy_value,
    is_number,
    numeric_value,
    type_name,
    values_equal,
)

__all__ = ["Schema", "compile_schema"]

# mongod knows these keywords but does not implement them.
_NOT_SUPPORTED_BY_MONGOD = ("$ref", "$schema", "default", "definitions", "format", "id")
# mongod implements these; the simulator does not.
_NOT_SIMULATED = ("dependencies", "encrypt", "encryptMetadata")
_NUMBER_TYPES = ("int", "long", "double", "decimal")
# JSON Schema's ``type`` names, as BSON type aliases ("integer" is refused, as mongod does).
_JSON_TYPES: dict[str, tuple[str, ...]] = {
    "object": ("object",), "array": ("array",), "string": ("string",), "boolean": ("bool",),
    "null": ("null",), "number": _NUMBER_TYPES,
}

Failure = dict[str, Any]


def _keyword_error(keyword: str, expected: str) -> CommandError:
    return type_mismatch(f"$jsonSchema keyword '{keyword}' must be {expected}")


def _number(schema: Mapping[str, Any], keyword: str) -> Any:
    value = schema[keyword]
    if not is_number(value):
        raise _keyword_error(keyword, "a number")
    return value


def _count(schema: Mapping[str, Any], keyword: str) -> int:
    value = _number(schema, keyword)
    number = numeric_value(value)
    if number != int(number) or number < 0:
        raise failed_to_parse(f"$jsonSchema keyword '{keyword}' must be a representable, non-negative integer")
    return int(number)


def _bool(schema: Mapping[str, Any], keyword: str) -> bool:
    value = schema[keyword]
    if not isinstance(value, bool):
        raise _keyword_error(keyword, "a boolean")
    return value


def _types(schema: Mapping[str, Any], keyword: str) -> frozenset[str]:
    """The BSON type aliases a ``type`` or ``bsonType`` keyword accepts."""
    value = schema[keyword]
    names = value if isinstance(value, list) else [value]
    if not names or not all(isinstance(name, str) for name in names):
        raise _keyword_error(keyword, "either a string or an array of strings")
    if len(set(names)) != len(names):
        raise failed_to_parse(f"$jsonSchema keyword '{keyword}' array cannot contain duplicate values")
    accepted: set[str] = set()
    for name in names:
        if keyword == "type":
            if name == "integer":
                raise bad_value("$jsonSchema type 'integer' is not currently supported.")
            if name not in _JSON_TYPES:
                raise bad_value(f"Unknown type name alias: {name}")
            accepted.update(_JSON_TYPES[name])
        elif name == "number":
            accepted.update(_NUMBER_TYPES)
        elif name in TYPE_NUMBERS:
            accepted.add(name)
        else:
            raise bad_value(f"Unknown type name alias: {name}")
    return frozenset(accepted)


def compile_schema(schema: Any) -> Schema:
    """The ``$jsonSchema`` argument, checked and compiled."""
    if not isinstance(schema, Mapping):
        raise type_mismatch("$jsonSchema must be an object")
    return Schema(schema)


class Schema:
    """One (sub)schema: its keywords checked, its rules ready to test values."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.spec = schema
        self.description = schema.get("description")
        for keyword in schema:
            if keyword in _NOT_SUPPORTED_BY_MONGOD:
                raise failed_to_parse(f"$jsonSchema keyword '{keyword}' is not currently supported")
            if keyword in _NOT_SIMULATED:
                raise failed_to_parse(f"$jsonSchema keyword '{keyword}' is not supported by the simulated server")
            if keyword not in _BUILDERS:
                raise failed_to_parse(f"Unknown $jsonSchema keyword: {keyword}")
        if "type" in schema and "bsonType" in schema:
            raise failed_to_parse("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'")
        for pair in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if pair[0] in schema and pair[1] not in schema:
                raise failed_to_parse(f"$jsonSchema keyword '{pair[1]}' must be present if {pair[0]} is present")
        self.rules: list[Callable[[Any], list[Failure]]] = []
        # (mongod checks, and reports, keywords in an order of its own: object keywords
        # such as properties come before required, whatever the schema's order)
        for keyword in sorted(schema, key=list(_BUILDERS).index):
            rule = _BUILDERS[keyword](schema)
            if rule is not None:
                self.rules.append(rule)

    def failures(self, value: Any) -> list[Failure]:
        """The rules ``value`` breaks, as mongod details them (empty: it satisfies them all)."""
        found: list[Failure] = []
        for rule in self.rules:
            found.extend(rule(value))
        return found

    def matches(self, value: Any) -> bool:
        return all(not rule(value) for rule in self.rules)


# --- the keywords -------------------------------------------------------------------------------

_Rule = Callable[[Any], list[Failure]]


def _failure(keyword: str, schema: Mapping[str, Any], reason: str, value: Any, **more: Any) -> Failure:
    return {"operatorName": keyword, "specifiedAs": {keyword: copy_value(schema[keyword])}, "reason": reason,
            "consideredValue": copy_value(value), **more}


def _type_rule(keyword: str) -> Callable[[Mapping[str, Any]], _Rule]:
    def build(schema: Mapping[str, Any]) -> _Rule:
        accepted = _types(schema, keyword)

        def rule(value: Any) -> list[Failure]:
            if type_name(value) in accepted:
                return []
            return [_failure(keyword, schema, "type did not match", value, consideredType=type_name(value))]

        return rule

    return build


def _required(schema: Mapping[str, Any]) -> _Rule:
    names = schema["required"]
    if not isinstance(names, list):
        raise _keyword_error("required", "an array")
    if not names:
        raise bad_value("$jsonSchema keyword 'required' cannot be an empty array")
    if not all(isinstance(name, str) for name in names):
        raise _keyword_error("required", "an array of strings")
    if len(set(names)) != len(names):
        raise failed_to_parse("$jsonSchema keyword 'required' array cannot contain duplicate values")

    def rule(value: Any) -> list[Failure]:
        if not isinstance(value, Mapping):
            return []
        missing = [name for name in names if name not in value]
        if not missing:
            return []
        return [{"operatorName": "required", "specifiedAs": {"required": list(names)}, "missingProperties": missing}]

    return rule


def _subschemas(schema: Mapping[str, Any], keyword: str) -> dict[str, Schema]:
    spec = schema[keyword]
    if not isinstance(spec, Mapping):
        raise _keyword_error(keyword, "an object")
    compiled = {}
    for name, sub in spec.items():
        if not isinstance(sub, Mapping):
            raise type_mismatch(f"Nested schema for $jsonSchema property '{name}' must be an object")
        compiled[name] = Schema(sub)
    return compiled


def _property_failure(name: str, sub: Schema, failures: list[Failure]) -> Failure:
    entry: Failure = {"propertyName": name}
    if isinstance(sub.description, str):
        entry["description"] = sub.description
    entry["details"] = failures
    return entry


def _properties(schema: Mapping[str, Any]) -> _Rule:
    subschemas = _subschemas(schema, "properties")

    def rule(value: Any) -> list[Failure]:
        if not isinstance(value, Mapping):
            return []
        failing = []
        for name, sub in subschemas.items():
            if name in value:
                failures = sub.failures(value[name])
                if failures:
                    failing.append(_property_failure(name, sub, failures))
        return [{"operatorName": "properties", "propertiesNotSatisfied": failing}] if failing else []

    return rule


def _pattern_properties(schema: Mapping[str, Any]) -> _Rule:
    subschemas = [(_regex(pattern), sub) for pattern, sub in _subschemas(schema, "patternProperties").items()]

    def rule(value: Any) -> list[Failure]:
        if not isinstance(value, Mapping):
            return []
        failing = []
        for name, item in value.items():
            for pattern, sub in subschemas:
                failures = sub.failures(item) if pattern.search(name) else []
                if failures:
                    failing.append(_property_failure(name, sub, failures))
        return [{"operatorName": "patternProperties", "propertiesNotSatisfied": failing}] if failing else []

    return rule


def _additional_properties(schema: Mapping[str, Any]) -> _Rule:
    allowed = schema["additionalProperties"]
    known = set(schema.get("properties", {}) if isinstance(schema.get("properties"), Mapping) else ())
    patterns_spec = schema.get("patternProperties", {})
    patterns = [_regex(p) for p in patterns_spec] if isinstance(patterns_spec, Mapping) else []
    if not isinstance(allowed, bool | Mapping):
        raise _keyword_error("additionalProperties", "either an object or a boolean")
    sub = Schema(allowed) if isinstance(allowed, Mapping) else None

    def rule(value: Any) -> list[Failure]:
        if not isinstance(value, Mapping):
            return []
        extra = [n for n in value if n not in known and not any(p.search(n) for p in patterns)]
        if sub is None:
            if allowed or not extra:
                return []
            return [{"operatorName": "additionalProperties", "specifiedAs": {"additionalProperties": False},
                     "additionalProperties": extra}]
        for name in extra:
            failures = sub.failures(value[name])
            if failures:
                return [{"operatorName": "additionalProperties",
                         "reason": "at least one additional property did not match the subschema",
                         "failingProperty": name, "details": failures}]
        return []

    return rule


def _enum(schema: Mapping[str, Any]) -> _Rule:
    choices = schema["enum"]
    if not isinstance(choices, list):
        raise _keyword_error("enum", "an array")
    if not choices:
        raise failed_to_parse("$jsonSchema keyword 'enum' cannot be an empty array")

    def rule(value: Any) -> list[Failure]:
        if any(values_equal(value, choice) for choice in choices):
            return []
        return [_failure("enum", schema, "value was not found in enum", value)]

    return rule


def _bound(keyword: str, exclusive: str, lower: bool) -> Callable[[Mapping[str, Any]], _Rule]:
    def build(schema: Mapping[str, Any]) -> _Rule:
        limit = numeric_value(_number(schema, keyword))
        strict = _bool(schema, exclusive) if exclusive in schema else False
        shown = {keyword: copy_value(schema[keyword])}
        if exclusive in schema:
            shown[exclusive] = strict

        def rule(value: Any) -> list[Failure]:
            if not is_number(value):
                return []
            number = numeric_value(value)
            if lower:
                ok = number > limit if strict else number >= limit
            else:
                ok = number < limit if strict else number <= limit
            if ok:
                return []
            return [{"operatorName": keyword, "specifiedAs": shown, "reason": "comparison failed",
                     "consideredValue": copy_value(value)}]

        return rule

    return build


def _exclusive(schema: Mapping[str, Any]) -> None:
    """exclusiveMinimum/Maximum are read by their bound's rule."""
    return None


def _multiple_of(schema: Mapping[str, Any]) -> _Rule:
    divisor = numeric_value(_number(schema, "multipleOf"))
    if divisor <= 0:
        raise failed_to_parse("$jsonSchema keyword 'multipleOf' must have a positive value")

    def rule(value: Any) -> list[Failure]:
        if not is_number(value) or _remainder(numeric_value(value), divisor) == 0:
            return []
        return [_failure("multipleOf", schema, "considered value is not a multiple of the specified value", value)]

    return rule


def _remainder(value: Any, divisor: Any) -> Any:
    if isinstance(value, decimal.Decimal) or isinstance(divisor, decimal.Decimal):
        return decimal.Decimal(str(value)) % decimal.Decimal(str(divisor))
    return value % divisor


def _bounded_size(
    keyword: str, lower: bool, kind: type | tuple[type, ...], reason: str
) -> Callable[[Mapping[str, Any]], _Rule]:
    """minLength/maxLength (strings), minItems/maxItems (arrays), minProperties/maxProperties
    (objects): the size of a value of ``kind`` at least, or at most, the keyword's count.  An
    object's failure reports its number of properties rather than the value, as mongod does."""

    def build(schema: Mapping[str, Any]) -> _Rule:
        limit = _count(schema, keyword)

        def rule(value: Any) -> list[Failure]:
            if not isinstance(value, kind):
                return []
            size = len(cast(Sized, value))
            if size >= limit if lower else size <= limit:
                return []
            if kind is Mapping:
                return [{"operatorName": keyword, "specifiedAs": {keyword: copy_value(schema[keyword])},
                         "reason": reason, "numberOfProperties": size}]
            return [_failure(keyword, schema, reason, value)]

        return rule

    return build


_STRING_LENGTH = "specified string length was not satisfied"
_ITEM_COUNT = "array did not match specified length"
_PROPERTY_COUNT = "specified number of properties was not satisfied"


def _regex(pattern: Any) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise _keyword_error("pattern", "a string")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise CommandError(51091, "Location51091", f"Regular expression is invalid: {exc}") from None


def _pattern(schema: Mapping[str, Any]) -> _Rule:
    compiled = _regex(schema["pattern"])

    def rule(value: Any) -> list[Failure]:
        if not isinstance(value, str) or compiled.search(value):
            return []
        return [_failure("pattern", schema, "regular expression did not match", value)]

    return rule


def _items(schema: Mapping[str, Any]) -> _Rule:
    spec = schema["items"]
    if isinstance(spec, Mapping):
        sub = Schema(spec)

        def one(value: Any) -> list[Failure]:
            if not isinstance(value, list):
                return []
            for index, item in enumerate(value):
                failures = sub.failures(item)
                if failures:
                    return [{"operatorName": "items", "reason": "At least one item did not match the sub-schema",
                             "itemIndex": index, "details": failures}]
            return []

        return one
    if not isinstance(spec, list) or not all(isinstance(s, Mapping) for s in spec):
        raise _keyword_error("items", "an array of objects or an object")
    tuple_schemas = [Schema(s) for s in spec]

    def each(value: Any) -> list[Failure]:
        if not isinstance(value, list):
            return []
        failing = []
        for index, (sub, item) in enumerate(zip(tuple_schemas, value, strict=False)):
            failures = sub.failures(item)
            if failures:
                failing.append({"index": index, "details": failures})
        return [{"operatorName": "items", "details": failing}] if failing else []

    return each


def _additional_items(schema: Mapping[str, Any]) -> _Rule | None:
    allowed = schema["additionalItems"]
    if not isinstance(allowed, bool | Mapping):
        raise _keyword_error("additionalItems", "either an object or a boolean")
    positional = schema.get("items")
    if not isinstance(positional, list):
        return None  # (only a list of items leaves items over)
    sub = Schema(allowed) if isinstance(allowed, Mapping) else None

    def rule(value: Any) -> list[Failure]:
        if not isinstance(value, list) or len(value) <= len(positional):
            return []
        extra = value[len(positional):]
        if sub is None:
            if allowed:
                return []
            return [{"operatorName": "additionalItems", "specifiedAs": {"additionalItems": False},
                     "reason": "found additional items", "additionalItems": copy_value(extra)}]
        for offset, item in enumerate(extra):
            failures = sub.failures(item)
            if failures:
                return [{"operatorName": "additionalItems", "reason": "At least one item did not match the sub-schema",
                         "itemIndex": len(positional) + offset, "details": failures}]
        return []

    return rule


def _unique_items(schema: Mapping[str, Any]) -> _Rule | None:
    if not _bool(schema, "uniqueItems"):
        return None

    def rule(value: Any) -> list[Failure]:
        if not isinstance(value, list):
            return []
        for index, item in enumerate(value):
            if any(values_equal(item, earlier) for earlier in value[:index]):
                return [_failure("uniqueItems", schema, "found a duplicate item", value, duplicatedValue=copy_value(item))]
        return []

    return rule


def _schema_list(schema: Mapping[str, Any], keyword: str) -> list[Schema]:
    spec = schema[keyword]
    if not isinstance(spec, list):
        raise _keyword_error(keyword, "an array")
    if not spec:
        raise bad_value(f"$jsonSchema keyword '{keyword}' must be a non-empty array")
    if not all(isinstance(s, Mapping) for s in spec):
        raise type_mismatch(f"$jsonSchema keyword '{keyword}' must be an array of objects")
    return [Schema(s) for s in spec]


def _combination(keyword: str) -> Callable[[Mapping[str, Any]], _Rule]:
    def build(schema: Mapping[str, Any]) -> _Rule:
        subschemas = _schema_list(schema, keyword)

        def rule(value: Any) -> list[Failure]:
            results = [sub.failures(value) for sub in subschemas]
            failing = [{"index": i, "details": f} for i, f in enumerate(results) if f]
            passing = [i for i, f in enumerate(results) if not f]
            if keyword == "allOf" and failing:
                return [{"operatorName": "allOf", "schemasNotSatisfied": failing}]
            if keyword in ("anyOf", "oneOf") and not passing:
                return [{"operatorName": keyword, "schemasNotSatisfied": failing}]
            if keyword == "oneOf" and len(passing) > 1:
                return [{"operatorName": "oneOf", "specifiedAs": {"oneOf": copy_value(schema["oneOf"])},
                         "reason": "more than one subschema matched", "matchingSchemaIndexes": passing}]
            return []

        return rule

    return build


def _not(schema: Mapping[str, Any]) -> _Rule:
    spec = schema["not"]
    if not isinstance(spec, Mapping):
        raise _keyword_error("not", "an object")
    sub = Schema(spec)

    def rule(value: Any) -> list[Failure]:
        if not sub.matches(value):
            return []
        return [{"operatorName": "not", "specifiedAs": {"not": copy_value(spec)}, "reason": "child expression matched"}]

    return rule


def _annotation(keyword: str) -> Callable[[Mapping[str, Any]], None]:
    def build(schema: Mapping[str, Any]) -> None:
        if not isinstance(schema[keyword], str):
            raise _keyword_error(keyword, "a string")

    return build


_BUILDERS: dict[str, Callable[[Mapping[str, Any]], _Rule | None]] = {
    "bsonType": _type_rule("bsonType"),
    "type": _type_rule("type"),
    "pattern": _pattern,
    "maxLength": _bounded_size("maxLength", False, str, _STRING_LENGTH),
    "minLength": _bounded_size("minLength", True, str, _STRING_LENGTH),
    "minimum": _bound("minimum", "exclusiveMinimum", lower=True),
    "maximum": _bound("maximum", "exclusiveMaximum", lower=False),
    "exclusiveMinimum": _exclusive,
    "exclusiveMaximum": _exclusive,
    "multipleOf": _multiple_of,
    "items": _items,
    "additionalItems": _additional_items,
    "maxItems": _bounded_size("maxItems", False, list, _ITEM_COUNT),
    "minItems": _bounded_size("minItems", True, list, _ITEM_COUNT),
    "uniqueItems": _unique_items,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "required": _required,
    "maxProperties": _bounded_size("maxProperties", False, Mapping, _PROPERTY_COUNT),
    "minProperties": _bounded_size("minProperties", True, Mapping, _PROPERTY_COUNT),
    "allOf": _combination("allOf"),
    "anyOf": _combination("anyOf"),
    "oneOf": _combination("oneOf"),
    "not": _not,
    "enum": _enum,
    "title": _annotation("title"),
    "description": _annotation("description"),
}
