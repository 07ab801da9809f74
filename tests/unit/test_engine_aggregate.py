"""Aggregation expressions and pipeline stages, as mongod evaluates them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from mongo_sansio.bson import Decimal128, Int64
from mongo_sansio.testing.engine.aggregate import run_pipeline, sort_documents
from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.expressions import compile_expression, evaluate
from mongo_sansio.testing.engine.order import MISSING

ROOT: dict[str, Any] = {"_id": 1, "a": 5, "b": 2, "s": "Hello", "arr": [1, 2, 3], "o": {"x": [{"y": 1}, {"y": 2}]}}


def ev(expression: Any, root: dict[str, Any] | None = None) -> Any:
    return evaluate(expression, ROOT if root is None else root)


def code_of(expression: Any, root: dict[str, Any] | None = None) -> int:
    with pytest.raises(CommandError) as info:
        ev(expression, root)
    return info.value.code


# --- expressions ---------------------------------------------------------------------------


def test_field_paths_and_variables() -> None:
    assert ev("$a") == 5
    assert ev("$o.x.y") == [1, 2]
    assert ev("$nope") is MISSING
    assert ev("$$ROOT") is ROOT
    assert ev("$$CURRENT.s") == "Hello"
    assert ev("$$REMOVE") is MISSING
    assert code_of("$$nope") == 17276


def test_literals_objects_and_arrays() -> None:
    assert ev(5) == 5
    assert ev({"$literal": "$a"}) == "$a"
    assert ev({"k": "$a", "gone": "$nope"}) == {"k": 5}
    assert ev(["$a", "$nope"]) == [5, None]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$add": ["$a", "$b", 1]}, 8),
        ({"$add": ["$a", 0.5]}, 5.5),
        ({"$add": ["$a", None]}, None),
        ({"$add": ["$a", "$nope"]}, None),
        ({"$subtract": ["$a", "$b"]}, 3),
        ({"$multiply": ["$a", "$b"]}, 10),
        ({"$divide": ["$a", "$b"]}, 2.5),
        ({"$mod": ["$a", "$b"]}, 1),
        ({"$mod": [-5, 3]}, -2),
        ({"$add": [Int64(1), 1]}, Int64(2)),
        ({"$add": [Decimal128("1.1"), 1]}, Decimal128("2.1")),
    ],
)
def test_arithmetic(expression: Any, expected: Any) -> None:
    result = ev(expression)
    assert result == expected
    assert type(result) is type(expected)


def test_date_arithmetic() -> None:
    when = datetime.datetime(2024, 1, 1)
    assert ev({"$add": [when, 1000]}) == datetime.datetime(2024, 1, 1, 0, 0, 1)
    assert ev({"$subtract": [datetime.datetime(2024, 1, 1, 0, 0, 2), when]}) == 2000


def test_arithmetic_errors() -> None:
    assert code_of({"$add": ["$a", "x"]}) == 14
    assert code_of({"$divide": ["$a", 0]}) == 2
    assert code_of({"$mod": ["$a", 0]}) == 16610
    assert code_of({"$subtract": ["$a"]}) == 16020


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$eq": ["$a", 5.0]}, True), ({"$ne": ["$a", 5]}, False), ({"$gt": ["$a", 4]}, True),
        ({"$gte": ["$a", 6]}, False), ({"$lt": ["$s", 1]}, False), ({"$lte": [None, 0]}, True),
        ({"$cmp": ["$a", 9]}, -1), ({"$cmp": ["x", 1]}, 1), ({"$eq": ["$nope", None]}, False),
        ({"$and": [1, "$a"]}, True), ({"$and": [1, 0]}, False), ({"$or": [0, None, "$nope"]}, False),
        ({"$or": [0, []]}, True), ({"$not": ["$a"]}, False), ({"$not": [None]}, True),
    ],
)
def test_comparison_and_boolean(expression: Any, expected: Any) -> None:
    assert ev(expression) == expected


def test_cond_and_if_null() -> None:
    assert ev({"$cond": [{"$gt": ["$a", 1]}, "big", "small"]}) == "big"
    assert ev({"$cond": {"if": False, "then": 1, "else": 2}}) == 2
    assert ev({"$ifNull": ["$nope", None, "dflt"]}) == "dflt"
    assert ev({"$ifNull": ["$a", "dflt"]}) == 5
    assert code_of({"$cond": {"if": 1, "then": 2}}) == 17081 + 1


def test_strings() -> None:
    assert ev({"$concat": ["$s", " ", "x"]}) == "Hello x"
    assert ev({"$concat": ["$s", "$nope"]}) is None
    assert code_of({"$concat": ["$s", 1]}) == 16702
    assert ev({"$toLower": "$s"}) == "hello"
    assert ev({"$toUpper": ["$s"]}) == "HELLO"
    assert ev({"$toUpper": "$nope"}) == ""


def test_arrays() -> None:
    assert ev({"$size": "$arr"}) == 3
    assert code_of({"$size": "$a"}) == 17124
    assert ev({"$arrayElemAt": ["$arr", -1]}) == 3
    assert ev({"$arrayElemAt": ["$arr", 9]}) is MISSING
    assert code_of({"$arrayElemAt": ["$a", 0]}) == 28689
    assert ev({"$in": [2, "$arr"]}) is True
    assert code_of({"$in": [2, "$a"]}) == 40081
    assert ev({"$first": "$arr"}) == 1
    assert ev({"$last": "$arr"}) == 3
    assert ev({"$first": "$nope"}) is None


def test_scoped_variables() -> None:
    assert ev({"$let": {"vars": {"x": "$a", "y": 2}, "in": {"$multiply": ["$$x", "$$y"]}}}) == 10
    assert ev({"$map": {"input": "$arr", "as": "n", "in": {"$add": ["$$n", 1]}}}) == [2, 3, 4]
    assert ev({"$map": {"input": "$arr", "in": {"$multiply": ["$$this", "$a"]}}}) == [5, 10, 15]
    assert ev({"$filter": {"input": "$arr", "as": "n", "cond": {"$gte": ["$$n", 2]}}}) == [2, 3]
    assert ev({"$filter": {"input": "$arr", "cond": True, "limit": 1}}) == [1]
    assert ev({"$map": {"input": "$nope", "in": 1}}) is None
    assert code_of({"$map": {"input": "$a", "in": 1}}) == 16883
    assert code_of({"$let": {"vars": {"X": 1}, "in": 1}}) == 16866
    assert code_of({"$filter": {"input": []}}) == 16880


DOTTED: dict[str, Any] = {"_id": 1, "a.b": 1, "$x": 2, "sub": {"$y": 3, "k": 4}}


def test_get_field_reads_names_a_path_cannot() -> None:
    assert ev({"$getField": "a.b"}, DOTTED) == 1
    assert ev({"$getField": {"$literal": "$x"}}, DOTTED) == 2
    assert ev({"$getField": {"field": {"$literal": "$y"}, "input": "$sub"}}, DOTTED) == 3
    assert ev({"$getField": {"field": "k", "input": "$nope"}}, DOTTED) is None
    assert ev({"$getField": "absent"}, DOTTED) is MISSING
    assert code_of({"$getField": "$x"}, DOTTED) == 5654600  # a field path: $literal is needed
    assert code_of({"$getField": 5}, DOTTED) == 5654602
    assert code_of({"$getField": {"field": "$$ROOT"}}, DOTTED) == 5654600
    assert code_of({"$getField": {"field": {"$concat": ["a", "b"]}}}, DOTTED) == 5654601
    assert code_of({"$getField": {"field": "k", "bogus": 1}}, DOTTED) == 3041701
    assert code_of({"$getField": {"field": "k", "input": 5}}, DOTTED) == 3041705


def test_set_field_and_unset_field() -> None:
    set_dollar = {"$setField": {"field": {"$literal": "$a"}, "value": 1, "input": "$$ROOT"}}
    assert ev(set_dollar, {"_id": 1, "foo": {}}) == {"_id": 1, "foo": {}, "$a": 1}
    # an existing field keeps its place
    assert ev({"$setField": {"field": "a.b", "value": 9, "input": "$$ROOT"}}, DOTTED) == {**DOTTED, "a.b": 9}
    assert list(ev({"$setField": {"field": "a.b", "value": 9, "input": "$$ROOT"}}, DOTTED)) == list(DOTTED)
    removed = ev({"$setField": {"field": {"$literal": "$x"}, "value": "$$REMOVE", "input": "$$ROOT"}}, DOTTED)
    assert "$x" not in removed and removed["a.b"] == 1
    assert ev({"$unsetField": {"field": "a.b", "input": "$$ROOT"}}, DOTTED) == {"_id": 1, "$x": 2, "sub": DOTTED["sub"]}
    assert ev({"$setField": {"field": "k", "value": 1, "input": "$nope"}}, DOTTED) is None
    assert code_of({"$setField": {"field": "k", "value": 1, "input": 5}}) == 4161105
    assert code_of({"$setField": {"field": "k", "input": "$$ROOT"}}) == 4161103
    assert code_of({"$setField": {"field": "k", "value": 1}}) == 4161109
    assert code_of({"$setField": {"field": True, "value": 1, "input": {}}}) == 4161107
    assert code_of({"$setField": {"field": {"a": 1}, "value": 1, "input": {}}}) == 4161106
    assert code_of({"$setField": {"field": "$k", "value": 1, "input": {}}}) == 4161108
    assert code_of({"$setField": "k"}) == 4161100
    assert code_of({"$unsetField": {"field": "k", "input": {}, "value": 1}}) == 4161101


def test_slice_abs_to_string() -> None:
    assert ev({"$slice": ["$arr", 2]}) == [1, 2]
    assert ev({"$slice": ["$arr", -1]}) == [3]
    assert ev({"$slice": ["$arr", 1, 5]}) == [2, 3]
    assert code_of({"$slice": ["$arr", 1, 0]}) == 28729
    assert ev({"$abs": -2.5}) == 2.5
    assert ev({"$abs": -3}) == 3
    assert ev({"$toString": "$a"}) == "5"
    assert ev({"$toString": True}) == "true"
    assert ev({"$toString": datetime.datetime(2024, 1, 2, 3, 4, 5, 6000)}) == "2024-01-02T03:04:05.006Z"


def test_type_expression() -> None:
    assert ev({"$type": "$a"}) == "int"
    assert ev({"$type": "$nope"}) == "missing"
    assert ev({"$type": "$arr"}) == "array"


def test_unknown_expression_operator() -> None:
    with pytest.raises(CommandError) as info:
        compile_expression({"$bogus": 1})
    assert (info.value.code, info.value.code_name) == (168, "InvalidPipelineOperator")


def test_expression_object_with_two_operators_is_an_error() -> None:
    assert code_of({"$add": [1], "$size": []}) == 15983


# --- stages --------------------------------------------------------------------------------

DOCS: list[dict[str, Any]] = [
    {"_id": 1, "cat": "a", "n": 10, "tags": ["x", "y"]},
    {"_id": 2, "cat": "b", "n": 20, "tags": []},
    {"_id": 3, "cat": "a", "n": 30},
    {"_id": 4, "cat": "b", "n": 40.5, "tags": "z"},
]


def run(pipeline: list[Any], **kwargs: Any) -> list[dict[str, Any]]:
    return run_pipeline(DOCS, pipeline, **kwargs)


def test_match_sort_skip_limit() -> None:
    out = run([{"$match": {"n": {"$gt": 10}}}, {"$sort": {"n": -1}}, {"$skip": 1}, {"$limit": 1}])
    assert [d["_id"] for d in out] == [3]


def test_pipeline_does_not_change_its_input() -> None:
    run([{"$set": {"n": 0}}])
    assert DOCS[0]["n"] == 10


def test_project_and_add_fields() -> None:
    out = run([{"$project": {"cat": 1, "double": {"$multiply": ["$n", 2]}}}, {"$limit": 1}])
    assert out == [{"_id": 1, "cat": "a", "double": 20}]
    out = run([{"$addFields": {"m.k": "$n", "cat": "$$REMOVE"}}, {"$limit": 1}])
    assert out == [{"_id": 1, "n": 10, "tags": ["x", "y"], "m": {"k": 10}}]
    out = run([{"$set": {"sub": {"a": 1}}}, {"$set": {"sub": {"b": 2}}}, {"$limit": 1}])
    assert out[0]["sub"] == {"a": 1, "b": 2}


def test_unset_stage() -> None:
    assert run([{"$unset": ["tags", "n"]}, {"$limit": 1}]) == [{"_id": 1, "cat": "a"}]
    assert run([{"$unset": "cat"}, {"$limit": 1}])[0] == {"_id": 1, "n": 10, "tags": ["x", "y"]}


def test_replace_root_and_replace_with() -> None:
    docs = [{"_id": 1, "inner": {"v": 1}}]
    assert run_pipeline(docs, [{"$replaceRoot": {"newRoot": "$inner"}}]) == [{"v": 1}]
    assert run_pipeline(docs, [{"$replaceWith": {"w": "$inner.v"}}]) == [{"w": 1}]
    with pytest.raises(CommandError) as info:
        run_pipeline(docs, [{"$replaceWith": "$nope"}])
    assert info.value.code == 40228


def test_count() -> None:
    assert run([{"$count": "total"}]) == [{"total": 4}]
    assert run([{"$match": {"n": 0}}, {"$count": "total"}]) == []
    for bad in ["", "$x", "a.b", 1]:
        with pytest.raises(CommandError):
            run([{"$count": bad}])


def test_group_accumulators() -> None:
    out = run([
        {"$group": {
            "_id": "$cat",
            "sum": {"$sum": "$n"},
            "avg": {"$avg": "$n"},
            "min": {"$min": "$n"},
            "max": {"$max": "$n"},
            "first": {"$first": "$_id"},
            "last": {"$last": "$_id"},
            "push": {"$push": "$_id"},
            "set": {"$addToSet": "$cat"},
            "count": {"$count": {}},
            "ones": {"$sum": 1},
        }},
        {"$sort": {"_id": 1}},
    ])
    assert out == [
        {"_id": "a", "sum": 40, "avg": 20.0, "min": 10, "max": 30, "first": 1, "last": 3,
         "push": [1, 3], "set": ["a"], "count": 2, "ones": 2},
        {"_id": "b", "sum": 60.5, "avg": 30.25, "min": 20, "max": 40.5, "first": 2, "last": 4,
         "push": [2, 4], "set": ["b"], "count": 2, "ones": 2},
    ]


def test_group_null_id_and_numeric_keys_merge() -> None:
    docs = [{"k": 1}, {"k": 1.0}, {"k": Int64(1)}, {}]
    out = run_pipeline(docs, [{"$group": {"_id": "$k", "n": {"$sum": 1}}}])
    assert sorted(d["n"] for d in out) == [1, 3]
    assert run([{"$group": {"_id": None, "n": {"$sum": "$n"}}}]) == [{"_id": None, "n": 100.5}]


def test_group_errors() -> None:
    with pytest.raises(CommandError) as info:
        run([{"$group": {"n": {"$sum": 1}}}])
    assert info.value.code == 15955
    with pytest.raises(CommandError) as info:
        run([{"$group": {"_id": None, "n": {"$bogus": 1}}}])
    assert info.value.code == 15952
    with pytest.raises(CommandError) as info:
        run([{"$group": {"_id": None, "n": 1}}])
    assert info.value.code == 40234


def test_unwind() -> None:
    out = run([{"$unwind": "$tags"}])
    assert [(d["_id"], d["tags"]) for d in out] == [(1, "x"), (1, "y"), (4, "z")]
    out = run([{"$unwind": {"path": "$tags", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": True}}])
    assert out == [
        {"_id": 1, "cat": "a", "n": 10, "tags": "x", "i": 0},
        {"_id": 1, "cat": "a", "n": 10, "tags": "y", "i": 1},
        {"_id": 2, "cat": "b", "n": 20, "i": None},
        {"_id": 3, "cat": "a", "n": 30, "i": None},
        {"_id": 4, "cat": "b", "n": 40.5, "tags": "z", "i": None},
    ]
    with pytest.raises(CommandError) as info:
        run([{"$unwind": "tags"}])
    assert info.value.code == 28818


def test_lookup() -> None:
    foreign = {"cats": [{"_id": "a", "label": "A"}, {"_id": "b", "label": "B"}, {"_id": "a2", "label": "A"}]}
    out = run(
        [{"$lookup": {"from": "cats", "localField": "cat", "foreignField": "_id", "as": "c"}}, {"$limit": 1}],
        lookup=lambda name: foreign[name],
    )
    assert out[0]["c"] == [{"_id": "a", "label": "A"}]
    out = run_pipeline(
        [{"_id": 9, "keys": ["a", "b"]}],
        [{"$lookup": {"from": "cats", "localField": "keys", "foreignField": "_id", "as": "c"}}],
        lookup=lambda name: foreign[name],
    )
    assert [c["_id"] for c in out[0]["c"]] == ["a", "b"]


def test_sort_uses_array_min_ascending_and_max_descending() -> None:
    docs = [{"_id": 1, "v": [1, 10]}, {"_id": 2, "v": 5}, {"_id": 3, "v": []}, {"_id": 4}]
    assert [d["_id"] for d in sort_documents(docs, {"v": 1})] == [3, 4, 1, 2]
    assert [d["_id"] for d in sort_documents(docs, {"v": -1})] == [1, 2, 4, 3]


def test_sort_is_stable_and_compound() -> None:
    docs = [{"a": 1, "b": 2, "i": 0}, {"a": 1, "b": 1, "i": 1}, {"a": 0, "b": 9, "i": 2}, {"a": 1, "b": 1, "i": 3}]
    assert [d["i"] for d in sort_documents(docs, {"a": -1, "b": 1})] == [1, 3, 0, 2]


@pytest.mark.parametrize(
    ("pipeline", "code"),
    [
        ([{"$bogus": {}}], 40324),
        ([{"$match": {}, "$limit": 1}], 40323),
        ([{"$limit": 0}], 15958),
        ([{"$skip": -1}], 15956),
        ([{"$sort": {}}], 15976),
        ([{"$sort": {"a": 2}}], 15975),
        ([{"$project": {}}], 51272),
        ([{"$match": {"a": {"$bogus": 1}}}], 2),
    ],
)
def test_stage_errors(pipeline: list[Any], code: int) -> None:
    with pytest.raises(CommandError) as info:
        run(pipeline)
    assert info.value.code == code


def test_bad_stages_fail_even_without_documents() -> None:
    with pytest.raises(CommandError):
        run_pipeline([], [{"$project": {"a": {"$bogus": 1}}}])
