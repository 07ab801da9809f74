"""The in-memory collection: inserts, reads, updates, deletes, findAndModify and indexes."""

from __future__ import annotations

import datetime
import itertools
from typing import Any

import pytest

from mongo_sansio.bson import Decimal128, Int64, ObjectId
from mongo_sansio.testing.engine.collection import Collection, index_name
from mongo_sansio.testing.engine.errors import CommandError

NOW = datetime.datetime(2024, 5, 6, 7, 8, 9)


def object_ids() -> Any:
    counter = itertools.count(1)
    return lambda: ObjectId(next(counter).to_bytes(12, "big"))


@pytest.fixture
def coll() -> Collection:
    c = Collection("db", "coll", id_factory=object_ids())
    for doc in [
        {"_id": 1, "name": "ann", "age": 30, "tags": ["a", "b"]},
        {"_id": 2, "name": "bob", "age": 25, "tags": ["b"]},
        {"_id": 3, "name": "cat", "age": 35},
    ]:
        c.insert_one(doc)
    return c


def test_insert_generates_ids_from_the_factory_and_puts_them_first() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    new_id = c.insert_one({"a": 1})
    assert new_id == ObjectId((1).to_bytes(12, "big"))
    assert list(c.find()[0]) == ["_id", "a"]


def test_insert_stores_a_copy(coll: Collection) -> None:
    doc = {"_id": 9, "x": [1]}
    coll.insert_one(doc)
    doc["x"].append(2)
    assert coll.find_one({"_id": 9}) == {"_id": 9, "x": [1]}


def test_duplicate_id_has_mongods_shape(coll: Collection) -> None:
    with pytest.raises(CommandError) as info:
        coll.insert_one({"_id": 1})
    error = info.value
    assert error.code == 11000
    assert error.errmsg == "E11000 duplicate key error collection: db.coll index: _id_ dup key: { _id: 1 }"
    assert error.extra == {"keyPattern": {"_id": 1}, "keyValue": {"_id": 1}}


def test_duplicate_id_uses_numeric_equality(coll: Collection) -> None:
    with pytest.raises(CommandError):
        coll.insert_one({"_id": 1.0})


def test_array_id_is_refused() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    with pytest.raises(CommandError) as info:
        c.insert_one({"_id": [1]})
    assert info.value.code == 53


@pytest.mark.parametrize(
    ("identifier", "refused"),
    [
        ({"$a": 1}, "$a"),
        ({"a": 1, "b": {"c": [{"$d": 1}]}}, "$d"),
        ({"$ref": "c", "$id": 1, "$db": "d", "$x": 1}, "$x"),
        ({"$id": 1, "$ref": "c"}, "$id"),  # a DBRef opens with $ref
    ],
)
def test_id_with_a_dollar_prefixed_field_is_refused(identifier: Any, refused: str) -> None:
    c = Collection("db", "c", id_factory=object_ids())
    for write in (
        lambda: c.insert_one({"_id": identifier}),
        lambda: c.update({"_id": {"$eq": identifier}}, {"$set": {"x": 1}}, upsert=True),
        lambda: c.update({"x": 1}, {"_id": identifier}, upsert=True),
    ):
        with pytest.raises(CommandError) as info:
            write()
        assert (info.value.code, info.value.code_name) == (52, "DollarPrefixedFieldName")
        assert info.value.errmsg == (
            f"_id fields may not contain '$'-prefixed fields: {refused} is not valid for storage."
        )
    assert len(c) == 0


def test_id_may_hold_dotted_names_and_a_dbref() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    c.insert_one({"_id": {"a.b": 1}})
    c.insert_one({"_id": {"$ref": "c", "$id": {"$odd": 1}, "$db": "d", "x": 1}})
    assert len(c) == 2


def test_insert_many_ordered_and_unordered() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    ids, errors = c.insert_many([{"_id": 1}, {"_id": 1}, {"_id": 2}])
    assert ids == [1] and [(i, e.code) for i, e in errors] == [(1, 11000)]
    ids, errors = c.insert_many([{"_id": 1}, {"_id": 3}], ordered=False)
    assert ids == [3] and len(errors) == 1


