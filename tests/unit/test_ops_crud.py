"""The CRUD flows: the commands they send (bodies, key order, document sequences), the results
they read from scripted replies, their typed errors, write batching, argument validation, and a
few end-to-end runs against the simulated server's pure side."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import pytest
from flow_script import ABSENT, Step, command, cursor_reply, error_reply, mark_unknown, run_flow
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_wire_client import Client, make_cluster

from mongo_sansio.bson import Int64, ObjectId, RawDocument, decode, encode
from mongo_sansio.cursors.cursor import Cursor
from mongo_sansio.errors import (
    ConfigurationError,
    DocumentTooLarge,
    DuplicateKeyError,
    LocalProtocolError,
    NetworkError,
    NotPrimaryError,
    ServerError,
    WriteConcernError,
    WriteError,
)
from mongo_sansio.flow import (
    GetContext,
    MarkServerUnknown,
    OperationContext,
    Request,
    RunCommand,
    SelectServer,
    ServerInfo,
)
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.crud import BODY_RESERVE
from mongo_sansio.ops.crud_commands import (
    ArgumentTypeError,
    ArgumentValueError,
    CursorType,
    update_statement,
)
from mongo_sansio.ops.database import DatabaseOps, list_database_names
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.ops.write_errors import BulkWriteError
from mongo_sansio.selection.read_preference import Mode, ReadPreference
from mongo_sansio.wire import encode_op_msg

T = TypeVar("T")

PRIMARY_SERVER = ServerInfo(("p", 27017), 21)
SECONDARY_SERVER = ServerInfo(("s", 27017), 21, is_writable=False)
SECONDARY_PREFERRED = ReadPreference(mode=Mode.SECONDARY_PREFERRED)
UNACKNOWLEDGED = WriteConcern(w=0)


def collection(**options: Any) -> CollectionOps:
    ids = itertools.count(1)
    return CollectionOps("db", "coll", id_factory=lambda: next(ids), **options)


def database(**options: Any) -> DatabaseOps:
    return DatabaseOps("db", **options)


def select_for_write(server: ServerInfo = PRIMARY_SERVER) -> Step:
    def check(request: Any) -> None:
        assert request.for_writes, request

    return Step(SelectServer, reply=server, check=check)


def select_for_read(
    server: ServerInfo = PRIMARY_SERVER, read_preference: ReadPreference | None = None
) -> Step:
    def check(request: Any) -> None:
        assert not request.for_writes, request

    return Step(SelectServer, read_preference=read_preference, reply=server, check=check)


def sent(step: Step) -> RunCommand:
    assert isinstance(step.seen, RunCommand)
    return step.seen


def sequence(step: Step, identifier: str) -> list[dict[str, Any]]:
    """The decoded documents of a RunCommand's document sequence."""
    sequences = sent(step).sequences
    assert sequences is not None and list(sequences) == [identifier]
    return [decode(bytes(document)) for document in sequences[identifier]]


# --- insert_one ------------------------------------------------------------------------------


def test_insert_one_adds_an_id_first_and_to_the_callers_document() -> None:
    document = {"x": 1}
    step = command("insert", {"n": 1, "ok": 1}, db="db")
    result = run_flow(collection().insert_one(document), select_for_write(), step)
    assert result.inserted_id == 1 and result.acknowledged
    assert document == {"x": 1, "_id": 1}  # PyMongo's behaviour: the caller's dict gets _id
    assert sent(step).body == {"insert": "coll", "ordered": True}
    assert list(sequence(step, "documents")[0]) == ["_id", "x"]  # _id first on the wire


@pytest.mark.parametrize("keys", [3, 1024, 1025, 5000])
def test_insert_many_documents_get_their_id_first_whatever_their_size(keys: int) -> None:
    # over 1024 keys the document is encoded ahead, its items read with _id first
    documents = [{f"k{i}": i for i in range(keys)} for _ in range(2)]
    step = command("insert", {"n": 2, "ok": 1}, db="db")
    result = run_flow(collection().insert_many(documents), select_for_write(), step)
    sent_documents = sequence(step, "documents")
    assert [d["_id"] for d in documents] == [1, 2] == result.inserted_ids
    for original, on_the_wire in zip(documents, sent_documents, strict=True):
        assert list(on_the_wire) == ["_id", *(f"k{i}" for i in range(keys))]
        assert on_the_wire == original


def test_insert_one_keeps_a_given_id_and_options() -> None:
    coll = collection(write_concern=WriteConcern(w="majority", wtimeout_ms=100))
    step = command("insert", {"n": 1, "ok": 1})
    flow = coll.insert_one({"x": 1, "_id": "mine"}, bypass_document_validation=True, comment="c")
    assert run_flow(flow, select_for_write(), step).inserted_id == "mine"
    body = sent(step).body
    assert list(body) == [
        "insert",
        "ordered",
        "bypassDocumentValidation",
        "comment",
        "writeConcern",
    ]
    assert body["writeConcern"] == {"w": "majority", "wtimeout": 100}
    assert sequence(step, "documents") == [{"x": 1, "_id": "mine"}]


def test_insert_one_of_a_raw_document_without_id() -> None:
    raw = RawDocument(encode({"x": 1}))
    step = command("insert", {"n": 1, "ok": 1})
    assert run_flow(collection().insert_one(raw), select_for_write(), step).inserted_id is None
    assert sequence(step, "documents") == [{"x": 1}]


