"""Legacy OP_QUERY (the first hello) and OP_REPLY (its answer), both directions.  The byte
layouts are written out by hand here: PyMongo 4.x no longer speaks these op codes."""

from __future__ import annotations

import struct

import pytest

from mongo_sansio.bson import encode
from mongo_sansio.errors import LocalProtocolError, ProtocolError
from mongo_sansio.wire import (
    OP_QUERY,
    OP_REPLY,
    MessageReader,
    OpQuery,
    OpReply,
    encode_op_query,
    encode_op_reply,
)


def read_one(data: bytes) -> object:
    reader = MessageReader()
    reader.receive_data(data)
    return reader.next_message()


def refused(data: bytes, match: str | None) -> None:
    reader = MessageReader()
    with pytest.raises(ProtocolError, match=match):
        reader.receive_data(data)
        reader.next_message()


def reply_bytes(docs: list[dict], number_returned: int | None = None, flags: int = 8) -> bytes:
    encoded = b"".join(encode(d) for d in docs)
    count = len(docs) if number_returned is None else number_returned
    body = struct.pack("<iqii", flags, 0, 0, count) + encoded
    return struct.pack("<iiii", 16 + len(body), 11, 10, OP_REPLY) + body


def test_first_hello_layout() -> None:
    hello = {"isMaster": 1, "helloOk": True, "client": {"driver": {"name": "x"}}}
    data = encode_op_query(hello, request_id=10)
    doc = encode(hello)
    expected_body = struct.pack("<I", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + doc
    assert data == struct.pack("<iiii", 16 + len(expected_body), 10, 0, OP_QUERY) + expected_body


def test_op_query_round_trip() -> None:
    data = encode_op_query(
        {"find": 1},
        request_id=3,
        full_collection_name="db.coll",
        flags=4,
        number_to_skip=2,
        number_to_return=5,
        return_fields_selector={"a": 1},
    )
    message = read_one(data)
    assert isinstance(message, OpQuery)
    assert message.op_code == OP_QUERY
    assert (message.request_id, message.flags) == (3, 4)
    assert message.full_collection_name == "db.coll"
    assert (message.number_to_skip, message.number_to_return) == (2, 5)
    assert message.body == message.query == {"find": 1}
    assert message.return_fields_selector == {"a": 1}
    assert message.sequences == {}


def test_op_reply_decode() -> None:
    message = read_one(reply_bytes([{"ismaster": True, "maxWireVersion": 21, "ok": 1.0}]))
    assert isinstance(message, OpReply)
    assert (message.op_code, message.request_id, message.response_to) == (OP_REPLY, 11, 10)
    assert message.flags == 8  # AwaitCapable
    assert (message.cursor_id, message.starting_from, message.number_returned) == (0, 0, 1)
    assert message.body == {"ismaster": True, "maxWireVersion": 21, "ok": 1.0}
    assert message.sequences == {}
    assert not message.query_failure


def test_op_reply_with_several_and_no_documents() -> None:
    assert read_one(reply_bytes([{"a": 1}, {"b": 2}])).documents == [{"a": 1}, {"b": 2}]
    empty = read_one(reply_bytes([]))
    assert empty.documents == [] and empty.body is None


def test_op_reply_round_trip() -> None:
    data = encode_op_reply(
        [{"ok": 1}], request_id=4, response_to=3, flags=2, cursor_id=99, starting_from=7
    )
    message = read_one(data)
    assert isinstance(message, OpReply)
    assert (message.flags, message.cursor_id, message.starting_from) == (2, 99, 7)
    assert message.query_failure and message.documents == [{"ok": 1}]


def test_op_reply_number_returned_must_match() -> None:
    refused(reply_bytes([{"a": 1}], number_returned=2), "numberReturned")
    refused(reply_bytes([{"a": 1}], number_returned=-1), "numberReturned")


def test_op_reply_truncated_document() -> None:
    data = bytearray(reply_bytes([{"a": 1}]))
    data[36] += 1  # the document claims one byte more than the message holds
    refused(bytes(data), "bad document")


def test_op_query_malformed() -> None:
    no_nul = struct.pack("<I", 0) + b"admin.$cmd" + b"x" * 13
    refused(struct.pack("<iiii", 16 + len(no_nul), 1, 0, OP_QUERY) + no_nul, "NUL")
    trailing = encode_op_query({"a": 1}, request_id=1, return_fields_selector={"b": 1})
    extra = trailing + b"\x00\x00"
    refused(struct.pack("<i", len(extra)) + extra[4:], "bad document|follow")
    short = struct.pack("<I", 0) + b"a\x00" + b"\x00" * 6 + encode({})[:4] + b"\x00" * 12
    refused(struct.pack("<iiii", 16 + len(short), 1, 0, OP_QUERY) + short, None)


def test_encoders_check_their_fields() -> None:
    with pytest.raises(LocalProtocolError):
        encode_op_query({"a": 1}, request_id=1, full_collection_name="a\x00b")
    with pytest.raises(LocalProtocolError):
        encode_op_query({"a": 1}, request_id=2**40)
    with pytest.raises(LocalProtocolError):
        encode_op_reply([], request_id=1, response_to=1, cursor_id=2**70)