def test_find_filter_sort_skip_limit_projection(coll: Collection) -> None:
    assert [d["_id"] for d in coll.find({"age": {"$gt": 26}})] == [1, 3]
    assert [d["_id"] for d in coll.find(sort={"age": 1})] == [2, 1, 3]
    assert [d["_id"] for d in coll.find(sort={"age": -1}, skip=1, limit=1)] == [1]
    assert coll.find({"_id": 2}, {"name": 1, "_id": 0}) == [{"name": "bob"}]
    assert coll.find({"tags": "a"}, {"tags.$": 1}) == [{"_id": 1, "tags": ["a"]}]


def test_find_returns_copies(coll: Collection) -> None:
    coll.find({"_id": 1})[0]["name"] = "zzz"
    assert coll.find_one({"_id": 1})["name"] == "ann"  # type: ignore[index]


def test_count_and_distinct(coll: Collection) -> None:
    assert coll.count() == 3
    assert coll.count({"age": {"$lt": 33}}) == 2
    assert coll.count(skip=1, limit=1) == 1
    assert coll.distinct("tags") == ["a", "b"]
    assert coll.distinct("age", {"_id": {"$ne": 1}}) == [25, 35]


def test_update_one_and_many(coll: Collection) -> None:
    outcome = coll.update({"age": {"$gte": 30}}, {"$inc": {"age": 1}})
    assert (outcome.matched, outcome.modified, outcome.upserted) == (1, 1, False)
    outcome = coll.update({}, {"$set": {"flag": True}}, multi=True)
    assert (outcome.matched, outcome.modified) == (3, 3)
    outcome = coll.update({}, {"$set": {"flag": True}}, multi=True)
    assert (outcome.matched, outcome.modified) == (3, 0)


def test_update_with_sort_picks_the_first_in_order(coll: Collection) -> None:
    coll.update({}, {"$set": {"oldest": True}}, sort={"age": -1})
    assert coll.find({"oldest": True}, {"_id": 1}) == [{"_id": 3}]


def test_replacement_update(coll: Collection) -> None:
    coll.update({"_id": 2}, {"name": "robert"})
    assert coll.find_one({"_id": 2}) == {"_id": 2, "name": "robert"}
    with pytest.raises(CommandError) as info:
        coll.update({}, {"name": "x"}, multi=True)
    assert info.value.code == 9


def test_failed_update_changes_nothing(coll: Collection) -> None:
    with pytest.raises(CommandError):
        coll.update({"_id": 1}, {"$set": {"age": 0}, "$inc": {"name": 1}})
    assert coll.find_one({"_id": 1})["age"] == 30  # type: ignore[index]


def test_upsert_with_operators(coll: Collection) -> None:
    outcome = coll.update({"name": "dan", "age": {"$gt": 1}}, {"$set": {"x": 1}, "$setOnInsert": {"new": True}}, upsert=True)
    assert outcome.upserted and outcome.matched == 0
    created = coll.find_one({"name": "dan"})
    assert created == {"_id": outcome.upserted_id, "name": "dan", "x": 1, "new": True}


def test_upsert_with_replacement_takes_the_filters_id(coll: Collection) -> None:
    outcome = coll.update({"_id": 50}, {"v": 1}, upsert=True)
    assert outcome.upserted_id == 50
    assert coll.find_one({"_id": 50}) == {"_id": 50, "v": 1}


def test_upsert_current_date_uses_now(coll: Collection) -> None:
    coll.update({"_id": 60}, {"$currentDate": {"at": True}}, upsert=True, now=NOW)
    assert coll.find_one({"_id": 60}) == {"_id": 60, "at": NOW}


def test_delete(coll: Collection) -> None:
    assert coll.delete({"age": {"$gt": 0}}, limit=1) == 1
    assert coll.delete({}) == 2
    assert len(coll) == 0