def test_insert_one_duplicate_key() -> None:
    write_error = {
        "index": 0,
        "code": 11000,
        "errmsg": "E11000 duplicate key error",
        "keyPattern": {"_id": 1},
        "keyValue": {"_id": 5},
    }
    reply = {"n": 0, "writeErrors": [write_error], "ok": 1}
    with pytest.raises(DuplicateKeyError) as caught:
        run_flow(collection().insert_one({"_id": 5}), select_for_write(), command("insert", reply))
    assert caught.value.code == 11000
    assert caught.value.details["keyValue"] == {"_id": 5}
    assert caught.value.details["keyPattern"] == {"_id": 1}


def test_insert_one_other_write_error() -> None:
    reply = {"n": 0, "writeErrors": [{"index": 0, "code": 121, "errmsg": "invalid"}], "ok": 1}
    with pytest.raises(WriteError) as caught:
        run_flow(collection().insert_one({}), select_for_write(), command("insert", reply))
    assert type(caught.value) is WriteError and caught.value.code == 121


def test_insert_one_write_concern_error() -> None:
    reply = {"n": 1, "writeConcernError": {"code": 64, "errmsg": "timed out"}, "ok": 1}
    with pytest.raises(WriteConcernError) as caught:
        run_flow(collection().insert_one({}), select_for_write(), command("insert", reply))
    assert caught.value.code == 64


def test_state_change_write_concern_error_marks_the_server_unknown() -> None:
    reply = {"n": 1, "writeConcernError": {"code": 189, "errmsg": "stepped down"}, "ok": 1}
    marked = Step(MarkServerUnknown, address=PRIMARY_SERVER.address)
    with pytest.raises(WriteConcernError):
        run_flow(collection().insert_one({}), select_for_write(), command("insert", reply), marked)


def test_ok_0_and_network_errors_propagate_typed() -> None:
    with pytest.raises(NotPrimaryError):
        run_flow(
            collection().insert_one({}),
            select_for_write(),
            command("insert", error_reply(10107, name="NotWritablePrimary")),
            mark_unknown(PRIMARY_SERVER.address),
        )
    with pytest.raises(NetworkError):
        run_flow(
            collection().insert_one({}),
            select_for_write(),
            command("insert", error=NetworkError("reset")),
            mark_unknown(PRIMARY_SERVER.address),
        )


def test_unacknowledged_insert_waits_but_reports_nothing() -> None:
    coll = collection(write_concern=UNACKNOWLEDGED)
    reply = {"n": 0, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}], "ok": 1}
    step = command("insert", reply, body={"writeConcern": {"w": 0}})
    result = run_flow(coll.insert_one({"_id": 1}), select_for_write(), step)
    assert result.acknowledged is False and result.inserted_id == 1


def test_a_document_over_max_bson_object_size_is_refused_before_sending() -> None:
    server = ServerInfo(("p", 27017), 21, max_bson_object_size=100)
    with pytest.raises(DocumentTooLarge) as caught:
        run_flow(collection().insert_one({"s": "x" * 200}), select_for_write(server))
    assert caught.value.index == 0 and caught.value.limit == 100


@pytest.mark.parametrize("bad", [[("x", 1)], "doc", None, 5])
def test_insert_one_needs_a_document(bad: Any) -> None:
    with pytest.raises(ArgumentTypeError, match="document"):
        collection().insert_one(bad)


# --- insert_many and batching ----------------------------------------------------------------


def test_insert_many_splits_by_max_write_batch_size() -> None:
    server = ServerInfo(("p", 27017), 21, max_write_batch_size=2)
    steps = [command("insert", {"n": n, "ok": 1}) for n in (2, 2, 1)]
    flow = collection().insert_many([{"i": i} for i in range(5)], ordered=False)
    result = run_flow(flow, select_for_write(server), *steps)
    assert result.inserted_ids == [1, 2, 3, 4, 5]
    assert [[d["i"] for d in sequence(s, "documents")] for s in steps] == [[0, 1], [2, 3], [4]]
    assert all(sent(s).body == {"insert": "coll", "ordered": False} for s in steps)


def test_insert_many_splits_by_message_size() -> None:
    documents = [{"_id": i, "s": "x" * 100} for i in range(6)]
    size = len(encode(documents[0]))
    server = ServerInfo(("p", 27017), 21, max_message_size_bytes=BODY_RESERVE + 100 + 2 * size)
    steps = [command("insert", {"n": 2, "ok": 1}) for _ in range(3)]
    run_flow(collection().insert_many(documents), select_for_write(server), *steps)
    assert [len(sequence(s, "documents")) for s in steps] == [2, 2, 2]


def test_insert_many_ordered_stops_at_the_first_failing_batch() -> None:
    server = ServerInfo(("p", 27017), 21, max_write_batch_size=2)
    failing = {"n": 1, "writeErrors": [{"index": 1, "code": 11000, "errmsg": "dup"}], "ok": 1}
    steps = [command("insert", {"n": 2, "ok": 1}), command("insert", failing)]
    with pytest.raises(BulkWriteError) as caught:
        run_flow(
            collection().insert_many([{"i": i} for i in range(6)]), select_for_write(server), *steps
        )
    details = caught.value.details
    assert [e["index"] for e in details["writeErrors"]] == [3]
    assert details["nInserted"] == 3 and details["writeConcernErrors"] == []


@pytest.mark.parametrize("bad", [[], {}, "abc", [{"a": 1}, 2], 7])
def test_insert_many_needs_a_non_empty_list_of_documents(bad: Any) -> None:
    with pytest.raises(ArgumentTypeError):
        collection().insert_many(bad)


