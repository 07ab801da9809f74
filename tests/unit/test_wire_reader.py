"""MessageReader framing: chunking, header checks before the body, end of stream, the sticky
error state and the maximum message size.  Messages are built by hand (struct + BSON) so the
reader is not only checked against our own encoder."""

from __future__ import annotations

import struct

import pytest

from mongo_sansio.bson import RawDocument, encode
from mongo_sansio.errors import LocalProtocolError, ProtocolError
from mongo_sansio.wire import (
    CLOSED,
    MORE_TO_COME,
    NEED_DATA,
    OP_MSG,
    MessageReader,
    OpMsg,
    ReaderState,
    encode_op_msg,
)


def op_msg_bytes(body: dict, request_id: int = 7, response_to: int = 0, flags: int = 0) -> bytes:
    payload = struct.pack("<IB", flags, 0) + encode(body)
    return struct.pack("<iiii", 16 + len(payload), request_id, response_to, OP_MSG) + payload


def drain(reader: MessageReader) -> list:
    out = []
    while True:
        message = reader.next_message()
        if message is NEED_DATA or message is CLOSED:
            return out
        out.append(message)


def test_one_message() -> None:
    reader = MessageReader()
    reader.receive_data(op_msg_bytes({"ok": 1.0}, request_id=9, response_to=4))
    message = reader.next_message()
    assert isinstance(message, OpMsg)
    assert (message.op_code, message.request_id, message.response_to) == (OP_MSG, 9, 4)
    assert message.flags == 0
    assert message.body == {"ok": 1.0}
    assert message.sequences == {}
    assert message.compressor_id is None
    assert reader.next_message() is NEED_DATA


def test_one_byte_at_a_time() -> None:
    data = op_msg_bytes({"a": "x" * 50}) + op_msg_bytes({"b": 2}, request_id=8)
    reader = MessageReader()
    got = []
    for i in range(len(data)):
        reader.receive_data(data[i : i + 1])
        got += drain(reader)
    assert [m.body for m in got] == [{"a": "x" * 50}, {"b": 2}]
    assert reader.buffered == 0


def test_wanted_is_what_completes_the_message_under_way() -> None:
    # a transport reads that much at once, so a large reply arrives in one piece
    big, small = op_msg_bytes({"a": "x" * 100_000}), op_msg_bytes({"b": 2}, request_id=8)
    reader = MessageReader()
    assert reader.wanted == 0  # nothing yet
    reader.receive_data(big[:3])
    assert reader.wanted == 0  # the length is not complete
    reader.receive_data(big[3:65536])  # (joined to a buffer)
    assert reader.wanted == len(big) - 65536
    assert reader.next_message() is NEED_DATA
    reader.receive_data(big[65536:] + small[:10])
    assert reader.wanted == 0  # a whole message is buffered
    assert reader.next_message().body == {"a": "x" * 100_000}
    assert reader.wanted == len(small) - 10  # the next one, read in place from the chunk
    reader.receive_data(small[10:])
    assert reader.next_message().body == {"b": 2}
    assert reader.wanted == 0
    fresh = MessageReader()
    fresh.receive_data(big[:1000])  # a first chunk kept as it is
    assert fresh.wanted == len(big) - 1000
    fresh.receive_data(struct.pack("<i", 1 << 30))  # (not a header: past the partial message)
    assert fresh.wanted == len(big) - 1004
    bad = MessageReader(max_message_size=1000)
    bad.receive_data(big[:500])  # longer than allowed: an error, nothing to wait for
    assert bad.wanted == 0


def test_many_messages_in_one_chunk() -> None:
    data = b"".join(op_msg_bytes({"i": i}, request_id=i + 1) for i in range(50))
    reader = MessageReader()
    reader.receive_data(data)
    got = drain(reader)
    assert [m.body["i"] for m in got] == list(range(50))
    assert [m.request_id for m in got] == list(range(1, 51))


def test_buffer_compacts_as_messages_are_consumed() -> None:
    one = op_msg_bytes({"x": "y" * 1000})
    reader = MessageReader()
    for _ in range(200):  # whole messages plus a partial one, again and again
        reader.receive_data(one + one[:100])
        drain(reader)
        reader.receive_data(one[100:])
        drain(reader)
    assert reader.buffered == 0
    assert len(reader._buf) < 2 * len(one)


def test_accepts_bytearray_and_memoryview() -> None:
    data = op_msg_bytes({"ok": 1})
    for chunk in (bytearray(data), memoryview(data)):
        reader = MessageReader()
        reader.receive_data(chunk)
        assert reader.next_message().body == {"ok": 1}


def test_clean_end_of_stream() -> None:
    reader = MessageReader()
    reader.receive_data(op_msg_bytes({"ok": 1}))
    reader.receive_eof()
    assert reader.state is ReaderState.ENDING
    assert reader.next_message().body == {"ok": 1}
    assert reader.next_message() is CLOSED
    assert reader.state is ReaderState.CLOSED
    assert reader.next_message() is CLOSED


