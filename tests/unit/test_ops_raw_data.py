"""The ``rawData`` option (crud.md, index-management.md, MongoDB 8.2): put in the command of
every operation that takes it, sent only to servers of maxWireVersion 27 (8.2) or later and
left out for older ones, per attempt (a retry may go to another server); a user's own cursor
command is sent as written."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeVar

import pytest

from mongo_sansio.bson import Int64
from mongo_sansio.errors import NetworkError
from mongo_sansio.flow import (
    GetContext,
    MarkServerUnknown,
    Now,
    OperationContext,
    Random,
    Request,
    RunCommand,
    SelectServer,
    ServerInfo,
    Sleep,
)
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.crud_commands import RAW_DATA_WIRE_VERSION, ArgumentTypeError
from mongo_sansio.ops.database import DatabaseOps
from mongo_sansio.ops.indexes import IndexModel
from mongo_sansio.ops.models import DeleteOne, InsertOne, UpdateOne

T = TypeVar("T")

# One reply that every operation here can read.
REPLY = {
    "n": 1, "nModified": 1, "values": [], "value": None,
    "cursor": {"id": Int64(0), "ns": "db.coll", "firstBatch": []}, "ok": 1.0,
}


def server(wire_version: int, address: str = "p") -> ServerInfo:
    return ServerInfo((address, 27017), wire_version, supports_retryable_writes=True)


def sent(flow: Generator[Request, Any, T], servers: list[ServerInfo],
         failures: int = 0) -> list[Mapping[str, Any]]:
    """Drive ``flow``; each server selection takes the next of ``servers`` (the last one
    repeats), the first ``failures`` commands fail with a network error.  The bodies sent."""
    bodies: list[Mapping[str, Any]] = []
    reply: Any = None
    error: BaseException | None = None
    selections = iter(servers)
    chosen = servers[-1]
    while True:
        try:
            request = flow.throw(error) if error is not None else flow.send(reply)
        except StopIteration:
            return bodies
        error = None
        if isinstance(request, GetContext):
            reply = OperationContext(session=None, retry_reads=True, retry_writes=True)
        elif isinstance(request, SelectServer):
            reply = chosen = next(selections, chosen)
        elif isinstance(request, Now | Random):
            reply = 0.0
        elif isinstance(request, MarkServerUnknown | Sleep):
            reply = None
        else:
            assert isinstance(request, RunCommand), request
            bodies.append(request.body)
            if len(bodies) <= failures:
                error = NetworkError("connection reset")
            else:
                reply = REPLY


COLLECTION = CollectionOps("db", "coll")
DATABASE = DatabaseOps("db")

# Every operation the specifications give the option, with it set.
OPERATIONS: dict[str, Callable[[], Generator[Request, Any, Any]]] = {
    "insertOne": lambda: COLLECTION.insert_one({"_id": 1}, raw_data=True),
    "insertMany": lambda: COLLECTION.insert_many([{"_id": 1}, {"_id": 2}], raw_data=True),
    "updateOne": lambda: COLLECTION.update_one({}, {"$set": {"x": 1}}, raw_data=True),
    "updateMany": lambda: COLLECTION.update_many({}, {"$set": {"x": 1}}, raw_data=True),
    "replaceOne": lambda: COLLECTION.replace_one({}, {"x": 1}, raw_data=True),
    "deleteOne": lambda: COLLECTION.delete_one({}, raw_data=True),
    "deleteMany": lambda: COLLECTION.delete_many({}, raw_data=True),
    "bulkWrite": lambda: COLLECTION.bulk_write(
        [InsertOne({"_id": 1}), UpdateOne({}, {"$set": {"x": 1}}), DeleteOne({})], raw_data=True
    ),
    "find": lambda: COLLECTION.find({}, raw_data=True),
    "findOne": lambda: COLLECTION.find_one({}, raw_data=True),
    "aggregate": lambda: COLLECTION.aggregate([], raw_data=True),
    "databaseAggregate": lambda: DATABASE.aggregate([{"$documents": []}], raw_data=True),
    "countDocuments": lambda: COLLECTION.count_documents({}, raw_data=True),
    "estimatedDocumentCount": lambda: COLLECTION.estimated_document_count(raw_data=True),
    "distinct": lambda: COLLECTION.distinct("x", raw_data=True),
    "findOneAndDelete": lambda: COLLECTION.find_one_and_delete({}, rawData=True),
    "findOneAndReplace": lambda: COLLECTION.find_one_and_replace({}, {"x": 1}, rawData=True),
    "findOneAndUpdate": lambda: COLLECTION.find_one_and_update({}, {"$set": {"x": 1}}, rawData=True),
    "createIndex": lambda: COLLECTION.create_index([("x", 1)], rawData=True),
    "createIndexes": lambda: COLLECTION.create_indexes([IndexModel([("x", 1)])], rawData=True),
    "dropIndex": lambda: COLLECTION.drop_index("x_1", rawData=True),
    "dropIndexes": lambda: COLLECTION.drop_indexes(rawData=True),
    "listIndexes": lambda: COLLECTION.list_indexes(raw_data=True),
    "listCollections": lambda: DATABASE.list_collections(rawData=True),
}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_sent_to_8_2_and_later_only(name: str) -> None:
    for wire_version in (RAW_DATA_WIRE_VERSION, RAW_DATA_WIRE_VERSION + 1):
        bodies = sent(OPERATIONS[name](), [server(wire_version)])
        assert bodies and all(body.get("rawData") is True for body in bodies), bodies
    for wire_version in (21, 25, RAW_DATA_WIRE_VERSION - 1):
        bodies = sent(OPERATIONS[name](), [server(wire_version)])
        assert bodies and all("rawData" not in body for body in bodies), bodies


def test_bulk_write_puts_it_on_every_command() -> None:
    bodies = sent(OPERATIONS["bulkWrite"](), [server(RAW_DATA_WIRE_VERSION)])
    assert [next(iter(body)) for body in bodies] == ["insert", "update", "delete"]


def test_not_given_it_is_never_sent() -> None:
    for flow in (COLLECTION.insert_one({"_id": 1}), COLLECTION.find({}), COLLECTION.list_indexes()):
        assert all("rawData" not in body for body in sent(flow, [server(RAW_DATA_WIRE_VERSION)]))


def test_false_is_sent_as_given() -> None:
    (body,) = sent(COLLECTION.delete_one({}, raw_data=False), [server(RAW_DATA_WIRE_VERSION)])
    assert body["rawData"] is False


@pytest.mark.parametrize("name", ["insertOne", "find", "findOneAndUpdate"])
def test_each_attempt_is_shaped_for_its_own_server(name: str) -> None:
    """A retry after a network error selects again: an 8.0 server then gets no rawData."""
    bodies = sent(OPERATIONS[name](), [server(RAW_DATA_WIRE_VERSION), server(25, "q")], failures=1)
    assert [body.get("rawData") for body in bodies] == [True, None]


def test_a_users_cursor_command_is_sent_as_written() -> None:
    flow = DATABASE.cursor_command({"listCollections": 1, "rawData": True})
    (body,) = sent(flow, [server(25)])
    assert body["rawData"] is True


def test_a_value_that_is_not_a_boolean_is_refused_at_once() -> None:
    with pytest.raises(ArgumentTypeError, match="rawData"):
        COLLECTION.insert_one({"_id": 1}, raw_data=1)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="rawData"):
        COLLECTION.find({}, raw_data="yes")  # type: ignore[arg-type]