class FakeInsertServer:
    """Answers insert batches: every document inserted except the one at ``fail_at`` (an index
    in the caller's list), which gets a duplicate key write error."""

    def __init__(self, server: ServerInfo, fail_at: int | None) -> None:
        self.server = server
        self.fail_at = fail_at
        self.batches: list[RunCommand] = []
        self.seen = 0

    def answer(self, request: Request) -> Any:
        if isinstance(request, SelectServer):
            return self.server
        assert isinstance(request, RunCommand) and request.sequences is not None
        self.batches.append(request)
        count = len(request.sequences["documents"])
        start, self.seen = self.seen, self.seen + count
        if self.fail_at is not None and start <= self.fail_at < start + count:
            error = {"index": self.fail_at - start, "code": 11000, "errmsg": "dup"}
            return {"n": count - 1, "writeErrors": [error], "ok": 1}
        return {"n": count, "ok": 1}


def drive(flow: Generator[Request, Any, T], answer: Callable[[Request], Any]) -> T:
    reply: Any = None
    while True:
        try:
            request = flow.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        if isinstance(request, GetContext):
            reply = OperationContext(session=None, retry_reads=False, retry_writes=False)
            continue
        reply = answer(request)


def batch_documents(request: RunCommand) -> list[Any]:
    assert request.sequences is not None
    return list(request.sequences["documents"])


def message_size(request: RunCommand) -> int:
    body = {**request.body, "$db": request.db}
    return len(encode_op_msg(body, request_id=1, sequences=request.sequences))


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 200), min_size=1, max_size=25),
    max_count=st.integers(1, 6),
    room=st.integers(300, 1500),
    fail=st.none() | st.integers(0, 24),
    ordered=st.booleans(),
)
def test_insert_many_batches_respect_every_limit_and_map_indexes(
    sizes: list[int], max_count: int, room: int, fail: int | None, ordered: bool
) -> None:
    documents = [{"_id": i, "s": "x" * size} for i, size in enumerate(sizes)]
    fail_at = None if fail is None or fail >= len(documents) else fail
    limit = BODY_RESERVE + 100 + room
    server = ServerInfo(
        ("p", 27017), 21, max_message_size_bytes=limit, max_write_batch_size=max_count
    )
    fake = FakeInsertServer(server, fail_at)
    flow = collection().insert_many(documents, ordered=ordered)
    if fail_at is None:
        assert drive(flow, fake.answer).inserted_ids == list(range(len(documents)))
    else:
        with pytest.raises(BulkWriteError) as caught:
            drive(flow, fake.answer)
        assert [e["index"] for e in caught.value.details["writeErrors"]] == [fail_at]
    encoded = [batch_documents(request) for request in fake.batches]
    batches = [[decode(bytes(document)) for document in batch] for batch in encoded]
    flat = [document for batch in batches for document in batch]
    if fail_at is None or not ordered:
        assert flat == documents  # every document, in order
    else:
        assert flat == documents[: len(flat)]
        assert len(flat) - len(batches[-1]) <= fail_at < len(flat)  # stopped after its batch
    for request, batch in zip(fake.batches, encoded, strict=True):
        assert len(batch) <= max_count
        assert message_size(request) <= limit - BODY_RESERVE
    # every batch but the last is as full as the limits allow
    for request, batch, following in zip(fake.batches, encoded, encoded[1:], strict=False):
        if len(batch) < max_count:
            grown = RunCommand(
                server, request.db, request.body, {"documents": [*batch, following[0]]}
            )
            assert message_size(grown) > limit - BODY_RESERVE


# --- update / replace / delete ---------------------------------------------------------------


def test_update_one_command_and_result() -> None:
    step = command("update", {"n": 1, "nModified": 1, "ok": 1})
    flow = collection().update_one(
        {"a": 1},
        {"$set": {"b": 2}},
        upsert=True,
        array_filters=[{"e.x": 1}],
        collation={"locale": "fr"},
        hint=[("a", 1)],
        let={"v": 1},
        comment="why",
        sort={"a": -1},
        bypass_document_validation=True,
    )
    result = run_flow(flow, select_for_write(), step)
    assert (result.matched_count, result.modified_count, result.upserted_id) == (1, 1, None)
    body = sent(step).body
    assert list(body) == ["update", "ordered", "let", "bypassDocumentValidation", "comment"]
    assert body["let"] == {"v": 1}
    assert sequence(step, "updates") == [
        {
            "q": {"a": 1},
            "u": {"$set": {"b": 2}},
            "upsert": True,
            "arrayFilters": [{"e.x": 1}],
            "collation": {"locale": "fr"},
            "hint": {"a": 1},
            "sort": {"a": -1},
        }
    ]


def test_update_many_with_a_pipeline() -> None:
    step = command("update", {"n": 3, "nModified": 2, "ok": 1})
    result = run_flow(collection().update_many({}, [{"$set": {"a": 1}}]), select_for_write(), step)
    assert result.matched_count == 3 and result.modified_count == 2
    assert sequence(step, "updates") == [{"q": {}, "u": [{"$set": {"a": 1}}], "multi": True}]


