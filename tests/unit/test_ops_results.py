"""Write results and write replies: counts, unacknowledged results, typed write errors, merging
batches, and malformed replies."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.errors import (
    DuplicateKeyError,
    InvalidOperation,
    RemoteProtocolError,
    ServerError,
    WriteConcernError,
    WriteError,
)
from mongo_sansio.ops.results import DeleteResult, InsertManyResult, InsertOneResult, UpdateResult
from mongo_sansio.ops.write_errors import (
    BulkWriteError,
    WriteSummary,
    write_concern_error_from_document,
    write_error_from_document,
)

# --- results ---------------------------------------------------------------------------------


def test_update_result_counts() -> None:
    result = UpdateResult.from_reply({"n": 3, "nModified": 2, "ok": 1})
    assert (result.matched_count, result.modified_count, result.upserted_id) == (3, 2, None)
    assert result.did_upsert is False and result.acknowledged
    # as PyMongo gives it: updatedExisting added
    assert result.raw_result == {"n": 3, "nModified": 2, "ok": 1, "updatedExisting": True}


def test_update_result_upsert_is_not_a_match() -> None:
    reply = {"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": "new"}], "ok": 1.0}
    result = UpdateResult.from_reply(reply)
    assert (result.matched_count, result.modified_count) == (0, 0)
    assert result.upserted_id == "new" and result.did_upsert
    assert result.raw_result == {
        "n": 1,
        "nModified": 0,
        "upserted": "new",
        "ok": 1.0,
        "updatedExisting": False,
    }
    assert reply["upserted"] == [{"index": 0, "_id": "new"}]  # the reply itself is untouched


def test_counts_accept_integral_doubles() -> None:
    assert UpdateResult.from_reply({"n": 2.0, "nModified": 1.0}).matched_count == 2
    assert DeleteResult.from_reply({"n": 4.0}).deleted_count == 4


@pytest.mark.parametrize(
    "attribute", ["matched_count", "modified_count", "upserted_id", "did_upsert"]
)
def test_unacknowledged_update_counts_raise(attribute: str) -> None:
    result = UpdateResult.from_reply({"n": 1, "nModified": 1}, acknowledged=False)
    assert result.acknowledged is False and result.raw_result is None
    with pytest.raises(InvalidOperation, match="unacknowledged"):
        getattr(result, attribute)


def test_delete_result() -> None:
    assert DeleteResult.from_reply({"n": 5, "ok": 1}).deleted_count == 5
    unacknowledged = DeleteResult.from_reply(None, acknowledged=False)
    with pytest.raises(InvalidOperation):
        _ = unacknowledged.deleted_count


def test_insert_results_keep_ids_even_unacknowledged() -> None:
    assert InsertOneResult(7, acknowledged=False).inserted_id == 7
    assert InsertManyResult([1, 2], acknowledged=False).inserted_ids == [1, 2]


@pytest.mark.parametrize(
    "reply",
    [
        {"n": "1", "nModified": 0},
        {"n": -1, "nModified": 0},
        {"n": True, "nModified": 0},
        {"n": 1, "nModified": 0.5},
        {"n": 1, "nModified": 0, "upserted": {"_id": 1}},
        {"n": 1, "nModified": 0, "upserted": [{"index": 0}]},
        {"n": 1, "nModified": 0, "upserted": []},
    ],
)
def test_malformed_update_replies_are_protocol_errors(reply: dict[str, Any]) -> None:
    with pytest.raises(RemoteProtocolError):
        UpdateResult.from_reply(reply)


# --- write errors ----------------------------------------------------------------------------

DUPLICATE = {
    "index": 0,
    "code": 11000,
    "errmsg": "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1 }",
    "keyPattern": {"_id": 1},
    "keyValue": {"_id": 1},
}


@pytest.mark.parametrize("code", [11000, 11001, 12582])
def test_duplicate_key_family(code: int) -> None:
    error = write_error_from_document({**DUPLICATE, "code": code})
    assert type(error) is DuplicateKeyError
    assert error.code == code and error.details["keyValue"] == {"_id": 1}
    assert error.details["keyPattern"] == {"_id": 1}
    assert error.errmsg.startswith("E11000")


def test_other_write_errors() -> None:
    error = write_error_from_document(
        {"index": 0, "code": 121, "codeName": "DocumentValidationFailure", "errmsg": "invalid"}
    )
    assert type(error) is WriteError and error.code_name == "DocumentValidationFailure"


def test_write_concern_error_labels_are_merged() -> None:
    error = write_concern_error_from_document(
        {"code": 64, "errmsg": "waiting for replication timed out", "errorLabels": ["A"]},
        {"errorLabels": ["B", "A"]},
    )
    assert isinstance(error, WriteConcernError) and error.code == 64
    assert error.error_labels == {"A", "B"}


def test_summary_maps_indexes_back_to_the_callers_list() -> None:
    summary = WriteSummary("insert")
    summary.add({"n": 2, "ok": 1}, offset=0)
    summary.add({"n": 1, "writeErrors": [{**DUPLICATE, "index": 1}], "ok": 1}, offset=3)
    summary.add(
        {"n": 2, "writeConcernError": {"code": 64, "errmsg": "wtimeout"}, "ok": 1}, offset=6
    )
    details = summary.details()
    assert details["nInserted"] == 5
    assert [e["index"] for e in details["writeErrors"]] == [4]
    assert details["writeConcernErrors"] == [{"code": 64, "errmsg": "wtimeout"}]
    error = summary.bulk_error()
    assert isinstance(error, BulkWriteError) and isinstance(error, ServerError)
    assert error.code == 65 and error.write_errors[0]["keyValue"] == {"_id": 1}
    assert len(error.write_concern_errors) == 1
    assert type(summary.single_error()) is DuplicateKeyError  # the write error comes first


def test_summary_of_updates_and_deletes() -> None:
    updates = WriteSummary("update")
    updates.add({"n": 2, "nModified": 1, "upserted": [{"index": 1, "_id": 9}], "ok": 1}, offset=10)
    assert updates.details()["upserted"] == [{"index": 11, "_id": 9}]
    assert (updates.details()["nMatched"], updates.details()["nUpserted"]) == (1, 1)
    deletes = WriteSummary("delete")
    deletes.add({"n": 3, "ok": 1}, offset=0)
    assert deletes.details()["nRemoved"] == 3 and deletes.bulk_error() is None
    assert deletes.single_error() is None


def test_summary_single_write_concern_error() -> None:
    summary = WriteSummary("delete")
    summary.add(
        {"n": 1, "writeConcernError": {"code": 79, "errmsg": "unknown mode"},
         "errorLabels": ["RetryableWriteError"], "ok": 1}
    )  # fmt: skip
    error = summary.single_error()
    assert type(error) is WriteConcernError and error.code == 79
    assert error.has_error_label("RetryableWriteError")


reply_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["index", "code", "_id", "errmsg", "x"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)
replies = st.dictionaries(
    st.sampled_from(
        ["n", "nModified", "upserted", "writeErrors", "writeConcernError", "errorLabels"]
    ),
    reply_values,
)


@given(replies, st.sampled_from(["insert", "update", "delete"]))
def test_any_reply_gives_a_summary_or_a_protocol_error(reply: dict[str, Any], command: str) -> None:
    summary = WriteSummary(command)
    try:
        summary.add(reply, offset=0)
    except RemoteProtocolError:
        return
    summary.details()
    for error in (summary.single_error(), summary.bulk_error()):
        assert error is None or isinstance(error, ServerError)
