"""PyMongo's exception names and tree in mongo_sansio.errors, checked against the installed pymongo.

Code moved over from PyMongo by changing its imports must catch what it caught before: the
subclass relations between the names both libraries have are compared pairwise with
``pymongo.errors`` (two documented differences), and errors built from server replies are
caught by PyMongo's ``except`` clauses.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import mongo_sansio.errors as ours
from mongo_sansio.cmap.errors import PoolClearedError, WaitQueueTimeoutError
from mongo_sansio.errors import (
    AutoReconnect,
    BulkWriteError,
    ConfigurationError,
    ConnectionFailure,
    CursorNotFound,
    DocumentTooLarge,
    DuplicateKeyError,
    ExecutionTimeout,
    InvalidDocument,
    InvalidName,
    MongoError,
    NetworkError,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    PyMongoError,
    ServerError,
    WriteConcernError,
    WriteError,
    WTimeoutError,
    server_error_from_reply,
)
from mongo_sansio.ops.collection import check_collection_name, check_database_name
from mongo_sansio.ops.write_errors import WriteSummary, write_concern_error_from_document
from mongo_sansio.selection.errors import ServerSelectionTimeoutError

theirs = pytest.importorskip("pymongo.errors", reason="the differential tests need pymongo")

# (subclass, base) pairs where we differ from PyMongo on purpose (see mongo_sansio/errors.py).
DELIBERATE = {
    ("NotPrimaryError", "OperationFailure"),  # it is a server reply, with code and details
    ("InvalidName", "ConfigurationError"),  # names were refused with ConfigurationError before
    # every error the library raises is a MongoError; PyMongo's codec errors are not
    ("InvalidDocument", "PyMongoError"),
    ("DocumentTooLarge", "PyMongoError"),
}

# PyMongo's public exception names that we do not have, each with the reason.
ABSENT = {
    "EncryptionError": "no client-side field level encryption",
    "EncryptedCollectionError": "no client-side field level encryption",
}


def _exception_classes(module: Any) -> dict[str, type[BaseException]]:
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ != "builtins"
    }


def _ours() -> dict[str, type[BaseException]]:
    return {
        name: getattr(ours, name) for name in ours.__all__ if inspect.isclass(getattr(ours, name))
    }


def test_we_have_every_pymongo_exception_name_but_the_listed_ones() -> None:
    missing = set(_exception_classes(theirs)) - set(_ours())
    assert missing == set(ABSENT)


@pytest.mark.parametrize("name", sorted(set(_exception_classes(theirs)) - set(ABSENT)))
def test_subclass_relations_match_pymongo(name: str) -> None:
    mine, pymongo_classes = _ours(), _exception_classes(theirs)
    for base in sorted(set(mine) & set(pymongo_classes)):
        expected = issubclass(pymongo_classes[name], pymongo_classes[base])
        if (name, base) in DELIBERATE:
            assert not expected and issubclass(mine[name], mine[base])
            continue
        assert issubclass(mine[name], mine[base]) == expected, f"{name} vs {base}"


def test_aliases_and_lazy_exports() -> None:
    assert PyMongoError is MongoError and ServerError is OperationFailure
    assert ours.ServerSelectionTimeoutError is ServerSelectionTimeoutError
    assert ours.WaitQueueTimeoutError is WaitQueueTimeoutError
    namespace: dict[str, Any] = {}
    exec("from mongo_sansio.errors import *", namespace)
    assert set(ours.__all__) <= set(namespace)
    with pytest.raises(AttributeError):
        ours.__getattr__("NoSuchError")


# --- timeout, as PyMongo computes it ---------------------------------------------------------


def test_timeout_matches_pymongo() -> None:
    wtimeout = {"code": 64, "errmsg": "waiting", "errInfo": {"wtimeout": True}}
    pairs: list[tuple[BaseException, BaseException]] = [
        (OperationFailure("x", 50), theirs.OperationFailure("x", 50)),
        (OperationFailure("x", 2), theirs.OperationFailure("x", 2)),
        (ExecutionTimeout("x", 2), theirs.ExecutionTimeout("x", 2)),
        (WTimeoutError("x", 64), theirs.WTimeoutError("x", 64)),
        (WriteConcernError("x", 64), theirs.WriteConcernError("x", 64)),
        (NetworkTimeout("x"), theirs.NetworkTimeout("x")),
        (NetworkError("x"), theirs.AutoReconnect("x")),
        (NotPrimaryError("x", 10107), theirs.NotPrimaryError("x")),
    ]
    for details in (
        {"writeConcernErrors": [wtimeout]},
        {"writeConcernErrors": [wtimeout, {"code": 79}]},
        {"writeErrors": [{"index": 0, "code": 50}]},
        {"writeErrors": [{"index": 0, "code": 11000}]},
    ):
        pairs.append((BulkWriteError(details), theirs.BulkWriteError(details)))
    for mine, pymongo_error in pairs:
        assert mine.timeout is pymongo_error.timeout, repr(mine)  # type: ignore[attr-defined]
    assert ServerSelectionTimeoutError("x").timeout and WaitQueueTimeoutError("h:1").timeout


# --- typed errors from replies ----------------------------------------------------------------


def test_duplicate_key_reply_is_caught_as_write_error() -> None:
    reply = {"ok": 0, "code": 11000, "errmsg": "E11000 duplicate key", "codeName": "DuplicateKey"}
    with pytest.raises(WriteError) as caught:
        raise server_error_from_reply(reply)
    assert type(caught.value) is DuplicateKeyError
    assert (caught.value.code, caught.value.code_name) == (11000, "DuplicateKey")
    assert caught.value.details is reply


def test_duplicate_key_write_error_is_caught_as_write_error() -> None:
    write_error = {"index": 0, "code": 11000, "errmsg": "E11000", "keyValue": {"_id": 5}}
    summary = WriteSummary(command="insert")
    summary.add({"n": 0, "writeErrors": [write_error], "ok": 1})
    single = summary.single_error()  # what insert_one raises
    assert single is not None
    with pytest.raises(WriteError) as caught:
        raise single
    assert type(caught.value) is DuplicateKeyError and caught.value.details["keyValue"] == {
        "_id": 5
    }
    summary.add({"n": 1, "writeErrors": [{**write_error, "code": 121}], "ok": 1}, offset=1)
    bulk = summary.bulk_error()  # what insert_many raises
    assert isinstance(bulk, OperationFailure) and not isinstance(bulk, WriteError)


@pytest.mark.parametrize(
    ("code", "kind"),
    [(50, ExecutionTimeout), (43, CursorNotFound), (10107, NotPrimaryError), (2, OperationFailure)],
)
def test_reply_codes_give_pymongo_classes(code: int, kind: type[OperationFailure]) -> None:
    error = server_error_from_reply({"ok": 0, "code": code, "errmsg": "e"})
    assert type(error) is kind and isinstance(error, PyMongoError)
    assert isinstance(error, AutoReconnect) == (code == 10107)


def test_write_concern_timeout_is_a_wtimeout_error() -> None:
    timed_out = {
        "code": 64,
        "codeName": "WriteConcernFailed",
        "errmsg": "waiting for replication",
        "errInfo": {"wtimeout": True},
    }
    error = write_concern_error_from_document(timed_out)
    assert type(error) is WTimeoutError and error.timeout and isinstance(error, WriteConcernError)
    assert type(write_concern_error_from_document({"code": 50, "errmsg": "x"})) is WTimeoutError
    other = write_concern_error_from_document({"code": 64, "errmsg": "x", "errInfo": {}})
    assert type(other) is WriteConcernError and not other.timeout
    summary = WriteSummary(command="insert")
    summary.add({"n": 1, "ok": 1, "writeConcernError": timed_out}, offset=0)
    assert type(summary.single_error()) is WTimeoutError


def test_network_and_selection_errors_are_auto_reconnect() -> None:
    for error in (NetworkError("reset"), NetworkTimeout("slow"), ServerSelectionTimeoutError("x")):
        with pytest.raises(AutoReconnect):
            raise error
    assert isinstance(WaitQueueTimeoutError("h:1"), ConnectionFailure)
    assert not isinstance(WaitQueueTimeoutError("h:1"), AutoReconnect)


# --- error labels on every error -----------------------------------------------------------------


def test_labels_can_be_added_to_a_network_error() -> None:
    error = NetworkError("connection reset")
    assert error.error_labels == frozenset() and not error.has_error_label("RetryableWriteError")
    error._add_error_label("RetryableWriteError")
    error._add_error_label("RetryableWriteError")
    assert error.error_labels == {"RetryableWriteError"}
    assert error.has_error_label("RetryableWriteError")
    assert NetworkError("other").error_labels == frozenset()  # not shared through the class
    error._remove_error_label("RetryableWriteError")
    error._remove_error_label("absent")
    assert not error.has_error_label("RetryableWriteError")


def test_labels_of_server_errors() -> None:
    reply = {"ok": 0, "code": 91, "errmsg": "x", "errorLabels": ["RetryableWriteError", 3]}
    error = server_error_from_reply(reply)
    assert error.error_labels == {"RetryableWriteError"}
    error._add_error_label("NoWritesPerformed")
    assert error.has_error_label("NoWritesPerformed")
    # PyMongo's constructor takes the labels from details; an explicit list wins.
    assert OperationFailure("x", 1, {"errorLabels": ["A"]}).error_labels == {"A"}
    assert (
        ServerError("x", code=1, details={"errorLabels": ["A"]}, error_labels=[]).error_labels
        == set()
    )
    assert PyMongoError("x", error_labels=["B"]).has_error_label("B")
    assert InvalidDocument("bad").error_labels == frozenset()


def test_pool_errors_keep_their_labels() -> None:
    cleared = PoolClearedError("h:1")
    assert cleared.has_error_label("RetryableWriteError")
    cleared._remove_error_label("RetryableWriteError")
    assert cleared.error_labels == frozenset()


# --- configuration and documents --------------------------------------------------------------------


def test_bad_names_raise_invalid_name() -> None:
    for check, name in ((check_collection_name, "a$b"), (check_database_name, "a.b")):
        with pytest.raises(InvalidName):
            check(name)
        with pytest.raises(ConfigurationError):
            check(name)


def test_document_too_large_is_an_invalid_document_with_its_own_message() -> None:
    error = DocumentTooLarge("documents[3] is 1001 bytes", index=3, size=1001, limit=1000)
    assert isinstance(error, InvalidDocument) and isinstance(error, ValueError)
    assert str(error) == "documents[3] is 1001 bytes"
    assert (error.index, error.size, error.limit, error.path) == (3, 1001, 1000, "")
