"""Differential tests: PyMongo's bson (a test dependency only) as an independent oracle.

For generated documents of the types both libraries share, our bytes equal PyMongo's bytes, and
our decode of PyMongo's bytes equals the original.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson_strategies import documents, shared_scalars
from hypothesis import given, settings

from mongo_sansio.bson import (
    Binary,
    Code,
    DBRef,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Timestamp,
    decode,
    encode,
)

pymongo_bson = pytest.importorskip("bson", reason="PyMongo (the test oracle) is not installed")
from bson import binary as pm_binary  # noqa: E402
from bson import code as pm_code  # noqa: E402
from bson import dbref as pm_dbref  # noqa: E402
from bson import decimal128 as pm_decimal128  # noqa: E402
from bson import int64 as pm_int64  # noqa: E402
from bson import max_key as pm_max_key  # noqa: E402
from bson import min_key as pm_min_key  # noqa: E402
from bson import objectid as pm_objectid  # noqa: E402
from bson import regex as pm_regex  # noqa: E402
from bson import timestamp as pm_timestamp  # noqa: E402

shared_documents = documents(shared_scalars)


def to_pymongo(value: Any) -> Any:
    """The same value built from PyMongo's classes."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, Int64):
        return pm_int64.Int64(value)
    if isinstance(value, Binary):
        return pm_binary.Binary(bytes(value), value.subtype)
    if isinstance(value, Code):
        scope = None if value.scope is None else to_pymongo(value.scope)
        return pm_code.Code(str(value), scope)
    if isinstance(value, ObjectId):
        return pm_objectid.ObjectId(value.binary)
    if isinstance(value, Regex):
        return pm_regex.Regex(value.pattern, value.flags)
    if isinstance(value, Timestamp):
        return pm_timestamp.Timestamp(value.time, value.inc)
    if isinstance(value, Decimal128):
        return pm_decimal128.Decimal128.from_bid(value.bid)
    if isinstance(value, MinKey):
        return pm_min_key.MinKey()
    if isinstance(value, MaxKey):
        return pm_max_key.MaxKey()
    if isinstance(value, DBRef):
        return pm_dbref.DBRef(
            value.collection, to_pymongo(value.id), value.database,
            **{k: to_pymongo(v) for k, v in value.extra.items()},
        )
    if isinstance(value, dict):
        return {key: to_pymongo(item) for key, item in value.items()}
    if isinstance(value, list):
        return [to_pymongo(item) for item in value]
    if isinstance(value, datetime.datetime | str | bytes | int | float):
        return value
    raise AssertionError(f"no PyMongo counterpart for {type(value)}")


@settings(max_examples=400, deadline=None)
@given(shared_documents)
def test_our_bytes_equal_pymongos(document: dict[str, Any]) -> None:
    document.pop("_id", None)  # PyMongo moves a top-level _id first; we keep the caller's order
    assert encode(document) == pymongo_bson.encode(to_pymongo(document))


@settings(max_examples=400, deadline=None)
@given(shared_documents)
def test_we_decode_pymongos_bytes_to_the_original(document: dict[str, Any]) -> None:
    document.pop("_id", None)
    assert decode(pymongo_bson.encode(to_pymongo(document))) == document


def test_pymongo_decodes_our_bytes_for_a_document_of_every_shared_type() -> None:
    document = {
        "null": None, "t": True, "i": 1, "l": Int64(2), "d": 1.5, "s": "é",
        "b": b"\x00\x01", "b5": Binary(b"x", 5), "oid": ObjectId(b"a" * 12),
        "dt": datetime.datetime(2020, 1, 2, 3, 4, 5, 6000), "re": Regex("a.c", "im"),
        "ts": Timestamp(5, 6), "dec": Decimal128("1.5"), "min": MinKey(), "max": MaxKey(),
        "code": Code("f()"), "scoped": Code("g()", {"x": 1}), "arr": [1, [2, {"z": 3}]],
        "ref": DBRef("c", 5, "db", extra=1),
    }
    theirs = pymongo_bson.decode(encode(document))
    assert theirs == to_pymongo(document)
