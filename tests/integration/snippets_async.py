"""Everyday PyMongo async code (``AsyncMongoClient``), registered for test_pymongo_async_snippets.py.

Each snippet is ``async def snippet(client, ns)`` written as PyMongo's async API is used, with
PyMongo's names taken from ``ns`` (snippet_harness.pymongo_namespace: only the client differs).
Snippets use nothing of asyncio itself, so that the same code runs on trio with our client.
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from typing import Any

from snippet_harness import DB

AsyncSnippet = Callable[[Any, Any], Awaitable[Any]]
ASYNC_SNIPPETS: list[AsyncSnippet] = []


def async_snippet(fn: AsyncSnippet) -> AsyncSnippet:
    ASYNC_SNIPPETS.append(fn)
    return fn


async def seeded(client: Any, n: int = 6, name: str = "things") -> Any:
    coll = client[DB][name]
    if n:
        await coll.insert_many(
            [{"_id": i, "x": i, "tag": "even" if i % 2 == 0 else "odd"} for i in range(n)]
        )
    return coll


@async_snippet
async def insert_one_and_find_one(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    result = await coll.insert_one({"name": "ada", "born": 1815})
    doc = await coll.find_one({"_id": result.inserted_id})
    return (
        result.acknowledged,
        isinstance(result.inserted_id, ns.ObjectId),
        doc == {"_id": result.inserted_id, "name": "ada", "born": 1815},
        doc,
    )


@async_snippet
async def find_to_list_sorted_and_limited(client: Any, ns: Any) -> Any:
    coll = await seeded(client)
    docs = await coll.find({"tag": "even"}).sort("x", ns.DESCENDING).limit(2).to_list()
    everything = await coll.find({}, {"_id": 0, "x": 1}).to_list(length=None)
    return docs, everything


@async_snippet
async def async_for_over_a_cursor_in_batches(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 25)
    seen = [doc["_id"] async for doc in coll.find().sort("_id", ns.ASCENDING).batch_size(4)]
    return seen


@async_snippet
async def cursor_next_and_exhaustion(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 2)
    cursor = coll.find().sort("_id", ns.ASCENDING)
    first = await cursor.next()
    second = await anext(cursor)
    try:
        await cursor.next()
    except StopAsyncIteration:
        ended = "stopped"
    return first, second, ended, cursor.alive


@async_snippet
async def counts(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 7)
    return (
        await coll.count_documents({"tag": "odd"}),
        await coll.count_documents({}, skip=2, limit=3),
        await coll.estimated_document_count(),
    )


@async_snippet
async def update_one_with_upsert_and_update_many(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 4)
    upserted = await coll.update_one({"_id": 99}, {"$set": {"x": 99}}, upsert=True)
    many = await coll.update_many({"tag": "even"}, {"$inc": {"x": 10}})
    none = await coll.update_one({"_id": 1000}, {"$set": {"x": 1}})
    return (
        upserted.upserted_id,
        upserted.matched_count,
        many.matched_count,
        many.modified_count,
        none.matched_count,
        await coll.find().sort("_id", 1).to_list(),
    )


@async_snippet
async def replace_and_delete(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 5)
    replaced = await coll.replace_one({"_id": 1}, {"name": "new"})
    one = await coll.delete_one({"tag": "even"})
    many = await coll.delete_many({"x": {"$gte": 3}})
    return (
        replaced.modified_count,
        one.deleted_count,
        many.deleted_count,
        await coll.find().to_list(),
    )


@async_snippet
async def aggregate_group_and_sort(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 9)
    cursor = await coll.aggregate(
        [
            {"$group": {"_id": "$tag", "total": {"$sum": "$x"}, "n": {"$sum": 1}}},
            {"$sort": {"_id": 1}},
        ]
    )
    return await cursor.to_list()


@async_snippet
async def aggregate_iterated_with_async_for(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 6)
    pipeline = [{"$match": {"x": {"$gt": 1}}}, {"$project": {"_id": 0, "double": {"$multiply": ["$x", 2]}}}]
    return [doc async for doc in await coll.aggregate(pipeline, batchSize=2)]


@async_snippet
async def distinct_values(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 6)
    return sorted(await coll.distinct("tag")), sorted(await coll.distinct("x", {"tag": "odd"}))


@async_snippet
async def find_one_and_update_returns_the_new_document(client: Any, ns: Any) -> Any:
    coll = client[DB].counters
    await coll.insert_one({"_id": "orders", "seq": 0})
    after = await coll.find_one_and_update(
        {"_id": "orders"}, {"$inc": {"seq": 1}}, return_document=ns.ReturnDocument.AFTER
    )
    before = await coll.find_one_and_update({"_id": "orders"}, {"$inc": {"seq": 1}})
    missing = await coll.find_one_and_delete({"_id": "nothing"})
    return after, before, missing


@async_snippet
async def bulk_write_with_pymongos_models(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 3)
    result = await coll.bulk_write(
        [
            ns.InsertOne({"_id": 10}),
            ns.UpdateOne({"_id": 0}, {"$set": {"x": 100}}),
            ns.UpdateMany({}, {"$set": {"seen": True}}),
            ns.ReplaceOne({"_id": 1}, {"replaced": True}),
            ns.DeleteOne({"_id": 2}),
            ns.UpdateOne({"_id": 50}, {"$set": {"x": 50}}, upsert=True),
        ]
    )
    return (
        result.inserted_count,
        result.matched_count,
        result.modified_count,
        result.deleted_count,
        result.upserted_count,
        result.upserted_ids,
        await coll.find().sort("_id", 1).to_list(),
    )


@async_snippet
async def duplicate_key_is_caught_as_pymongos_error(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    await coll.insert_one({"_id": 1})
    try:
        await coll.insert_one({"_id": 1})
    except ns.errors.DuplicateKeyError as exc:
        return "duplicate", exc.code, exc.details["keyValue"]
    return "not raised"


@async_snippet
async def insert_many_ordered_bulk_write_error(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    try:
        await coll.insert_many([{"_id": 1}, {"_id": 1}, {"_id": 2}])
    except ns.errors.BulkWriteError as exc:
        errors = exc.details["writeErrors"]
        return exc.details["nInserted"], [(e["index"], e["code"]) for e in errors]
    return "not raised"


@async_snippet
async def indexes_created_listed_and_dropped(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    name = await coll.create_index([("x", ns.ASCENDING), ("y", ns.DESCENDING)], unique=True)
    names = await coll.create_indexes([ns.IndexModel([("z", ns.ASCENDING)], name="by_z")])
    listed = sorted([index["name"] async for index in await coll.list_indexes()])
    info = await coll.index_information()
    await coll.drop_index("by_z")
    return name, names, listed, info[name]["key"], info[name].get("unique"), sorted(await coll.index_information())


@async_snippet
async def collections_listed_renamed_and_dropped(client: Any, ns: Any) -> Any:
    db = client[DB]
    await db.create_collection("a")
    await db.b.insert_one({"x": 1})
    before = sorted(await db.list_collection_names())
    await db.b.rename("c")
    await db.drop_collection("a")
    return before, sorted(await db.list_collection_names())


def classes_of(value: Any) -> Any:
    """``value`` with every value but a document's replaced by its class, as
    ``package.Name`` (``bson.Timestamp``): for what differs between any two runs."""
    if isinstance(value, dict):
        return {key: classes_of(item) for key, item in value.items()}
    return f"{type(value).__module__.partition('.')[0]}.{type(value).__name__}"


@async_snippet
async def database_commands(client: Any, ns: Any) -> Any:
    ping = await client.admin.command("ping")
    await client[DB].things.insert_one({"x": 1})
    count = await client[DB].command({"count": "things"})
    # a reply's $clusterTime and operationTime differ between any two runs (each snippet runs
    # on a fresh client, after writes): their keys and classes are compared, not their values
    for key in ("$clusterTime", "operationTime"):
        if key in ping:
            ping[key] = classes_of(ping[key])
    return ping, count["n"], count["ok"]


@async_snippet
async def transaction_commits_with_async_with(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 2)
    async with client.start_session() as session:
        async with await session.start_transaction():
            await coll.insert_one({"_id": 10}, session=session)
            await coll.update_one({"_id": 0}, {"$set": {"x": 7}}, session=session)
        in_transaction = session.in_transaction
    return in_transaction, await coll.find().sort("_id", 1).to_list()


@async_snippet
async def transaction_aborted_by_an_error_leaves_nothing(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 1)
    async with client.start_session() as session:
        try:
            async with await session.start_transaction():
                await coll.insert_one({"_id": 10}, session=session)
                raise ValueError("changed my mind")
        except ValueError:
            pass
    return await coll.find().to_list()


@async_snippet
async def with_transaction_callback(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 1)

    async def callback(session: Any) -> str:
        await coll.insert_one({"_id": 20}, session=session)
        return "done"

    async with client.start_session() as session:
        outcome = await session.with_transaction(
            callback, write_concern=ns.WriteConcern(w="majority")
        )
    return outcome, await coll.count_documents({})


@async_snippet
async def change_stream_sees_inserts_and_updates(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    await coll.insert_one({"_id": 0})
    async with await coll.watch(full_document="updateLookup") as stream:
        await coll.insert_one({"_id": 1, "x": 1})
        await coll.update_one({"_id": 1}, {"$set": {"x": 2}})
        first = await stream.next()
        second = await stream.next()
    return (
        first["operationType"],
        first["fullDocument"],
        second["operationType"],
        second["updateDescription"]["updatedFields"],
        second["fullDocument"],
        "_data" in first["_id"],
    )


@async_snippet
async def change_stream_try_next_is_none_when_quiet(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    await coll.insert_one({"_id": 0})
    async with await coll.watch(max_await_time_ms=50) as stream:
        quiet = await stream.try_next()
        alive = stream.alive
        await coll.insert_one({"_id": 5})
        change = None
        for _ in range(50):
            change = await stream.try_next()
            if change is not None:
                break
    return quiet, alive, change["documentKey"] if change else None


@async_snippet
async def bson_values_round_trip(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
    doc = {
        "_id": ns.ObjectId(),
        "long": ns.Int64(42),
        "big": ns.Int64(2**40),
        "dec": ns.Decimal128("1.10"),
        "when": when,
        "bin": ns.Binary(b"\x00\x01", 128),
        "ts": ns.Timestamp(1700000000, 3),
        "min": ns.MinKey(),
        "max": ns.MaxKey(),
    }
    await coll.insert_one(doc)
    back = await coll.find_one({"_id": doc["_id"]})
    return back == doc, back, str(back["long"]), f"{back['big']}"


@async_snippet
async def tz_aware_codec_options(client: Any, ns: Any) -> Any:
    db = client[DB]
    coll = db.get_collection("things", codec_options=ns.CodecOptions(tz_aware=True))
    await coll.insert_one({"_id": 1, "when": datetime.datetime(2020, 1, 2, 3, 4, 5)})
    back = await coll.find_one()
    plain = await db.things.find_one()
    return back["when"].tzinfo is not None, plain["when"].tzinfo is None, back["when"].year


@async_snippet
async def write_concern_and_read_preference_objects(client: Any, ns: Any) -> Any:
    coll = client[DB].get_collection(
        "things",
        write_concern=ns.WriteConcern(w="majority", wtimeout=5000),
        read_preference=ns.ReadPreference.PRIMARY_PREFERRED,
    )
    result = await coll.insert_one({"_id": 1})
    return (
        result.acknowledged,
        coll.write_concern.document,
        coll.read_preference.name,
        await coll.find_one(),
    )


@async_snippet
async def cursor_options_after_iteration_are_refused(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 3)
    cursor = coll.find()
    await cursor.next()
    try:
        cursor.limit(1)
    except ns.errors.InvalidOperation as exc:
        return "refused", str(exc)
    return "not raised"


@async_snippet
async def find_with_projection_skip_and_session(client: Any, ns: Any) -> Any:
    coll = await seeded(client, 8)
    async with client.start_session(causal_consistency=True) as session:
        await coll.insert_one({"_id": 100, "x": 100, "tag": "new"}, session=session)
        docs = await coll.find(
            {"x": {"$gte": 2}}, projection={"tag": 1}, skip=1, session=session
        ).sort("_id", -1).to_list(3)
    return docs


@async_snippet
async def database_and_client_listings(client: Any, ns: Any) -> Any:
    await client[DB].things.insert_one({"x": 1})
    names = await client.list_database_names()
    infos = [info async for info in await client[DB].list_collections()]
    return DB in names, [(info["name"], info["type"]) for info in infos]