@pytest.mark.parametrize("cut", [1, 15, 16, 30])
def test_end_of_stream_inside_a_message(cut: int) -> None:
    reader = MessageReader()
    reader.receive_data(op_msg_bytes({"ok": 1})[:cut])
    assert reader.next_message() is NEED_DATA
    reader.receive_eof()
    with pytest.raises(ProtocolError, match="ended inside a message"):
        reader.next_message()
    assert reader.state is ReaderState.ERROR


def test_data_after_end_of_stream_is_the_callers_mistake() -> None:
    reader = MessageReader()
    reader.receive_eof()
    with pytest.raises(LocalProtocolError, match="after the end"):
        reader.receive_data(b"x")
    reader.receive_eof()  # repeating the end is harmless


def header(length: int, op_code: int = OP_MSG) -> bytes:
    return struct.pack("<iiii", length, 1, 0, op_code)


@pytest.mark.parametrize("op_code", [0, 2001, 2002, 2005, 2010, 2014, -1, 1 << 30])
def test_unknown_op_code_is_refused_at_the_header(op_code: int) -> None:
    reader = MessageReader()
    reader.receive_data(header(100, op_code))
    assert reader.state is ReaderState.ERROR and reader.buffered == 0
    with pytest.raises(ProtocolError, match="unknown op code"):
        reader.next_message()


@pytest.mark.parametrize("length", [-1, 0, 15, 16, 25])
def test_too_short_length_is_refused_at_the_header(length: int) -> None:
    reader = MessageReader()
    reader.receive_data(header(length))
    with pytest.raises(ProtocolError, match="outside"):
        reader.next_message()


def test_oversized_message_is_refused_before_its_body_arrives() -> None:
    reader = MessageReader(max_message_size=1000)
    reader.receive_data(header(1001) + bytes(100))
    assert reader.buffered == 0  # refused at the header: nothing of the body is kept
    with pytest.raises(ProtocolError, match="outside"):
        reader.next_message()
    reader = MessageReader()
    reader.receive_data(bytearray(header(48_000_001)))  # the bytearray path too
    assert reader.buffered == 0
    with pytest.raises(ProtocolError, match="48000000"):
        reader.next_message()
    with pytest.raises(ProtocolError, match="48000000"):
        reader.receive_data(bytes(1000))  # later input is refused with the same error


def test_header_split_across_chunks_is_checked_when_complete() -> None:
    reader = MessageReader()
    reader.receive_data(header(10**9)[:10])
    assert reader.next_message() is NEED_DATA
    reader.receive_data(header(10**9)[10:])
    assert reader.state is ReaderState.ERROR
    with pytest.raises(ProtocolError):
        reader.next_message()


def test_max_message_size_can_be_raised_after_the_handshake() -> None:
    big = op_msg_bytes({"s": "x" * 2000})
    reader = MessageReader(max_message_size=1000)
    reader.max_message_size = 100_000
    reader.receive_data(big)
    assert reader.next_message().body == {"s": "x" * 2000}
    with pytest.raises(LocalProtocolError):
        reader.max_message_size = 10
    with pytest.raises(LocalProtocolError):
        MessageReader(max_message_size="big")  # type: ignore[arg-type]


def test_error_is_sticky() -> None:
    reader = MessageReader()
    reader.receive_data(header(5))
    with pytest.raises(ProtocolError) as first:
        reader.next_message()
    for call in (
        lambda: reader.receive_data(op_msg_bytes({"ok": 1})),
        reader.next_message,
        reader.receive_eof,
    ):
        with pytest.raises(ProtocolError) as again:
            call()
        assert again.value is first.value
    assert reader.state is ReaderState.ERROR


def test_error_found_in_next_message_is_sticky_too() -> None:
    bad = bytearray(op_msg_bytes({"ok": 1}))
    bad[16] = 4  # a required flag bit this client does not know
    reader = MessageReader()
    reader.receive_data(bytes(bad) + op_msg_bytes({"ok": 2}))
    with pytest.raises(ProtocolError) as first:
        reader.next_message()
    with pytest.raises(ProtocolError) as again:
        reader.next_message()
    assert again.value is first.value


def test_lazy_documents() -> None:
    reader = MessageReader(lazy=True)
    reader.receive_data(op_msg_bytes({"ok": 1, "n": {"a": [1, 2]}}))
    message = reader.next_message()
    assert isinstance(message.body, RawDocument)
    assert message.body["n"]["a"][1] == 2
    assert bytes(message.body.raw) == encode({"ok": 1, "n": {"a": [1, 2]}})


def test_codec_options_apply() -> None:
    from mongo_sansio.bson import CodecOptions

    class Doc(dict):
        pass

    reader = MessageReader(codec_options=CodecOptions(document_class=Doc))
    reader.receive_data(op_msg_bytes({"ok": 1}))
    assert type(reader.next_message().body) is Doc
    raw_reader = MessageReader(codec_options=CodecOptions(document_class=RawDocument))
    raw_reader.receive_data(op_msg_bytes({"ok": 1}))
    assert isinstance(raw_reader.next_message().body, RawDocument)


