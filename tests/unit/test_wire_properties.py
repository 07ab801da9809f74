"""Properties: any sequence of valid messages, cut at any points, parses back identically; and
single corruptions of a valid stream give a ProtocolError (never another exception) or, where
the corruption happens to keep the stream valid, messages."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.errors import ProtocolError
from mongo_sansio.wire import (
    CLOSED,
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    NEED_DATA,
    MessageReader,
    NoopCompressor,
    ZlibCompressor,
    compress_message,
    encode_op_msg,
    encode_op_query,
    encode_op_reply,
)

int32s = st.integers(-(2**31), 2**31 - 1)
keys = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=6)
scalars = st.none() | st.booleans() | int32s | st.text(max_size=12) | st.binary(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
documents = st.dictionaries(keys, values, max_size=5)
command_names = st.sampled_from(["find", "insert", "hello", "saslStart", "getMore", "ping"])


@st.composite
def op_msgs(draw: st.DrawFn) -> tuple[bytes, dict[str, Any]]:
    name = draw(command_names)
    body = {name: draw(scalars), **draw(documents)}
    sequences = draw(st.dictionaries(keys, st.lists(documents, max_size=4), max_size=3))
    flags = draw(st.sampled_from([0, MORE_TO_COME, 1 << 20]))
    if name in ("hello", "getMore") and draw(st.booleans()):
        flags |= EXHAUST_ALLOWED
    checksum = draw(st.booleans())
    compressor = draw(st.sampled_from([None, NoopCompressor(), ZlibCompressor()]))
    request_id = draw(int32s)
    response_to = draw(int32s)
    data = encode_op_msg(
        body,
        request_id=request_id,
        response_to=response_to,
        sequences=sequences,
        flags=flags,
        checksum=checksum,
        compressor=compressor,
    )
    compressed = compressor is not None and name not in ("hello", "saslStart")
    expected = {
        "op_code": 2013,
        "request_id": request_id,
        "response_to": response_to,
        "flags": flags | checksum,
        "body": body,
        "sequences": sequences,
        "compressor_id": compressor.compressor_id if compressed and compressor else None,
    }
    return data, expected


@st.composite
def legacy(draw: st.DrawFn) -> tuple[bytes, dict[str, Any]]:
    request_id, response_to = draw(int32s), draw(int32s)
    compressor = draw(st.sampled_from([None, ZlibCompressor()]))
    if draw(st.booleans()):
        query = draw(documents)
        data = encode_op_query(query, request_id=request_id, response_to=response_to)
        expected = {"op_code": 2004, "body": query, "flags": 0}
    else:
        docs = draw(st.lists(documents, max_size=3))
        data = encode_op_reply(docs, request_id=request_id, response_to=response_to)
        expected = {"op_code": 1, "body": docs[0] if docs else None, "flags": 0}
    if compressor is not None:
        data = compress_message(data, compressor)
    expected.update(
        request_id=request_id,
        response_to=response_to,
        sequences={},
        compressor_id=None if compressor is None else 2,
    )
    return data, expected


def summary(message: Any) -> dict[str, Any]:
    return {
        "op_code": message.op_code,
        "request_id": message.request_id,
        "response_to": message.response_to,
        "flags": message.flags,
        "body": message.body,
        "sequences": dict(message.sequences),
        "compressor_id": message.compressor_id,
    }


@settings(max_examples=100, deadline=None)
@given(
    stream=st.lists(op_msgs() | legacy(), min_size=1, max_size=6),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
    lazy=st.booleans(),
)
def test_any_chunking_parses_back(
    stream: list[tuple[bytes, dict]], cuts: list[int], lazy: bool
) -> None:
    data = b"".join(message for message, _ in stream)
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    reader = MessageReader(lazy=lazy)
    got = []
    for start, end in zip(points, points[1:], strict=False):
        reader.receive_data(data[start:end])
        while (message := reader.next_message()) is not NEED_DATA:
            got.append(message)
    reader.receive_eof()
    assert reader.next_message() is CLOSED
    summaries = [summary(m) for m in got]
    if lazy:  # RawDocuments compare equal to dicts with the same content
        for item in summaries:
            item["body"] = None if item["body"] is None else item["body"].to_dict()
            item["sequences"] = {k: [d.to_dict() for d in v] for k, v in item["sequences"].items()}
    assert summaries == [expected for _, expected in stream]


@settings(max_examples=150, deadline=None)
@given(
    stream=st.lists(op_msgs() | legacy(), min_size=1, max_size=3),
    position=st.integers(0, 10_000),
    byte=st.integers(0, 255),
    chunk=st.integers(1, 64),
)
def test_corruption_gives_protocol_errors_only(
    stream: list[tuple[bytes, dict]], position: int, byte: int, chunk: int
) -> None:
    data = bytearray(b"".join(message for message, _ in stream))
    data[position % len(data)] = byte
    reader = MessageReader()
    try:
        for i in range(0, len(data), chunk):
            reader.receive_data(bytes(data[i : i + chunk]))
            while reader.next_message() is not NEED_DATA:
                pass
        reader.receive_eof()
        while reader.next_message() is not CLOSED:
            pass
    except ProtocolError as exc:
        with_same = exc
        try:
            reader.next_message()
        except ProtocolError as again:
            assert again is with_same
        else:  # pragma: no cover
            raise AssertionError("the error state is not sticky") from None
