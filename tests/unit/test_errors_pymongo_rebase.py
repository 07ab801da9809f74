"""Once PyMongo is loaded, our errors are PyMongo's errors (adapters/_pymongo_errors.py).

``except pymongo.errors.DuplicateKeyError`` must catch what our client raises: Python's
``except`` walks the real MRO, so our classes are given PyMongo's as bases.  Checked here:
every pair, the first of PyMongo's classes in each MRO (the twin, as for PyMongo's own object),
every attribute of ours still resolving where it did without PyMongo (in a fresh interpreter,
in both orders PyMongo's modules can arrive), PyMongo's documented attributes on our objects,
pickling, and that PyMongo is never imported by us when the user's process has not loaded it.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from collections.abc import Callable

import pytest

pymongo_errors = pytest.importorskip("pymongo.errors", reason="the interop needs pymongo")

import bson.errors  # noqa: E402 - after the skip
import gridfs.errors  # noqa: E402

import mongo_sansio.bson.errors as our_bson_errors  # noqa: E402
import mongo_sansio.errors as ours  # noqa: E402
from mongo_sansio.adapters._pymongo_errors import (  # noqa: E402
    adopt_pymongo_errors,
    pymongo_twins,
)
from mongo_sansio.cmap.errors import PoolClearedError, WaitQueueTimeoutError  # noqa: E402
from mongo_sansio.gridfs.errors import CorruptGridFile, FileExists, NoFile  # noqa: E402
from mongo_sansio.selection.errors import ServerSelectionTimeoutError  # noqa: E402

adopt_pymongo_errors()

TWINS = pymongo_twins()


@pytest.mark.parametrize(("mine", "theirs"), TWINS, ids=lambda c: c.__name__)
def test_each_class_is_caught_by_pymongos_twin(
    mine: type[BaseException], theirs: type[BaseException]
) -> None:
    assert issubclass(mine, theirs)
    # the first class of the MRO that is not ours is the twin: a normal form (or a reader of
    # the MRO) sees PyMongo's name, not an ancestor's or ValueError
    first = next(c for c in mine.__mro__ if not c.__module__.startswith("mongo_sansio"))
    assert first is theirs


_PROBE = r"""
import json, sys
import mongo_sansio.adapters.blocking  # the client module: triggers the adoption
import mongo_sansio.errors as E
assert "pymongo" not in sys.modules and "bson.errors" not in sys.modules, "imported by us"

def classes():
    seen, todo = {}, [E._Root]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("mongo_sansio") and sub not in seen.values():
                seen[f"{sub.__module__}.{sub.__qualname__}"] = sub
                todo.append(sub)
    return seen

CLASSES = classes()

def owners():
    meta = {"__module__", "__doc__", "__qualname__", "__annotations__", "__dict__",
            "__weakref__", "__firstlineno__", "__static_attributes__"}
    table = {}
    for name, cls in CLASSES.items():
        found = {}
        for base in cls.__mro__:
            for attr in vars(base):
                if attr not in meta:
                    found.setdefault(attr, f"{base.__module__}.{base.__qualname__}")
        table[name] = found
    return table

before = owners()
for module in sys.argv[1:]:
    __import__(module)
    from mongo_sansio.adapters._pymongo_errors import adopt_pymongo_errors
    adopt_pymongo_errors()
after = owners()
changed = [
    (cls, attr, owner, after[cls][attr])
    for cls, table in before.items()
    for attr, owner in table.items()
    if after[cls][attr] != owner
]
import pymongo.errors
print(json.dumps({"changed": changed,
                  "pymongo": issubclass(E.DuplicateKeyError, pymongo.errors.DuplicateKeyError)}))
"""


@pytest.mark.parametrize(
    "arrival", [["pymongo"], ["bson", "pymongo"], ["bson.errors", "gridfs"]], ids="+".join
)
def test_our_attributes_resolve_where_they_did_without_pymongo(arrival: list[str]) -> None:
    """In a fresh interpreter: nothing of PyMongo's is imported by ours, and once PyMongo's
    modules arrive (in either order) every attribute of every one of our exception classes
    (``__init__``, ``code``, ``details``, ``timeout``, ``has_error_label``...) is still ours."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *arrival],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome == {"changed": [], "pymongo": True}


