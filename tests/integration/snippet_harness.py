"""The harness of test_pymongo_snippets.py: one namespace of PyMongo's public names per client,
and a normal form of whatever a snippet returns or raises, so that PyMongo's outcome and ours
compare with ``==``.

A snippet is written once against a namespace ``ns``: PyMongo's is built from ``pymongo`` and
``bson``, ours from ``mongo_sansio.adapters.blocking``, ``mongo_sansio.bson`` and
``mongo_sansio.errors``, under the same names, so that a snippet reads as code moved over from
PyMongo by changing its imports.  The normal form keeps what a caller can observe (values,
document key order, result counts, exception classes by PyMongo's name and server codes) and
drops what legitimately differs between two runs (generated ObjectIds become their order of
first appearance).
"""

from __future__ import annotations

import builtins
import datetime
import re
import time
import types
import uuid
from collections.abc import Callable, Mapping
from typing import Any, overload

import bson
import bson.codec_options
import bson.errors
import bson.raw_bson
import bson.son
import gridfs
import pymongo
import pymongo.errors
import pymongo.read_concern
import pytest

import mongo_sansio.adapters.blocking as blocking
import mongo_sansio.adapters.blocking.gridfs as our_gridfs
import mongo_sansio.bson as our_bson
import mongo_sansio.bson.codec_options as our_codec_options
import mongo_sansio.errors as our_errors

#: the exception classes a normal form may name: PyMongo's and Python's own
_PYMONGO_ERROR_NAMES = frozenset(
    name
    for name, value in vars(pymongo.errors).items()
    if isinstance(value, type) and issubclass(value, BaseException)
) | frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)

#: the exception classes themselves, for the strict normal form
_PYMONGO_ERROR_CLASSES = frozenset(
    value
    for module in (pymongo.errors, builtins, bson.errors)
    for value in vars(module).values()
    if isinstance(value, type) and issubclass(value, BaseException)
)

#: our class names that are PyMongo's under another name; a SON (a dict that keeps PyMongo's
#: index documents in order) equals the dict ours gives, so the name is not compared: snippets
#: that ask for ``document_class=SON`` compare the type's name themselves
_SAME_TYPE = {"RawDocument": "RawBSONDocument", "RawArray": "list", "SON": "dict"}

#: the names every snippet may use; both namespaces define each of them
_COMMON_NAMES = (
    "MongoClient",
    "ReturnDocument",
    "InsertOne",
    "UpdateOne",
    "UpdateMany",
    "ReplaceOne",
    "DeleteOne",
    "DeleteMany",
    "IndexModel",
    "WriteConcern",
    "ReadPreference",
    "ASCENDING",
    "DESCENDING",
)
_BSON_NAMES = (
    "ObjectId",
    "Int64",
    "Decimal128",
    "Regex",
    "Binary",
    "Timestamp",
    "MinKey",
    "MaxKey",
    "Code",
    "DBRef",
)


def pymongo_namespace() -> types.SimpleNamespace:
    """PyMongo's names, as ``from pymongo import ...`` / ``from bson import ...`` give them."""
    ns = types.SimpleNamespace(side="pymongo", errors=pymongo.errors, SON=bson.son.SON)
    for name in _COMMON_NAMES:
        setattr(ns, name, getattr(pymongo, name))
    for name in _BSON_NAMES:
        setattr(ns, name, getattr(bson, name))
    ns.ReadConcern = pymongo.read_concern.ReadConcern
    ns.RawBSONDocument = bson.raw_bson.RawBSONDocument
    ns.CodecOptions = bson.codec_options.CodecOptions
    ns.UuidRepresentation = bson.binary.UuidRepresentation
    ns.CollectionInvalid = pymongo.errors.CollectionInvalid
    ns.gridfs = gridfs
    return ns


