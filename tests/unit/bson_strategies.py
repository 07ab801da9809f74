"""Hypothesis strategies for BSON values of every type (shared by the property, differential
and fuzz tests), and ``plain`` for the tests of the lazy views."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import strategies as st

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
from mongo_sansio.bson.raw import RawArray, RawDocument

# BSON strings are UTF-8: no lone surrogates.  Keys and regexes are C strings: no NUL either.
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
cstring = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
# keys that cannot collide with DBRef's reserved names
keys = cstring.filter(lambda key: not key.startswith("$"))

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
uint32 = st.integers(0, 2**32 - 1)
object_ids = st.binary(min_size=12, max_size=12).map(ObjectId)
datetimes = st.datetimes(
    min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(9999, 12, 31, 23, 59, 59)
).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
out_of_range_datetimes = st.one_of(
    st.integers(-(2**63), -62135596800001), st.integers(253402300800000, 2**63 - 1)
).map(DatetimeMS)
regex_flags = st.sets(st.sampled_from("imsx")).map(lambda flags: "".join(sorted(flags)))
regexes = st.builds(Regex, cstring, regex_flags)
binary_subtypes = st.one_of(st.integers(1, 8), st.integers(10, 255))
binaries = st.one_of(
    st.binary(max_size=40),
    st.builds(Binary, st.binary(max_size=40), binary_subtypes),
)
decimals = st.binary(min_size=16, max_size=16).map(Decimal128.from_bid)
timestamps = st.builds(Timestamp, uint32, uint32)

# The types PyMongo's bson shares with us (it turns DBPointer, Symbol and Undefined into other
# types, so those stay out of the differential test).
shared_scalars = st.one_of(
    st.none(),
    st.booleans(),
    int32,
    int64.map(Int64),
    st.floats(allow_nan=False),
    text,
    binaries,
    object_ids,
    datetimes,
    regexes,
    timestamps,
    decimals,
    st.just(MinKey()),
    st.just(MaxKey()),
    text.map(Code),
)

all_scalars = st.one_of(
    shared_scalars,
    out_of_range_datetimes,
    st.builds(DBPointer, text, object_ids),
    text.map(Symbol),
    st.just(Undefined()),
)


def documents(scalars: st.SearchStrategy[Any], max_leaves: int = 30) -> st.SearchStrategy[dict[str, Any]]:
    """Documents whose values are drawn from ``scalars``, nested in documents and arrays."""

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.lists(children, max_size=5),
            st.dictionaries(keys, children, max_size=5),
            st.builds(Code, text, st.dictionaries(keys, children, max_size=3)),
            st.builds(DBRef, cstring, children, st.none() | cstring),
        )

    values = st.recursive(scalars, extend, max_leaves=max_leaves)
    return st.dictionaries(keys, values, max_size=8)


every_type_documents = documents(all_scalars)


def plain(value: Any) -> Any:
    """A value read through views, with the views decoded."""
    if isinstance(value, RawDocument):
        return value.to_dict()
    if isinstance(value, RawArray):
        return value.to_list()
    return value
