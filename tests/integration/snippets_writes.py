"""Snippets of everyday PyMongo code, part two: updates and deletes, find_one_and_*, bulk_write
of every model, and index management.  Run by test_pymongo_snippets.py."""

from __future__ import annotations

from typing import Any

from snippet_harness import DB, seeded, snippet


def everything(coll: Any) -> list[Any]:
    return list(coll.find().sort("_id"))


# --- update, replace, delete ---------------------------------------------------------------------


@snippet
def update_one_set(client: Any, ns: Any) -> Any:
    coll = seeded(client, 3)
    result = coll.update_one({"_id": 1}, {"$set": {"y": "new"}, "$inc": {"x": 10}})
    return result, everything(coll)


@snippet
def update_one_without_a_match(client: Any, ns: Any) -> Any:
    coll = seeded(client, 3)
    return coll.update_one({"_id": 99}, {"$set": {"y": 1}}), coll.update_one(
        {"_id": 1}, {"$set": {"x": 1}}
    )


@snippet
def update_one_upsert(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    result = coll.update_one(
        {"name": "new"}, {"$set": {"x": 5}, "$setOnInsert": {"created": True}}, upsert=True
    )
    return (
        result,
        result.did_upsert if hasattr(result, "did_upsert") else None,
        coll.find_one({"name": "new"}, {"_id": 0}),
    )


@snippet
def update_many_inc(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    return coll.update_many({"tag": "odd"}, {"$inc": {"x": 100}}), everything(coll)


@snippet
def update_many_with_array_filters(client: Any, ns: Any) -> Any:
    coll = client[DB].grades
    coll.insert_many([{"_id": 1, "grades": [95, 80, 100]}, {"_id": 2, "grades": [100, 100, 70]}])
    result = coll.update_many(
        {}, {"$set": {"grades.$[high]": 99}}, array_filters=[{"high": {"$gte": 100}}]
    )
    return result, everything(coll)


@snippet
def update_with_an_aggregation_pipeline(client: Any, ns: Any) -> Any:
    coll = seeded(client, 3)
    result = coll.update_many(
        {}, [{"$set": {"double": {"$multiply": ["$x", 2]}}}, {"$unset": "tag"}]
    )
    return result, everything(coll)


@snippet
def update_array_operators(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 1, "tags": ["a"], "n": {"k": 1}})
    coll.update_one(
        {"_id": 1}, {"$push": {"tags": {"$each": ["b", "c"]}}, "$addToSet": {"set": "x"}}
    )
    coll.update_one(
        {"_id": 1}, {"$pull": {"tags": "a"}, "$rename": {"n": "m"}, "$unset": {"set": ""}}
    )
    coll.update_one({"_id": 1, "tags": "b"}, {"$set": {"tags.$": "B"}})
    return coll.find_one()


def first_clause(exc: Exception) -> str:
    """PyMongo's message; ours goes on to say what was found and what to use instead."""
    return str(exc).split(" (found")[0]


@snippet
def update_without_operators_is_refused(client: Any, ns: Any) -> Any:
    refused = []
    updates: tuple[Any, ...] = ({"x": 1}, {}, [])
    for update in updates:
        try:
            client[DB].things.update_one({}, update)
        except ValueError as exc:
            refused.append(first_clause(exc))
    return refused


@snippet
def replace_with_operators_is_refused(client: Any, ns: Any) -> Any:
    try:
        client[DB].things.replace_one({}, {"$set": {"x": 1}})
    except ValueError as exc:
        return first_clause(exc)
    return "not raised"


@snippet
def replace_one_and_upsert(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    replaced = coll.replace_one({"_id": 1}, {"whole": "new"})
    upserted = coll.replace_one({"_id": 7}, {"made": True}, upsert=True)
    return replaced, upserted, everything(coll)


@snippet
def delete_one_and_delete_many(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    one = coll.delete_one({"tag": "even"})
    many = coll.delete_many({"tag": "odd"})
    none = coll.delete_many({"tag": "none"})
    return one, many, none, everything(coll), coll.delete_many({}).deleted_count


@snippet
def update_type_mismatch_code(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    coll.insert_one({"_id": 1, "name": "text"})
    try:
        coll.update_one({"_id": 1}, {"$inc": {"name": 1}})
    except ns.errors.WriteError as exc:
        return type(exc).__name__, exc.code, exc.details["index"]
    return "not raised"


@snippet
def unknown_query_operator_code(client: Any, ns: Any) -> Any:
    try:
        client[DB].things.find_one({"x": {"$nope": 1}})
    except ns.errors.OperationFailure as exc:
        return type(exc).__name__, exc.code
    return "not raised"


# --- find_one_and_* ------------------------------------------------------------------------------


@snippet
def find_one_and_update_returns_the_document_before(client: Any, ns: Any) -> Any:
    coll = seeded(client, 3)
    return coll.find_one_and_update({"_id": 1}, {"$inc": {"x": 5}}), coll.find_one({"_id": 1})


@snippet
def find_one_and_update_after_with_projection_and_sort(client: Any, ns: Any) -> Any:
    coll = seeded(client, 5)
    return coll.find_one_and_update(
        {"tag": "even"},
        {"$set": {"picked": True}},
        projection={"_id": 0, "x": 1, "picked": 1},
        sort=[("x", ns.DESCENDING)],
        return_document=ns.ReturnDocument.AFTER,
    )


@snippet
def find_one_and_update_upsert(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    before = coll.find_one_and_update({"_id": 9}, {"$set": {"x": 9}}, upsert=True)
    after = coll.find_one_and_update(
        {"_id": 10}, {"$set": {"x": 10}}, upsert=True, return_document=ns.ReturnDocument.AFTER
    )
    return before, after, everything(coll)


@snippet
def find_one_and_replace(client: Any, ns: Any) -> Any:
    coll = seeded(client, 3)
    before = coll.find_one_and_replace({"_id": 2}, {"fresh": 1})
    after = coll.find_one_and_replace(
        {"_id": 2}, {"fresher": 2}, return_document=ns.ReturnDocument.AFTER
    )
    return before, after


@snippet
def find_one_and_delete_with_sort(client: Any, ns: Any) -> Any:
    coll = seeded(client, 4)
    return (
        coll.find_one_and_delete({}, sort=[("x", -1)]),
        coll.find_one_and_delete({"_id": 99}),
        coll.count_documents({}),
    )


@snippet
def return_document_values(client: Any, ns: Any) -> Any:
    return bool(ns.ReturnDocument.BEFORE), bool(ns.ReturnDocument.AFTER)


# --- bulk_write ----------------------------------------------------------------------------------


@snippet
def bulk_write_of_every_model(client: Any, ns: Any) -> Any:
    coll = seeded(client, 6)
    result = coll.bulk_write(
        [
            ns.InsertOne({"_id": 10}),
            ns.UpdateOne({"_id": 1}, {"$set": {"y": 1}}),
            ns.UpdateMany({"tag": "even"}, {"$inc": {"x": 100}}),
            ns.ReplaceOne({"_id": 3}, {"replaced": True}),
            ns.UpdateOne({"_id": 20}, {"$set": {"y": 2}}, upsert=True),
            ns.ReplaceOne({"_id": 21}, {"made": True}, upsert=True),
            ns.DeleteOne({"_id": 5}),
            ns.DeleteMany({"tag": "odd"}),
        ]
    )
    return result, everything(coll)


@snippet
def bulk_write_api_result(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    result = coll.bulk_write(
        [ns.InsertOne({"_id": 5}), ns.UpdateOne({"_id": 6}, {"$set": {"a": 1}}, upsert=True)]
    )
    return result.bulk_api_result


@snippet
def bulk_write_ordered_error_details(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    try:
        coll.bulk_write(
            [ns.InsertOne({"_id": 7}), ns.InsertOne({"_id": 0}), ns.DeleteOne({"_id": 1})]
        )
    except ns.errors.BulkWriteError as exc:
        details = exc.details
        errors = [(e["index"], e["code"], e["op"]) for e in details["writeErrors"]]
        counts = {k: v for k, v in details.items() if k.startswith("n")}
        return errors, counts, details["upserted"], details["writeConcernErrors"], everything(coll)
    return "not raised"


@snippet
def bulk_write_unordered_error_details(client: Any, ns: Any) -> Any:
    coll = seeded(client, 2)
    try:
        coll.bulk_write(
            [ns.InsertOne({"_id": 0}), ns.InsertOne({"_id": 8}), ns.DeleteOne({"_id": 1})],
            ordered=False,
        )
    except ns.errors.BulkWriteError as exc:
        return (
            [(e["index"], e["code"]) for e in exc.details["writeErrors"]],
            exc.details["nInserted"],
            exc.details["nRemoved"],
        )
    return "not raised"


@snippet
def bulk_write_of_nothing(client: Any, ns: Any) -> Any:
    try:
        client[DB].things.bulk_write([])
    except ns.errors.InvalidOperation as exc:
        return str(exc)
    return "not raised"


@snippet
def bulk_write_of_a_plain_dict(client: Any, ns: Any) -> Any:
    client[DB].things.bulk_write([{"insertOne": {"document": {}}}])


@snippet
def models_compare(client: Any, ns: Any) -> Any:
    return ns.InsertOne({"a": 1}) == ns.InsertOne({"a": 1}), ns.DeleteOne(
        {"a": 1}
    ) != ns.DeleteMany({"a": 1})


# --- indexes -------------------------------------------------------------------------------------


@snippet
def create_index_names(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    return (
        coll.create_index("x"),
        coll.create_index([("a", ns.ASCENDING), ("b", ns.DESCENDING)]),
        coll.create_index([("loc", "2dsphere")]),
        coll.create_index("named", name="my_index"),
        coll.create_index([("h", "hashed")]),
    )


@snippet
def create_index_unique_then_duplicate(client: Any, ns: Any) -> Any:
    coll = client[DB].users
    coll.create_index("email", unique=True)
    coll.insert_one({"email": "a@x"})
    try:
        coll.insert_one({"email": "a@x"})
    except ns.errors.DuplicateKeyError as exc:
        return exc.code, exc.details["keyPattern"], exc.details["keyValue"]
    return "not raised"


@snippet
def create_indexes_with_index_models(client: Any, ns: Any) -> Any:
    coll = client[DB].things
    names = coll.create_indexes(
        [
            ns.IndexModel([("a", ns.ASCENDING)], unique=True),
            ns.IndexModel([("b", ns.DESCENDING), ("c", ns.ASCENDING)], name="b_c"),
            ns.IndexModel("ttl", expireAfterSeconds=60),
        ]
    )
    return names, ns.IndexModel("x").document


@snippet
def list_indexes_and_index_information(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    coll.create_index([("x", ns.DESCENDING)], sparse=True)
    # PyMongo's index documents are SONs, ours dicts (both Mappings, equal to the same dict)
    listed = [
        (i["name"], dict(i["key"]), i.get("sparse"), i == dict(i)) for i in coll.list_indexes()
    ]
    return listed, coll.index_information()


@snippet
def drop_index_by_name_and_by_keys(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    coll.create_index("x")
    coll.create_index([("tag", ns.ASCENDING), ("x", ns.DESCENDING)])
    coll.drop_index("x_1")
    coll.drop_index([("tag", ns.ASCENDING), ("x", ns.DESCENDING)])
    return sorted(coll.index_information())


@snippet
def drop_a_missing_index(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    try:
        coll.drop_index("nope_1")
    except ns.errors.OperationFailure as exc:
        return type(exc).__name__, exc.code
    return "not raised"


@snippet
def drop_indexes_keeps_id(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    coll.create_indexes([ns.IndexModel("x"), ns.IndexModel("tag")])
    coll.drop_indexes()
    return list(coll.index_information())


@snippet
def create_index_conflicting_options(client: Any, ns: Any) -> Any:
    coll = seeded(client, 1)
    coll.create_index("x")
    try:
        coll.create_index("x", unique=True)
    except ns.errors.OperationFailure as exc:
        return type(exc).__name__, exc.code
    return "not raised"


@snippet
def create_index_on_a_missing_collection_creates_it(client: Any, ns: Any) -> Any:
    db = client[DB]
    db.fresh.create_index("x")
    return db.list_collection_names(), sorted(db.fresh.index_information())
