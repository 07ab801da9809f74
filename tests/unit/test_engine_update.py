"""Update operators, replacements, pipeline updates and upsert seeds, as mongod applies them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from mongo_sansio.bson import Decimal128, Int64, Timestamp
from mongo_sansio.testing.engine.errors import CommandError
from mongo_sansio.testing.engine.update import Update, upsert_seed

NOW = datetime.datetime(2024, 1, 2, 3, 4, 5, 678901)


def apply(document: dict[str, Any], update: Any, **kwargs: Any) -> tuple[dict[str, Any], bool]:
    changed = Update(update).apply(document, now=NOW, **kwargs)
    return document, changed


def error_of(document: dict[str, Any], update: Any) -> CommandError:
    with pytest.raises(CommandError) as info:
        Update(update).apply(document, now=NOW)
    return info.value


# --- replacement ---------------------------------------------------------------------------


def test_replacement_keeps_id() -> None:
    doc, changed = apply({"_id": 1, "a": 1}, {"b": 2})
    assert doc == {"_id": 1, "b": 2} and changed


def test_replacement_with_same_id_is_allowed() -> None:
    doc, _ = apply({"_id": 1, "a": 1}, {"_id": 1, "a": 2})
    assert doc == {"_id": 1, "a": 2}


def test_replacement_changing_id_is_immutable_field() -> None:
    error = error_of({"_id": 1}, {"_id": 2})
    assert (error.code, error.code_name) == (66, "ImmutableField")


def test_empty_update_is_an_empty_replacement() -> None:
    doc, changed = apply({"_id": 1, "a": 1}, {})
    assert doc == {"_id": 1} and changed


def test_identical_replacement_is_not_a_modification() -> None:
    _, changed = apply({"_id": 1, "a": 1}, {"a": 1})
    assert not changed


def test_replacement_may_not_hold_operators() -> None:
    assert error_of({"_id": 1}, {"a": 1, "$set": {"b": 1}}).code == 52


# --- parsing errors ------------------------------------------------------------------------


def test_unknown_modifier_is_failed_to_parse() -> None:
    error = error_of({}, {"$foo": {"a": 1}})
    assert (error.code, error.code_name) == (9, "FailedToParse")
    assert error.errmsg.startswith("Unknown modifier: $foo")


def test_modifier_argument_must_be_a_document() -> None:
    assert error_of({}, {"$set": 1}).code == 9


def test_empty_modifier_is_a_no_op() -> None:
    doc, changed = apply({"_id": 1}, {"$set": {}})
    assert doc == {"_id": 1} and not changed


@pytest.mark.parametrize(
    "update",
    [
        {"$set": {"a": 1}, "$inc": {"a": 1}},
        {"$set": {"a": 1, "a.b": 1}},
        {"$set": {"a.b": 1}, "$unset": {"a": 1}},
        {"$rename": {"x": "a"}, "$set": {"a": 1}},
    ],
)
def test_conflicting_paths(update: dict[str, Any]) -> None:
    error = error_of({}, update)
    assert (error.code, error.code_name) == (40, "ConflictingUpdateOperators")


def test_empty_path_is_an_error() -> None:
    assert error_of({}, {"$set": {"": 1}}).code == 56
    assert error_of({}, {"$set": {"a..b": 1}}).code == 56


def test_changing_id_is_immutable_field() -> None:
    error = error_of({"_id": 1}, {"$set": {"_id": 2}})
    assert error.code == 66
    _, changed = apply({"_id": 1}, {"$set": {"_id": 1}})
    assert not changed


# --- $set / $unset -------------------------------------------------------------------------


def test_set_creates_nested_documents() -> None:
    doc, changed = apply({"_id": 1}, {"$set": {"a.b.c": 1}})
    assert doc == {"_id": 1, "a": {"b": {"c": 1}}} and changed


def test_set_same_value_is_not_a_modification_but_type_change_is() -> None:
    assert not apply({"a": 1}, {"$set": {"a": 1}})[1]
    assert apply({"a": 1}, {"$set": {"a": 1.0}})[1]


def test_set_array_index_pads_with_null() -> None:
    doc, _ = apply({"a": [1]}, {"$set": {"a.3": 9}})
    assert doc == {"a": [1, None, None, 9]}


def test_set_through_a_scalar_is_path_not_viable() -> None:
    error = error_of({"_id": 1, "a": 5}, {"$set": {"a.b": 1}})
    assert (error.code, error.code_name) == (28, "PathNotViable")


def test_new_fields_are_added_in_lexicographic_order() -> None:
    doc, _ = apply({"_id": 1}, {"$set": {"b": 1, "a": 1}, "$inc": {"c": 1}})
    assert list(doc) == ["_id", "a", "b", "c"]


def test_unset() -> None:
    doc, changed = apply({"a": 1, "b": {"c": 1, "d": 2}}, {"$unset": {"a": "", "b.c": 1, "zz": 1}})
    assert doc == {"b": {"d": 2}} and changed
    doc, _ = apply({"a": [1, 2]}, {"$unset": {"a.0": 1}})
    assert doc == {"a": [None, 2]}
    assert not apply({"a": 1}, {"$unset": {"b": 1}})[1]


# --- arithmetic ----------------------------------------------------------------------------


def test_inc_keeps_numeric_types() -> None:
    assert apply({"a": 1}, {"$inc": {"a": 2}})[0] == {"a": 3}
    doc, _ = apply({"a": Int64(1)}, {"$inc": {"a": 1}})
    assert type(doc["a"]) is Int64
    doc, _ = apply({"a": 1}, {"$inc": {"a": 0.5}})
    assert doc["a"] == 1.5
    doc, _ = apply({"a": 1}, {"$inc": {"a": Decimal128("0.1")}})
    assert doc["a"] == Decimal128("1.1")


def test_inc_creates_missing_fields() -> None:
    assert apply({}, {"$inc": {"a.b": 5}})[0] == {"a": {"b": 5}}


def test_inc_int32_overflow_becomes_long() -> None:
    doc, _ = apply({"a": 2**31 - 1}, {"$inc": {"a": 1}})
    assert doc["a"] == 2**31 and type(doc["a"]) is Int64


def test_inc_on_a_string_is_type_mismatch() -> None:
    error = error_of({"_id": 1, "a": "x"}, {"$inc": {"a": 1}})
    assert (error.code, error.code_name) == (14, "TypeMismatch")
    assert "non-numeric type string" in error.errmsg


def test_inc_with_a_string_argument_is_type_mismatch() -> None:
    assert error_of({}, {"$inc": {"a": "1"}}).code == 14


def test_mul() -> None:
    assert apply({"a": 3}, {"$mul": {"a": 4}})[0] == {"a": 12}
    assert apply({}, {"$mul": {"a": 4}})[0] == {"a": 0}
    assert apply({}, {"$mul": {"a": 4.0}})[0] == {"a": 0.0}


def test_min_max() -> None:
    assert apply({"a": 5}, {"$min": {"a": 3}})[0] == {"a": 3}
    assert not apply({"a": 5}, {"$min": {"a": 7}})[1]
    assert apply({"a": 5}, {"$max": {"a": 7}})[0] == {"a": 7}
    assert apply({}, {"$max": {"a": 7}})[0] == {"a": 7}
    assert apply({"a": 5}, {"$max": {"a": "x"}})[0] == {"a": "x"}  # strings sort after numbers


# --- $rename, $currentDate, $setOnInsert ---------------------------------------------------


def test_rename() -> None:
    assert apply({"a": 1, "b": 2}, {"$rename": {"a": "c"}})[0] == {"b": 2, "c": 1}
    assert apply({"a": {"x": 1}}, {"$rename": {"a.x": "b.y"}})[0] == {"a": {}, "b": {"y": 1}}
    assert not apply({"b": 2}, {"$rename": {"a": "c"}})[1]


def test_rename_errors() -> None:
    assert error_of({"a": 1}, {"$rename": {"a": "a"}}).code == 2
    assert error_of({"a": 1}, {"$rename": {"a": 5}}).code == 2
    assert error_of({"a": [{"b": 1}]}, {"$rename": {"a.0.b": "c"}}).code == 2


def test_current_date() -> None:
    doc, _ = apply({}, {"$currentDate": {"d": True, "t": {"$type": "timestamp"}, "e": {"$type": "date"}}})
    assert doc["d"] == datetime.datetime(2024, 1, 2, 3, 4, 5, 678000)
    assert doc["e"] == doc["d"]
    assert isinstance(doc["t"], Timestamp)
    assert error_of({}, {"$currentDate": {"d": {"$type": "x"}}}).code == 2


def test_set_on_insert_only_applies_when_inserting() -> None:
    assert apply({"a": 1}, {"$setOnInsert": {"b": 1}})[0] == {"a": 1}
    assert apply({"a": 1}, {"$setOnInsert": {"b": 1}}, inserting=True)[0] == {"a": 1, "b": 1}


# --- arrays --------------------------------------------------------------------------------


def test_push() -> None:
    assert apply({"a": [1]}, {"$push": {"a": 2}})[0] == {"a": [1, 2]}
    assert apply({}, {"$push": {"a": 2}})[0] == {"a": [2]}
    assert apply({"a": []}, {"$push": {"a": [1, 2]}})[0] == {"a": [[1, 2]]}


def test_push_modifiers() -> None:
    doc, _ = apply({"a": [5, 1]}, {"$push": {"a": {"$each": [3, 4], "$position": 1}}})
    assert doc == {"a": [5, 3, 4, 1]}
    doc, _ = apply({"a": [5, 1]}, {"$push": {"a": {"$each": [3], "$sort": 1, "$slice": -2}}})
    assert doc == {"a": [3, 5]}
    doc, _ = apply({"a": [{"s": 2}, {"s": 1}]}, {"$push": {"a": {"$each": [{"s": 3}], "$sort": {"s": -1}}}})
    assert doc == {"a": [{"s": 3}, {"s": 2}, {"s": 1}]}
    doc, _ = apply({"a": [1, 2, 3]}, {"$push": {"a": {"$each": [], "$slice": 1}}})
    assert doc == {"a": [1]}
    doc, _ = apply({"a": [1, 2]}, {"$push": {"a": {"$each": [9], "$position": -1}}})
    assert doc == {"a": [1, 9, 2]}


def test_push_errors() -> None:
    error = error_of({"_id": 1, "a": 1}, {"$push": {"a": 2}})
    assert error.code == 2 and "must be an array but is of type int" in error.errmsg
    assert error_of({}, {"$push": {"a": {"$each": 1}}}).code == 2
    assert error_of({}, {"$push": {"a": {"$each": [1], "$bogus": 1}}}).code == 2
    assert error_of({"a": []}, {"$push": {"a": {"$each": [1], "$sort": 2}}}).code == 2


def test_add_to_set() -> None:
    assert apply({"a": [1, 2]}, {"$addToSet": {"a": 2}}) == ({"a": [1, 2]}, False)
    assert apply({"a": [1, 2]}, {"$addToSet": {"a": 2.0}}) == ({"a": [1, 2]}, False)
    assert apply({"a": [1]}, {"$addToSet": {"a": {"$each": [1, 3, 3]}}})[0] == {"a": [1, 3]}
    assert apply({}, {"$addToSet": {"a": 1}})[0] == {"a": [1]}
    assert error_of({"a": 1}, {"$addToSet": {"a": 1}}).code == 2


def test_pull() -> None:
    assert apply({"a": [1, 2, 3, 2]}, {"$pull": {"a": 2}})[0] == {"a": [1, 3]}
    assert apply({"a": [1, 5, 9]}, {"$pull": {"a": {"$gte": 5}}})[0] == {"a": [1]}
    doc, _ = apply({"a": [{"x": 1, "y": 1}, {"x": 2}]}, {"$pull": {"a": {"x": 1}}})
    assert doc == {"a": [{"x": 2}]}
    assert not apply({}, {"$pull": {"a": 1}})[1]
    assert error_of({"a": 1}, {"$pull": {"a": 1}}).code == 2


def test_pull_all() -> None:
    assert apply({"a": [1, 2, 3, 1]}, {"$pullAll": {"a": [1, 3]}})[0] == {"a": [2]}
    assert error_of({"a": [1]}, {"$pullAll": {"a": 1}}).code == 2


def test_pop() -> None:
    assert apply({"a": [1, 2, 3]}, {"$pop": {"a": 1}})[0] == {"a": [1, 2]}
    assert apply({"a": [1, 2, 3]}, {"$pop": {"a": -1}})[0] == {"a": [2, 3]}
    assert not apply({"a": []}, {"$pop": {"a": 1}})[1]
    assert error_of({"a": [1]}, {"$pop": {"a": 2}}).code == 9
    assert error_of({"a": 1}, {"$pop": {"a": 1}}).code == 2


# --- positional ----------------------------------------------------------------------------


def test_positional_update() -> None:
    doc = {"a": [{"b": 1}, {"b": 2}]}
    Update({"$set": {"a.$.c": 9}}).apply(doc, filter={"a.b": 2})
    assert doc == {"a": [{"b": 1}, {"b": 2, "c": 9}]}
    doc2 = {"g": [1, 2, 3]}
    Update({"$inc": {"g.$": 10}}).apply(doc2, filter={"g": 2})
    assert doc2 == {"g": [1, 12, 3]}


def test_positional_without_query_match_is_an_error() -> None:
    with pytest.raises(CommandError) as info:
        Update({"$set": {"a.$": 1}}).apply({"a": [1]}, filter={})
    assert info.value.code == 2


def test_all_positional() -> None:
    doc = {"a": [{"b": 1}, {"b": 2}]}
    Update({"$inc": {"a.$[].b": 1}}).apply(doc)
    assert doc == {"a": [{"b": 2}, {"b": 3}]}


def test_array_filters() -> None:
    doc = {"a": [1, 5, 9], "r": [{"k": 1, "v": 0}, {"k": 2, "v": 0}]}
    Update({"$set": {"a.$[big]": 0}}, array_filters=[{"big": {"$gte": 5}}]).apply(doc)
    assert doc["a"] == [1, 0, 0]
    Update({"$inc": {"r.$[e].v": 1}}, array_filters=[{"e.k": 2}]).apply(doc)
    assert doc["r"] == [{"k": 1, "v": 0}, {"k": 2, "v": 1}]


def test_array_filter_errors() -> None:
    with pytest.raises(CommandError) as info:
        Update({"$set": {"a.$[x]": 1}})
    assert info.value.code == 2
    with pytest.raises(CommandError) as info:
        Update({"$set": {"a": 1}}, array_filters=[{"x": 1}])
    assert info.value.code == 9
    with pytest.raises(CommandError):
        Update({"$set": {"a.$[X]": 1}}, array_filters=[{"X": 1}])
    with pytest.raises(CommandError):
        Update({"$set": {"a.$[x]": 1}}, array_filters=[{"x": 1}, {"x": 2}])


# --- pipeline updates ----------------------------------------------------------------------


def test_pipeline_update() -> None:
    doc, changed = apply({"_id": 1, "a": 2}, [{"$set": {"b": {"$add": ["$a", 1]}}}, {"$unset": "a"}])
    assert doc == {"_id": 1, "b": 3} and changed


def test_pipeline_update_refuses_other_stages() -> None:
    with pytest.raises(CommandError) as info:
        Update([{"$match": {}}])
    assert (info.value.code, info.value.errmsg) == (72, "$match is not allowed to be used within an update")


@pytest.mark.parametrize(
    ("pipeline", "code"),
    [
        # the whole pipeline is parsed before stages are checked against what updates allow
        ([{"$match": {}}, {"$invalidOperator": True}], 40324),
        ([{"$match": {}}, {"$set": 1}], 40272),
        ([{"$match": {}}, {"$set": {}, "$unset": "a"}], 40323),
    ],
)
def test_pipeline_update_parses_before_it_checks_stages(pipeline: list[Any], code: int) -> None:
    with pytest.raises(CommandError) as info:
        Update(pipeline)
    assert info.value.code == code


# --- upsert seeds --------------------------------------------------------------------------


def test_upsert_seed_takes_equalities() -> None:
    seed = upsert_seed({"a": 1, "b.c": "x", "d": {"$gt": 1}, "e": {"$eq": 5}, "$and": [{"f": 2}]})
    assert seed == {"a": 1, "b": {"c": "x"}, "e": 5, "f": 2}
    assert upsert_seed(None) == {}
    assert upsert_seed({"$or": [{"a": 1}]}) == {}


def test_upsert_seed_refuses_the_same_path_twice() -> None:
    with pytest.raises(CommandError) as info:
        upsert_seed({"a": 1, "$and": [{"a": 2}]})
    assert info.value.code == 54


def test_failed_update_leaves_a_copy_untouched_contract() -> None:
    # the engine changes documents in place; the collection passes copies for atomicity
    doc = {"_id": 1, "a": 1, "s": "x"}
    with pytest.raises(CommandError):
        Update({"$set": {"a": 2}, "$inc": {"s": 1}}).apply(doc)


def test_pipeline_update_writes_dotted_and_dollar_prefixed_names() -> None:
    top = [{"$replaceWith": {"$setField": {"field": {"$literal": "$a"}, "value": 1, "input": "$$ROOT"}}}]
    assert apply({"_id": 1, "foo": {}}, top) == ({"_id": 1, "foo": {}, "$a": 1}, True)
    inner = [{"$set": {"foo": {"$setField": {"field": {"$literal": "a.b"}, "value": 1, "input": "$foo"}}}}]
    assert apply({"_id": 1, "foo": {}}, inner) == ({"_id": 1, "foo": {"a.b": 1}}, True)


# --- $-prefixed field names ------------------------------------------------------------------


@pytest.mark.parametrize("update", [
    {"$set": {"$x": 1}}, {"$inc": {"$x": 1}}, {"$set": {"$x.y": 1}}, {"$push": {"$x": 1}},
    {"$set": {"a": 1, "$x": 1}},
])
def test_an_operator_may_not_write_a_dollar_prefixed_field_into_an_existing_document(update: Any) -> None:
    document = {"_id": 1, "a": 0}
    error = error_of(document, update)
    path = next(p for p in update[next(iter(update))] if p.startswith("$"))
    assert (error.code, error.code_name) == (52, "DollarPrefixedFieldName")
    assert str(error).startswith(f"The dollar ($) prefixed field '$x' in '{path}' is not allowed in the context")
    assert document == {"_id": 1, "a": 0}  # nothing applied


def test_an_upsert_insert_may_store_a_dollar_prefixed_field_and_unset_may_remove_one() -> None:
    doc, _ = apply({"_id": 2}, {"$set": {"$x": 1}}, inserting=True)
    assert doc == {"_id": 2, "$x": 1}
    doc, changed = apply({"_id": 2, "$x": 1}, {"$unset": {"$x": ""}})
    assert doc == {"_id": 2} and changed
