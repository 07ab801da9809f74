"""Snippets of everyday PyMongo code, part four: the details code leans on without thinking
(closing and context-managed cursors, generators of documents, PyMongo's raw documents,
projections with operators, collations, explain, database-level options, errors inside
transactions and callbacks).  Run by test_pymongo_snippets.py."""

from __future__ import annotations

import datetime
from typing import Any

import bson
import bson.raw_bson
from snippet_harness import DB, applied, seeded, snippet


@snippet
def insert_many_of_a_generator(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    result = coll.insert_many({"_id": i, "sq": i * i} for i in range(4))
    return result.inserted_ids, list(coll.find().sort("_id"))


@snippet
def insert_pymongos_raw_bson_document(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    raw = bson.raw_bson.RawBSONDocument(bson.encode({"_id": 1, "a": [1, {"b": 2}]}))
    coll.insert_one(raw)
    coll.insert_many([bson.raw_bson.RawBSONDocument(bson.encode({"_id": 2}))])
    return list(coll.find().sort("_id"))


@snippet(
    ours_gap="not mirrored on purpose (docs/migrating.md): PyMongo reports None for a raw document's "
    "inserted_id and leaves it out of inserted_ids; ours reports the _id the raw document holds"
)
def inserted_ids_of_raw_documents(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    one = coll.insert_one(bson.raw_bson.RawBSONDocument(bson.encode({"_id": 1})))
    many = coll.insert_many([bson.raw_bson.RawBSONDocument(bson.encode({"_id": 2})), {"_id": 3}])
    return one.inserted_id, many.inserted_ids


@snippet
def object_ids_in_arrays_and_in(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    ids = [bson.ObjectId(f"65a1b2c3d4e5f60718293a{n:02x}") for n in range(4)]
    coll.insert_many([{"_id": oid, "friends": ids[:n]} for n, oid in enumerate(ids)])
    return (
        [d["_id"] for d in coll.find({"_id": {"$in": ids[1:3]}}).sort("_id")],
        coll.count_documents({"friends": ids[0]}),
        coll.find_one({"_id": ids[3]})["friends"],
    )


@snippet
def datetime_range_queries(client: Any, ns: Any) -> Any:
    coll = client[DB].events
    start = datetime.datetime(2024, 1, 1)
    coll.insert_many([{"_id": n, "at": start + datetime.timedelta(days=n)} for n in range(10)])
    window = {
        "at": {
            "$gte": start + datetime.timedelta(days=3),
            "$lt": start + datetime.timedelta(days=6),
        }
    }
    return [d["_id"] for d in coll.find(window).sort("at", -1)]


@snippet
def decimal_arithmetic_in_updates(client: Any, ns: Any) -> Any:
    coll = client[DB].accounts
    coll.insert_one({"_id": 1, "balance": ns.Decimal128("10.10")})
    coll.update_one({"_id": 1}, {"$inc": {"balance": ns.Decimal128("0.20")}})
    coll.update_one({"_id": 1}, {"$inc": {"count": ns.Int64(1)}, "$mul": {"factor": 2}})
    return coll.find_one()


@snippet
def cursor_close_and_context_manager(client: Any, ns: Any) -> Any:
    coll = seeded(client, 10)
    cursor = coll.find().sort("_id").batch_size(2)
    first = next(cursor)
    cursor.close()
    with coll.find({}, {"_id": 1}).sort("_id").limit(2) as managed:
        got = list(managed)
    return first, got, cursor.cursor_id is None or isinstance(cursor.cursor_id, int)


@snippet(
    ours_gap="not mirrored on purpose (docs/migrating.md): after close() PyMongo's cursor still yields "
    "the rest of its current batch and stays alive until it has; ours is empty and dead at once"
)
def iterating_a_closed_cursor(client: Any, ns: Any) -> Any:
    cursor = seeded(client, 10).find().sort("_id").batch_size(2)
    next(cursor)
    cursor.close()
    return cursor.alive, list(cursor)


@snippet
def single_batch_negative_limit(client: Any, ns: Any) -> Any:
    coll = seeded(client, 10)
    cursor = coll.find().sort("_id").limit(-3)
    return [d["_id"] for d in cursor], cursor.alive


@snippet
def find_one_with_sort_and_skip(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    return coll.find_one({}, sort=[("x", -1)]), coll.find_one(
        {"tag": "odd"}, skip=1, sort=[("_id", 1)]
    )


@snippet
def projection_operators(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one(
        {"_id": 1, "arr": [1, 2, 3, 4], "items": [{"k": "a", "v": 1}, {"k": "b", "v": 2}]}
    )
    return (
        coll.find_one({}, {"arr": {"$slice": 2}, "_id": 0, "items": 0}),
        coll.find_one({}, {"items": {"$elemMatch": {"k": "b"}}}),
        coll.find_one({"items.k": "a"}, {"items.$": 1}),
        coll.find_one({}, {"total": {"$sum": "$arr"}}),
    )


@snippet
def collation_case_insensitive(client: Any, ns: Any) -> Any:
    coll = client[DB].names
    coll.insert_many(
        [{"_id": 1, "n": "apple"}, {"_id": 2, "n": "Apple"}, {"_id": 3, "n": "banana"}]
    )
    collation = {"locale": "en", "strength": 2}
    counted = coll.count_documents({"n": "APPLE"}, collation=collation)
    found = [d["_id"] for d in coll.find({"n": "apple"}).collation(collation).sort("_id")]
    return (counted, found) if (counted, found) == (2, [1, 2]) else "not as mongod"


@snippet
def cursor_explain(client: Any, ns: Any) -> Any:
    plan = seeded(client, 3).find({"x": 1}).explain()
    return "queryPlanner" in plan, plan["ok"]


@snippet
def aggregate_group_accumulators(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    pipeline = [
        {"$sort": {"x": 1}},
        {
            "$group": {
                "_id": "$tag",
                "xs": {"$push": "$x"},
                "max": {"$max": "$x"},
                "avg": {"$avg": "$x"},
                "first": {"$first": "$x"},
            }
        },
        {"$sort": {"_id": -1}},
    ]
    return list(coll.aggregate(pipeline))


@snippet
def database_aggregate_of_documents(client: Any, ns: Any) -> Any:
    return list(client[DB].aggregate([{"$documents": [{"a": 1}, {"a": 2}]}, {"$match": {"a": 2}}]))


@snippet
def distinct_and_counts_of_a_missing_collection(client: Any, ns: Any) -> Any:
    coll = client[DB].missing
    return (
        coll.distinct("x"),
        coll.estimated_document_count(),
        coll.count_documents({}),
        coll.find_one(),
        list(coll.find()),
    )


@snippet
def count_documents_with_hint(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    coll.create_index("tag")
    return coll.count_documents({"tag": "odd"}, hint="tag_1"), coll.count_documents(
        {"tag": "odd"}, hint=[("tag", 1)]
    )


@snippet
def update_with_hint_and_bulk_array_filters(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_many([{"_id": 1, "a": [1, 5, 9]}, {"_id": 2, "a": [7]}])
    coll.create_index("a")
    hinted = coll.update_many({"a": {"$gt": 0}}, {"$set": {"seen": True}}, hint="a_1")
    bulk = coll.bulk_write(
        [ns.UpdateOne({"_id": 1}, {"$set": {"a.$[big]": 0}}, array_filters=[{"big": {"$gt": 4}}])]
    )
    return hinted, bulk, list(coll.find().sort("_id"))


@snippet
def partial_and_ttl_index_information(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.create_index("email", unique=True, partialFilterExpression={"email": {"$exists": True}})
    coll.create_index("at", expireAfterSeconds=3600)
    info = coll.index_information()
    return (
        info["email_1"].get("unique"),
        dict(info["email_1"]["partialFilterExpression"]),
        info["at_1"]["expireAfterSeconds"],
    )


@snippet
def database_with_options(client: Any, ns: Any) -> Any:
    db = client.get_database(
        DB, write_concern=ns.WriteConcern(w=0), read_preference=ns.ReadPreference.SECONDARY
    )
    result = db.things.insert_one({"_id": 1})
    applied(client, {"_id": 1})
    return (
        result.acknowledged,
        db.things.write_concern.acknowledged,
        db.read_preference.name,
        db.things.read_preference.name,
    )


@snippet
def journaled_write_concern(client: Any, ns: Any) -> Any:
    coll = client[DB].things.with_options(write_concern=ns.WriteConcern(j=True))
    return coll.insert_one({"_id": 1}), coll.write_concern.document


@snippet
def codec_options_through_with_options(client: Any, ns: Any) -> Any:
    base = client[DB].things
    base.insert_one({"_id": 1, "sub": {"z": 1, "a": 2}})
    son = base.with_options(codec_options=ns.CodecOptions(document_class=ns.SON))
    doc = son.find_one()
    return type(doc).__name__, type(next(son.find())).__name__, doc, type(base.find_one()).__name__


@snippet
def with_transaction_callback_error_propagates(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0})

    def callback(session: Any) -> Any:
        coll.insert_one({"_id": 1}, session=session)
        raise LookupError("callback failed")

    with client.start_session() as session:
        try:
            session.with_transaction(callback)
        except LookupError as exc:
            return str(exc), session.in_transaction, coll.count_documents({})
    return "not raised"


@snippet
def snapshot_isolation_inside_a_transaction(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0, "v": 1})
    with client.start_session() as session:
        with session.start_transaction():
            before = coll.find_one({"_id": 0}, session=session)
            coll.update_one({"_id": 0}, {"$set": {"v": 2}}, session=session)
            own = coll.find_one({"_id": 0}, session=session)
            others = coll.find_one({"_id": 0})
    return before, own, others, coll.find_one({"_id": 0})


@snippet
def write_conflict_between_transactions(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0, "v": 0})
    with client.start_session() as first, client.start_session() as second:
        first.start_transaction()
        second.start_transaction()
        coll.update_one({"_id": 0}, {"$set": {"v": 1}}, session=first)
        try:
            coll.update_one({"_id": 0}, {"$set": {"v": 2}}, session=second)
        except ns.errors.OperationFailure as exc:
            conflict = (
                type(exc).__name__,
                exc.code,
                exc.has_error_label("TransientTransactionError"),
            )
        second.abort_transaction()
        first.commit_transaction()
    return conflict, coll.find_one()


@snippet
def change_stream_try_next_on_a_quiet_stream(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 0})
    with coll.watch(max_await_time_ms=50) as stream:
        quiet = stream.try_next()
        coll.delete_one({"_id": 0})
        change = None
        while change is None:
            change = stream.try_next()
        return quiet, change["operationType"], change["documentKey"], stream.alive


@snippet
def change_stream_of_a_replace(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    with coll.watch(full_document_before_change="off") as stream:
        coll.replace_one({"_id": 0}, {"whole": "new"})
        change = next(stream)
    return change["operationType"], change["fullDocument"], "updateDescription" in change


@snippet
def bulk_write_error_as_operation_failure(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    try:
        coll.insert_many([{"_id": 0}])
    except ns.errors.OperationFailure as exc:
        return type(exc).__name__, exc.code, isinstance(exc, ns.errors.BulkWriteError)
    return "not raised"


@snippet
def error_labels_and_details_of_a_command_error(client: Any, ns: Any) -> Any:
    try:
        client[DB].command({"find": "things", "filter": "not a document"})
    except ns.errors.OperationFailure as exc:
        return (
            type(exc).__name__,
            exc.code,
            exc.details["codeName"],
            exc.has_error_label("RetryableWriteError"),
        )
    return "not raised"
