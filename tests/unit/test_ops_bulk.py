"""bulk_write: the write models (PyMongo's constructors and checks), how requests are grouped
into commands (ordered runs, unordered by kind), the commands' options, and how the groups'
replies merge into one BulkWriteResult or BulkWriteError with the caller's indexes."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from flow_script import ABSENT, Step, command, run_flow
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson import decode
from mongo_sansio.errors import (
    BulkWriteError,
    InvalidOperation,
    OperationFailure,
)
from mongo_sansio.flow import RunCommand, SelectServer, ServerInfo
from mongo_sansio.ops.bulk import plan_bulk
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.crud_commands import ArgumentTypeError
from mongo_sansio.ops.models import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
    WriteModel,
)
from mongo_sansio.ops.results import BulkWriteResult
from mongo_sansio.ops.write_concern import WriteConcern

PRIMARY_SERVER = ServerInfo(("p", 27017), 21)


def collection(**options: Any) -> CollectionOps:
    ids = itertools.count(100)
    return CollectionOps("db", "coll", id_factory=lambda: next(ids), **options)


def select_for_write() -> Step:
    def check(request: Any) -> None:
        assert request.for_writes, request

    return Step(SelectServer, reply=PRIMARY_SERVER, check=check)


def statements(step: Step) -> list[dict[str, Any]]:
    """The decoded documents of the RunCommand's one document sequence."""
    assert isinstance(step.seen, RunCommand) and step.seen.sequences is not None
    (documents,) = step.seen.sequences.values()
    return [decode(bytes(document)) for document in documents]


def ok(n: int = 1, **fields: Any) -> dict[str, Any]:
    return {"n": n, **fields, "ok": 1}


# --- the models --------------------------------------------------------------------------------


def test_models_take_pymongos_positional_arguments() -> None:
    update = UpdateOne({"a": 1}, {"$set": {"b": 1}}, True, {"locale": "fr"}, [{"x.y": 1}], "a_1")
    assert update.upsert is True and update.collation == {"locale": "fr"}
    assert update.array_filters == [{"x.y": 1}] and update.hint == "a_1"
    assert ReplaceOne({}, {"x": 1}, False, None, [("a", 1)]).hint == [("a", 1)]
    assert DeleteOne({"a": 1}, {"locale": "en"}, "a_1").hint == "a_1"
    assert UpdateOne({}, {"$set": {"a": 1}}) == UpdateOne({}, {"$set": {"a": 1}})
    other: object = UpdateMany({}, {"$set": {"a": 1}})
    assert UpdateOne({}, {"$set": {"a": 1}}) != other


#: the models without their annotations, to call them with wrong types
LOOSE: dict[str, Any] = {
    "UpdateOne": UpdateOne,
    "UpdateMany": UpdateMany,
    "ReplaceOne": ReplaceOne,
    "DeleteOne": DeleteOne,
    "DeleteMany": DeleteMany,
    "InsertOne": InsertOne,
}


@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("UpdateOne", (5, {"$set": {"a": 1}}), {}),
        ("DeleteMany", ([("a", 1)],), {}),
        ("ReplaceOne", (None, {}), {}),
        ("UpdateOne", ({}, {"$set": {"a": 1}}), {"upsert": 1}),
        ("UpdateMany", ({}, {"$set": {"a": 1}}), {"array_filters": {"x": 1}}),
        ("UpdateOne", ({}, {"$set": {"a": 1}}), {"hint": 5}),
        ("DeleteOne", ({},), {"collation": "fr"}),
        ("InsertOne", ({},), {"namespace": 3}),
    ],
)
def test_models_check_their_options_when_built(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError):
        LOOSE[name](*args, **kwargs)