def test_find_and_modify(coll: Collection) -> None:
    before, info = coll.find_and_modify({"name": "bob"}, update={"$inc": {"age": 1}})
    assert before is not None and before["age"] == 25 and info == {"n": 1, "updatedExisting": True}
    after, _ = coll.find_and_modify({"name": "bob"}, update={"$inc": {"age": 1}}, new=True, fields={"age": 1})
    assert after == {"_id": 2, "age": 27}
    removed, info = coll.find_and_modify({}, sort={"age": -1}, remove=True)
    assert removed is not None and removed["_id"] == 3 and info == {"n": 1}
    none, info = coll.find_and_modify({"name": "zed"}, update={"$set": {"a": 1}})
    assert none is None and info == {"n": 0, "updatedExisting": False}
    made, info = coll.find_and_modify({"name": "zed"}, update={"$set": {"a": 1}}, upsert=True, new=True)
    assert made is not None and made["name"] == "zed" and info["upserted"] == made["_id"]


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"update": {"$set": {"a": 1}}, "remove": True}, {"remove": True, "new": True}, {"remove": True, "upsert": True}],
)
def test_find_and_modify_argument_errors(coll: Collection, kwargs: dict[str, Any]) -> None:
    with pytest.raises(CommandError) as info:
        coll.find_and_modify({}, **kwargs)
    assert info.value.code == 9


# --- indexes -------------------------------------------------------------------------------


def test_list_indexes_starts_with_id(coll: Collection) -> None:
    assert coll.list_indexes() == [{"v": 2, "key": {"_id": 1}, "name": "_id_"}]


def test_create_indexes_reply_and_idempotence(coll: Collection) -> None:
    reply = coll.create_indexes([{"key": {"name": 1}, "name": "name_1", "unique": True}])
    assert reply == {"numIndexesBefore": 1, "numIndexesAfter": 2, "createdCollectionAutomatically": False, "ok": 1.0}
    reply = coll.create_indexes([{"key": {"name": 1}, "name": "name_1", "unique": True}])
    assert reply["note"] == "all indexes already exist" and reply["numIndexesAfter"] == 2
    assert coll.list_indexes()[1] == {"v": 2, "key": {"name": 1}, "name": "name_1", "unique": True}


def test_unique_index_enforced_on_insert_and_update(coll: Collection) -> None:
    coll.create_indexes([{"key": {"name": 1}, "name": "name_1", "unique": True}])
    with pytest.raises(CommandError) as info:
        coll.insert_one({"name": "ann"})
    error = info.value
    assert error.errmsg == 'E11000 duplicate key error collection: db.coll index: name_1 dup key: { name: "ann" }'
    assert error.extra == {"keyPattern": {"name": 1}, "keyValue": {"name": "ann"}}
    with pytest.raises(CommandError):
        coll.update({"_id": 2}, {"$set": {"name": "ann"}})
    assert coll.find_one({"_id": 2})["name"] == "bob"  # type: ignore[index]
    coll.update({"_id": 2}, {"$set": {"name": "bobby"}})
    coll.insert_one({"name": "bob"})  # the old key was released


def test_unique_index_release_on_delete(coll: Collection) -> None:
    coll.create_indexes([{"key": {"name": 1}, "name": "name_1", "unique": True}])
    coll.delete({"name": "ann"})
    coll.insert_one({"name": "ann"})


def test_unique_compound_and_multikey() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    c.create_indexes([{"key": {"a": 1, "b": -1}, "name": "ab", "unique": True}, {"key": {"t": 1}, "name": "t", "unique": True}])
    c.insert_one({"a": 1, "b": 1, "t": [1, 2]})
    c.insert_one({"a": 1, "b": 2, "t": [3]})
    with pytest.raises(CommandError) as info:
        c.insert_one({"a": 1, "b": 1, "t": 9})
    assert "dup key: { a: 1, b: 1 }" in info.value.errmsg
    with pytest.raises(CommandError) as info:
        c.insert_one({"a": 5, "t": [2]})
    assert "index: t dup key: { t: 2 }" in info.value.errmsg


def test_unique_index_treats_missing_as_null_unless_sparse() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    c.create_indexes([{"key": {"u": 1}, "name": "u_1", "unique": True}, {"key": {"s": 1}, "name": "s_1", "unique": True, "sparse": True}])
    c.insert_one({"x": 1})
    with pytest.raises(CommandError):
        c.insert_one({"x": 2})
    c2 = Collection("db", "c2", id_factory=object_ids())
    c2.create_indexes([{"key": {"s": 1}, "name": "s_1", "unique": True, "sparse": True}])
    c2.insert_one({"x": 1})
    c2.insert_one({"x": 2})


