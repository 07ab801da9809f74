"""Properties of the whole codec: round trips for generated documents of every type."""

from __future__ import annotations

import math
from typing import Any

from bson_strategies import every_type_documents
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import RawDocument, decode, decode_all, encode


@settings(max_examples=300, deadline=None)
@given(every_type_documents)
def test_decode_inverts_encode(document: dict[str, Any]) -> None:
    data = encode(document)
    assert decode(data) == document
    # and bytes are a fixed point: encoding what we decoded gives the same bytes
    assert encode(decode(data)) == data


# Extended JSON round trips are properties of tests/unit/test_extjson.py (with decimals that
# text can spell; these strategies include non-canonical Decimal128 bit patterns).


@settings(max_examples=200, deadline=None)
@given(every_type_documents)
def test_raw_document_agrees_with_decode(document: dict[str, Any]) -> None:
    data = encode(document)
    raw = RawDocument(data)
    assert list(raw) == list(document)
    for key in reversed(list(document)):  # out-of-order lookups exercise the index
        value = raw[key]
        expected = document[key]
        if isinstance(value, RawDocument):
            value = value.to_dict()
        assert encode({"v": value}) == encode({"v": expected})
    assert encode(raw) == data


@settings(max_examples=100, deadline=None)
@given(st.lists(every_type_documents, max_size=5))
def test_decode_all_splits_concatenations(documents: list[dict[str, Any]]) -> None:
    data = b"".join(encode(document) for document in documents)
    assert decode_all(data) == documents


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_doubles_keep_their_bits(value: float) -> None:
    decoded = decode(encode({"x": value}))["x"]
    if math.isnan(value):
        assert math.isnan(decoded)
    else:
        assert decoded == value and math.copysign(1, decoded) == math.copysign(1, value)