def ours_namespace() -> types.SimpleNamespace:
    """Ours under PyMongo's names: the imports a user changes when moving code over."""
    ns = types.SimpleNamespace(side="ours", errors=our_errors, SON=bson.son.SON)
    for name in _COMMON_NAMES:
        setattr(ns, name, getattr(blocking, name))
    for name in _BSON_NAMES:
        setattr(ns, name, getattr(our_bson, name))
    ns.ReadConcern = blocking.ReadConcern
    ns.RawBSONDocument = our_bson.RawDocument
    ns.CodecOptions = our_codec_options.CodecOptions
    ns.UuidRepresentation = our_codec_options.UuidRepresentation
    ns.CollectionInvalid = blocking.CollectionInvalid
    ns.gridfs = our_gridfs
    return ns


def _regex_flags(flags: int | str) -> str:
    """A Regex's flags as BSON spells them (PyMongo keeps ``re`` bits, ours the letters)."""
    if isinstance(flags, str):
        return "".join(sorted(flags))
    letters = {
        re.IGNORECASE: "i",
        re.LOCALE: "l",
        re.MULTILINE: "m",
        re.DOTALL: "s",
        re.UNICODE: "u",
        re.VERBOSE: "x",
    }
    return "".join(sorted(letter for bit, letter in letters.items() if flags & bit))


class Normaliser:
    """Turns an outcome into plain tuples, lists and scalars; one instance per outcome, because
    ObjectIds are numbered in their order of first appearance."""

    def __init__(self, *, strict: bool = False) -> None:
        self._object_ids: dict[str, int] = {}
        #: strict: values are told apart by their class's package too (PyMongo's ``bson``
        #: ObjectId is not ours), and exceptions must be instances of PyMongo's own classes
        self.strict = strict

    def _kind(self, name: str, value: Any) -> str:
        if not self.strict:
            return name
        return f"{type(value).__module__.partition('.')[0]}.{name}"

    def __call__(self, value: Any) -> Any:  # noqa: C901, PLR0911, PLR0912 - a type switch
        name = type(value).__name__
        if value is None or type(value) in (bool, str):
            return value
        if isinstance(value, int):
            if self.strict and type(value) is not int:
                return (self._kind(name, value), int(value), str(value))
            return int(value)
        if isinstance(value, float):
            return ("float", value)
        if isinstance(value, bytes | bytearray | memoryview) and name in (
            "bytes",
            "bytearray",
            "memoryview",
        ):
            return ("bytes", bytes(value))
        if name == "ObjectId":
            ordinal = self._object_ids.setdefault(str(value), len(self._object_ids))
            return (self._kind("ObjectId", value), ordinal)
        if isinstance(value, BaseException):
            return self.exception(value)
        if isinstance(value, datetime.datetime):
            return ("datetime", value.isoformat(), value.tzinfo is not None)
        if isinstance(value, uuid.UUID):
            return ("UUID", str(value))
        if isinstance(value, re.Pattern):
            return ("Pattern", value.pattern, value.flags & ~re.UNICODE)
        kind = self._kind(name, value)
        if name in ("Decimal128", "Int64"):
            return (kind, str(value))
        if name == "Regex":
            flags = value.flags if self.strict else _regex_flags(value.flags)
            return (kind, value.pattern, flags)
        if name == "Binary":
            return (kind, value.subtype, bytes(value))
        if name == "Timestamp":
            return (kind, value.time, value.inc)
        if name in ("MinKey", "MaxKey"):
            return (kind,)
        if name == "Code":
            return (kind, str(value), self(value.scope))
        if name == "DBRef":
            return (kind, value.collection, self(value.id), value.database)
        if isinstance(value, Mapping) or name in ("RawDocument", "RawBSONDocument"):
            shown = kind if self.strict else _SAME_TYPE.get(name, name)
            return ("doc", shown, [(k, self(v)) for k, v in value.items()])
        if isinstance(value, list | tuple) or name == "RawArray":
            return [self(v) for v in value]
        if isinstance(value, set | frozenset):
            return ("set", sorted((self(v) for v in value), key=repr))
        if name.endswith("Result"):
            return self.result(value)
        return ("object", self._kind(name, value) if self.strict else _SAME_TYPE.get(name, name))

    def result(self, value: Any) -> Any:
        """A write result by the attributes PyMongo gives it; an attribute that raises (an
        unacknowledged count) is the exception's normal form."""
        fields = []
        for attribute in (
            "acknowledged",
            "inserted_id",
            "inserted_ids",
            "inserted_count",
            "matched_count",
            "modified_count",
            "deleted_count",
            "upserted_count",
            "upserted_id",
            "upserted_ids",
        ):
            try:
                got = getattr(value, attribute)
            except AttributeError:
                continue
            except Exception as exc:  # noqa: BLE001 - the outcome is the exception
                fields.append((attribute, self.exception(exc)))
                continue
            fields.append((attribute, self(got)))
        return (type(value).__name__, fields)

    def exception(self, exc: BaseException) -> Any:
        """An exception by the first class of its MRO that PyMongo (or Python) names, with its
        server code when it has one."""
        if self.strict:
            # the first class of the MRO that is PyMongo's (or Python's) own: ``except
            # pymongo.errors.X`` must catch what our client raises
            pymongo_name = next(
                (cls.__name__ for cls in type(exc).__mro__ if cls in _PYMONGO_ERROR_CLASSES),
                f"not PyMongo's: {type(exc).__module__}.{type(exc).__name__}",
            )
            return ("raised", pymongo_name, getattr(exc, "code", None))
        pymongo_name = next(
            (cls.__name__ for cls in type(exc).__mro__ if cls.__name__ in _PYMONGO_ERROR_NAMES),
            type(exc).__name__,
        )
        return ("raised", pymongo_name, getattr(exc, "code", None))