def test_pymongos_except_catches_an_error_built_from_a_reply() -> None:
    reply = {
        "ok": 0,
        "code": 11000,
        "codeName": "DuplicateKey",
        "errmsg": "E11000 duplicate key error",
        "keyValue": {"_id": 1},
        "errorLabels": ["Label"],
    }
    with pytest.raises(pymongo_errors.DuplicateKeyError) as caught:
        raise ours.server_error_from_reply(reply)
    error = caught.value
    assert isinstance(error, pymongo_errors.PyMongoError | pymongo_errors.WriteError)
    assert (error.code, error.details["keyValue"], error.timeout) == (11000, {"_id": 1}, False)
    assert error.has_error_label("Label") and error.error_labels == {"Label"}
    error._add_error_label("More")
    error._remove_error_label("Label")
    assert error.error_labels == {"More"} and not error.has_error_label("Label")
    assert str(error).startswith("E11000 duplicate key error")
    assert error._message == str(error)


def _bulk() -> ours.BulkWriteError:
    details = {
        "writeErrors": [{"index": 0, "code": 11000, "errmsg": "E11000"}],
        "writeConcernErrors": [],
        "nInserted": 0,
    }
    return ours.BulkWriteError(details, error_labels=["L"])


#: an instance of each class, built as the library builds it
INSTANCES: dict[str, Callable[[], BaseException]] = {
    "PyMongoError": lambda: ours.MongoError("m"),
    "ProtocolError": lambda: ours.ProtocolError("bad bytes"),
    "ConfigurationError": lambda: ours.ConfigurationError("bad option"),
    "InvalidURI": lambda: ours.InvalidURI("bad uri"),
    "InvalidName": lambda: ours.InvalidName("bad name"),
    "InvalidOperation": lambda: ours.InvalidOperation("not now"),
    "CollectionInvalid": lambda: ours.CollectionInvalid("exists"),
    "DocumentTooLarge": lambda: ours.DocumentTooLarge("too big", index=1, size=9, limit=8),
    "OperationFailure": lambda: ours.OperationFailure("failed", 2, {"ok": 0, "code": 2}),
    "WriteError": lambda: ours.WriteError("failed", 121, {"code": 121}),
    "DuplicateKeyError": lambda: ours.DuplicateKeyError("dup", 11000, {"keyValue": {"a": 1}}),
    "WriteConcernError": lambda: ours.WriteConcernError("wc", 64, {"code": 64}),
    "WTimeoutError": lambda: ours.WTimeoutError("wc", 64, {"code": 64}),
    "BulkWriteError": _bulk,
    "ClientBulkWriteException": lambda: ours.ClientBulkWriteException(
        {"writeErrors": [], "writeConcernErrors": [], "anySuccessful": False, "error": None}
    ),
    "ExecutionTimeout": lambda: ours.ExecutionTimeout("slow", 50, {"code": 50}),
    "CursorNotFound": lambda: ours.CursorNotFound("gone", 43, {"code": 43}),
    "ConnectionFailure": lambda: ours.ConnectionFailure("down"),
    "AutoReconnect": lambda: ours.NetworkError("reset"),
    "NotPrimaryError": lambda: ours.NotPrimaryError("not primary", 10107, {"code": 10107}),
    "NetworkTimeout": lambda: ours.NetworkTimeout("slow"),
    "ServerSelectionTimeoutError": lambda: ServerSelectionTimeoutError("no server"),
    "WaitQueueTimeoutError": lambda: WaitQueueTimeoutError("h:1"),
    "GridFSError": lambda: NoFile("no file"),
    "CorruptGridFile": lambda: CorruptGridFile("short chunk"),
    "NoFile": lambda: NoFile("no file"),
    "FileExists": lambda: FileExists("taken"),
    "InvalidBSON": lambda: our_bson_errors.InvalidBSON("bad", 4),
    "InvalidDocument": lambda: ours.InvalidDocument("bad", "a.b"),
    "InvalidId": lambda: our_bson_errors.InvalidId("not an id"),
    "BSONError": lambda: our_bson_errors.UnencodableType("no codec"),
}

_MODULES = (pymongo_errors, bson.errors, gridfs.errors)


