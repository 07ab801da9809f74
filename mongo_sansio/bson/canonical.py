"""mongod's canonical type of a BSON value: the number it orders and hashes types by.

Input: a decoded BSON value (our types, or the Python types the decoder gives).  Output:
:func:`canonical_type`'s number, one of the ``RANK_*`` constants below (mongod's
canonicalizeBSONType in bsontypes.h).  Values of types that share a number compare by value
across those types: int32, int64, double and decimal are all numbers, a symbol is a string.
MinKey and MaxKey keep their own type numbers (-1 and 127), so they sort before and after
everything else.

Two users need the same numbers and must never disagree: the hashed-index key of
:mod:`mongo_sansio.pipeline.hashing` feeds the number into its digest, and the simulator's
query engine (:mod:`mongo_sansio.testing.engine.order`) orders values by it.

Errors: :class:`TypeError` for a Python value that has no BSON type here.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.types import (
    Code,
    DatetimeMS,
    DBPointer,
    DBRef,
    MaxKey,
    MinKey,
    Regex,
    Timestamp,
    Undefined,
)

__all__ = [
    "canonical_type",
    "RANK_MINKEY",
    "RANK_UNDEFINED",
    "RANK_NULL",
    "RANK_NUMBER",
    "RANK_STRING",
    "RANK_OBJECT",
    "RANK_ARRAY",
    "RANK_BINARY",
    "RANK_OBJECTID",
    "RANK_BOOL",
    "RANK_DATE",
    "RANK_TIMESTAMP",
    "RANK_REGEX",
    "RANK_DBPOINTER",
    "RANK_CODE",
    "RANK_CODE_WITH_SCOPE",
    "RANK_MAXKEY",
]

RANK_MINKEY = -1  # MinKey's own type number
RANK_UNDEFINED = 0  # the deprecated undefined sorts just before null
RANK_NULL = 5
RANK_NUMBER = 10  # int32, int64, double, decimal
RANK_STRING = 15  # string and symbol
RANK_OBJECT = 20
RANK_ARRAY = 25
RANK_BINARY = 30
RANK_OBJECTID = 35
RANK_BOOL = 40
RANK_DATE = 45
RANK_TIMESTAMP = 47
RANK_REGEX = 50
RANK_DBPOINTER = 55
RANK_CODE = 60
RANK_CODE_WITH_SCOPE = 65
RANK_MAXKEY = 127  # MaxKey's own type number


def canonical_type(value: Any) -> int:
    """mongod's canonical type number of ``value`` (see the module docstring)."""
    if value is None:
        return RANK_NULL
    # bool before int (bool is an int), Code before str (Code is a str): the first match wins
    if isinstance(value, bool):
        return RANK_BOOL
    if isinstance(value, int | float | Decimal128):
        return RANK_NUMBER
    if isinstance(value, Code):
        return RANK_CODE if value.scope is None else RANK_CODE_WITH_SCOPE
    if isinstance(value, str):
        return RANK_STRING
    if isinstance(value, Mapping | DBRef):
        return RANK_OBJECT
    if isinstance(value, list | tuple):
        return RANK_ARRAY
    if isinstance(value, bytes):
        return RANK_BINARY
    if isinstance(value, ObjectId):
        return RANK_OBJECTID
    if isinstance(value, datetime.datetime | DatetimeMS):
        return RANK_DATE
    if isinstance(value, Timestamp):
        return RANK_TIMESTAMP
    if isinstance(value, Regex | re.Pattern):
        return RANK_REGEX
    if isinstance(value, DBPointer):
        return RANK_DBPOINTER
    if isinstance(value, MinKey):
        return RANK_MINKEY
    if isinstance(value, MaxKey):
        return RANK_MAXKEY
    if isinstance(value, Undefined):
        return RANK_UNDEFINED
    raise TypeError(f"not a BSON value: {type(value).__name__}")