def test_statements() -> None:
    document: dict[str, Any] = {"x": 1}
    assert InsertOne(document).statement(lambda: 7) == ({"_id": 7, "x": 1}, 7)
    assert document == {"x": 1, "_id": 7}  # as insert_one: the caller's document gets its _id
    assert UpdateMany({"a": 1}, [{"$set": {"b": 1}}], upsert=True).statement(int)[0] == {
        "q": {"a": 1},
        "u": [{"$set": {"b": 1}}],
        "multi": True,
        "upsert": True,
    }
    assert UpdateOne({}, {"$inc": {"n": 1}}, sort={"n": -1}).statement(int)[0] == {
        "q": {},
        "u": {"$inc": {"n": 1}},
        "sort": {"n": -1},
    }
    assert ReplaceOne({"_id": 1}, {"y": 2}, hint={"a": 1}).statement(int)[0] == {
        "q": {"_id": 1},
        "u": {"y": 2},
        "hint": {"a": 1},
    }
    assert DeleteOne({"a": 1}).statement(int)[0] == {"q": {"a": 1}, "limit": 1}
    assert DeleteMany({}).statement(int)[0] == {"q": {}, "limit": 0}


# --- planning ----------------------------------------------------------------------------------

KINDS = {InsertOne: "insert", UpdateOne: "update", ReplaceOne: "update", DeleteOne: "delete"}


def model(kind: type) -> WriteModel:
    if kind is InsertOne:
        return InsertOne({})
    if kind is UpdateOne:
        return UpdateOne({}, {"$set": {"a": 1}})
    if kind is ReplaceOne:
        return ReplaceOne({}, {"a": 1})
    return DeleteOne({})


@given(st.lists(st.sampled_from(list(KINDS)), min_size=1, max_size=12), st.booleans())
def test_groups_cover_every_request_once_in_the_documented_order(
    kinds: list[type], ordered: bool
) -> None:
    requests = [model(kind) for kind in kinds]
    groups = plan_bulk(requests, ordered, itertools.count().__next__)
    assert sorted(i for g in groups for i in g.indexes) == list(range(len(requests)))
    for group in groups:
        assert all(KINDS[kinds[i]] == group.kind for i in group.indexes)
        assert group.indexes == sorted(group.indexes)
    if ordered:
        # consecutive runs: concatenated, the groups give back the caller's order, and no two
        # neighbouring groups have the same kind
        assert [i for g in groups for i in g.indexes] == list(range(len(requests)))
        assert all(a.kind != b.kind for a, b in itertools.pairwise(groups))
    else:
        order = ["insert", "update", "delete"]
        assert [g.kind for g in groups] == [k for k in order if k in {KINDS[t] for t in kinds}]


@pytest.mark.parametrize(
    ("requests", "error"),
    [
        ((InsertOne({}),), ArgumentTypeError),  # a tuple: PyMongo asks for a list
        ({"a": 1}, ArgumentTypeError),
        ([InsertOne({}), {"insertOne": {}}], ArgumentTypeError),
        ([], InvalidOperation),
        ([UpdateOne({}, {"a": 1})], ValueError),  # not an update document
        ([ReplaceOne({}, {"$set": {"a": 1}})], ValueError),
        ([InsertOne(5)], ArgumentTypeError),
    ],
)
def test_bad_requests_raise_before_anything_is_sent(requests: Any, error: type) -> None:
    with pytest.raises(error):
        run_flow(collection().bulk_write(requests))


