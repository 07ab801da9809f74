"""The Extended JSON fuzz target's invariant (fuzz/extjson_loads.py), run briefly under hypothesis."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from bson_strategies import every_type_documents
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import extjson

_TARGET = Path(__file__).resolve().parents[2] / "fuzz" / "extjson_loads.py"
_spec = importlib.util.spec_from_file_location("fuzz_extjson_loads", _TARGET)
assert _spec is not None and _spec.loader is not None
fuzz_target: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_target)

# Pieces of Extended JSON: random sequences of them reach the wrappers far more often than
# random bytes do.
_TOKENS = [
    "{", "}", "[", "]", ",", ":", '"', "\\", "\\u0000", "\\ud800", "\\udc00", "null", "true",
    "false", "0", "1", "-1", "1.5", "1e400", "2147483648", "9223372036854775808", "NaN",
    '"$numberInt"', '"$numberLong"', '"$numberDouble"', '"$numberDecimal"', '"$oid"',
    '"$date"', '"$binary"', '"$type"', '"base64"', '"subType"', '"$uuid"', '"$code"',
    '"$scope"', '"$timestamp"', '"t"', '"i"', '"$regularExpression"', '"pattern"',
    '"options"', '"$regex"', '"$options"', '"$dbPointer"', '"$ref"', '"$id"', '"$db"',
    '"$minKey"', '"$maxKey"', '"$undefined"', '"$symbol"', '"a"', '"00"', '"04"', '"AQI="',
    '"56e1fc72e0c917e9c4714161"', '"1970-01-01T00:00:00Z"', '"9999-12-31T23:59:59.999Z"',
    '"73ffd264-44b3-4c69-90e8-e7d1dfc035d4"', '"Infinity"', '"-0.0"', '"1E+3"', '"x"',
]
json_ish = st.lists(st.sampled_from(_TOKENS), max_size=40).map(lambda parts: "".join(parts).encode())

# Valid JSON shaped like Extended JSON: wrapper keys with plausible and implausible values.
_KEYS = [json.loads(token) for token in _TOKENS if token.startswith('"') and len(token) > 1]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 42, 2**31, 2**32, 2**63 - 1, 1.5, -0.0, 1e300]),
    st.sampled_from(_KEYS),
    st.text(max_size=5),
)
json_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(_KEYS), children, max_size=3),
    max_leaves=12,
).map(lambda value: json.dumps(value).encode())


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=1000, deadline=None)
@given(json_ish)
def test_random_token_sequences(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=1000, deadline=None)
@given(json_values)
def test_json_shaped_like_extended_json(data: bytes) -> None:
    fuzz_target.check_one(data)


@st.composite
def mutated_texts(draw: st.DrawFn) -> bytes:
    """Valid Extended JSON with a few characters overwritten, inserted or cut."""
    mode = draw(st.sampled_from(["canonical", "relaxed"]))
    data = bytearray(extjson.dumps(draw(every_type_documents), mode=mode).encode())
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["set", "insert", "cut"]))
        if action == "set" and position < len(data):
            data[position] = draw(st.sampled_from(b'{}[]":,\\0123456789eE.-+$ntfa'))
        elif action == "insert":
            data[position:position] = draw(st.sampled_from(_TOKENS)).encode()
        else:
            del data[position : position + draw(st.integers(1, 4))]
    return bytes(data)


@settings(max_examples=500, deadline=None)
@given(mutated_texts())
def test_mutated_texts(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=100, deadline=None)
@given(every_type_documents, st.sampled_from(["canonical", "relaxed"]))
def test_valid_texts(document: dict[str, Any], mode: str) -> None:
    fuzz_target.check_one(extjson.dumps(document, mode=mode).encode())


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": {"$numberInt": "1"}}',
        b'{"$ref": "c", "$id": 1}',
        b'[{"$ref": "c", "$id": {"$oid": "56e1fc72e0c917e9c4714161"}, "$db": "d", "x": 1}]',
        b'{"a": {"$code": "f", "$scope": {"$ref": "c", "$id": 1}}}',
        b'{"a": {"$regex": {"$regularExpression": {"pattern": "x", "options": ""}}}}',
        b'{"$numberDecimal": "1E+6144"}',
        b"\xff",
    ],
)
def test_known_inputs(data: bytes) -> None:
    fuzz_target.check_one(data)


@pytest.mark.parametrize(
    "text",
    [
        # found by the atheris campaign: a negative Decimal128 NaN, lossy by the spec's corpus
        '{"d" : {"$numberDecimal" : "-NaN"}}',
        '{"d" : {"$numberDecimal" : "-sNaN"}}',
    ],
)
def test_campaign_findings(text: str) -> None:
    fuzz_target.check_one(text.encode())
