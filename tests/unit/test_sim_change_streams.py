"""Change streams in the pure simulated server: events, resume tokens, images, splitting."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sim_wire_client import PRIMARY, Client, make_cluster

from mongo_sansio.bson import Int64, Timestamp, encode
from mongo_sansio.testing.server.changestreams import update_description
from mongo_sansio.testing.server.resume_tokens import (
    INVALIDATE,
    TokenKey,
    decode_token,
    encode_token,
)
from mongo_sansio.testing.server.update_descriptions import bson_equal


def watch(client: Client, target: Any = "c", db: str = "test", pipeline: list[Any] | None = None,
          batch_size: int | None = None, **options: Any) -> dict[str, Any]:
    cursor: dict[str, Any] = {} if batch_size is None else {"batchSize": batch_size}
    reply = client.command({"aggregate": target, "pipeline": [{"$changeStream": options}, *(pipeline or [])],
                            "cursor": cursor}, db)
    assert reply["ok"] == 1.0, reply
    result: dict[str, Any] = reply["cursor"]
    return result


def more(client: Client, cursor: dict[str, Any], db: str = "test", **fields: Any) -> dict[str, Any]:
    """A getMore with a short awaitData wait; the clock is moved past it when nothing came."""
    name = cursor["ns"].split(".", 1)[1]
    client.send({"getMore": Int64(cursor["id"]), "collection": name, "maxTimeMS": 10, **fields}, db)
    replies = client.messages()
    if not replies:
        client.now += 0.02
        client.conn.handle_timeout(client.now)
        replies = client.messages()
    assert len(replies) == 1
    reply = replies[0].body
    assert reply["ok"] == 1.0, reply
    result: dict[str, Any] = reply["cursor"]
    return result


def get_more_waiting(client: Client, cursor: dict[str, Any], db: str = "test") -> dict[str, Any]:
    """A getMore whose awaitData wait runs out (the reply comes after the deadline)."""
    name = cursor["ns"].split(".", 1)[1]
    client.send({"getMore": Int64(cursor["id"]), "collection": name, "maxTimeMS": 50}, db)
    assert client.messages() == []
    client.now += 0.1
    client.conn.handle_timeout(client.now)
    replies = client.messages()
    assert len(replies) == 1
    result: dict[str, Any] = replies[0].body["cursor"]
    return result


def ok(client: Client, body: dict[str, Any], db: str = "test") -> dict[str, Any]:
    reply = client.command(body, db)
    assert reply["ok"] == 1.0, reply
    return reply


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["operationType"] for e in events]


def test_tokens_sort_as_the_oplog() -> None:
    keys = [TokenKey(5, 1, 0, 0), TokenKey(5, 1), TokenKey(5, 1, 0, INVALIDATE), TokenKey.after(Timestamp(5, 1)),
            TokenKey(5, 2), TokenKey(6, 1, 0, 1, 2), TokenKey(0x10, 1)]
    data = [encode_token(k, {"_id": i})["_data"] for i, k in enumerate(keys)]
    assert data == sorted(data)
    assert [decode_token({"_data": d}) for d in data] == keys
    assert decode_token(encode_token(TokenKey.before(Timestamp(7, 3)))) < TokenKey(7, 3)


def test_update_description() -> None:
    before = {"_id": 1, "a": {"b": 1, "c": 2}, "arr": [1, 2, 3], "gone": 1, "n": 1}
    after = {"_id": 1, "a": {"b": 5, "c": 2}, "arr": [1, 2], "n": 1.0, "new": True}
    assert update_description(before, after) == {
        "updatedFields": {"a.b": 5, "n": 1.0, "new": True},
        "removedFields": ["gone"],
        "truncatedArrays": [{"field": "arr", "newSize": 2}],
    }
    assert update_description({"arr": [1]}, {"arr": [1, 2]})["updatedFields"] == {"arr.1": 2}


def test_update_description_disambiguates_numeric_and_dotted_field_names() -> None:
    before = {"_id": 1, "a": {"1": 1}, "b": [{"1": 1}], "c": [1, 2], "d.e": 1, "f": {"x": 1}}
    after = {"_id": 1, "a": {"1": 2}, "b": [{"1": 2}], "c": [1, 3], "d.e": 2, "f": {"x": 2}}
    description = update_description(before, after, disambiguate=True)
    assert description["updatedFields"] == {"a.1": 2, "b.0.1": 2, "c.1": 3, "d.e": 2, "f.x": 2}
    # Array indexes ("c.1") and plain names ("f.x") are not ambiguous.
    assert description["disambiguatedPaths"] == {
        "a.1": ["a", "1"], "b.0.1": ["b", 0, "1"], "d.e": ["d.e"],
    }
    assert update_description({"a": 1}, {"a": 2}, disambiguate=True)["disambiguatedPaths"] == {}
    assert "disambiguatedPaths" not in update_description(before, after)


def test_collection_stream_sees_crud_events_with_mongod_shapes() -> None:
    client = Client(make_cluster())
    ok(client, {"insert": "c", "documents": [{"_id": 0}]})
    cursor = watch(client)
    assert cursor["firstBatch"] == [] and cursor["id"] != 0
    assert "_data" in cursor["postBatchResumeToken"]
    ok(client, {"insert": "c", "documents": [{"_id": 1, "x": 1, "arr": [1, 2, 3]}]})
    ok(client, {"insert": "other", "documents": [{"_id": 1}]})
    ok(client, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 2}, "$pop": {"arr": 1}}}]})
    ok(client, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"y": 1}}]})
    ok(client, {"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]})
    events = more(client, cursor)["nextBatch"]
    assert types(events) == ["insert", "update", "replace", "delete"]
    insert, update, replace, delete = events
    assert insert["fullDocument"] == {"_id": 1, "x": 1, "arr": [1, 2, 3]}
    assert insert["ns"] == {"db": "test", "coll": "c"} and insert["documentKey"] == {"_id": 1}
    assert isinstance(insert["clusterTime"], Timestamp) and insert["wallTime"] is not None
    assert update["updateDescription"] == {"updatedFields": {"x": 2}, "removedFields": [],
                                           "truncatedArrays": [{"field": "arr", "newSize": 2}]}
    assert "fullDocument" not in update
    assert replace["fullDocument"] == {"_id": 1, "y": 1}
    assert "fullDocument" not in delete and delete["documentKey"] == {"_id": 1}
    tokens = [e["_id"]["_data"] for e in events]
    assert tokens == sorted(tokens)


def test_post_batch_resume_token_follows_the_batch() -> None:
    client = Client(make_cluster())
    cursor = watch(client)
    ok(client, {"insert": "c", "documents": [{"_id": i} for i in range(3)]})
    first = more(client, cursor, batchSize=2)
    assert len(first["nextBatch"]) == 2
    assert first["postBatchResumeToken"] == first["nextBatch"][-1]["_id"]
    rest = more(client, cursor)
    assert rest["postBatchResumeToken"] == rest["nextBatch"][-1]["_id"]
    ok(client, {"insert": "elsewhere", "documents": [{"_id": 1}]})
    empty = more(client, cursor)
    assert empty["nextBatch"] == []
    assert empty["postBatchResumeToken"]["_data"] > rest["postBatchResumeToken"]["_data"]


def test_resume_after_and_start_at_operation_time() -> None:
    client = Client(make_cluster())
    cursor = watch(client)
    ok(client, {"insert": "c", "documents": [{"_id": i} for i in range(4)]})
    events = more(client, cursor)["nextBatch"]
    resumed = watch(client, resumeAfter=events[1]["_id"])
    assert [e["documentKey"]["_id"] for e in resumed["firstBatch"]] == [2, 3]
    at = watch(client, startAtOperationTime=events[2]["clusterTime"])
    assert [e["documentKey"]["_id"] for e in at["firstBatch"]] == [2, 3]
    again = watch(client, resumeAfter=more(client, cursor)["postBatchResumeToken"])
    assert again["firstBatch"] == []


def test_drop_invalidates_and_start_after_continues() -> None:
    client = Client(make_cluster())
    cursor = watch(client)
    ok(client, {"insert": "c", "documents": [{"_id": 1}]})
    ok(client, {"drop": "c"})
    ok(client, {"insert": "c", "documents": [{"_id": 2}]})
    batch = more(client, cursor)
    assert types(batch["nextBatch"]) == ["insert", "drop", "invalidate"]
    assert batch["id"] == 0
    invalidate = batch["nextBatch"][-1]
    refused = client.command({"aggregate": "c", "pipeline": [{"$changeStream": {"resumeAfter": invalidate["_id"]}}],
                              "cursor": {}})
    assert refused["code"] == 260
    after = watch(client, startAfter=invalidate["_id"])
    assert types(after["firstBatch"]) == ["insert"] and after["firstBatch"][0]["documentKey"] == {"_id": 2}
    # resuming from the drop itself sees the invalidate again
    assert types(watch(client, resumeAfter=batch["nextBatch"][1]["_id"])["firstBatch"]) == ["invalidate"]


def test_database_and_cluster_streams() -> None:
    client = Client(make_cluster())
    database = watch(client, 1)
    cluster = watch(client, 1, "admin", allChangesForCluster=True)
    assert database["ns"] == "test.$cmd.aggregate"
    ok(client, {"insert": "a", "documents": [{"_id": 1}]})
    ok(client, {"insert": "b", "documents": [{"_id": 1}]}, "other")
    ok(client, {"renameCollection": "test.a", "to": "test.z"}, "admin")
    ok(client, {"dropDatabase": 1})
    events = more(client, database)["nextBatch"]
    assert types(events) == ["insert", "rename", "drop", "dropDatabase", "invalidate"]
    assert events[1]["to"] == {"db": "test", "coll": "z"} and events[3]["ns"] == {"db": "test"}
    all_events = more(client, cluster, "admin")["nextBatch"]
    assert types(all_events) == ["insert", "insert", "rename", "drop", "dropDatabase"]
    refused = client.command({"aggregate": 1, "pipeline": [{"$changeStream": {}}], "cursor": {}}, "admin")
    assert refused["ok"] == 0.0


def test_expanded_events() -> None:
    client = Client(make_cluster())
    cursor = watch(client, showExpandedEvents=True)
    plain = watch(client)
    ok(client, {"create": "c"})
    ok(client, {"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    ok(client, {"dropIndexes": "c", "index": "x_1"})
    ok(client, {"collMod": "c", "changeStreamPreAndPostImages": {"enabled": True}})
    events = more(client, cursor)["nextBatch"]
    assert types(events) == ["create", "createIndexes", "dropIndexes", "modify"]
    assert events[1]["operationDescription"]["indexes"][0]["name"] == "x_1"
    assert more(client, plain)["nextBatch"] == []


def test_full_document_modes_and_pre_images() -> None:
    client = Client(make_cluster())
    ok(client, {"create": "c", "changeStreamPreAndPostImages": {"enabled": True}})
    ok(client, {"insert": "plain", "documents": [{"_id": 1, "x": 0}]})
    ok(client, {"insert": "c", "documents": [{"_id": 1, "x": 0}]})
    images = watch(client, fullDocument="required", fullDocumentBeforeChange="required")
    lookup = watch(client, "plain", fullDocument="updateLookup", fullDocumentBeforeChange="whenAvailable")
    required = watch(client, "plain", fullDocumentBeforeChange="required")
    ok(client, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 1}}}]})
    ok(client, {"update": "plain", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 1}}}]})
    ok(client, {"update": "plain", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 1}}}]})
    (event,) = more(client, images)["nextBatch"]
    assert event["fullDocument"] == {"_id": 1, "x": 1} and event["fullDocumentBeforeChange"] == {"_id": 1, "x": 0}
    first, second = more(client, lookup)["nextBatch"]
    assert first["fullDocument"] == {"_id": 1, "x": 2}  # looked up now, not at the write
    assert first["fullDocumentBeforeChange"] is None
    name = required["ns"].split(".", 1)[1]
    failed = client.command({"getMore": Int64(required["id"]), "collection": name})
    assert failed["code"] == 280 and failed["errorLabels"] == ["NonResumableChangeStreamError"]


def test_await_data_get_more_waits_for_a_write() -> None:
    client = Client(make_cluster())
    writer = Client(client.cluster)
    cursor = watch(client)
    client.send({"getMore": Int64(cursor["id"]), "collection": "c", "maxTimeMS": 1000})
    assert client.messages() == []
    ok(writer, {"insert": "c", "documents": [{"_id": 7}]})
    (reply,) = client.messages()
    assert reply.body["cursor"]["nextBatch"][0]["documentKey"] == {"_id": 7}
    empty = get_more_waiting(client, cursor)
    assert empty["nextBatch"] == [] and empty["id"] == cursor["id"]


def test_history_lost_with_a_small_oplog() -> None:
    client = Client(make_cluster(oplog_size=5))
    cursor = watch(client)
    ok(client, {"insert": "c", "documents": [{"_id": 0}]})
    token = more(client, cursor)["nextBatch"][0]["_id"]
    for i in range(1, 8):
        ok(client, {"insert": "c", "documents": [{"_id": i}]})
    lost = client.command({"aggregate": "c", "pipeline": [{"$changeStream": {"resumeAfter": token}}], "cursor": {}})
    assert lost["code"] == 286 and lost["codeName"] == "ChangeStreamHistoryLost"
    assert lost["errorLabels"] == ["NonResumableChangeStreamError"]
    fell_off = client.command({"getMore": Int64(cursor["id"]), "collection": "c"})
    assert fell_off["code"] == 286


def test_pipeline_after_the_change_stream() -> None:
    client = Client(make_cluster())
    matched = watch(client, pipeline=[{"$match": {"operationType": "delete"}}, {"$project": {"documentKey": 1}}])
    broken = watch(client, pipeline=[{"$project": {"_id": 0}}])
    ok(client, {"insert": "c", "documents": [{"_id": 1}]})
    ok(client, {"delete": "c", "deletes": [{"q": {}, "limit": 0}]})
    (event,) = more(client, matched)["nextBatch"]
    assert set(event) == {"_id", "documentKey"}
    assert client.command({"getMore": Int64(broken["id"]), "collection": "c"})["code"] == 280
    refused = client.command({"aggregate": "c", "pipeline": [{"$changeStream": {}}, {"$group": {"_id": 1}}], "cursor": {}})
    assert refused["ok"] == 0.0


def test_split_large_event() -> None:
    client = Client(make_cluster())
    ok(client, {"create": "c", "changeStreamPreAndPostImages": {"enabled": True}})
    ok(client, {"insert": "c", "documents": [{"_id": 1, "s": "a" * (9 * 1024 * 1024)}]})
    options = {"fullDocument": "required", "fullDocumentBeforeChange": "required"}
    split = watch(client, pipeline=[{"$changeStreamSplitLargeEvent": {}}], **options)
    whole = watch(client, **options)
    ok(client, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"s": "b" * (9 * 1024 * 1024)}}]})
    fragments = more(client, split)["nextBatch"]
    assert len(fragments) == 1  # a batch stops at 16 MiB: the second fragment comes next
    fragments += more(client, split)["nextBatch"]
    assert [f["splitEvent"] for f in fragments] == [{"fragment": 1, "of": 2}, {"fragment": 2, "of": 2}]
    assert fragments[0]["operationType"] == "replace"
    assert fragments[0]["_id"]["_data"] < fragments[1]["_id"]["_data"]
    resumed = watch(client, pipeline=[{"$changeStreamSplitLargeEvent": {}}], resumeAfter=fragments[0]["_id"],
                    batch_size=0, **options)
    assert more(client, resumed)["nextBatch"][0]["splitEvent"] == {"fragment": 2, "of": 2}
    assert client.command({"getMore": Int64(whole["id"]), "collection": "c"})["code"] == 10334


def test_get_more_errors_on_a_change_stream_are_labelled_resumable() -> None:
    client = Client(make_cluster())
    ok(client, {"insert": "c", "documents": [{"_id": i} for i in range(3)]})
    stream = watch(client)
    plain = ok(client, {"find": "c", "batchSize": 1})["cursor"]
    ok(client, {"configureFailPoint": "failCommand", "mode": {"times": 2},
                "data": {"failCommands": ["getMore"], "errorCode": 10107}}, "admin")
    # failCommand fires before the cursor is checked out: like mongod, no label
    failed = client.command({"getMore": Int64(stream["id"]), "collection": "c"})
    assert failed["code"] == 10107 and "errorLabels" not in failed
    failed_plain = client.command({"getMore": Int64(plain["id"]), "collection": "c"})
    assert "errorLabels" not in failed_plain
    client.send({"getMore": Int64(stream["id"]), "collection": "c", "maxTimeMS": 1000})
    client.cluster.step_down(client.now)
    (interrupted,) = client.messages()
    assert interrupted.body["code"] == 11602 and interrupted.body["errorLabels"] == ["ResumableChangeStreamError"]


def test_fail_get_more_after_cursor_checkout_fails_once_with_the_cursor_s_labels() -> None:
    client = Client(make_cluster())
    ok(client, {"insert": "c", "documents": [{"_id": i} for i in range(3)]})
    stream = watch(client)
    plain = ok(client, {"find": "c", "batchSize": 1})["cursor"]
    ok(client, {"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": {"times": 2},
                "data": {"errorCode": 6}}, "admin")
    failed = client.command({"getMore": Int64(stream["id"]), "collection": "c"})
    assert failed["code"] == 6 and failed["codeName"] == "HostUnreachable"
    assert failed["errorLabels"] == ["ResumableChangeStreamError"]
    failed_plain = client.command({"getMore": Int64(plain["id"]), "collection": "c"})
    assert failed_plain["code"] == 6 and "errorLabels" not in failed_plain
    assert more(client, plain)["nextBatch"] == [{"_id": 1}, {"_id": 2}]  # the failpoint is spent


def test_an_unknown_stage_after_change_stream_is_unrecognized_not_refused() -> None:
    client = Client(make_cluster())
    pipeline = [{"$changeStream": {}}]
    unknown = client.command({"aggregate": "c", "pipeline": [*pipeline, {"$unsupported": "foo"}], "cursor": {}})
    assert unknown["code"] == 40324
    refused = client.command({"aggregate": "c", "pipeline": [*pipeline, {"$group": {"_id": 1}}], "cursor": {}})
    assert refused["code"] == 31175


@pytest.mark.parametrize("options", [{"resumeAfter": {"_data": "zz"}}, {"bogus": 1},
                                     {"startAtOperationTime": Timestamp(1, 1), "resumeAfter": {"_data": "0" * 26}}])
def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    client = Client(make_cluster(), PRIMARY)
    reply = client.command({"aggregate": "c", "pipeline": [{"$changeStream": options}], "cursor": {}})
    assert reply["ok"] == 0.0


_SCALARS = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64), st.floats(allow_nan=True), st.sampled_from([0.0, -0.0, 1.0, 1]),
    st.text(), st.sampled_from(["\ud800", "a\udfff", "x\x00y", "é"]), st.booleans(), st.none(),
    st.builds(Int64, st.integers(min_value=-(2**63), max_value=2**63 - 1)),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
                       max_leaves=6)


def _by_encoding(a: Any, b: Any) -> bool | type[BaseException]:
    try:
        return encode({"v": a}) == encode({"v": b})
    except Exception as error:  # noqa: BLE001 -- the error's type is what is compared
        return type(error)


_NAN = float("nan")
_OTHER_NAN = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]


@settings(max_examples=400, deadline=None)
@given(_VALUES, _VALUES)
@example(0.0, -0.0)
@example(_NAN, float("nan"))  # two NaN objects: equal encodings, unequal in Python
@example(_NAN, _OTHER_NAN)  # NaNs of other payloads: unequal encodings
@example(1, 1.0)
@example(1, True)
@example(1, Int64(1))
@example(2**40, Int64(2**40))  # both int64 on the wire
@example(2**31, 2**31)
@example(2**63, 2**63)  # past int64: the encoder refuses both
@example(2**63, 1)
@example("\ud800", "\ud800")  # a lone surrogate: the encoder refuses it
@example("\ud800", "a")
@example("x\x00y", "x\x00y")
@example([1, 2], [1, 2.0])
@example({"a": 1, "b": 2}, {"b": 2, "a": 1})
def test_bson_equal_answers_as_the_encodings_compare(a: Any, b: Any) -> None:
    """updateDescription's field comparison (fast for plain strings, ints and floats) answers
    as comparing the encodings does, and raises what the encoder raises."""
    for x, y in ((a, b), (a, a), (b, b)):
        expected = _by_encoding(x, y)
        try:
            got: bool | type[BaseException] = bson_equal(x, y)
        except Exception as error:  # noqa: BLE001
            got = type(error)
        assert got == expected, (x, y)
