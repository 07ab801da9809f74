"""mongod's canonical type numbers (mongo_sansio/bson/canonical.py), pinned per BSON type, and
the two places that use them: the hashed-index key and the simulator engine's order."""

from __future__ import annotations

import datetime
import hashlib
import re
import struct

import pytest

from mongo_sansio.bson import (
    Binary,
    Code,
    DatetimeMS,
    DBPointer,
    DBRef,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)
from mongo_sansio.bson.canonical import RANK_MAXKEY, RANK_MINKEY, canonical_type
from mongo_sansio.pipeline.hashing import hashed_index_key
from mongo_sansio.testing.engine.order import MISSING, canonical_rank

OID = ObjectId("0123456789abcdef01234567")

# (BSON type, one value of it, mongod's canonicalizeBSONType number for it)
CANONICAL_NUMBERS = [
    ("double", 1.5, 10),
    ("string", "a", 15),
    ("object", {"a": 1}, 20),
    ("array", [1], 25),
    ("binData", Binary(b"x", 4), 30),
    ("undefined", Undefined(), 0),
    ("objectId", OID, 35),
    ("bool", True, 40),
    ("date", datetime.datetime(2020, 1, 1), 45),
    ("null", None, 5),
    ("regex", Regex("^a", "i"), 50),
    ("dbPointer", DBPointer("db.coll", OID), 55),
    ("javascript", Code("f()"), 60),
    ("symbol", Symbol("s"), 15),
    ("javascriptWithScope", Code("f()", {"x": 1}), 65),
    ("int", 1, 10),
    ("timestamp", Timestamp(1, 2), 47),
    ("long", Int64(2**40), 10),
    ("decimal", Decimal128("1.5"), 10),
    ("minKey", MinKey(), -1),
    ("maxKey", MaxKey(), 127),
]

# Python forms the decoder or a user may hand over for the same BSON types
EQUIVALENT_FORMS = [
    (b"raw bytes", 30),
    (DatetimeMS(0), 45),
    (re.compile("^a"), 50),
    (DBRef("coll", 1), 20),
    ((1, 2), 25),
    (False, 40),
]


@pytest.mark.parametrize(
    ("value", "number"),
    [(value, number) for _, value, number in CANONICAL_NUMBERS] + EQUIVALENT_FORMS,
    ids=[name for name, _, _ in CANONICAL_NUMBERS] + [repr(v) for v, _ in EQUIVALENT_FORMS],
)
def test_canonical_type_of_every_bson_type(value: object, number: int) -> None:
    assert canonical_type(value) == number
    assert canonical_rank(value) == number  # the engine's order agrees


def test_minkey_and_maxkey_keep_their_own_type_numbers() -> None:
    assert (RANK_MINKEY, RANK_MAXKEY) == (-1, 127)


def test_a_value_with_no_bson_type_is_refused() -> None:
    with pytest.raises(TypeError, match="not a BSON value: object"):
        canonical_type(object())


def test_engine_ranks_missing_as_null_and_unknown_values_before_maxkey() -> None:
    assert canonical_rank(MISSING) == canonical_rank(None) == 5
    assert canonical_type(Code("x")) < canonical_rank(object()) < canonical_rank(MaxKey())


def _key_of_valueless(type_number: int) -> int:
    """The hashed-index key of a value with no value bytes: MD5 of seed 0 and the type number."""
    digest = hashlib.md5(struct.pack("<ii", 0, type_number), usedforsecurity=False).digest()
    key: int = struct.unpack("<q", digest[:8])[0]
    return key


def test_hashing_a_maxkey_feeds_type_number_127() -> None:
    assert hashed_index_key(MaxKey()) == _key_of_valueless(127)
    assert hashed_index_key(MinKey()) == _key_of_valueless(-1)
    assert hashed_index_key(None) == _key_of_valueless(5)