def test_replace_one_upserts() -> None:
    reply = {"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 42}], "ok": 1}
    step = command("update", reply)
    result = run_flow(
        collection().replace_one({"a": 1}, {"a": 2}, upsert=True), select_for_write(), step
    )
    assert result.upserted_id == 42 and result.matched_count == 0
    assert sequence(step, "updates") == [{"q": {"a": 1}, "u": {"a": 2}, "upsert": True}]


def test_update_write_error_is_typed() -> None:
    reply = {
        "n": 0,
        "nModified": 0,
        "writeErrors": [{"index": 0, "code": 11000, "errmsg": "d"}],
        "ok": 1,
    }
    with pytest.raises(DuplicateKeyError):
        run_flow(
            collection().update_one({}, {"$set": {"a": 1}}),
            select_for_write(),
            command("update", reply),
        )


def test_unacknowledged_update_and_delete() -> None:
    coll = collection(write_concern=UNACKNOWLEDGED)
    result = run_flow(
        coll.update_one({}, {"$set": {"a": 1}}), select_for_write(), command("update")
    )
    assert result.acknowledged is False
    deleted = run_flow(coll.delete_many({}), select_for_write(), command("delete"))
    assert deleted.acknowledged is False


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"a": 1}, r"^update only works with \$ operators"),
        ({"$set": {"a": 1}, "b": 2}, r"^update only works with \$ operators"),
        ({}, "^update cannot be empty$"),
        ([], "^update cannot be empty$"),
    ],
)
def test_update_needs_operators_or_a_pipeline(update: Any, message: str) -> None:
    with pytest.raises(ArgumentValueError, match=message):
        collection().update_one({}, update)
    with pytest.raises(ValueError, match=message):
        collection().update_many({}, update)


def test_update_argument_types() -> None:
    with pytest.raises(ArgumentTypeError, match="update"):
        collection().update_one({}, "set a")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match=r"update\[0\]"):
        collection().update_one({}, [1])  # type: ignore[list-item]
    with pytest.raises(ArgumentTypeError, match="filter"):
        collection().update_one("a", {"$set": {"a": 1}})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="upsert"):
        collection().update_one({}, {"$set": {"a": 1}}, upsert="yes")  # type: ignore[arg-type]


def test_replacement_must_not_use_operators() -> None:
    with pytest.raises(ArgumentValueError, match=r"^replacement can not include \$ operators"):
        collection().replace_one({}, {"$set": {"a": 1}})
    with pytest.raises(ArgumentTypeError, match="replacement"):
        collection().replace_one({}, [{"$set": {"a": 1}}])  # type: ignore[arg-type]


def test_delete_one_and_many() -> None:
    one = command("delete", {"n": 1, "ok": 1})
    result = run_flow(
        collection().delete_one({"a": 1}, collation={"locale": "en"}, hint="a_1", let={"x": 1}),
        select_for_write(),
        one,
    )
    assert result.deleted_count == 1
    assert list(sent(one).body) == ["delete", "ordered", "let"]
    assert sequence(one, "deletes") == [
        {"q": {"a": 1}, "limit": 1, "collation": {"locale": "en"}, "hint": "a_1"}
    ]
    many = command("delete", {"n": 7, "ok": 1})
    assert run_flow(collection().delete_many({}), select_for_write(), many).deleted_count == 7
    assert sequence(many, "deletes") == [{"q": {}, "limit": 0}]


def test_unacknowledged_delete_with_hint_needs_4_4() -> None:
    coll = collection(write_concern=UNACKNOWLEDGED)
    old = ServerInfo(("p", 27017), 8)
    with pytest.raises(LocalProtocolError, match="hint"):
        run_flow(coll.delete_one({}, hint="a_1"), select_for_write(old))
    run_flow(coll.delete_one({}, hint="a_1"), select_for_write(), command("delete"))


def test_writes_select_a_writable_server_whatever_the_read_preference() -> None:
    coll = collection(read_preference=SECONDARY_PREFERRED)
    step = command("delete", {"n": 0, "ok": 1}, body={"$readPreference": ABSENT})
    run_flow(coll.delete_one({}), select_for_write(), step)


# --- find ------------------------------------------------------------------------------------


def test_find_body_with_every_option_in_order() -> None:
    step = command("find", cursor_reply([{"_id": 1}], cursor_id=9, ns="db.coll"), db="db")
    coll = collection(read_concern=ReadConcern(level="majority"))
    flow = coll.find(
        {"a": 1},
        ["a", "b"],
        sort=[("a", 1), ("b", -1)],
        skip=2,
        limit=10,
        batch_size=3,
        hint={"a": 1},
        max_time_ms=500,
        collation={"locale": "en"},
        comment="c",
        allow_disk_use=True,
        let={"v": 1},
        cursor_type=CursorType.TAILABLE_AWAIT,
        max_await_time_ms=50,
        no_cursor_timeout=True,
        allow_partial_results=True,
        return_key=False,
        show_record_id=True,
        min={"a": 0},
        max={"a": 9},
    )
    cursor = run_flow(flow, select_for_read(), step)
    body = sent(step).body
    assert list(body) == [
        "find", "filter", "sort", "projection", "hint", "skip", "limit", "batchSize", "comment",
        "maxTimeMS", "readConcern", "max", "min", "returnKey", "showRecordId", "tailable",
        "noCursorTimeout", "awaitData", "allowPartialResults", "collation", "allowDiskUse", "let",
    ]  # fmt: skip
    assert body["sort"] == {"a": 1, "b": -1} and body["projection"] == {"a": 1, "b": 1}
    assert body["readConcern"] == {"level": "majority"} and body["batchSize"] == 3
    assert isinstance(cursor, Cursor) and cursor.cursor_id == 9
    assert cursor.batch_size == 3 and cursor.limit == 10 and cursor.max_await_time_ms == 50
    assert cursor.next_buffered() == {"_id": 1}


def test_find_defaults_send_only_filter() -> None:
    step = command("find", cursor_reply([]))
    cursor = run_flow(collection().find(), select_for_read(), step)
    assert sent(step).body == {"find": "coll", "filter": {}}
    assert cursor.exhausted


def test_find_negative_limit_is_a_single_batch() -> None:
    step = command("find", cursor_reply([{"a": 1}]))
    cursor = run_flow(collection().find({}, limit=-3, batch_size=10), select_for_read(), step)
    assert sent(step).body == {"find": "coll", "filter": {}, "limit": 3, "singleBatch": True}
    assert cursor.single_batch and cursor.limit == 3