def test_bad_options_raise_at_once() -> None:
    with pytest.raises(TypeError):
        collection().bulk_write([InsertOne({})], ordered="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        collection().bulk_write([InsertOne({})], let=[1])  # type: ignore[arg-type]


# --- running -----------------------------------------------------------------------------------


def test_ordered_runs_consecutive_kinds_as_one_command_each() -> None:
    requests = [
        InsertOne({"_id": 1}),
        InsertOne({"x": 2}),
        UpdateOne({"_id": 1}, {"$set": {"y": 1}}),
        UpdateMany({"z": 1}, {"$set": {"w": 1}}, upsert=True),
        DeleteOne({"_id": 1}),
        InsertOne({"_id": 3}),
    ]
    inserts = command("insert", ok(2), db="db")
    updates = command("update", ok(3, nModified=1, upserted=[{"index": 1, "_id": "up"}]))
    deletes = command("delete", ok(1))
    last = command("insert", ok(1))
    flow = collection().bulk_write(requests, comment="c", let={"v": 1})
    result = run_flow(flow, select_for_write(), inserts, select_for_write(), updates,
                      select_for_write(), deletes, select_for_write(), last)  # fmt: skip
    assert statements(inserts) == [{"_id": 1}, {"_id": 100, "x": 2}]
    assert statements(updates)[1] == {
        "q": {"z": 1},
        "u": {"$set": {"w": 1}},
        "multi": True,
        "upsert": True,
    }
    assert [inserts.seen.body, updates.seen.body, deletes.seen.body] == [  # type: ignore[union-attr]
        {"insert": "coll", "ordered": True, "comment": "c"},
        {"update": "coll", "ordered": True, "let": {"v": 1}, "comment": "c"},
        {"delete": "coll", "ordered": True, "let": {"v": 1}, "comment": "c"},
    ]
    assert isinstance(result, BulkWriteResult) and result.acknowledged
    assert (result.inserted_count, result.matched_count, result.modified_count) == (3, 2, 1)
    assert (result.deleted_count, result.upserted_count) == (1, 1)
    assert result.upserted_ids == {3: "up"}  # index 1 of the update command = request 3


def test_unordered_groups_by_kind_and_maps_errors_back() -> None:
    requests = [
        DeleteOne({"a": 1}),
        InsertOne({"_id": 1}),
        UpdateOne({"b": 1}, {"$set": {"c": 1}}),
        InsertOne({"_id": 2}),
        DeleteMany({"d": 1}),
    ]
    dup = {"index": 1, "code": 11000, "errmsg": "E11000 dup", "keyValue": {"_id": 2}}
    inserts = command("insert", ok(1, writeErrors=[dup]), body={"ordered": False})
    updates = command("update", ok(1, nModified=1), body={"ordered": False})
    deletes = command("delete", ok(2), body={"ordered": False})
    flow = collection().bulk_write(requests, ordered=False, bypass_document_validation=True)
    with pytest.raises(BulkWriteError) as caught:
        run_flow(flow, select_for_write(), inserts, select_for_write(), updates,
                 select_for_write(), deletes)  # fmt: skip
    assert [len(statements(s)) for s in (inserts, updates, deletes)] == [2, 1, 2]
    assert inserts.seen.body["bypassDocumentValidation"] is True  # type: ignore[union-attr]
    assert updates.seen.body["bypassDocumentValidation"] is True  # type: ignore[union-attr]
    assert "bypassDocumentValidation" not in deletes.seen.body  # type: ignore[union-attr]
    details = caught.value.details
    assert details["writeErrors"] == [{**dup, "index": 3, "op": {"_id": 2}}]
    assert (details["nInserted"], details["nMatched"], details["nModified"]) == (1, 1, 1)
    assert details["nRemoved"] == 2 and details["nUpserted"] == 0


def test_an_ordered_write_stops_at_the_first_write_error() -> None:
    requests = [UpdateOne({}, {"$set": {"a": 1}}), DeleteOne({}), DeleteOne({"x": 1})]
    error = {"index": 0, "code": 2, "errmsg": "bad"}
    updates = command("update", ok(0, nModified=0, writeErrors=[error]))
    with pytest.raises(BulkWriteError) as caught:
        run_flow(collection().bulk_write(requests), select_for_write(), updates)
    assert caught.value.write_errors == [{**error, "op": {"q": {}, "u": {"$set": {"a": 1}}}}]


def test_write_concern_errors_do_not_stop_an_ordered_write_but_raise_at_the_end() -> None:
    concern = {"code": 64, "errmsg": "waiting for replication timed out"}
    coll = collection(write_concern=WriteConcern(w=2, wtimeout_ms=10))
    inserts = command("insert", ok(1, writeConcernError=concern),
                      body={"writeConcern": {"w": 2, "wtimeout": 10}})  # fmt: skip
    deletes = command("delete", ok(1, writeConcernError=concern))
    with pytest.raises(BulkWriteError) as caught:
        run_flow(coll.bulk_write([InsertOne({}), DeleteOne({})]),
                 select_for_write(), inserts, select_for_write(), deletes)  # fmt: skip
    assert caught.value.write_concern_errors == [concern, concern]
    assert caught.value.details["nInserted"] == 1 and caught.value.details["nRemoved"] == 1


def test_unacknowledged_bulk_write_reports_nothing() -> None:
    coll = collection(write_concern=WriteConcern(w=0))
    error = {"index": 0, "code": 11000, "errmsg": "dup"}
    step = command("insert", ok(0, writeErrors=[error]), body={"writeConcern": {"w": 0}})
    result = run_flow(coll.bulk_write([InsertOne({"_id": 1})], ordered=False),
                      select_for_write(), step)  # fmt: skip
    assert result.acknowledged is False and result.bulk_api_result == {}
    for name in ("inserted_count", "matched_count", "modified_count", "deleted_count",
                 "upserted_count", "upserted_ids"):  # fmt: skip
        with pytest.raises(InvalidOperation):
            getattr(result, name)


def test_insert_only_bulk_has_no_let() -> None:
    step = command("insert", ok(1), body={"let": ABSENT})
    run_flow(collection().bulk_write([InsertOne({})], let={"v": 1}), select_for_write(), step)


def test_bulk_write_result_reads_pymongos_document() -> None:
    document = {
        "writeErrors": [],
        "writeConcernErrors": [],
        "nInserted": 2,
        "nUpserted": 1,
        "nMatched": 4,
        "nModified": 3,
        "nRemoved": 5,
        "upserted": [{"index": 7, "_id": "u"}],
    }
    result = BulkWriteResult(document)
    assert result.bulk_api_result is document
    assert (result.inserted_count, result.upserted_count, result.matched_count) == (2, 1, 4)
    assert (result.modified_count, result.deleted_count) == (3, 5)
    assert result.upserted_ids == {7: "u"}


def test_an_error_that_ends_the_bulk_write_carries_what_was_acknowledged() -> None:
    # the CRUD spec's optional BulkWriteException.writeResult: a command error (not a write
    # error) raised as it is, with partial_result the result of the groups before it
    requests = [InsertOne({"_id": 1}), InsertOne({"_id": 2}), DeleteOne({"_id": 1}), InsertOne({})]
    inserts = command("insert", ok(2))
    failure = OperationFailure("bad value", 2, {"ok": 0, "code": 2, "errmsg": "bad value"})
    deletes = command("delete", error=failure)
    with pytest.raises(OperationFailure) as caught:
        run_flow(collection().bulk_write(requests), select_for_write(), inserts,
                 select_for_write(), deletes)  # fmt: skip
    assert caught.value is failure and not isinstance(caught.value, BulkWriteError)
    partial = caught.value.partial_result
    assert isinstance(partial, BulkWriteResult)
    assert (partial.inserted_count, partial.deleted_count, partial.upserted_count) == (2, 0, 0)


def test_an_error_before_anything_was_acknowledged_carries_an_empty_result() -> None:
    failure = OperationFailure("bad value", 2, {"ok": 0, "code": 2, "errmsg": "bad value"})
    with pytest.raises(OperationFailure) as caught:
        run_flow(collection().bulk_write([InsertOne({"_id": 1})]), select_for_write(),
                 command("insert", error=failure))  # fmt: skip
    partial = caught.value.partial_result
    assert isinstance(partial, BulkWriteResult) and partial.inserted_count == 0
