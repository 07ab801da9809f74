"""Wrong-typed arguments are refused as PyMongo refuses them, before anything is sent.

Each call runs on PyMongo's client and on ours against the simulator: the exception must be
of the same class, read as PyMongo's (the first of PyMongo's or Python's classes in its MRO:
our errors derive from PyMongo's once it is loaded), no write command may have been sent
(the command listeners), and the collection is left as it was.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pymongo", reason="the comparison needs pymongo")

import bson.errors  # noqa: E402 - after the skip
import pymongo  # noqa: E402
import pymongo.errors  # noqa: E402
from pymongo import monitoring as pymongo_monitoring  # noqa: E402

import mongo_sansio.adapters.blocking as blocking  # noqa: E402
from mongo_sansio import monitoring  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402

WRITES = {"insert", "update", "delete", "findAndModify", "drop", "create", "createIndexes"}

_KNOWN = frozenset(
    value
    for module in (pymongo.errors, bson.errors, builtins)
    for value in vars(module).values()
    if isinstance(value, type) and issubclass(value, BaseException)
)


class Sent:
    """The names of the commands a client started (both libraries' listener protocols)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.lock = threading.Lock()

    def started(self, event: Any) -> None:
        with self.lock:
            self.names.append(event.command_name)

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


class PyMongoSent(Sent, pymongo_monitoring.CommandListener):
    pass


class OurSent(Sent, monitoring.CommandListener):
    pass


Call = Callable[[Any], Any]

#: (name, call on a collection holding {_id: 1}); each must raise on both clients
CALLS: list[tuple[str, Call]] = [
    ("delete_many_none", lambda c: c.delete_many(None)),
    ("delete_one_none", lambda c: c.delete_one(None)),
    ("delete_one_list", lambda c: c.delete_one([1])),
    ("update_one_none", lambda c: c.update_one(None, {"$set": {"x": 1}})),
    ("update_many_none", lambda c: c.update_many(None, {"$set": {"x": 1}})),
    ("update_many_str", lambda c: c.update_many("x", {"$set": {"x": 1}})),
    ("update_one_no_operator", lambda c: c.update_one({}, {"x": 1})),
    ("update_one_update_none", lambda c: c.update_one({}, None)),
    ("replace_one_none", lambda c: c.replace_one(None, {"x": 1})),
    ("replace_one_operator", lambda c: c.replace_one({}, {"$set": {"x": 1}})),
    ("replace_one_replacement_none", lambda c: c.replace_one({}, None)),
    ("find_one_and_update_none", lambda c: c.find_one_and_update(None, {"$set": {"x": 1}})),
    ("find_one_and_replace_none", lambda c: c.find_one_and_replace(None, {"x": 1})),
    ("find_one_and_delete_none", lambda c: c.find_one_and_delete(None)),
    ("insert_one_list", lambda c: c.insert_one([("a", 1)])),
    ("insert_one_none", lambda c: c.insert_one(None)),
    ("insert_many_none", lambda c: c.insert_many(None)),
    ("insert_many_empty", lambda c: c.insert_many([])),
    ("insert_many_a_dict", lambda c: c.insert_many({"a": 1})),
    ("bulk_write_not_a_list", lambda c: c.bulk_write(None)),
    ("find_filter_list", lambda c: list(c.find([1]))),
    ("count_documents_none", lambda c: c.count_documents(None)),
    ("distinct_key_int", lambda c: c.distinct(1)),
    ("aggregate_not_a_list", lambda c: list(c.aggregate({"$match": {}}))),
    ("create_index_none", lambda c: c.create_index(None)),
    # checked when find() / an option method is called, before the first document
    ("find_projection_int", lambda c: c.find({}, 1)),
    ("find_skip_str", lambda c: c.find(skip="x")),
    ("find_limit_str", lambda c: c.find(limit="x")),
    ("find_no_cursor_timeout_str", lambda c: c.find(no_cursor_timeout="x")),
    ("find_cursor_type_5", lambda c: c.find(cursor_type=5)),
    ("cursor_sort_int", lambda c: c.find().sort(1)),
    ("cursor_hint_int", lambda c: c.find().hint(1)),
    ("cursor_collation_int", lambda c: c.find().collation(1)),
    ("cursor_limit_str", lambda c: c.find().limit("x")),
    ("cursor_skip_negative", lambda c: c.find().skip(-1)),
    ("cursor_batch_size_negative", lambda c: c.find().batch_size(-1)),
    ("cursor_max_time_ms_str", lambda c: c.find().max_time_ms("x")),
    ("watch_pipeline_dict", lambda c: c.watch({})),
    ("database_watch_pipeline_dict", lambda c: c.database.watch({})),
    ("client_watch_pipeline_dict", lambda c: c.database.client.watch({})),
    ("database_command_int", lambda c: c.database.command(1)),
    ("database_create_collection_int", lambda c: c.database.create_collection(1)),
    ("database_get_collection_int", lambda c: c.database.get_collection(1)),
    ("client_get_database_int", lambda c: c.database.client.get_database(1)),
    ("client_drop_database_int", lambda c: c.database.client.drop_database(1)),
    ("rename_int", lambda c: c.rename(1)),
    ("insert_many_of_ints", lambda c: c.insert_many([1])),
    ("update_one_upsert_str", lambda c: c.update_one({}, {"$set": {"a": 1}}, upsert="x")),
    (
        "update_one_array_filters_int",
        lambda c: c.update_one({}, {"$set": {"a": 1}}, array_filters=1),
    ),
    (
        "find_one_and_update_sort_int",
        lambda c: c.find_one_and_update({}, {"$set": {"a": 1}}, sort=1),
    ),
    ("bulk_write_of_ints", lambda c: c.bulk_write([1])),
    ("bulk_write_empty", lambda c: c.bulk_write([])),
    ("with_options_write_concern_int", lambda c: c.with_options(write_concern=1)),
    ("aggregate_stage_int", lambda c: list(c.aggregate([1]))),
    ("drop_index_int", lambda c: c.drop_index(5)),
]


def _kind(error: BaseException) -> str:
    return next(cls.__name__ for cls in type(error).__mro__ if cls in _KNOWN)


def _outcome(client: Any, sent: Sent, call: Call) -> tuple[str, list[str], list[Any]]:
    coll = client.badargs.things
    coll.drop()
    coll.insert_one({"_id": 1})
    del sent.names[:]
    try:
        call(coll)
    except Exception as error:  # noqa: BLE001 - the outcome is the exception
        kind = _kind(error)
    else:
        kind = "returned"
    writes = [name for name in sent.names if name in WRITES]
    return kind, writes, list(coll.find())


@pytest.fixture(scope="module")
def both() -> Any:
    with SimulatedReplicaSet(members=1) as rs:
        theirs_sent, ours_sent = PyMongoSent(), OurSent()
        theirs = pymongo.MongoClient(rs.uri, event_listeners=[theirs_sent])
        ours = blocking.MongoClient(rs.uri, event_listeners=[ours_sent])
        try:
            yield (theirs, theirs_sent), (ours, ours_sent)
        finally:
            ours.close()
            theirs.close()


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_refused_as_pymongo_refuses(both: Any, name: str, call: Call) -> None:
    (theirs, theirs_sent), (ours, ours_sent) = both
    expected = _outcome(theirs, theirs_sent, call)
    assert expected[0] != "returned", f"PyMongo accepts {name}: not a bad-argument case"
    assert expected[1:] == ([], [{"_id": 1}])
    assert _outcome(ours, ours_sent, call) == expected


@pytest.mark.parametrize(
    "call",
    [
        lambda c: list(c.find(session="x")),
        lambda c: c.insert_one({"x": 1}, session="x"),
        lambda c: c.delete_many({}, session="x"),
    ],
    ids=["find", "insert_one", "delete_many"],
)
def test_a_session_that_is_not_one(both: Any, call: Call) -> None:
    """PyMongo 4.20 raises a raw AttributeError from inside these (its ValueError check is on
    other paths only); ours raises that ValueError, in its words, before sending anything (a
    deliberate difference, docs/migrating.md)."""
    (theirs, theirs_sent), (ours, ours_sent) = both
    assert _outcome(theirs, theirs_sent, call)[0] == "AttributeError"
    kind, writes, left = _outcome(ours, ours_sent, call)
    assert (kind, writes, left) == ("ValueError", [], [{"_id": 1}])
    with pytest.raises(ValueError, match="'session' argument must be a ClientSession or None"):
        call(ours.badargs.things)
