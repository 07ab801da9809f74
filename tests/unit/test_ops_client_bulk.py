"""MongoClient.bulk_write without sockets: the models turned into ``ops`` documents, the
``bulkWrite`` command, batch splitting by count and size with each batch's own ``nsInfo``, the
flow's client-side refusals, retry eligibility, the results cursor and how replies and cursor
entries merge into a ClientBulkWriteResult or a ClientBulkWriteException."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from flow_script import ABSENT, Step, command, cursor_reply, error_reply, mark_unknown, run_flow
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson import Int64, decode, encode
from mongo_sansio.errors import (
    ClientBulkWriteException,
    DocumentTooLarge,
    InvalidOperation,
    NetworkError,
    RemoteProtocolError,
    ServerError,
)
from mongo_sansio.flow import OperationContext, RunCommand, SelectServer, ServerInfo
from mongo_sansio.ops.client_bulk import (
    MESSAGE_OVERHEAD_BYTES,
    ClientBulkBatch,
    ClientWriteOp,
    client_bulk_command,
    client_bulk_write,
    plan_client_bulk,
    split_client_bulk,
)
from mongo_sansio.ops.client_bulk_outcome import ClientBulkOutcome
from mongo_sansio.ops.crud_commands import ArgumentTypeError
from mongo_sansio.ops.models import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)
from mongo_sansio.ops.results import (
    ClientBulkWriteResult,
    DeleteResult,
    InsertOneResult,
    UpdateResult,
)
from mongo_sansio.ops.write_concern import WriteConcern
from mongo_sansio.sessions import Session, TransactionOptions

SERVER_80 = ServerInfo(("p", 27017), 25, supports_retryable_writes=True)
NS = "db.coll"


def ids() -> Any:
    return itertools.count(100).__next__


def plan(*models: Any) -> list[ClientWriteOp]:
    return plan_client_bulk(list(models), ids())


def select_80(server: ServerInfo = SERVER_80) -> Step:
    def check(request: Any) -> None:
        assert request.for_writes and request.operation == "bulkWrite", request

    return Step(SelectServer, reply=server, check=check)


def sequence(step: Step, name: str) -> list[dict[str, Any]]:
    assert isinstance(step.seen, RunCommand) and step.seen.sequences is not None
    return [decode(bytes(document)) for document in step.seen.sequences[name]]


def bulk_reply(
    entries: Sequence[dict[str, Any]] = (),
    *,
    cursor_id: int = 0,
    n_errors: int = 0,
    **counts: Any,
) -> dict[str, Any]:
    reply = cursor_reply(entries, cursor_id=cursor_id, ns="admin.$cmd.bulkWrite")
    summary = {"nInserted": 0, "nUpserted": 0, "nMatched": 0, "nModified": 0, "nDeleted": 0}
    return {**reply, "nErrors": n_errors, **summary, **counts}


# --- the models as ops -------------------------------------------------------------------------


def test_each_model_becomes_its_ops_document() -> None:
    document: dict[str, Any] = {"x": 1}
    ops = plan(
        InsertOne(document, namespace="db.a"),
        UpdateOne({"_id": 1}, {"$set": {"y": 1}}, namespace=NS),
        UpdateMany({}, [{"$set": {"z": 1}}], upsert=False, array_filters=[{"e": 1}], namespace=NS),
        ReplaceOne({"_id": 2}, {"w": 1}, upsert=True, hint="a_1", sort={"a": -1}, namespace=NS),
        DeleteOne({"_id": 3}, collation={"locale": "fr"}, namespace=NS),
        DeleteMany({"k": 1}, hint=[("k", 1)], namespace="other.c"),
    )
    assert [op.op for op in ops] == [
        {"insert": 0, "document": {"_id": 100, "x": 1}},
        {"update": 0, "filter": {"_id": 1}, "updateMods": {"$set": {"y": 1}}, "multi": False},
        {
            "update": 0,
            "filter": {},
            "updateMods": [{"$set": {"z": 1}}],
            "multi": True,
            "upsert": False,  # given, so sent
            "arrayFilters": [{"e": 1}],
        },
        {
            "update": 0,
            "filter": {"_id": 2},
            "updateMods": {"w": 1},
            "multi": False,
            "upsert": True,
            "hint": "a_1",
            "sort": {"a": -1},
        },
        {"delete": 0, "filter": {"_id": 3}, "multi": False, "collation": {"locale": "fr"}},
        {"delete": 0, "filter": {"k": 1}, "multi": True, "hint": {"k": 1}},
    ]
    assert document == {"x": 1, "_id": 100}  # the caller's document got its _id, as insert_one
    assert next(iter(ops[0].op["document"])) == "_id"  # generated ids come first
    assert [op.inserted_id for op in ops] == [100, None, None, None, None, None]
    assert [op.multi for op in ops] == [False, False, True, False, False, True]
    assert [op.namespace for op in ops] == ["db.a", NS, NS, NS, NS, "other.c"]


@pytest.mark.parametrize(
    ("models", "error", "message"),
    [
        ((InsertOne({}, namespace=NS),), ArgumentTypeError, "models must be a list"),
        ([{"insertOne": {"document": {}}}], ArgumentTypeError, "is not a valid request"),
        ([], InvalidOperation, "No operations to execute"),
        ([InsertOne({})], InvalidOperation, "requires a namespace"),
        ([DeleteOne({}, namespace="")], InvalidOperation, "requires a namespace"),
        # a plain ValueError (and a LocalProtocolError), as PyMongo's
        ([UpdateOne({}, {"a": 1}, namespace=NS)], ValueError, "update only works"),
        ([ReplaceOne({}, {"$set": {"a": 1}}, namespace=NS)], ValueError, "replacement"),
    ],
)
def test_bad_models_raise_before_anything_is_sent(
    models: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        plan_client_bulk(models, ids())


def test_the_command_document() -> None:
    assert client_bulk_command() == {"bulkWrite": 1, "errorsOnly": True, "ordered": True}
    assert client_bulk_command(
        ordered=False,
        verbose_results=True,
        bypass_document_validation=False,
        comment={"c": 1},
        let={"v": 1},
        raw_data=True,
        write_concern=WriteConcern(w="majority"),
    ) == {
        "bulkWrite": 1,
        "errorsOnly": False,
        "ordered": False,
        "bypassDocumentValidation": False,
        "comment": {"c": 1},
        "let": {"v": 1},
        "rawData": True,
        "writeConcern": {"w": "majority"},
    }
    assert "writeConcern" not in client_bulk_command(write_concern=WriteConcern())
    for bad in ({"ordered": "yes"}, {"verbose_results": 1}, {"let": [1]}):
        with pytest.raises(TypeError):
            client_bulk_command(**bad)


# --- batch splitting ---------------------------------------------------------------------------


def split(ops: list[ClientWriteOp], **limits: Any) -> list[ClientBulkBatch]:
    options = {"command_size": 43, "max_write_batch_size": 100_000, "max_message_size": 48_000_000}
    return split_client_bulk(ops, **{**options, **limits})


def decoded(batch: ClientBulkBatch) -> tuple[list[dict[str, Any]], list[str]]:
    ops = [decode(bytes(op)) for op in batch.ops]
    return ops, [decode(bytes(entry))["ns"] for entry in batch.ns_info]


def test_split_by_max_write_batch_size() -> None:
    ops = plan(*[InsertOne({"_id": i}, namespace=NS) for i in range(7)])
    batches = split(ops, max_write_batch_size=3)
    assert [(b.start, b.count) for b in batches] == [(0, 3), (3, 3), (6, 1)]
    assert all(decoded(b)[1] == [NS] for b in batches)


def _op_size(op: ClientWriteOp) -> int:
    return len(encode(op.op))


def test_split_by_message_size_with_the_specs_allowance() -> None:
    ops = plan(*[InsertOne({"_id": i, "s": "x" * 100}, namespace=NS) for i in range(4)])
    op_size, ns_size = _op_size(ops[0]), len(encode({"ns": NS}))
    # room for exactly three ops and the one nsInfo entry
    room = 3 * op_size + ns_size
    batches = split(ops, command_size=43, max_message_size=room + MESSAGE_OVERHEAD_BYTES + 43)
    assert [(b.start, b.count) for b in batches] == [(0, 3), (3, 1)]
    batches = split(ops, command_size=44, max_message_size=room + MESSAGE_OVERHEAD_BYTES + 43)
    assert [(b.start, b.count) for b in batches] == [(0, 2), (2, 2)]


def test_a_new_namespace_that_does_not_fit_starts_a_new_batch() -> None:
    # the prose test's arithmetic: the last op fits, but not with its new nsInfo entry
    long_ns = "db." + "c" * 200
    ops = plan(InsertOne({"a": "b" * 500}, namespace=NS), InsertOne({"a": "b"}, namespace=NS))
    first, same = _op_size(ops[0]), _op_size(ops[1])
    room = first + len(encode({"ns": NS})) + same
    limit = room + MESSAGE_OVERHEAD_BYTES + 43
    assert len(split(ops, max_message_size=limit)) == 1
    ops = plan(InsertOne({"a": "b" * 500}, namespace=NS), InsertOne({"a": "b"}, namespace=long_ns))
    batches = split(ops, max_message_size=limit)
    assert [(b.start, b.count) for b in batches] == [(0, 1), (1, 1)]
    assert decoded(batches[1]) == ([{"insert": 0, "document": {"_id": 101, "a": "b"}}], [long_ns])


def test_each_batch_lists_only_its_namespaces_and_indexes_into_them() -> None:
    ops = plan(
        InsertOne({"_id": 1}, namespace="a.x"),
        DeleteOne({"_id": 2}, namespace="b.y"),
        UpdateOne({"_id": 3}, {"$set": {"v": 1}}, namespace="a.x"),
        InsertOne({"_id": 4}, namespace="c.z"),
        DeleteMany({}, namespace="b.y"),
    )
    batches = split(ops, max_write_batch_size=3)
    first, namespaces = decoded(batches[0])
    assert namespaces == ["a.x", "b.y"]
    assert [op[next(iter(op))] for op in first] == [0, 1, 0]
    second, namespaces = decoded(batches[1])
    assert namespaces == ["c.z", "b.y"]
    assert [op[next(iter(op))] for op in second] == [0, 1]
    assert second[1] == {"delete": 1, "filter": {}, "multi": True}
    assert batches[1].statements == (ops[3].op, ops[4].op)


@given(
    st.lists(st.tuples(st.integers(0, 300), st.sampled_from(["a.x", "b.y", "c.z"])), min_size=1),
    st.integers(1, 5),
    st.integers(600, 2000),
)
def test_batches_keep_the_order_and_the_limits(
    sizes: list[tuple[int, str]], max_count: int, message_size: int
) -> None:
    ops = plan(*[InsertOne({"s": "x" * n}, namespace=ns) for n, ns in sizes])
    limit = message_size + MESSAGE_OVERHEAD_BYTES + 43
    batches = split(ops, max_write_batch_size=max_count, max_message_size=limit)
    assert [b.start for b in batches] == list(
        itertools.accumulate([0] + [b.count for b in batches[:-1]])
    )
    assert sum(b.count for b in batches) == len(ops)
    for batch in batches:
        assert 1 <= batch.count <= max_count
        assert sum(map(len, batch.ops)) + sum(map(len, batch.ns_info)) <= message_size
        batch_ops, namespaces = decoded(batch)
        assert len(set(namespaces)) == len(namespaces)
        used = [ops[batch.start + i].namespace for i in range(batch.count)]
        assert sorted(set(used)) == sorted(namespaces)
        assert [namespaces[op["insert"]] for op in batch_ops] == used


def test_an_op_too_large_for_any_message_is_a_client_error() -> None:
    ops = plan(InsertOne({"a": 1}, namespace=NS), InsertOne({"a": "b" * 5000}, namespace=NS))
    with pytest.raises(DocumentTooLarge) as raised:
        split(ops, max_message_size=4000)
    assert raised.value.index == 1
    with pytest.raises(DocumentTooLarge):
        split(plan(InsertOne({}, namespace="db." + "c" * 5000)), max_message_size=4000)


# --- merging results ---------------------------------------------------------------------------


def outcome(*kinds: str, ordered: bool = True, verbose: bool = False) -> ClientBulkOutcome:
    inserted = [f"id{i}" if kind == "insert" else None for i, kind in enumerate(kinds)]
    return ClientBulkOutcome(list(kinds), inserted, ordered=ordered, verbose=verbose)


def test_verbose_results_by_kind_with_the_callers_indexes() -> None:
    merged = outcome("delete", "insert", "update", "update", verbose=True)
    merged.add_reply(bulk_reply(nInserted=1, nMatched=1, nUpserted=1, nDeleted=2), 2)
    merged.add_entry({"ok": 1, "idx": 0, "n": 2}, 0, 2)
    merged.add_entry({"ok": 1, "idx": 1, "n": 1}, 0, 2)
    merged.add_reply(bulk_reply(), 2)
    merged.add_entry({"ok": 1, "idx": 0, "n": 1, "nModified": 1}, 2, 2)
    merged.add_entry({"ok": 1.0, "idx": 1, "n": 1, "nModified": 0, "upserted": {"_id": None}}, 2, 2)
    result = merged.result()
    assert (result.inserted_count, result.upserted_count, result.matched_count) == (1, 1, 1)
    assert (result.modified_count, result.deleted_count) == (0, 2)
    assert result.has_verbose_results and result.acknowledged
    assert result.insert_results == {1: InsertOneResult("id1")}
    assert result.delete_results[0].deleted_count == 2
    updated, upserted = result.update_results[2], result.update_results[3]
    assert (updated.matched_count, updated.modified_count, updated.did_upsert) == (1, 1, False)
    # an upsert's matched count is the server's n; a null _id is still an upsert
    assert (upserted.matched_count, upserted.did_upsert, upserted.upserted_id) == (1, True, None)
    assert isinstance(upserted, UpdateResult) and isinstance(result.delete_results[0], DeleteResult)


def test_summary_results_refuse_the_verbose_maps() -> None:
    merged = outcome("insert")
    merged.add_reply(bulk_reply(nInserted=1), 1)
    merged.add_entry({"ok": 1, "idx": 0, "n": 1}, 0, 1)
    result = merged.result()
    assert result.inserted_count == 1 and not result.has_verbose_results
    with pytest.raises(InvalidOperation, match="verbose"):
        result.insert_results  # noqa: B018


def test_an_unacknowledged_result_refuses_everything() -> None:
    result = ClientBulkWriteResult({}, False, False)
    for name in ("inserted_count", "deleted_count", "update_results"):
        with pytest.raises(InvalidOperation, match="unacknowledged"):
            getattr(result, name)


@pytest.mark.parametrize(
    ("ordered", "count", "n_errors", "error_idx", "partial"),
    [
        (True, 3, 0, None, True),  # nothing failed
        (True, 3, 1, 0, False),  # the first op failed: nothing was written
        (True, 3, 1, 2, True),  # ops 0 and 1 were written
        (False, 3, 3, 0, False),  # every op failed
        (False, 3, 1, 0, True),  # the others were written
    ],
)
def test_partial_result_only_when_a_write_is_known_to_have_succeeded(
    ordered: bool, count: int, n_errors: int, error_idx: int | None, partial: bool
) -> None:
    merged = outcome(*["insert"] * count, ordered=ordered)
    merged.add_reply(bulk_reply(n_errors=n_errors, nInserted=count - n_errors), count)
    if error_idx is not None:
        stop = merged.add_entry({"ok": 0, "idx": error_idx, "code": 11000, "errmsg": "dup"}, 0, 3)
        assert stop is ordered
    if n_errors == 0:
        merged.add_reply(bulk_reply(writeConcernError={"code": 64, "errmsg": "wc"}), count)
    raised = merged.exception()
    assert isinstance(raised, ClientBulkWriteException)
    assert (raised.partial_result is not None) is partial
    if partial:
        assert raised.partial_result.inserted_count == merged.counts["nInserted"]  # type: ignore[union-attr]


def test_write_errors_and_write_concern_errors_accumulate_across_batches() -> None:
    merged = outcome(*["insert"] * 4, ordered=False)
    concern = {"code": 91, "errmsg": "shutting down", "errorLabels": ["RetryableWriteError"]}
    merged.add_reply(bulk_reply(n_errors=1, nInserted=1, writeConcernError=concern), 2)
    merged.add_entry({"ok": 0, "idx": 1, "code": 11000, "errmsg": "E11000"}, 0, 2)
    merged.add_reply(bulk_reply(n_errors=1, nInserted=1, writeConcernError=concern), 2)
    merged.add_entry({"ok": 0, "idx": 0, "code": 121, "errmsg": "invalid", "errInfo": {}}, 2, 2)
    raised = merged.exception()
    assert raised is not None and raised.error is None
    assert [(e["idx"], e["code"]) for e in raised.write_errors] == [(1, 11000), (2, 121)]
    assert raised.write_concern_errors == [concern, concern]
    assert raised.has_error_label("RetryableWriteError")
    assert raised.code == 65 and not raised.timeout
    assert raised.partial_result is not None and raised.partial_result.inserted_count == 2


def test_a_top_level_error_is_embedded_with_its_labels() -> None:
    merged = outcome("insert")
    top = ServerError("failed", code=8, error_labels=["TransientTransactionError"])
    raised = merged.exception(top)
    assert raised is not None and raised.error is top and raised.partial_result is None
    assert raised.has_error_label("TransientTransactionError")
    assert "top-level error" in str(raised)
    assert outcome("insert").exception() is None


@pytest.mark.parametrize(
    "entry",
    [
        "not a document",
        {"ok": 1, "n": 1},  # no idx
        {"ok": 1, "idx": 5, "n": 1},  # not in the batch
        {"ok": 0, "idx": 0, "errmsg": "no code"},
        {"ok": 1, "idx": 0, "n": "one"},
    ],
)
def test_malformed_entries_are_protocol_errors(entry: Any) -> None:
    with pytest.raises(RemoteProtocolError):
        outcome("delete", verbose=True).add_entry(entry, 0, 1)


def test_malformed_reply_is_a_protocol_error() -> None:
    with pytest.raises(RemoteProtocolError):
        outcome("insert").add_reply({**bulk_reply(), "nInserted": "x"}, 1)


# --- the flow ----------------------------------------------------------------------------------


def in_transaction() -> Session:
    """An explicit session with a transaction in progress (its first command sent)."""
    session = Session(object(), implicit=False)
    session.start_transaction(TransactionOptions())
    session.operation_sent()
    return session


def retrying(session: Any = None) -> OperationContext:
    return OperationContext(session=session, retry_reads=True, retry_writes=True)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"write_concern": WriteConcern(w=0)}, "unacknowledged write concern and ordered"),
        (
            {"write_concern": WriteConcern(w=0), "ordered": False, "verbose_results": True},
            "unacknowledged write concern and verbose results",
        ),
        (
            {"default_write_concern": WriteConcern(w=0), "ordered": True},
            "unacknowledged write concern and ordered",
        ),
    ],
)
def test_unacknowledged_refusals_come_before_server_selection(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidOperation, match=message):
        run_flow(client_bulk_write(plan(InsertOne({}, namespace=NS)), **options))


def test_an_explicit_write_concern_in_a_transaction_is_refused() -> None:
    flow = client_bulk_write(plan(InsertOne({}, namespace=NS)), write_concern=WriteConcern(w=1))
    with pytest.raises(InvalidOperation, match="Cannot set write concern after starting"):
        run_flow(flow, context=retrying(in_transaction()))


def test_the_clients_write_concern_is_left_out_in_a_transaction() -> None:
    flow = client_bulk_write(
        plan(InsertOne({"_id": 1}, namespace=NS)), default_write_concern=WriteConcern(w=0)
    )
    sent = command("bulkWrite", bulk_reply([], nInserted=1), body={"writeConcern": ABSENT})
    result = run_flow(flow, select_80(), sent, context=retrying(in_transaction()))
    assert result.inserted_count == 1


def test_a_server_before_8_0_is_refused() -> None:
    flow = client_bulk_write(plan(InsertOne({}, namespace=NS)))
    with pytest.raises(InvalidOperation, match="requires MongoDB server version 8.0"):
        run_flow(flow, select_80(ServerInfo(("p", 27017), 21)))


def test_batches_go_to_admin_and_read_their_cursor_with_get_more() -> None:
    ops = plan(
        InsertOne({"x": 1}, namespace="db.a"),
        UpdateOne({"_id": 7}, {"$set": {"y": 1}}, upsert=True, namespace="db.b"),
    )
    first = command(
        "bulkWrite",
        bulk_reply([{"ok": 1, "idx": 0, "n": 1}], cursor_id=42, nInserted=1, nUpserted=1),
        db="admin",
        body={"bulkWrite": 1, "errorsOnly": False, "ordered": True, "comment": "c"},
    )
    more = command(
        "getMore",
        cursor_reply(
            [{"ok": 1, "idx": 1, "n": 1, "nModified": 0, "upserted": {"_id": 7}}],
            ns="admin.$cmd.bulkWrite",
            first=False,
        ),
        db="admin",
        body={"getMore": Int64(42), "collection": "$cmd.bulkWrite"},
    )
    flow = client_bulk_write(ops, verbose_results=True, comment="c")
    result = run_flow(flow, select_80(), first, more)
    assert sequence(first, "nsInfo") == [{"ns": "db.a"}, {"ns": "db.b"}]
    assert [op["insert" if "insert" in op else "update"] for op in sequence(first, "ops")] == [0, 1]
    assert result.insert_results == {0: InsertOneResult(100)}
    assert result.update_results[1].upserted_id == 7 and result.upserted_count == 1


def test_retryable_only_without_multi_ops() -> None:
    single = command("bulkWrite", bulk_reply(nInserted=1))
    run_flow(
        client_bulk_write(plan(InsertOne({}, namespace=NS))),
        select_80(),
        single,
        context=retrying(),
    )
    assert isinstance(single.seen, RunCommand) and single.seen.txn is not None
    multi = command("bulkWrite", bulk_reply(nDeleted=3))
    run_flow(
        client_bulk_write(plan(InsertOne({}, namespace=NS), DeleteMany({}, namespace=NS))),
        select_80(),
        multi,
        context=retrying(),
    )
    assert isinstance(multi.seen, RunCommand) and multi.seen.txn is None


def test_an_ordered_write_error_stops_the_bulk_write_and_kills_the_cursor() -> None:
    ops = plan(*[InsertOne({"_id": i}, namespace=NS) for i in range(3)])
    entries = [{"ok": 1, "idx": 0, "n": 1}, {"ok": 0, "idx": 1, "code": 11000, "errmsg": "dup"}]
    first = command("bulkWrite", bulk_reply(entries, cursor_id=9, n_errors=1, nInserted=1))
    kill = command("killCursors", db="admin", body={"cursors": [Int64(9)]})
    with pytest.raises(ClientBulkWriteException) as raised:
        run_flow(client_bulk_write(ops, verbose_results=True), select_80(), first, kill)
    assert [e["idx"] for e in raised.value.write_errors] == [1]
    partial = raised.value.partial_result
    assert partial is not None and partial.insert_results == {0: InsertOneResult(0)}


def test_a_failed_get_more_is_a_top_level_error_with_the_partial_result() -> None:
    ops = plan(*[UpdateOne({"_id": i}, {"$set": {"x": 1}}, namespace=NS) for i in range(2)])
    entries = [{"ok": 1, "idx": 0, "n": 1, "nModified": 1}]
    first = command("bulkWrite", bulk_reply(entries, cursor_id=5, nMatched=2, nModified=2))
    more = command("getMore", error_reply(8, errmsg="unknown error"))
    kill = command("killCursors", body={"cursors": [Int64(5)]})
    with pytest.raises(ClientBulkWriteException) as raised:
        run_flow(client_bulk_write(ops, verbose_results=True), select_80(), first, more, kill)
    assert isinstance(raised.value.error, ServerError) and raised.value.error.code == 8
    partial = raised.value.partial_result
    assert partial is not None and partial.matched_count == 2 and len(partial.update_results) == 1


def test_a_network_error_after_a_batch_keeps_what_was_written() -> None:
    ops = plan(*[InsertOne({"_id": i}, namespace=NS) for i in range(3)])
    first = command("bulkWrite", bulk_reply(nInserted=2))
    lost = command("bulkWrite", error=NetworkError("reset"))
    server = ServerInfo(("p", 1), 25, max_write_batch_size=2)
    flow = client_bulk_write(ops, ordered=False)
    with pytest.raises(ClientBulkWriteException) as raised:
        run_flow(flow, select_80(server), first, select_80(server), lost, mark_unknown())
    assert isinstance(raised.value.error, NetworkError)
    assert raised.value.partial_result is not None
    assert raised.value.partial_result.inserted_count == 2


def test_unacknowledged_bulk_writes_send_every_batch_and_know_nothing() -> None:
    ops = plan(*[InsertOne({"_id": i}, namespace=NS) for i in range(3)])
    server = ServerInfo(("p", 1), 25, max_write_batch_size=2)
    sent = [command("bulkWrite", {"ok": 1}, body={"writeConcern": {"w": 0}}) for _ in range(2)]
    flow = client_bulk_write(ops, ordered=False, write_concern=WriteConcern(w=0))
    result = run_flow(flow, select_80(server), sent[0], select_80(server), sent[1])
    assert result == ClientBulkWriteResult({}, False, False) and not result.acknowledged
    assert [len(sequence(step, "ops")) for step in sent] == [2, 1]


# --- PyMongo's names ---------------------------------------------------------------------------


def test_the_public_names_are_pymongos() -> None:
    """Code moved over from PyMongo by changing its imports finds the same method, arguments,
    result attributes and exception attributes."""
    import inspect

    pymongo = pytest.importorskip("pymongo", reason="the comparison needs pymongo")
    from pymongo import errors as pymongo_errors
    from pymongo import results as pymongo_results

    from mongo_sansio.adapters.blocking import MongoClient

    ours = inspect.signature(MongoClient.bulk_write.__wrapped__).parameters
    theirs = inspect.signature(pymongo.MongoClient.bulk_write).parameters
    assert [name for name in ours if name != "rawData"] == list(theirs)
    assert all(ours[name].default == theirs[name].default for name in theirs)

    def public(value: Any) -> set[str]:
        return {name for name in dir(value) if not name.startswith("_")}

    assert public(pymongo_results.ClientBulkWriteResult) <= public(ClientBulkWriteResult)
    raised = ClientBulkWriteException({"anySuccessful": False}, True)
    assert public(pymongo_errors.ClientBulkWriteException({}, True)) <= public(raised)
    assert raised.verbose is True and raised.partial_result is None