def test_find_batch_size_equal_to_limit_is_sent_plus_one() -> None:
    step = command("find", cursor_reply([]))
    run_flow(collection().find({}, limit=4, batch_size=4), select_for_read(), step)
    assert sent(step).body == {"find": "coll", "filter": {}, "limit": 4, "batchSize": 5}


@pytest.mark.parametrize(
    ("read_preference", "server", "expected"),
    [
        (None, PRIMARY_SERVER, ABSENT),
        (None, SECONDARY_SERVER, {"mode": "primaryPreferred"}),  # direct connection
        (SECONDARY_PREFERRED, SECONDARY_SERVER, {"mode": "secondaryPreferred"}),
        (SECONDARY_PREFERRED, PRIMARY_SERVER, {"mode": "secondaryPreferred"}),
        (
            ReadPreference(mode="secondary", tag_sets=[{"dc": "ny"}], max_staleness_seconds=120),
            SECONDARY_SERVER,
            {"mode": "secondary", "tags": [{"dc": "ny"}], "maxStalenessSeconds": 120},
        ),
    ],
)
def test_find_read_preference(
    read_preference: ReadPreference | None, server: ServerInfo, expected: Any
) -> None:
    step = command("find", cursor_reply([]), body={"$readPreference": expected})
    run_flow(collection().find({}, read_preference=read_preference), select_for_read(server), step)


