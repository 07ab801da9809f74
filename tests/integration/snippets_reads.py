"""Snippets of everyday PyMongo code, part one: BSON values (PyMongo's ``bson`` and ours), inserts
and duplicate keys, find and cursors, aggregate.  Run by test_pymongo_snippets.py."""

from __future__ import annotations

import datetime
import re
import uuid
from typing import Any

import bson
from snippet_harness import DB, seeded, snippet

# --- ObjectId and the other BSON values ----------------------------------------------------------


@snippet
def insert_one_generates_an_object_id(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    result = coll.insert_one({"x": 1})
    return (
        result,
        isinstance(result.inserted_id, ns.ObjectId),
        coll.find_one({"_id": result.inserted_id}),
    )


@snippet
def insert_one_sets_the_id_on_the_callers_document(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    doc = {"x": 1}
    coll.insert_one(doc)
    return "_id" in doc, coll.find_one() == doc, list(doc)


@snippet
def bson_object_id_in_filters_and_documents(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    oid = bson.ObjectId("65a1b2c3d4e5f60718293a4b")
    coll.insert_one({"_id": oid, "owner": bson.ObjectId("65a1b2c3d4e5f60718293a4c")})
    found = coll.find_one({"_id": bson.ObjectId(str(oid))})
    return found, str(found["_id"]), coll.count_documents({"owner": {"$exists": True}})


@snippet
def bson_values_round_trip(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one(
        {
            "_id": 1,
            "long": bson.Int64(2**40),
            "dec": bson.Decimal128("1.10"),
            "re": bson.Regex("^a", "i"),
            "bin": bson.Binary(b"\x01\x02", 5),
            "ts": bson.Timestamp(1700000000, 3),
            "min": bson.MinKey(),
            "max": bson.MaxKey(),
            "code": bson.Code("function() {}"),
            "ref": bson.DBRef("other", 7),
            "son": bson.SON([("b", 1), ("a", 2)]),
            "when": datetime.datetime(2024, 1, 2, 3, 4, 5, 678000),
        }
    )
    return coll.find_one({"_id": 1})


@snippet
def namespace_values_in_filters(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_many(
        [{"_id": 1, "n": ns.Int64(5)}, {"_id": 2, "n": ns.Decimal128("5.5")}, {"_id": 3, "n": 5}]
    )
    return (
        [d["_id"] for d in coll.find({"n": {"$type": "long"}})],
        [d["_id"] for d in coll.find({"n": {"$gt": ns.Int64(5)}})],
        [d["_id"] for d in coll.find({"n": 5}, sort=[("_id", 1)])],
    )


@snippet
def regex_values_in_filters(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_many([{"name": "Alice"}, {"name": "bob"}, {"name": "alan"}])
    by_pattern = coll.find({"name": re.compile("^a", re.IGNORECASE)}, {"_id": 0}).sort("name")
    by_regex = coll.find({"name": ns.Regex("^b")}, {"_id": 0})
    by_operator = coll.find({"name": {"$regex": "^al", "$options": "i"}}, {"_id": 0}).sort("name")
    return list(by_pattern), list(by_regex), list(by_operator)


@snippet
def naive_datetimes_come_back_naive_and_truncated_to_milliseconds(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 1, "when": datetime.datetime(2024, 5, 6, 7, 8, 9, 123456)})
    return coll.find_one()["when"]


@snippet
def aware_datetimes_are_stored_in_utc(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    tz = datetime.timezone(datetime.timedelta(hours=2))
    coll.insert_one({"_id": 1, "when": datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=tz)})
    return coll.find_one()["when"], coll.count_documents(
        {"when": datetime.datetime(2024, 5, 6, 5, 8, 9)}
    )


@snippet
def tz_aware_codec_options(client: Any, ns: Any) -> Any:
    coll = client[DB].get_collection("things", codec_options=ns.CodecOptions(tz_aware=True))
    coll.insert_one({"_id": 1, "when": datetime.datetime(2024, 5, 6, 7, 8, 9)})
    when = coll.find_one()["when"]
    return (
        when,
        when.utcoffset(),
        coll.codec_options.tz_aware,
        client[DB].things.codec_options.tz_aware,
    )


UUID_VALUE = uuid.UUID("12345678-1234-5678-1234-567812345678")


@snippet
def uuid_needs_a_representation(client: Any, ns: Any) -> Any:
    try:
        client[DB].things.insert_one({"u": UUID_VALUE})
    except ValueError:
        return "refused"
    return "not raised"


@snippet
def uuid_standard_representation_on_a_collection(client: Any, ns: Any) -> Any:
    standard = client[DB].get_collection(
        "things", codec_options=ns.CodecOptions(uuid_representation=ns.UuidRepresentation.STANDARD)
    )
    standard.insert_one({"_id": 1, "u": UUID_VALUE})
    return client[DB].things.find_one({"_id": 1}), standard.find_one({"_id": 1})


@snippet
def uuid_in_a_filter_with_the_collections_representation(client: Any, ns: Any) -> Any:
    standard = client[DB].get_collection(
        "things", codec_options=ns.CodecOptions(uuid_representation=ns.UuidRepresentation.STANDARD)
    )
    standard.insert_one({"_id": 1, "u": UUID_VALUE})
    return standard.find_one({"u": UUID_VALUE}), standard.count_documents({"u": UUID_VALUE})


@snippet
def son_document_class(client: Any, ns: Any) -> Any:
    coll = client[DB].get_collection("things", codec_options=ns.CodecOptions(document_class=ns.SON))
    coll.insert_one({"_id": 1, "sub": {"b": 1, "a": 2}})
    doc = coll.find_one()
    return type(doc).__name__, type(doc["sub"]).__name__, doc


@snippet
def raw_document_class(client: Any, ns: Any) -> Any:
    coll = client[DB].get_collection(
        "things", codec_options=ns.CodecOptions(document_class=ns.RawBSONDocument)
    )
    client[DB].things.insert_one({"_id": 1, "sub": {"a": [1, 2]}})
    doc = coll.find_one()
    return isinstance(doc, ns.RawBSONDocument), doc["_id"], doc["sub"]["a"], dict(doc)


# --- insert_one / insert_many and duplicate keys -------------------------------------------------


@snippet
def insert_many_returns_the_given_ids(client: Any, ns: Any) -> Any:
    result = client[DB].things.insert_many([{"_id": "a"}, {"_id": "b"}, {"_id": 3}])
    return result, result.inserted_ids


@snippet
def insert_many_generates_ids(client: Any, ns: Any) -> Any:
    docs = [{"n": i} for i in range(5)]
    result = client[DB].things.insert_many(docs)
    return (
        len(result.inserted_ids),
        all(isinstance(i, ns.ObjectId) for i in result.inserted_ids),
        [d["_id"] for d in docs] == result.inserted_ids,
    )


@snippet
def duplicate_key_as_duplicate_key_error(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    try:
        coll.insert_one({"_id": 1})
    except ns.errors.DuplicateKeyError as exc:
        return (
            exc.code,
            sorted(exc.details),
            exc.details["keyValue"],
            exc.details["keyPattern"],
            "E11000" in str(exc),
        )
    return "not raised"


@snippet
def duplicate_key_as_write_error(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    try:
        coll.insert_one({"_id": 0})
    except ns.errors.WriteError as exc:
        return type(exc).__name__, exc.code, exc.details["index"]
    return "not raised"


@snippet
def duplicate_key_as_operation_failure(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    try:
        coll.replace_one({"_id": 0}, {"_id": 0, "x": 1}, upsert=True)
        coll.update_one({"_id": 0}, {"$set": {"_id": 1}})
    except ns.errors.OperationFailure as exc:
        return type(exc).__name__, exc.code
    return "not raised"


@snippet
def insert_many_ordered_stops_at_the_duplicate(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    try:
        coll.insert_many([{"_id": 5}, {"_id": 1}, {"_id": 6}])
    except ns.errors.BulkWriteError as exc:
        details = exc.details
        errors = [(e["index"], e["code"], e["keyValue"]) for e in details["writeErrors"]]
        return exc.code, details["nInserted"], errors, sorted(details), coll.count_documents({})
    return "not raised"


@snippet
def insert_many_unordered_continues_past_duplicates(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    try:
        coll.insert_many([{"_id": 0}, {"_id": 5}, {"_id": 1}, {"_id": 6}], ordered=False)
    except ns.errors.BulkWriteError as exc:
        errors = [(e["index"], e["code"]) for e in exc.details["writeErrors"]]
        return exc.details["nInserted"], errors, sorted(d["_id"] for d in coll.find())
    return "not raised"


@snippet
def insert_many_of_nothing(client: Any, ns: Any) -> Any:
    try:
        client[DB].things.insert_many([])
    except TypeError as exc:
        return str(exc)
    return "not raised"


@snippet
def insert_one_of_a_list(client: Any, ns: Any) -> Any:
    client[DB].things.insert_one([("a", 1)])


@snippet
def insert_one_of_a_key_with_a_dot_is_accepted(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 1, "a.b": 1, "$c": 2})
    return coll.find_one()


# --- find and cursors ----------------------------------------------------------------------------


@snippet
def find_with_filter_and_sort(client: Any, ns: Any) -> Any:
    coll = seeded(client)
    return list(coll.find({"tag": "even"}).sort("x", ns.DESCENDING))


@snippet
def find_with_projection_include_and_exclude(client: Any, ns: Any) -> Any:
    coll = seeded(client, 3)
    return (
        list(coll.find({}, {"x": 1})),
        list(coll.find({}, {"_id": 0, "tag": 1})),
        list(coll.find({}, ["tag"])),
        list(coll.find({}, {"tag": 0})),
    )


@snippet
def find_with_compound_sort_skip_and_limit(client: Any, ns: Any) -> Any:
    coll = seeded(client, 10)
    cursor = coll.find().sort([("tag", ns.ASCENDING), ("x", ns.DESCENDING)]).skip(2).limit(5)
    return [d["_id"] for d in cursor]


@snippet
def find_keyword_arguments(client: Any, ns: Any) -> Any:
    coll = seeded(client, 10)
    return list(
        coll.find(
            filter={"x": {"$gte": 3}}, projection={"_id": 1}, sort=[("x", -1)], skip=1, limit=3
        )
    )


@snippet
def find_with_batch_size_reads_every_batch(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_many([{"_id": i} for i in range(25)])
    cursor = coll.find().batch_size(4)
    return [d["_id"] for d in cursor], cursor.alive, cursor.retrieved


@snippet
def cursor_index_and_slice(client: Any, ns: Any) -> Any:
    coll = seeded(client, 8)
    first = coll.find().sort("_id")[0]
    third = coll.find().sort("_id")[2]
    sliced = list(coll.find().sort("_id")[3:5])
    try:
        coll.find()[50]
    except IndexError as exc:
        missing = str(exc)
    return first, third, sliced, missing


@snippet
def cursor_next_and_stop_iteration(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    cursor = coll.find().sort("_id")
    got = [cursor.next(), next(cursor)]
    try:
        cursor.next()
    except StopIteration:
        got.append("stop")
    return got, cursor.alive


@snippet
def find_one_forms(client: Any, ns: Any) -> Any:
    coll = seeded(client, 3)
    return (
        coll.find_one(),
        coll.find_one(2),
        coll.find_one({"x": 99}),
        coll.find_one({"tag": "odd"}, {"_id": 0}),
    )


@snippet
def find_dotted_fields_and_operators(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_many(
        [
            {"_id": 1, "a": {"b": 1}, "tags": ["x", "y"]},
            {"_id": 2, "a": {"b": 2}, "tags": ["y"]},
            {"_id": 3, "a": None},
        ]
    )
    return (
        [d["_id"] for d in coll.find({"a.b": {"$in": [2, 3]}})],
        [d["_id"] for d in coll.find({"tags": "x"})],
        [d["_id"] for d in coll.find({"tags": {"$all": ["y"]}, "a.b": {"$ne": 1}})],
        [d["_id"] for d in coll.find({"$or": [{"a": None}, {"a.b": 1}]}).sort("_id", -1)],
        [d["_id"] for d in coll.find({"a.b": {"$exists": False}})],
    )


@snippet
def sort_after_iteration_is_refused(client: Any, ns: Any) -> Any:
    cursor = seeded(client, 2).find()
    next(cursor)
    try:
        cursor.sort("x")
    except ns.errors.InvalidOperation as exc:
        return str(exc)
    return "not raised"


@snippet
def cursor_clone_and_rewind(client: Any, ns: Any) -> Any:
    coll = seeded(client, 4)
    cursor = coll.find({}, {"_id": 1}).sort("_id").limit(3)
    first = list(cursor)
    again = list(cursor.rewind())
    cloned = list(cursor.clone())
    return first, again, cloned


@snippet
def cursor_to_list_and_collection(client: Any, ns: Any) -> Any:
    coll = seeded(client, 5)
    cursor = coll.find({"x": {"$lt": 4}}, sort=[("_id", 1)])
    return cursor.to_list(2), cursor.to_list(), cursor.collection.name, cursor.collection == coll


@snippet
def cursor_distinct_and_collection_distinct(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    coll.insert_one({"_id": 10, "tag": ["even", "many"]})
    return (
        sorted(coll.distinct("tag")),
        sorted(coll.find({"x": {"$gt": 2}}).distinct("x")),
        coll.distinct("x", {"tag": "odd"}),
    )


@snippet
def count_documents_and_estimated_count(client: Any, ns: Any) -> Any:
    coll = seeded(client, 7)
    return (
        coll.count_documents({}),
        coll.count_documents({"tag": "even"}),
        coll.count_documents({"x": {"$gt": 1}}, skip=1, limit=3),
        coll.estimated_document_count(),
        client[DB].missing.count_documents({}),
    )


@snippet
def find_with_hint_by_name_and_by_keys(client: Any, ns: Any) -> Any:
    coll = seeded(client, 4)
    coll.create_index("x")
    by_name = list(coll.find({"x": {"$gt": 1}}).hint("x_1"))
    by_keys = list(coll.find({"x": {"$gt": 1}}).hint([("x", ns.ASCENDING)]))
    return by_name, by_keys


@snippet
def find_with_a_hint_naming_no_index(client: Any, ns: Any) -> Any:
    coll = seeded(client, 4)
    try:
        list(coll.find().hint("nope_1"))
    except ns.errors.OperationFailure as exc:
        return exc.code
    return "not raised"


@snippet
def mixed_type_sort_order(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    values = [
        3,
        "a",
        None,
        2.5,
        {"a": 1},
        [0],
        True,
        datetime.datetime(2020, 1, 1),
        bson.ObjectId("65a1b2c3d4e5f60718293a4b"),
    ]
    coll.insert_many([{"v": v} for v in values])
    return [d["v"] for d in coll.find({}, {"_id": 0}).sort("v", 1)]


# --- aggregate -----------------------------------------------------------------------------------


@snippet
def aggregate_match_group_sort(client: Any, ns: Any) -> Any:
    coll = seeded(client, 8)
    pipeline = [
        {"$match": {"x": {"$gte": 1}}},
        {"$group": {"_id": "$tag", "total": {"$sum": "$x"}, "n": {"$sum": 1}}},
        {"$sort": {"_id": 1}},
    ]
    return list(coll.aggregate(pipeline))


@snippet
def aggregate_pymongo_keywords(client: Any, ns: Any) -> Any:
    coll = seeded(client, 10)
    cursor = coll.aggregate(
        [{"$sort": {"_id": -1}}, {"$project": {"x": 1}}], allowDiskUse=True, batchSize=3
    )
    return [d["_id"] for d in cursor]


@snippet
def aggregate_let_variables(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    pipeline = [{"$match": {"$expr": {"$gt": ["$x", "$$least"]}}}, {"$project": {"_id": 1}}]
    return list(coll.aggregate(pipeline, let={"least": 3}))


@snippet
def aggregate_facet(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    pipeline = [
        {
            "$facet": {
                "evens": [{"$match": {"tag": "even"}}, {"$count": "n"}],
                "top": [{"$sort": {"x": -1}}, {"$limit": 1}],
            }
        }
    ]
    return list(coll.aggregate(pipeline))


@snippet
def aggregate_lookup_unwind_project(client: Any, ns: Any) -> Any:
    db = client[DB]
    db.orders.insert_many([{"_id": 1, "item": "a", "qty": 2}, {"_id": 2, "item": "b", "qty": 1}])
    db.items.insert_many([{"_id": "a", "price": 3}, {"_id": "b", "price": 10}])
    pipeline = [
        {"$lookup": {"from": "items", "localField": "item", "foreignField": "_id", "as": "info"}},
        {"$unwind": "$info"},
        {"$project": {"total": {"$multiply": ["$qty", "$info.price"]}}},
        {"$sort": {"total": -1}},
    ]
    return list(db.orders.aggregate(pipeline))


@snippet
def aggregate_count_and_out(client: Any, ns: Any) -> Any:
    coll = seeded(client, 5)
    counted = list(coll.aggregate([{"$match": {"tag": "odd"}}, {"$count": "odds"}]))
    out = list(coll.aggregate([{"$match": {"tag": "even"}}, {"$out": "evens"}]))
    return counted, out, list(client[DB].evens.find().sort("_id"))


@snippet
def aggregate_on_a_missing_collection(client: Any, ns: Any) -> Any:
    return list(client[DB].missing.aggregate([{"$match": {}}]))


@snippet
def aggregate_bad_stage(client: Any, ns: Any) -> Any:
    try:
        list(client[DB].things.aggregate([{"$nope": {}}]))
    except ns.errors.OperationFailure as exc:
        return exc.code
    return "not raised"