def test_large_message_in_small_chunks_is_linear() -> None:
    # 4 MB in 1 KiB chunks: quadratic buffering would copy ~8 GB and take minutes.
    data = op_msg_bytes({"s": "x" * 4_000_000})
    reader = MessageReader()
    for i in range(0, len(data), 1024):
        reader.receive_data(data[i : i + 1024])
        assert reader.next_message() is NEED_DATA or i + 1024 >= len(data)
    assert reader.buffered == 0


def test_empty_data_is_not_the_end() -> None:
    reader = MessageReader()
    reader.receive_data(b"")
    assert reader.next_message() is NEED_DATA
    reader.receive_data(op_msg_bytes({"ok": 1}))
    assert reader.next_message().body == {"ok": 1}


def test_reused_receive_buffers_are_copied() -> None:
    # A transport that reads into one bytearray again and again (recv_into) must be safe.
    scratch = bytearray(op_msg_bytes({"ok": 1}))
    reader = MessageReader(lazy=True)
    reader.receive_data(memoryview(scratch)[:20])
    scratch[:] = bytes(len(scratch))  # the transport reuses its buffer
    reader.receive_data(op_msg_bytes({"ok": 1})[20:])
    message = reader.next_message()
    assert message.body["ok"] == 1


def test_messages_parsed_in_place_outlive_later_input() -> None:
    reader = MessageReader(lazy=True)
    first = op_msg_bytes({"n": 1})
    reader.receive_data(first + op_msg_bytes({"n": 2})[:10])
    message = reader.next_message()
    reader.receive_data(op_msg_bytes({"n": 2})[10:])
    assert reader.next_message().body["n"] == 2
    assert message.body["n"] == 1


def test_exhaust_reply_stream() -> None:
    # An awaitable hello with exhaustAllowed: the server streams replies with moreToCome,
    # each answering the one before; the last one clears the bit.
    replies = [
        op_msg_bytes({"isWritablePrimary": True, "n": 1}, request_id=101, response_to=7, flags=2),
        op_msg_bytes({"isWritablePrimary": True, "n": 2}, request_id=102, response_to=101, flags=2),
        op_msg_bytes({"isWritablePrimary": True, "n": 3}, request_id=103, response_to=102),
    ]
    reader = MessageReader()
    reader.receive_data(b"".join(replies))
    got = drain(reader)
    assert [m.more_to_come for m in got] == [True, True, False]
    assert [m.response_to for m in got] == [7, 101, 102]


def test_max_message_size_may_be_positional() -> None:
    reader = MessageReader(1000)
    assert reader.max_message_size == 1000


def _slots(document: RawDocument) -> dict[str, object]:
    return {name: getattr(document, name) for name in RawDocument.__slots__}


@pytest.mark.parametrize("lazy", [True, False])
def test_fast_path_builds_what_the_general_path_builds(lazy: bool) -> None:
    # receive_data + next_message build the common reply inline (RawDocument's slots set in
    # the reader); the result must be what RawDocument._view and parse_op_msg give.
    body = {"ok": 1.0, "cursor": {"id": 0, "firstBatch": [{"a": 1}]}}
    data = encode_op_msg(body, request_id=7, response_to=3, flags=MORE_TO_COME)
    fast = MessageReader(lazy=lazy)
    fast.receive_data(data)
    slow = MessageReader(lazy=lazy)
    slow.receive_data(bytearray(data))  # buffered: the general path
    one, other = fast.next_message(), slow.next_message()
    assert isinstance(one, OpMsg) and isinstance(other, OpMsg)
    assert one == other and type(one) is OpMsg
    assert (one.request_id, one.response_to, one.flags, one.more_to_come) == (7, 3, 2, True)
    assert one.body == body and dict(one.sequences) == {} and one.compressor_id is None
    if lazy:
        expected = RawDocument._view(data, 21, len(data), one.body.codec_options, None)
        got = _slots(one.body)
        want = _slots(expected)
        got.pop("_node"), want.pop("_node")
        assert got == want
    assert fast.next_message() is NEED_DATA and fast.buffered == 0


def test_fast_path_rechecks_a_lowered_maximum() -> None:
    data = encode_op_msg({"ok": 1}, request_id=1)
    reader = MessageReader(lazy=True)
    reader.receive_data(data)
    reader.max_message_size = len(data) - 1
    with pytest.raises(ProtocolError, match="outside"):
        reader.next_message()


def test_message_records_compare_by_class_and_fields() -> None:
    message = OpMsg(request_id=1, response_to=0, flags=0, body={"a": 1})
    assert message == OpMsg(request_id=1, response_to=0, flags=0, body={"a": 1})
    assert message != tuple(message) and message != OpMsg(1, 0, 2, {"a": 1})
    assert repr(message).startswith("OpMsg(request_id=1, response_to=0, flags=0, body=")
    with pytest.raises(AttributeError):
        message.flags = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        message.other = 3  # type: ignore[attr-defined]