def test_collection_read_preference_is_used_for_reads() -> None:
    coll = collection(read_preference=SECONDARY_PREFERRED)
    step = command(
        "count", {"n": 3, "ok": 1}, body={"$readPreference": {"mode": "secondaryPreferred"}}
    )
    assert (
        run_flow(
            coll.estimated_document_count(),
            select_for_read(SECONDARY_SERVER, SECONDARY_PREFERRED),
            step,
        )
        == 3
    )


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"skip": -1}, ConfigurationError),
        ({"limit": "1"}, ArgumentTypeError),
        ({"batch_size": -1}, ConfigurationError),
        ({"sort": [("a", 2)]}, ConfigurationError),
        ({"sort": [("a",)]}, ArgumentTypeError),
        ({"sort": 5}, ArgumentTypeError),
        ({"projection": 5}, ArgumentTypeError),
        ({"max_time_ms": -5}, ConfigurationError),
        ({"collation": "fr"}, ArgumentTypeError),
        ({"cursor_type": 2}, ArgumentTypeError),
        ({"allow_disk_use": "yes"}, ArgumentTypeError),
        ({"filter": [1]}, ArgumentTypeError),
    ],
)
def test_find_validates_arguments(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        collection().find(**options)


def test_find_one_is_a_single_batch_of_one() -> None:
    step = command("find", cursor_reply([{"_id": 1}]))
    document = run_flow(
        collection().find_one({"a": 1}, sort={"a": 1}, skip=2), select_for_read(), step
    )
    assert document == {"_id": 1}
    assert sent(step).body == {
        "find": "coll", "filter": {"a": 1}, "sort": {"a": 1}, "skip": 2, "limit": 1,
        "singleBatch": True,
    }  # fmt: skip


def test_find_one_by_id_and_none_and_closes_a_live_cursor() -> None:
    oid = ObjectId()
    find = command("find", cursor_reply([], cursor_id=77), body={"filter": {"_id": oid}})
    kill = command("killCursors", {"ok": 1}, body={"killCursors": "coll", "cursors": [Int64(77)]})
    assert run_flow(collection().find_one(oid), select_for_read(), find, kill) is None
    with pytest.raises(ConfigurationError):
        collection().find_one({}, limit=2)


# --- aggregate and counts --------------------------------------------------------------------


def test_aggregate_body_and_cursor() -> None:
    step = command("aggregate", cursor_reply([{"n": 1}], cursor_id=5))
    flow = collection(read_concern=ReadConcern(level="local")).aggregate(
        [{"$match": {}}],
        batch_size=2,
        collation={"locale": "en"},
        hint="a_1",
        comment="c",
        let={"v": 1},
        allow_disk_use=False,
        max_time_ms=9,
    )
    cursor = run_flow(flow, select_for_read(), step)
    body = sent(step).body
    assert list(body) == [
        "aggregate", "pipeline", "cursor", "allowDiskUse", "maxTimeMS", "readConcern",
        "collation", "hint", "comment", "let",
    ]  # fmt: skip
    assert body["cursor"] == {"batchSize": 2} and body["pipeline"] == [{"$match": {}}]
    assert cursor.batch_size == 2 and cursor.comment == "c"


@pytest.mark.parametrize("stage", [{"$out": "other"}, {"$merge": {"into": "other"}}])
def test_aggregate_with_a_write_stage(stage: dict[str, Any]) -> None:
    coll = collection(write_concern=WriteConcern(w=1), read_preference=SECONDARY_PREFERRED)
    step = command(
        "aggregate",
        cursor_reply([]),
        body={
            "cursor": {},
            "writeConcern": {"w": 1},
            "$readPreference": {"mode": "secondaryPreferred"},
        },
    )
    run_flow(coll.aggregate([{"$match": {}}, stage], batch_size=0), select_for_write(), step)
    old = ServerInfo(("p", 27017), 12)  # before 5.0 the read preference is not sent
    step = command("aggregate", cursor_reply([]), body={"$readPreference": ABSENT})
    run_flow(coll.aggregate([stage]), select_for_write(old), step)


def test_aggregate_without_write_stage_carries_no_write_concern() -> None:
    coll = collection(write_concern=WriteConcern(w=1))
    step = command("aggregate", cursor_reply([]), body={"writeConcern": ABSENT, "cursor": {}})
    run_flow(coll.aggregate([{"$match": {}}]), select_for_read(), step)
    with pytest.raises(ArgumentTypeError, match="pipeline"):
        coll.aggregate({"$match": {}})  # type: ignore[arg-type]


def test_database_aggregate() -> None:
    step = command(
        "aggregate", cursor_reply([{"x": 1}], cursor_id=3, ns="db.$cmd.aggregate"), db="db"
    )
    cursor = run_flow(database().aggregate([{"$currentOp": {}}]), select_for_read(), step)
    assert sent(step).body == {"aggregate": 1, "pipeline": [{"$currentOp": {}}], "cursor": {}}
    assert cursor.namespace.coll == "$cmd.aggregate"


def test_count_documents() -> None:
    step = command("aggregate", cursor_reply([{"_id": 1, "n": 4}]))
    flow = collection().count_documents(
        {"a": 1}, skip=1, limit=5, hint="a_1", comment="c", max_time_ms=7
    )
    assert run_flow(flow, select_for_read(), step) == 4
    body = sent(step).body
    assert body["pipeline"] == [
        {"$match": {"a": 1}}, {"$skip": 1}, {"$limit": 5}, {"$group": {"_id": 1, "n": {"$sum": 1}}},
    ]  # fmt: skip
    assert (body["hint"], body["comment"], body["maxTimeMS"], body["cursor"]) == ("a_1", "c", 7, {})


def test_count_documents_of_nothing_is_zero() -> None:
    step = command("aggregate", cursor_reply([]))
    assert run_flow(collection().count_documents({}), select_for_read(), step) == 0
    assert sent(step).body["pipeline"] == [{"$match": {}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]


def test_estimated_document_count() -> None:
    step = command("count", {"n": 12, "ok": 1})
    assert (
        run_flow(
            collection().estimated_document_count(max_time_ms=5, comment="c"),
            select_for_read(),
            step,
        )
        == 12
    )
    assert sent(step).body == {"count": "coll", "maxTimeMS": 5, "comment": "c"}
    missing = command("count", error_reply(26, name="NamespaceNotFound"))
    assert run_flow(collection().estimated_document_count(), select_for_read(), missing) == 0


def test_distinct() -> None:
    step = command("distinct", {"values": [1, 2], "ok": 1})
    flow = collection(read_concern=ReadConcern(level="majority")).distinct(
        "a", {"b": 1}, collation={"locale": "en"}, comment="c", max_time_ms=3, hint="b_1"
    )
    assert run_flow(flow, select_for_read(), step) == [1, 2]
    assert list(sent(step).body) == [
        "distinct", "key", "query", "readConcern", "collation", "comment", "maxTimeMS", "hint",
    ]  # fmt: skip
    with pytest.raises(ServerError):  # ok: 0
        run_flow(collection().distinct("a"), select_for_read(), command("distinct", {"ok": 0}))
    with pytest.raises(ArgumentTypeError):
        collection().distinct(1)  # type: ignore[arg-type]


def test_malformed_read_replies_are_protocol_errors() -> None:
    from mongo_sansio.errors import RemoteProtocolError

    with pytest.raises(RemoteProtocolError):
        run_flow(
            collection().distinct("a"),
            select_for_read(),
            command("distinct", {"values": 3, "ok": 1}),
        )
    with pytest.raises(RemoteProtocolError):
        run_flow(
            collection().estimated_document_count(),
            select_for_read(),
            command("count", {"n": "x", "ok": 1}),
        )
    with pytest.raises(RemoteProtocolError):
        run_flow(
            collection().count_documents({}),
            select_for_read(),
            command("aggregate", cursor_reply([{"n": []}])),
        )
    with pytest.raises(RemoteProtocolError):
        run_flow(collection().find(), select_for_read(), command("find", {"cursor": 1, "ok": 1}))


# --- drop, database commands, listing --------------------------------------------------------


def test_drop_ignores_namespace_not_found_only() -> None:
    coll = collection(write_concern=WriteConcern(w="majority"))
    step = command(
        "drop", {"ok": 1}, body={"drop": "coll", "comment": "c", "writeConcern": {"w": "majority"}}
    )
    run_flow(coll.drop(comment="c"), select_for_write(), step)
    run_flow(
        coll.drop(), select_for_write(), command("drop", error_reply(26, name="NamespaceNotFound"))
    )
    with pytest.raises(ServerError) as caught:
        run_flow(
            coll.drop(), select_for_write(), command("drop", error_reply(13, name="Unauthorized"))
        )
    assert caught.value.code == 13


def test_database_command_body_first_then_read_preference() -> None:
    step = command("count", {"n": 1, "ok": 1}, db="db")
    flow = database().command("count", "coll", query={"a": 1}, read_preference=SECONDARY_PREFERRED)
    assert run_flow(flow, select_for_read(SECONDARY_SERVER, SECONDARY_PREFERRED), step)["n"] == 1
    assert list(sent(step).body) == ["count", "query", "$readPreference"]
    ping = command("ping", {"ok": 1}, db="db")
    run_flow(database().command({"ping": 1}), select_for_read(), ping)
    assert sent(ping).body == {"ping": 1}


def test_database_command_uses_primary_by_default_and_raises_typed_errors() -> None:
    db = database(read_preference=SECONDARY_PREFERRED)  # not used: a command may write
    with pytest.raises(ServerError) as caught:
        run_flow(
            db.command("frobnicate"),
            select_for_read(read_preference=ReadPreference()),
            command("frobnicate", error_reply(59, name="CommandNotFound")),
        )
    assert caught.value.code == 59 and caught.value.code_name == "CommandNotFound"
    with pytest.raises(LocalProtocolError):
        run_flow(db.command({}))


def test_list_collection_names_follows_get_more() -> None:
    first = command(
        "listCollections", cursor_reply([{"name": "a"}], cursor_id=4, ns="db.$cmd.listCollections")
    )
    more = command(
        "getMore",
        cursor_reply([{"name": "b"}], cursor_id=0, ns="db.$cmd.listCollections", first=False),
    )
    names = run_flow(database().list_collection_names(), select_for_read(), first, more)
    assert names == ["a", "b"]
    assert sent(first).body == {
        "listCollections": 1, "cursor": {}, "nameOnly": True, "authorizedCollections": True,
    }  # fmt: skip


def test_list_database_names() -> None:
    step = command(
        "listDatabases", {"databases": [{"name": "admin"}, {"name": "db"}], "ok": 1}, db="admin"
    )
    assert run_flow(list_database_names(), select_for_read(), step) == ["admin", "db"]
    assert sent(step).body == {"listDatabases": 1, "nameOnly": True}


def test_create_collection_returns_it() -> None:
    db = database(write_concern=WriteConcern(w=1))
    step = command(
        "create",
        {"ok": 1},
        body={"create": "new", "capped": True, "size": 1024, "writeConcern": {"w": 1}},
    )
    created = run_flow(
        db.create_collection("new", check_exists=False, capped=True, size=1024),
        select_for_write(),
        step,
    )
    assert created.full_name == "db.new" and created.write_concern == WriteConcern(w=1)


@pytest.mark.parametrize("name", ["", "a$b", ".a", "a.", "a\x00b", "a..b"])
def test_collection_names_are_checked(name: str) -> None:
    with pytest.raises(ConfigurationError):
        database().get_collection(name)


@pytest.mark.parametrize("name", ["", "a.b", "a b", "a$", 'a"'])
def test_database_names_are_checked(name: str) -> None:
    with pytest.raises(ConfigurationError):
        DatabaseOps(name)


def test_collections_inherit_and_override_settings() -> None:
    db = database(read_concern=ReadConcern(level="majority"), write_concern=WriteConcern(w=2))
    coll = db.get_collection("c", write_concern=WriteConcern(w=1))
    assert coll.read_concern.level == "majority" and coll.write_concern.w == 1
    assert (
        coll.with_options(read_preference=SECONDARY_PREFERRED).read_preference
        is SECONDARY_PREFERRED
    )
    with pytest.raises(TypeError):
        db.get_collection("c", write_concern={"w": 1})


# --- end to end against the simulated server -------------------------------------------------


class SimDriver:
    """A tiny adapter: answers SelectServer with one ServerInfo and runs each RunCommand on a
    simulated replica set member, through the real OP_MSG encoder and reader."""

    def __init__(self, **limits: Any) -> None:
        self.client = Client(make_cluster())
        self.server = ServerInfo(("127.0.0.1", 27017), 21, **limits)
        self.commands: list[RunCommand] = []

    def answer(self, request: Request) -> Any:
        if isinstance(request, SelectServer):
            return self.server
        if isinstance(request, MarkServerUnknown):
            return None
        assert isinstance(request, RunCommand)
        self.commands.append(request)
        self.client.request_id += 1
        body = {**request.body, "$db": request.db}
        self.client.send_raw(
            encode_op_msg(body, request_id=self.client.request_id, sequences=request.sequences)
        )
        (reply,) = self.client.messages()
        return reply.body

    def run(self, flow: Generator[Request, Any, T]) -> T:
        return drive(flow, self.answer)


def test_end_to_end_writes_and_reads() -> None:
    sim = SimDriver(max_write_batch_size=4)
    coll = CollectionOps("test", "people")
    sim.run(coll.insert_one({"_id": 0, "name": "ada", "age": 36}))
    result = sim.run(coll.insert_many([{"_id": i, "age": 20 + i} for i in range(1, 11)]))
    assert result.inserted_ids == list(range(1, 11))
    assert sum(c.body.get("insert") == "people" for c in sim.commands) == 4  # 1 + 3 batches
    assert sim.run(coll.count_documents({})) == 11
    assert sim.run(coll.count_documents({"age": {"$gte": 25}}, skip=1, limit=3)) == 3
    assert sim.run(coll.find_one({"name": "ada"})) == {"_id": 0, "name": "ada", "age": 36}
    assert sim.run(coll.find_one({"name": "nobody"})) is None
    updated = sim.run(coll.update_many({"age": {"$lt": 25}}, {"$inc": {"age": 100}}))
    assert (updated.matched_count, updated.modified_count) == (4, 4)
    upserted = sim.run(coll.replace_one({"_id": 99}, {"name": "new"}, upsert=True))
    assert upserted.upserted_id == 99 and upserted.matched_count == 0
    assert sim.run(coll.delete_one({"_id": 99})).deleted_count == 1
    assert sorted(sim.run(coll.distinct("age", {"age": {"$gt": 100}}))) == [121, 122, 123, 124]
    assert sim.run(coll.estimated_document_count()) == 11
    cursor = sim.run(coll.find({}, sort=[("_id", 1)], limit=-2))
    assert cursor.take_buffered() == [{"_id": 0, "name": "ada", "age": 36}, {"_id": 1, "age": 121}]


def test_end_to_end_errors() -> None:
    sim = SimDriver(max_write_batch_size=2)
    coll = CollectionOps("test", "c")
    sim.run(coll.insert_many([{"_id": i} for i in range(3)]))
    with pytest.raises(DuplicateKeyError) as caught:
        sim.run(coll.insert_one({"_id": 1}))
    assert caught.value.details["keyValue"] == {"_id": 1}
    with pytest.raises(BulkWriteError) as bulk:
        sim.run(
            coll.insert_many(
                [{"_id": 10}, {"_id": 11}, {"_id": 2}, {"_id": 12}, {"_id": 0}], ordered=False
            )
        )
    assert [e["index"] for e in bulk.value.details["writeErrors"]] == [2, 4]
    assert bulk.value.details["nInserted"] == 3
    with pytest.raises(BulkWriteError) as ordered:
        sim.run(coll.insert_many([{"_id": 20}, {"_id": 21}, {"_id": 1}, {"_id": 22}]))
    assert ordered.value.details["nInserted"] == 2
    assert sim.run(coll.find_one({"_id": 22})) is None  # not sent after the error


def test_end_to_end_collections_and_commands() -> None:
    sim = SimDriver()
    db = DatabaseOps("shop")
    items = sim.run(db.create_collection("items"))
    sim.run(items.insert_many([{"_id": i, "kind": i % 2} for i in range(6)]))
    odd = sim.run(
        items.aggregate([{"$match": {"kind": 1}}, {"$project": {"_id": 1}}], batch_size=1)
    )
    assert odd.take_buffered() == [{"_id": 1}] and odd.alive  # (the simulator has no $out)
    sim.run(db.get_collection("odd").insert_one({"_id": 1}))
    assert sorted(sim.run(db.list_collection_names())) == ["items", "odd"]
    assert "shop" in sim.run(list_database_names())
    assert sim.run(db.command("ping"))["ok"] == 1.0
    sim.run(db.drop_collection("odd"))
    sim.run(db.drop_collection("odd"))  # twice: not an error
    assert sim.run(db.list_collection_names()) == ["items"]
    cursor = sim.run(items.find({}, batch_size=2, sort={"_id": 1}))
    assert cursor.take_buffered() == [{"_id": 0, "kind": 0}, {"_id": 1, "kind": 1}] and cursor.alive


def test_flows_raise_argument_errors_before_any_request() -> None:
    # The methods check their arguments eagerly: nothing is yielded for a bad call.
    calls: list[Callable[[], Any]] = [
        lambda: collection().insert_one(3),  # type: ignore[arg-type]
        lambda: collection().update_one({}, {"a": 1}),
        lambda: collection().delete_one(3),  # type: ignore[arg-type]
        lambda: collection().count_documents({}, skip=-1),
        lambda: collection().find(hint=3),
    ]
    for call in calls:
        with pytest.raises((TypeError, ValueError)):
            call()


def test_select_server_must_be_answered_with_a_server() -> None:
    with pytest.raises(LocalProtocolError, match="ServerInfo"):
        run_flow(collection().find(), Step(SelectServer, reply={"address": "x"}))


def test_list_collections_cursor_and_drop_database() -> None:
    step = command("listCollections", cursor_reply([{"name": "a", "type": "collection"}]))
    flow = database().list_collections({"name": "a"}, batch_size=5, comment="c")
    cursor = run_flow(flow, select_for_read(), step)
    assert sent(step).body == {
        "listCollections": 1,
        "cursor": {"batchSize": 5},
        "filter": {"name": "a"},
        "comment": "c",
    }
    assert cursor.next_buffered() == {"name": "a", "type": "collection"}
    drop = command("dropDatabase", {"ok": 1}, db="db", body={"dropDatabase": 1})
    run_flow(database().drop(), select_for_write(), drop)


def test_malformed_listing_replies_are_protocol_errors() -> None:
    from mongo_sansio.errors import RemoteProtocolError

    nameless = command("listCollections", cursor_reply([{"type": "view"}]))
    with pytest.raises(RemoteProtocolError, match="name"):
        run_flow(database().list_collection_names(), select_for_read(), nameless)
    for reply in ({"ok": 1}, {"databases": [{"size": 1}], "ok": 1}):
        with pytest.raises(RemoteProtocolError, match="listDatabases"):
            run_flow(list_database_names(), select_for_read(), command("listDatabases", reply))


def test_a_users_read_preference_field_is_kept() -> None:
    mine = {"mode": "nearest"}
    step = command("ping", {"ok": 1}, body={"$readPreference": mine})
    flow = database().command(
        {"ping": 1, "$readPreference": mine}, read_preference=SECONDARY_PREFERRED
    )
    run_flow(flow, select_for_read(SECONDARY_SERVER), step)


@pytest.mark.parametrize(
    ("sort", "hint", "expected_sort", "expected_hint"),
    [
        ("a", None, {"a": 1}, None),
        (
            {"s": {"$meta": "textScore"}},
            [("t", "text")],
            {"s": {"$meta": "textScore"}},
            {"t": "text"},
        ),
        ((("a", -1),), "a_1", {"a": -1}, "a_1"),
    ],
)
def test_sort_and_hint_forms(sort: Any, hint: Any, expected_sort: Any, expected_hint: Any) -> None:
    step = command("find", cursor_reply([]))
    run_flow(collection().find(sort=sort, hint=hint), select_for_read(), step)
    assert sent(step).body.get("sort") == expected_sort
    assert sent(step).body.get("hint") == expected_hint


def test_write_options_are_checked() -> None:
    with pytest.raises(ArgumentTypeError, match="ordered"):
        collection().insert_many([{}], ordered="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bypass_document_validation"):
        collection().insert_one({}, bypass_document_validation=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="array_filters"):
        update_statement({}, {"a": 1}, multi=False, replacement=True, array_filters=[{}])
    with pytest.raises(ArgumentTypeError, match="array_filters"):
        collection().update_one({}, {"$set": {"a": 1}}, array_filters={"x": 1})  # type: ignore[arg-type]
