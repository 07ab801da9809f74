"""The wire reader's fuzz target invariant (fuzz/wire_reader.py), run briefly under hypothesis:
random bytes, valid messages with bytes changed, inserted or cut, and valid streams."""

from __future__ import annotations

import base64
import importlib.util
import struct
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.wire import ZlibCompressor, encode_op_msg, encode_op_query, encode_op_reply

_TARGET = Path(__file__).resolve().parents[2] / "fuzz" / "wire_reader.py"
_spec = importlib.util.spec_from_file_location("fuzz_wire_reader", _TARGET)
assert _spec is not None and _spec.loader is not None
fuzz_target: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_target)

small_documents = st.dictionaries(
    st.sampled_from(["a", "ok", "insert", "hello", "$db", "cursor"]),
    st.integers(-5, 5) | st.text(max_size=5) | st.none() | st.lists(st.integers(0, 3), max_size=3),
    max_size=4,
)


@st.composite
def valid_messages(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["msg", "seq", "checksum", "zlib", "query", "reply"]))
    body = draw(small_documents)
    if kind == "query":
        return encode_op_query(body, request_id=1)
    if kind == "reply":
        return encode_op_reply([body], request_id=1, response_to=1)
    return encode_op_msg(
        {"cmd": 1, **body},
        request_id=draw(st.integers(0, 2**31 - 1)),
        sequences={"documents": draw(st.lists(small_documents, max_size=3))}
        if kind == "seq"
        else None,
        checksum=kind == "checksum",
        compressor=ZlibCompressor() if kind == "zlib" else None,
    )


@st.composite
def mutated_messages(draw: st.DrawFn) -> bytes:
    """Valid messages with a few bytes overwritten, inserted or cut: near-misses reach deep."""
    data = bytearray(b"".join(draw(st.lists(valid_messages(), min_size=1, max_size=3))))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["set", "insert", "cut", "length"]))
        if action == "set" and position < len(data):
            data[position] = draw(st.integers(0, 255))
        elif action == "insert":
            data[position : position + 0] = draw(st.binary(min_size=1, max_size=4))
        elif action == "length" and len(data) >= 4:  # a plausible wrong length
            struct.pack_into("<i", data, 0, len(data) + draw(st.integers(-8, 8)))
        else:
            del data[position : position + draw(st.integers(1, 4))]
    return bytes(data)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=40).map(lambda tail: struct.pack("<iiii", 16 + len(tail), 1, 0, 2013) + tail)
)
def test_random_bodies_behind_a_valid_header(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=300, deadline=None)
@given(mutated_messages())
def test_mutated_messages(data: bytes) -> None:
    fuzz_target.check_one(data)


@settings(max_examples=100, deadline=None)
@given(st.lists(valid_messages(), min_size=1, max_size=4))
def test_valid_streams(messages: list[bytes]) -> None:
    fuzz_target.check_one(b"".join(messages))


def test_regression_nan_body_compares_equal_to_itself() -> None:
    # Found by atheris: a body holding a NaN double made two identical readings compare
    # unequal (NaN != NaN); the invariant now compares documents by repr.
    data = base64.b64decode(
        "JgAAAAEAAAAAAAAA3QcAAAAAAAAAEQAAAAFvawAAAAAAAAD//wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        "AAAAAP//////AAAAAAAAAADdBwAAAAAAAAAeAAAABAAAAAAAAAABb2sAAA8AAAAQcGluZwABAAAAADsx5wI8AAAABCAA"
        "AAAAAADcBwAA3QAARAAAAAAAAADcBwAA3QcAANQHAAAAAAAAYSZk"
    )
    fuzz_target.check_one(data)


def test_regression_regex_options_are_normalised_by_the_encoder() -> None:
    # Found by atheris: a regex whose options are not in alphabetical order re-encodes with
    # them sorted (the BSON encoder's normalisation), so the invariant is a fixed point.
    data = base64.b64decode(
        "JgAAAAEAAAAA//8H3QcAAAAAAAAAEQAAAAsNBVsALQMAAToqAAAAADoBAAAAAAAAAAACAAcAAAAADQAAAAAAAN0H"
        "BAAAAAAAABEAAAcAAAAAAAAAAAYAI9oAAAAAEG94AAA="
    )
    fuzz_target.check_one(data)
