"""The engine's query language, operator by operator, as mongod answers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mongo_sansio.bson import Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex
from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.query import compile_filter, first_matching_index, matches


def m(document: dict[str, Any], filter: dict[str, Any]) -> bool:  # noqa: A002
    return matches(document, filter)


# --- equality ------------------------------------------------------------------------------


def test_empty_filter_matches_everything() -> None:
    assert m({"a": 1}, {})
    assert compile_filter(None)({})


def test_implicit_equality_with_numeric_coercion() -> None:
    assert m({"a": 1}, {"a": 1.0})
    assert m({"a": Int64(5)}, {"a": 5})
    assert m({"a": Decimal128("2.50")}, {"a": 2.5})
    assert not m({"a": "1"}, {"a": 1})
    assert not m({"a": True}, {"a": 1})


def test_equality_on_arrays_matches_elements_and_whole_array() -> None:
    doc = {"tags": ["x", "y"]}
    assert m(doc, {"tags": "x"})
    assert m(doc, {"tags": ["x", "y"]})
    assert not m(doc, {"tags": ["y", "x"]})
    assert not m(doc, {"tags": "z"})


def test_equality_on_embedded_documents_is_exact_and_ordered() -> None:
    doc = {"a": {"x": 1, "y": 2}}
    assert m(doc, {"a": {"x": 1, "y": 2}})
    assert not m(doc, {"a": {"y": 2, "x": 1}})
    assert not m(doc, {"a": {"x": 1}})


def test_dotted_paths_traverse_arrays_of_documents() -> None:
    doc = {"a": [{"b": 1}, {"b": 2}, 3]}
    assert m(doc, {"a.b": 2})
    assert not m(doc, {"a.b": 3})
    assert m({"a": {"b": {"c": 5}}}, {"a.b.c": 5})


def test_numeric_path_component_indexes_arrays() -> None:
    doc = {"a": [{"b": 1}, {"b": 2}], "c": [10, 20]}
    assert m(doc, {"a.1.b": 2})
    assert not m(doc, {"a.0.b": 2})
    assert m(doc, {"c.1": 20})


def test_null_matches_null_and_missing() -> None:
    assert m({"a": None}, {"a": None})
    assert m({}, {"a": None})
    assert not m({"a": 0}, {"a": None})
    assert m({"a": [{"b": 1}, {"c": 1}]}, {"a.b": None})
    assert m({"a": [1, None]}, {"a": None})


def test_dbref_shaped_documents_are_equality() -> None:
    ref = {"$ref": "c", "$id": 1}
    assert m({"r": {"$ref": "c", "$id": 1}}, {"r": ref})


# --- comparison ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [("$gt", 5, False), ("$gt", 4, True), ("$gte", 5, True), ("$lt", 6, True), ("$lte", 4, False),
     ("$eq", 5.0, True), ("$ne", 5, False), ("$ne", 4, True)],
)
def test_comparison_operators(op: str, value: Any, expected: bool) -> None:
    assert m({"a": 5}, {"a": {op: value}}) is expected


def test_comparisons_bracket_by_type() -> None:
    assert not m({"a": "x"}, {"a": {"$gt": 1}})
    assert not m({"a": 1}, {"a": {"$lt": "x"}})
    assert m({"a": "b"}, {"a": {"$gt": "a"}})


def test_minkey_maxkey_compare_across_types() -> None:
    assert m({"a": "x"}, {"a": {"$gt": MinKey()}})
    assert m({"a": None}, {"a": {"$lt": MaxKey()}})


def test_comparison_with_arrays_uses_any_element() -> None:
    assert m({"a": [1, 10]}, {"a": {"$gt": 5, "$lt": 3}})  # different elements may satisfy each
    assert not m({"a": [1, 2]}, {"a": {"$gt": 5}})


def test_gte_null_matches_missing_but_gt_null_does_not() -> None:
    assert m({}, {"a": {"$gte": None}})
    assert not m({}, {"a": {"$gt": None}})


def test_ne_and_nin_match_missing_fields() -> None:
    assert m({}, {"a": {"$ne": 1}})
    assert m({}, {"a": {"$nin": [1, 2]}})
    assert not m({"a": [1, 3]}, {"a": {"$ne": 1}})
    assert not m({}, {"a": {"$ne": None}})


def test_in_matches_values_regexes_and_null() -> None:
    assert m({"a": 2}, {"a": {"$in": [1, 2.0]}})
    assert m({"a": "hello"}, {"a": {"$in": [re.compile("^he")]}})
    assert m({}, {"a": {"$in": [None]}})
    assert m({"a": [5, 6]}, {"a": {"$in": [6]}})
    assert not m({"a": 3}, {"a": {"$in": []}})


def test_in_needs_an_array() -> None:
    with pytest.raises(CommandError) as info:
        compile_filter({"a": {"$in": 1}})
    assert info.value.code == 2


# --- logical -------------------------------------------------------------------------------


def test_and_or_nor() -> None:
    doc = {"a": 1, "b": 2}
    assert m(doc, {"$and": [{"a": 1}, {"b": 2}]})
    assert not m(doc, {"$and": [{"a": 1}, {"b": 3}]})
    assert m(doc, {"$or": [{"a": 5}, {"b": 2}]})
    assert not m(doc, {"$or": [{"a": 5}, {"b": 5}]})
    assert m(doc, {"$nor": [{"a": 5}, {"b": 5}]})
    assert not m(doc, {"$nor": [{"a": 1}]})


@pytest.mark.parametrize("op", ["$and", "$or", "$nor"])
@pytest.mark.parametrize("argument", [[], {}, 1, [1]])
def test_logical_operators_need_nonempty_arrays_of_objects(op: str, argument: Any) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter({op: argument})
    assert info.value.code == 2
    assert info.value.code_name == "BadValue"


def test_not_negates_operator_documents_and_regexes() -> None:
    assert m({"a": 1}, {"a": {"$not": {"$gt": 5}}})
    assert not m({"a": 9}, {"a": {"$not": {"$gt": 5}}})
    assert m({}, {"a": {"$not": {"$gt": 5}}})
    assert m({"a": "xyz"}, {"a": {"$not": re.compile("^a")}})
    assert not m({"a": "abc"}, {"a": {"$not": Regex("^a")}})


@pytest.mark.parametrize("argument", [1, {}, {"b": 1}])
def test_not_rejects_other_arguments(argument: Any) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter({"a": {"$not": argument}})
    assert info.value.code == 2


# --- element -------------------------------------------------------------------------------


def test_exists() -> None:
    assert m({"a": None}, {"a": {"$exists": True}})
    assert not m({}, {"a": {"$exists": True}})
    assert m({}, {"a": {"$exists": False}})
    assert m({"a": [{"b": 1}]}, {"a.b": {"$exists": True}})
    assert m({"a": [{"c": 1}]}, {"a.b": {"$exists": False}})
    assert m({"a": 1}, {"a": {"$exists": 1}})


@pytest.mark.parametrize(
    ("value", "alias", "expected"),
    [
        (1, "int", True), (1, 16, True), (1, "number", True), (1.5, "double", True),
        (1.5, 1, True), (Int64(1), "long", True), ("s", "string", True), ("s", 2, True),
        ([1], "array", True), ([1], "int", True), ({"x": 1}, "object", True),
        (None, "null", True), (None, 10, True), (ObjectId(b"\x00" * 12), "objectId", True),
        (True, "bool", True), (1, "string", False), (Decimal128("1"), 19, True),
        (1.0, ["string", "double"], True),
    ],
)
def test_type(value: Any, alias: Any, expected: bool) -> None:
    assert m({"a": value}, {"a": {"$type": alias}}) is expected


def test_type_never_matches_missing() -> None:
    assert not m({}, {"a": {"$type": "null"}})


@pytest.mark.parametrize("alias", ["nosuch", 99, 1.5])
def test_type_rejects_unknown_aliases(alias: Any) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter({"a": {"$type": alias}})
    assert info.value.code == 2


# --- evaluation ----------------------------------------------------------------------------


def test_regex_forms() -> None:
    doc = {"s": "Hello\nWorld"}
    assert m(doc, {"s": {"$regex": "^World", "$options": "m"}})
    assert not m(doc, {"s": {"$regex": "^World"}})
    assert m(doc, {"s": {"$regex": "hello", "$options": "i"}})
    assert m(doc, {"s": Regex("hello", "i")})
    assert m(doc, {"s": re.compile("World$")})
    assert m(doc, {"s": {"$regex": Regex("^hel", "i")}})
    assert m({"s": ["no", "yes"]}, {"s": {"$regex": "^y"}})
    assert not m({"s": 5}, {"s": {"$regex": "5"}})


def test_regex_named_groups_in_pcre_spelling() -> None:
    assert m({"s": "ab"}, {"s": {"$regex": "(?<x>a)b"}})


def test_regex_matches_stored_regex_values() -> None:
    assert m({"s": Regex("^a")}, {"s": Regex("^a")})


def test_regex_errors() -> None:
    with pytest.raises(CommandError) as info:
        compile_filter({"s": {"$regex": "("}})
    assert info.value.code == 51091
    with pytest.raises(CommandError):
        compile_filter({"s": {"$options": "i"}})
    with pytest.raises(CommandError):
        compile_filter({"s": {"$regex": Regex("a", "i"), "$options": "m"}})


def test_mod() -> None:
    assert m({"a": 10}, {"a": {"$mod": [4, 2]}})
    assert not m({"a": 10}, {"a": {"$mod": [4, 1]}})
    assert m({"a": -5}, {"a": {"$mod": [4, -1]}})  # truncated division, like C
    assert m({"a": 10.9}, {"a": {"$mod": [4, 2]}})
    assert not m({"a": "10"}, {"a": {"$mod": [4, 2]}})
    assert not m({"a": float("nan")}, {"a": {"$mod": [4, 2]}})


@pytest.mark.parametrize(
    ("argument", "message"),
    [([4], "not enough elements"), ([4, 1, 1], "too many elements"), ([0, 1], "divisor cannot be 0"), (5, "array")],
)
def test_mod_errors(argument: Any, message: str) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter({"a": {"$mod": argument}})
    assert info.value.code == 2
    assert message in info.value.errmsg


def test_expr_uses_aggregation_expressions() -> None:
    assert m({"a": 5, "b": 3}, {"$expr": {"$gt": ["$a", "$b"]}})
    assert not m({"a": 1, "b": 3}, {"$expr": {"$gt": ["$a", "$b"]}})
    assert m({"a": 1}, {"$expr": {"$eq": ["$$ROOT.a", 1]}})


def test_comment_is_ignored() -> None:
    assert m({"a": 1}, {"a": 1, "$comment": "why"})


# --- arrays --------------------------------------------------------------------------------


def test_elem_match_on_documents_needs_one_element_to_satisfy_all() -> None:
    doc = {"r": [{"x": 1, "y": 5}, {"x": 5, "y": 1}]}
    assert not m(doc, {"r": {"$elemMatch": {"x": 5, "y": 5}}})
    assert m(doc, {"r": {"$elemMatch": {"x": 5, "y": 1}}})
    assert m(doc, {"r.x": 5, "r.y": 5})  # without $elemMatch different elements may satisfy


def test_elem_match_on_scalars() -> None:
    assert m({"a": [1, 8, 20]}, {"a": {"$elemMatch": {"$gt": 5, "$lt": 10}}})
    assert not m({"a": [1, 20]}, {"a": {"$elemMatch": {"$gt": 5, "$lt": 10}}})
    assert not m({"a": 8}, {"a": {"$elemMatch": {"$gt": 5}}})


def test_size() -> None:
    assert m({"a": [1, 2]}, {"a": {"$size": 2}})
    assert not m({"a": [1, 2]}, {"a": {"$size": 1}})
    assert not m({"a": 2}, {"a": {"$size": 1}})
    assert m({"a": []}, {"a": {"$size": 0}})
    with pytest.raises(CommandError):
        compile_filter({"a": {"$size": "2"}})
    with pytest.raises(CommandError):
        compile_filter({"a": {"$size": -1}})


def test_all() -> None:
    doc = {"t": ["a", "b", "c"]}
    assert m(doc, {"t": {"$all": ["a", "c"]}})
    assert not m(doc, {"t": {"$all": ["a", "z"]}})
    assert not m(doc, {"t": {"$all": []}})
    assert m({"t": "a"}, {"t": {"$all": ["a"]}})
    assert m({"r": [{"x": 1}, {"x": 2}]}, {"r": {"$all": [{"$elemMatch": {"x": 2}}]}})


# --- errors --------------------------------------------------------------------------------


def test_unknown_operator_is_bad_value() -> None:
    with pytest.raises(CommandError) as info:
        compile_filter({"a": {"$foo": 1}})
    error = info.value
    assert (error.code, error.code_name, error.errmsg) == (2, "BadValue", "unknown operator: $foo")
    assert error.to_document() == {
        "ok": 0.0, "errmsg": "unknown operator: $foo", "code": 2, "codeName": "BadValue",
    }


def test_unknown_top_level_operator() -> None:
    with pytest.raises(CommandError) as info:
        compile_filter({"$foo": 1})
    assert info.value.code == 2
    assert info.value.errmsg.startswith("unknown top level operator: $foo")


def test_errors_are_raised_at_compile_time_not_per_document() -> None:
    with pytest.raises(CommandError):
        compile_filter({"a": {"$gt": 1, "$bogus": 2}})


def test_filter_must_be_a_document() -> None:
    with pytest.raises(CommandError):
        compile_filter([1])  # type: ignore[arg-type]


# --- positional helper ---------------------------------------------------------------------


def test_first_matching_index() -> None:
    doc = {"a": [{"b": 1}, {"b": 5}, {"b": 7}]}
    assert first_matching_index(doc, {"a.b": {"$gt": 4}}, ["a"]) == 1
    assert first_matching_index({"a": [1, 2, 3]}, {"a": 3}, ["a"]) == 2
    assert first_matching_index(doc, {"x": 1}, ["a"]) is None