def test_partial_unique_index() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    c.create_indexes([{"key": {"e": 1}, "name": "e_1", "unique": True, "partialFilterExpression": {"active": True}}])
    c.insert_one({"e": 1, "active": False})
    c.insert_one({"e": 1, "active": True})
    with pytest.raises(CommandError):
        c.insert_one({"e": 1, "active": True})


def test_building_a_unique_index_over_duplicates_fails(coll: Collection) -> None:
    coll.insert_one({"name": "ann"})
    with pytest.raises(CommandError) as info:
        coll.create_indexes([{"key": {"name": 1}, "name": "name_1", "unique": True}])
    assert info.value.code == 11000
    assert len(coll.list_indexes()) == 1


def test_index_conflicts(coll: Collection) -> None:
    coll.create_indexes([{"key": {"age": 1}, "name": "age_1"}])
    with pytest.raises(CommandError) as info:
        coll.create_indexes([{"key": {"name": 1}, "name": "age_1"}])
    assert (info.value.code, info.value.code_name) == (86, "IndexKeySpecsConflict")
    with pytest.raises(CommandError) as info:
        coll.create_indexes([{"key": {"age": 1}, "name": "other"}])
    assert (info.value.code, info.value.code_name) == (85, "IndexOptionsConflict")
    with pytest.raises(CommandError) as info:
        coll.create_indexes([{"key": {}, "name": "x"}])
    assert info.value.code == 67


def test_drop_indexes(coll: Collection) -> None:
    coll.create_indexes([{"key": {"age": 1}, "name": "age_1"}, {"key": {"name": 1}, "name": "name_1"}])
    assert coll.drop_indexes("age_1") == {"nIndexesWas": 3, "ok": 1.0}
    assert coll.drop_indexes({"name": 1}) == {"nIndexesWas": 2, "ok": 1.0}
    with pytest.raises(CommandError) as info:
        coll.drop_indexes("nope")
    assert (info.value.code, info.value.code_name) == (27, "IndexNotFound")
    with pytest.raises(CommandError) as info:
        coll.drop_indexes("_id_")
    assert info.value.code == 72
    coll.create_indexes([{"key": {"age": 1}, "name": "age_1"}])
    assert coll.drop_indexes("*") == {"nIndexesWas": 2, "ok": 1.0}
    assert [i["name"] for i in coll.list_indexes()] == ["_id_"]


def test_default_index_names() -> None:
    assert index_name({"a": 1, "b.c": -1}) == "a_1_b.c_-1"
    assert index_name({"loc": "2dsphere"}) == "loc_2dsphere"


def test_clone_is_independent(coll: Collection) -> None:
    coll.create_indexes([{"key": {"name": 1}, "name": "name_1", "unique": True}])
    copy = coll.clone()
    copy.insert_one({"name": "zed"})
    copy.update({"_id": 1}, {"$set": {"age": 99}})
    assert coll.count() == 3 and coll.find_one({"_id": 1})["age"] == 30  # type: ignore[index]
    coll.insert_one({"name": "zed"})  # the original's index did not see the clone's insert
    with pytest.raises(CommandError):
        copy.insert_one({"name": "ann"})


def test_update_with_array_filters(coll: Collection) -> None:
    coll.update({"_id": 1}, {"$set": {"tags.$[t]": "B"}}, array_filters=[{"t": "b"}])
    assert coll.find_one({"_id": 1})["tags"] == ["a", "B"]  # type: ignore[index]


def test_natural_sort(coll: Collection) -> None:
    assert [d["_id"] for d in coll.find(sort={"$natural": -1})] == [3, 2, 1]
    assert [d["_id"] for d in coll.find(sort={"$natural": 1})] == [1, 2, 3]


def test_find_by_id_fast_path_agrees_with_the_scan(coll: Collection) -> None:
    assert coll.find({"_id": 2.0}) == coll.find({"_id": {"$in": [2]}})
    assert coll.find({"_id": {"$eq": Decimal128("3")}})[0]["name"] == "cat"
    assert coll.find({"_id": 99}) == []