def _pymongo_class(name: str) -> type[BaseException]:
    return next(getattr(m, name) for m in _MODULES if hasattr(m, name))


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_pymongos_public_attributes_on_our_instances(name: str) -> None:
    """Every attribute PyMongo's class offers publicly answers on our object (ours, not a
    leftover of PyMongo's __init__, which never ran), and the object pickles."""
    error = INSTANCES[name]()
    theirs = _pymongo_class(name)
    assert isinstance(error, theirs)
    public = {
        attr
        for cls in theirs.__mro__
        if cls.__module__.split(".")[0] in ("pymongo", "bson", "gridfs")
        for attr in vars(cls)
        if not attr.startswith("_")
    }
    for attr in sorted(public):
        getattr(error, attr)  # raises if PyMongo's property reads state we never set
    assert str(error)
    if isinstance(error, pymongo_errors.PyMongoError):
        assert error.timeout in (True, False)
        assert error.has_error_label("nothing") is False
    if isinstance(error, pymongo_errors.OperationFailure):
        assert error.code is not None and error.details is not None
    again = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes
    assert type(again) is type(error) and str(again) == str(error)


def test_attributes_as_pymongo_gives_them() -> None:
    bulk = _bulk()
    assert bulk.details["nInserted"] == 0 and bulk.write_errors[0]["code"] == 11000
    assert bulk.code == 65 and bulk.has_error_label("L")
    assert pickle.loads(pickle.dumps(bulk)).error_labels == {"L"}  # noqa: S301
    network = ours.NetworkError("reset")
    assert network.errors == [] and network.details == []
    not_primary = ours.NotPrimaryError("x", 10107, {"code": 10107})
    assert not_primary.errors == not_primary.details == {"code": 10107}
    assert isinstance(not_primary, pymongo_errors.AutoReconnect)
    assert ours.ExecutionTimeout("x", 50).timeout and ours.NetworkTimeout("x").timeout
    assert WaitQueueTimeoutError("h:1").timeout and ServerSelectionTimeoutError("x").timeout
    assert not ours.OperationFailure("x", 2).timeout
    assert ours.InvalidDocument("bad").document is None
    cleared = PoolClearedError("h:1")  # no twin: still a PyMongoError, labels kept
    assert isinstance(cleared, pymongo_errors.PyMongoError)
    assert cleared.has_error_label("RetryableWriteError")
    refused = ours.AuthenticationError("auth failed", code=18)
    assert isinstance(refused, pymongo_errors.OperationFailure)
    assert (refused.code, refused.details) == (18, None)
    assert isinstance(ours.IncompatibleServerError("old"), pymongo_errors.ConfigurationError)


def test_codec_errors_are_bsons() -> None:
    from mongo_sansio.bson import ObjectId, decode, encode

    with pytest.raises(bson.errors.InvalidId):
        ObjectId("nope")
    with pytest.raises(bson.errors.InvalidBSON):
        decode(b"\x05\x00\x00\x00\x01")
    with pytest.raises(bson.errors.InvalidDocument):
        encode({"a": object()})


def test_adoption_is_idempotent() -> None:
    bases = {mine: mine.__bases__ for mine, _ in TWINS}
    adopt_pymongo_errors()
    assert {mine: mine.__bases__ for mine, _ in TWINS} == bases


def test_without_pymongo_our_errors_stay_ours() -> None:
    """An interpreter that never loads PyMongo: our tree as it is, nothing of PyMongo's."""
    code = (
        "import sys, mongo_sansio.adapters.blocking as b, mongo_sansio.errors as E\n"
        "b.MongoClient\n"
        "assert E.MongoError.__bases__ == (E._Root,), E.MongoError.__bases__\n"
        "assert not any(m.split('.')[0] in ('pymongo', 'bson', 'gridfs') for m in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_every_name_we_share_with_pymongo_is_its_subclass() -> None:
    """Not only the table's pairs: any exception class we export under a name PyMongo's
    ``pymongo.errors`` / ``bson.errors`` / ``gridfs.errors`` also exports is its subclass."""
    import mongo_sansio.gridfs.errors as our_gridfs_errors

    pairs = [
        (ours, pymongo_errors),
        (our_bson_errors, bson.errors),
        (our_gridfs_errors, gridfs.errors),
        (ours, bson.errors),
    ]
    missing = []
    for mine, theirs in pairs:
        for name in getattr(mine, "__all__", ()):
            ours_class, their_class = getattr(mine, name, None), getattr(theirs, name, None)
            if not (isinstance(ours_class, type) and isinstance(their_class, type)):
                continue
            if issubclass(their_class, BaseException) and not issubclass(ours_class, their_class):
                missing.append(f"{mine.__name__}.{name}")
    assert missing == []
