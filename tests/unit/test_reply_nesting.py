"""Nesting depth: CodecOptions.max_nesting_depth bounds the user's documents, not a reply's wrapper.

A 200-level document (the default limit; the top level is depth 1) goes out in an insert's
document sequence at its own depth, and comes back inside ``{cursor: {firstBatch: [doc]}}``,
three levels further down: the connection gives replies that room.  Deeper documents are
refused on both sides with the library's errors (InvalidDocument when encoding, ProtocolError
for a reply), never a RecursionError.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from mongo_sansio.bson import InvalidDocument
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.connection import Connection, ConnectionState, Reply
from mongo_sansio.connection.conn import REPLY_NESTING_ROOM
from mongo_sansio.errors import LocalProtocolError, ProtocolError
from mongo_sansio.sdam.description import parse_address
from mongo_sansio.wire import (
    MessageReader,
    OpMsg,
    OpReply,
    RequestIds,
    encode_op_msg,
    encode_op_reply,
)

LIMIT = DEFAULT_CODEC_OPTIONS.max_nesting_depth
# What a (test) server uses to write replies deeper than a client would accept.
ANY_DEPTH = DEFAULT_CODEC_OPTIONS.with_options(max_nesting_depth=10_000)


def nested(levels: int) -> dict[str, Any]:
    """A document ``levels`` deep: ``{"a": {"a": ... {"x": 1}}}``."""
    document: dict[str, Any] = {"x": 1}
    for _ in range(levels - 1):
        document = {"a": document}
    return document


def deep_bson(levels: int) -> bytes:
    """The BSON of ``{"a": {"a": ... {}}}``, ``levels`` deep, built without the encoder."""
    inner_size = 5
    sizes = [inner_size + 8 * k for k in range(levels - 1, 0, -1)]  # outermost first
    heads = b"".join(struct.pack("<i", size) + b"\x03a\x00" for size in sizes)
    return heads + b"\x05\x00\x00\x00\x00" + b"\x00" * (levels - 1)


def awaiting(codec_options: CodecOptions | None = None) -> tuple[Connection, int]:
    conn = Connection(
        parse_address("db.example:27017"), request_ids=RequestIds(), codec_options=codec_options
    )
    conn.send_command("shop", {"find": "orders"})
    request_id = conn.last_request_id
    assert request_id is not None
    return conn, request_id


def cursor_reply(
    batch: list[Any], *, key: str = "firstBatch", cursor_id: int = 0
) -> dict[str, Any]:
    return {"cursor": {key: batch, "id": cursor_id, "ns": "shop.orders"}, "ok": 1.0}


def receive(conn: Connection, request_id: int, body: Any) -> Reply:
    conn.receive_data(
        encode_op_msg(body, request_id=99, response_to=request_id, codec_options=ANY_DEPTH)
    )
    reply = conn.next_reply()
    assert isinstance(reply, Reply), reply
    return reply


def test_the_room_is_the_cursor_wrapper() -> None:
    assert REPLY_NESTING_ROOM == 3  # reply, cursor, firstBatch: the document is at depth 4


# -- writing --------------------------------------------------------------------------------


def test_a_document_at_the_limit_goes_out_in_an_insert() -> None:
    conn = Connection(parse_address("db.example:27017"), request_ids=RequestIds())
    buffers = conn.send_command(
        "shop", {"insert": "orders"}, sequences={"documents": [nested(LIMIT)]}
    )
    server = MessageReader()  # a server reads each sequence document from depth 1, no room
    server.receive_data(b"".join(bytes(part) for part in buffers))
    message = server.next_message()
    assert isinstance(message, OpMsg)
    assert message.sequences["documents"] == [nested(LIMIT)]


def test_a_document_over_the_limit_is_refused_before_sending() -> None:
    conn = Connection(parse_address("db.example:27017"), request_ids=RequestIds())
    with pytest.raises(InvalidDocument, match="nested deeper than max_nesting_depth"):
        conn.send_command(
            "shop", {"insert": "orders"}, sequences={"documents": [nested(LIMIT + 1)]}
        )
    assert conn.state is ConnectionState.IDLE  # nothing was sent; the connection is usable
    conn.send_command("shop", {"insert": "orders"}, sequences={"documents": [nested(LIMIT)]})


# -- reading --------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["firstBatch", "nextBatch"])
def test_a_document_at_the_limit_reads_back_from_a_cursor_reply(key: str) -> None:
    conn, request_id = awaiting()
    reply = receive(conn, request_id, cursor_reply([nested(LIMIT), {"_id": 2}], key=key))
    assert reply.document["cursor"][key] == [nested(LIMIT), {"_id": 2}]
    assert conn.state is ConnectionState.IDLE


def test_a_document_over_the_limit_in_a_reply_is_a_protocol_error() -> None:
    conn, request_id = awaiting()
    conn.receive_data(
        encode_op_msg(
            cursor_reply([nested(LIMIT + 1)]),
            request_id=99,
            response_to=request_id,
            codec_options=ANY_DEPTH,
        )
    )
    with pytest.raises(ProtocolError, match=f"nested deeper than max_nesting_depth {LIMIT}"):
        conn.next_reply()
    assert conn.state is ConnectionState.CLOSED


@pytest.mark.parametrize("levels", [LIMIT + REPLY_NESTING_ROOM + 1, 5_000, 50_000])
def test_a_malicious_deep_reply_is_refused_without_recursion(levels: int) -> None:
    conn, request_id = awaiting()
    body = b"".join(
        [
            struct.pack("<i", 0),  # filled below
            b"\x03deep\x00",
            deep_bson(levels - 1),
            b"\x01ok\x00" + struct.pack("<d", 1.0),
            b"\x00",
        ]
    )
    body = struct.pack("<i", len(body)) + body[4:]
    message = struct.pack("<iiiiI", 16 + 4 + 1 + len(body), 99, request_id, 2013, 0)
    conn.receive_data(message + b"\x00" + body)
    with pytest.raises(ProtocolError, match="nested deeper than max_nesting_depth"):
        conn.next_reply()


def test_the_room_applies_to_custom_limits() -> None:
    options = CodecOptions(max_nesting_depth=10)
    conn, request_id = awaiting(options)
    reply = receive(conn, request_id, cursor_reply([nested(10)]))
    assert reply.document["cursor"]["firstBatch"] == [nested(10)]
    conn, request_id = awaiting(options)
    conn.receive_data(
        encode_op_msg(
            cursor_reply([nested(11)]),
            request_id=99,
            response_to=request_id,
            codec_options=ANY_DEPTH,
        )
    )
    with pytest.raises(ProtocolError, match="max_nesting_depth 10"):
        conn.next_reply()


def test_a_change_event_is_a_document_of_the_batch() -> None:
    # The event is the user's document: its fullDocument may be one level less than the limit.
    event = {"_id": {"_data": "82"}, "operationType": "insert", "fullDocument": nested(LIMIT - 1)}
    conn, request_id = awaiting()
    reply = receive(conn, request_id, cursor_reply([event], key="nextBatch", cursor_id=7))
    assert reply.document["cursor"]["nextBatch"][0]["fullDocument"] == nested(LIMIT - 1)


def test_the_reader_without_room_keeps_the_plain_limit() -> None:
    # What the simulated server (and any reader built without room) does with a command.
    data = encode_op_msg(cursor_reply([nested(LIMIT)]), request_id=1, codec_options=ANY_DEPTH)
    for room, ok in ((0, False), (REPLY_NESTING_ROOM - 1, False), (REPLY_NESTING_ROOM, True)):
        reader = MessageReader(nesting_room=room)
        reader.receive_data(data)
        if ok:
            assert isinstance(reader.next_message(), OpMsg)
        else:
            with pytest.raises(ProtocolError, match="nested deeper"):
                reader.next_message()


@pytest.mark.parametrize("compressor", ["zlib", "noop"])
def test_the_room_applies_to_compressed_replies(compressor: str) -> None:
    data = encode_op_msg(
        cursor_reply([nested(LIMIT)]), request_id=1, compressor=compressor, codec_options=ANY_DEPTH
    )
    reader = MessageReader(nesting_room=REPLY_NESTING_ROOM)
    reader.receive_data(data)
    message = reader.next_message()
    assert isinstance(message, OpMsg) and message.compressor_id is not None
    assert message.body["cursor"]["firstBatch"] == [nested(LIMIT)]


def test_the_room_applies_to_legacy_replies() -> None:
    document = {"ismaster": True, "deep": nested(LIMIT + REPLY_NESTING_ROOM - 1), "ok": 1.0}
    data = encode_op_reply([document], request_id=1, response_to=7, codec_options=ANY_DEPTH)
    reader = MessageReader(nesting_room=REPLY_NESTING_ROOM)
    reader.receive_data(data)
    message = reader.next_message()
    assert isinstance(message, OpReply) and message.documents == [document]
    reader = MessageReader(nesting_room=REPLY_NESTING_ROOM)
    deeper = {**document, "deep": nested(LIMIT + REPLY_NESTING_ROOM)}
    reader.receive_data(
        encode_op_reply([deeper], request_id=1, response_to=7, codec_options=ANY_DEPTH)
    )
    with pytest.raises(ProtocolError, match="nested deeper"):
        reader.next_message()


def test_document_sequences_of_a_reply_get_the_room_too() -> None:
    data = encode_op_msg(
        {"ok": 1.0},
        request_id=1,
        sequences={"docs": [nested(LIMIT + REPLY_NESTING_ROOM)]},
        codec_options=ANY_DEPTH,
    )
    reader = MessageReader(nesting_room=REPLY_NESTING_ROOM)
    reader.receive_data(data)
    message = reader.next_message()
    assert isinstance(message, OpMsg)
    assert message.sequences["docs"] == [nested(LIMIT + REPLY_NESTING_ROOM)]


@pytest.mark.parametrize("room", [-1, True, 1.5])
def test_the_room_must_be_a_non_negative_int(room: Any) -> None:
    with pytest.raises(LocalProtocolError, match="nesting_room"):
        MessageReader(nesting_room=room)