def outcome(snippet: Callable[..., Any], *args: Any, strict: bool = False) -> Any:
    """The normal form of what ``snippet(*args)`` returns, or of what it raises (``strict``:
    see Normaliser)."""
    normalise = Normaliser(strict=strict)
    try:
        return normalise(snippet(*args))
    except Exception as exc:  # noqa: BLE001 - the outcome is the exception
        return normalise.exception(exc)


# --- the registry of snippets --------------------------------------------------------------------

DB = "snippets"

Snippet = Callable[[Any, Any], Any]
SNIPPETS: list[Any] = []


@overload
def snippet(fn: Snippet, *, simulator_gap: None = None, ours_gap: None = None) -> Snippet: ...
@overload
def snippet(
    fn: None = None, *, simulator_gap: str | None = None, ours_gap: str | None = None
) -> Callable[[Snippet], Snippet]: ...
def snippet(
    fn: Snippet | None = None, *, simulator_gap: str | None = None, ours_gap: str | None = None
) -> Snippet | Callable[[Snippet], Snippet]:
    """Register a snippet; ``simulator_gap`` names what the simulator lacks for it,
    ``ours_gap`` what our client still does differently (an expected failure, strict)."""

    def register(fn: Snippet) -> Snippet:
        marks = [pytest.mark.xfail(strict=True, reason=ours_gap)] if ours_gap else []
        SNIPPETS.append(pytest.param(fn, simulator_gap, id=fn.__name__, marks=marks))
        return fn

    return register(fn) if fn is not None else register


def seeded(client: Any, n: int = 6, name: str = "things") -> Any:
    """A collection holding ``{_id: i, x: i, tag: even|odd}`` for i < n."""
    coll = client[DB][name]
    if n:
        coll.insert_many(
            [{"_id": i, "x": i, "tag": "even" if i % 2 == 0 else "odd"} for i in range(n)]
        )
    return coll


def applied(client: Any, document: Mapping[str, Any], seconds: float = 5.0) -> None:
    """Wait until ``DB.things`` holds ``document`` (by its _id, all fields equal): an
    unacknowledged write lands when the server gets to it, and one landing after the next
    snippet's drop_database would leave that snippet a document it did not write."""
    things = client[DB].things
    deadline = time.monotonic() + seconds
    while things.find_one({"_id": document["_id"]}) != document:
        if time.monotonic() > deadline:
            raise AssertionError(f"the unacknowledged writes did not leave {document!r}")
        time.sleep(0.01)