def test_write_events_report_every_change() -> None:
    from mongo_sansio.testing.engine.collection import WriteEvent

    events: list[WriteEvent] = []
    c = Collection("db", "c", id_factory=object_ids(), on_write=events.append)
    c.insert_one({"_id": 1, "a": 1})
    c.update({"_id": 1}, {"$set": {"a": 2}})
    c.update({"_id": 1}, {"$set": {"a": 2}})  # no change, no event
    c.update({"_id": 1}, {"b": 1})
    c.update({"_id": 2}, {"$set": {"c": 1}}, upsert=True)
    c.delete({"_id": 1})
    with pytest.raises(CommandError):
        c.insert_one({"_id": 2})  # refused writes are not reported
    assert [(e.kind, e.before, e.after) for e in events] == [
        ("insert", None, {"_id": 1, "a": 1}),
        ("update", {"_id": 1, "a": 1}, {"_id": 1, "a": 2}),
        ("replace", {"_id": 1, "a": 2}, {"_id": 1, "b": 1}),
        ("insert", None, {"_id": 2, "c": 1}),
        ("delete", {"_id": 1, "b": 1}, None),
    ]
    assert c.clone().on_write is None


def test_return_key_gives_the_keys_of_the_index_the_plan_scans() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    for doc in [{"_id": 1, "a": 3, "b": 1}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 1, "b": 3}]:
        c.insert_one(doc)
    c.create_indexes([{"key": {"a": 1}, "name": "a_1"}, {"key": {"b": 1, "a": 1}, "name": "b_1_a_1"}])
    # a collection scan has no index keys
    assert c.find(return_key=True) == [{}, {}, {}]
    # the _id index gives the sort
    assert c.find(sort={"_id": -1}, return_key=True) == [{"_id": 3}, {"_id": 2}, {"_id": 1}]
    # the filter's field leads an index; the projection is not applied
    assert c.find({"a": {"$gte": 2}}, {"b": 1}, sort={"a": 1}, return_key=True) == [{"a": 2}, {"a": 3}]
    assert c.find({"b": 2, "a": 2}, return_key=True) == [{"b": 2, "a": 2}]
    assert c.find({"_id": 2}, return_key=True) == [{"_id": 2}]
    # a hint by name or key pattern; $natural is the collection scan
    assert c.find({"_id": 1}, hint="b_1_a_1", return_key=True) == [{"b": 1, "a": 3}]
    assert c.find({"_id": 1}, hint={"a": 1}, return_key=True) == [{"a": 3}]
    assert c.find(sort={"a": 1}, hint={"$natural": 1}, return_key=True) == [{}, {}, {}]


def test_show_record_id_appends_an_int64_that_survives_updates() -> None:
    c = Collection("db", "c", id_factory=object_ids())
    for n in range(3):
        c.insert_one({"_id": n, "x": n})
    c.delete({"_id": 1})
    c.update({"_id": 2}, {"$set": {"x": 9}})
    c.insert_one({"_id": 7})
    found = c.find(None, {"x": 1}, show_record_id=True)
    assert found == [{"_id": 0, "x": 0, "$recordId": 1}, {"_id": 2, "x": 9, "$recordId": 3}, {"_id": 7, "$recordId": 4}]
    assert all(type(d["$recordId"]) is Int64 for d in found)
    assert list(found[1]) == ["_id", "x", "$recordId"]
    assert c.clone().find({"_id": 7}, show_record_id=True) == [{"_id": 7, "$recordId": 4}]


def test_duplicate_ids_allowed_without_the_id_index() -> None:
    coll = Collection("db", "ts", id_factory=object_ids())
    coll.allow_duplicate_ids()
    assert coll.list_indexes() == []
    coll.insert_many([{"_id": 1, "t": 1}, {"_id": 1, "t": 2}, {"_id": 2, "t": 3}])
    assert [d["t"] for d in coll.find({"_id": 1})] == [1, 2]
    assert [r["$recordId"] for r in coll.find(show_record_id=True)] == [1, 2, 3]
    coll.update({"t": 2}, {"$set": {"x": 1}})
    assert coll.find({"_id": 1}) == [{"_id": 1, "t": 1}, {"_id": 1, "t": 2, "x": 1}]
    copy = coll.clone()
    copy.insert_one({"_id": 2, "t": 4})
    assert coll.delete({"_id": 1}) == 2 and len(copy) == 4
    assert [d["t"] for d in coll.find()] == [3]
