"""OP_MSG: flag bits, sections, checksums, and the encoder (bytes and pass-through buffers)."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from mongo_sansio.bson import RawDocument, encode
from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.errors import DocumentTooLarge, LocalProtocolError, ProtocolError
from mongo_sansio.wire import (
    CHECKSUM_PRESENT,
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    MessageReader,
    OpMsg,
    RequestIds,
    crc32c,
    encode_op_msg,
    encode_op_msg_buffers,
)


def frame(payload: bytes, request_id: int = 1, response_to: int = 0) -> bytes:
    return struct.pack("<iiii", 16 + len(payload), request_id, response_to, 2013) + payload


def kind0(doc: dict) -> bytes:
    return b"\x00" + encode(doc)


def kind1(identifier: str, docs: list[dict], size_delta: int = 0) -> bytes:
    body = identifier.encode() + b"\x00" + b"".join(encode(d) for d in docs)
    return b"\x01" + struct.pack("<i", 4 + len(body) + size_delta) + body


def read_one(data: bytes) -> OpMsg:
    reader = MessageReader()
    reader.receive_data(data)
    message = reader.next_message()
    assert isinstance(message, OpMsg)
    return message


def refused(data: bytes, match: str | None) -> None:
    reader = MessageReader()
    with pytest.raises(ProtocolError, match=match):
        reader.receive_data(data)
        reader.next_message()


# -- reading ------------------------------------------------------------------------------


def test_sections_in_any_order() -> None:
    payload = (
        struct.pack("<I", 0)
        + kind1("documents", [{"a": 1}, {"a": 2}])
        + kind0({"insert": "c", "$db": "d"})
        + kind1("other", [])
    )
    message = read_one(frame(payload))
    assert message.body == {"insert": "c", "$db": "d"}
    assert message.sequences == {"documents": [{"a": 1}, {"a": 2}], "other": []}


def test_no_kind0_section() -> None:
    refused(frame(struct.pack("<I", 0) + kind1("documents", [{"a": 1}])), "no kind-0")


def test_two_kind0_sections() -> None:
    refused(frame(struct.pack("<I", 0) + kind0({"a": 1}) + kind0({"b": 1})), "second kind-0")


@pytest.mark.parametrize("kind", [2, 3, 255])
def test_unknown_payload_type(kind: int) -> None:
    refused(
        frame(struct.pack("<I", 0) + kind0({"a": 1}) + bytes([kind]) + encode({})), "payload type"
    )


def test_duplicate_sequence_identifier() -> None:
    payload = struct.pack("<I", 0) + kind0({"a": 1}) + kind1("d", [{}]) + kind1("d", [{}])
    refused(frame(payload), "repeats")


@pytest.mark.parametrize("delta", [1, 100, -1, -30])
def test_sequence_size_must_fit(delta: int) -> None:
    payload = struct.pack("<I", 0) + kind0({"a": 1}) + kind1("docs", [{"x": 1}], size_delta=delta)
    refused(frame(payload), None)


def test_sequence_size_too_small() -> None:
    payload = struct.pack("<I", 0) + kind0({"a": 1}) + b"\x01" + struct.pack("<i", 3) + b"\x00" * 3
    refused(frame(payload), "kind-1 section size")


def test_sequence_identifier_without_nul() -> None:
    payload = struct.pack("<I", 0) + kind0({"a": 1}) + b"\x01" + struct.pack("<i", 7) + b"abc"
    refused(frame(payload), "no terminating NUL")


def test_sequence_identifier_bad_utf8() -> None:
    payload = (
        struct.pack("<I", 0) + kind0({"a": 1}) + b"\x01" + struct.pack("<i", 7) + b"\xff\xfe\x00"
    )
    refused(frame(payload), "UTF-8")


def test_document_running_past_the_message() -> None:
    doc = bytearray(encode({"a": "xyz"}))
    doc[0] += 10
    refused(frame(struct.pack("<IB", 0, 0) + bytes(doc)), "bad document")


def test_bad_bson_inside_body_is_a_protocol_error() -> None:
    doc = bytearray(encode({"a": "xyz"}))
    doc[4] = 0x77  # unknown element type
    refused(frame(struct.pack("<IB", 0, 0) + bytes(doc)), "bad document")


def test_cut_section_header() -> None:
    refused(frame(struct.pack("<I", 0) + kind0({"a": 1}) + b"\x01\x05\x00"), "cut short")


@pytest.mark.parametrize("bit", range(2, 16))
def test_unknown_required_flag_bits_are_errors(bit: int) -> None:
    refused(frame(struct.pack("<I", 1 << bit) + kind0({"ok": 1})), "required bits")


@pytest.mark.parametrize("bit", range(17, 32))
def test_unknown_optional_flag_bits_are_ignored(bit: int) -> None:
    message = read_one(frame(struct.pack("<I", 1 << bit) + kind0({"ok": 1})))
    assert message.body == {"ok": 1}
    assert message.flags == 1 << bit


def test_more_to_come_and_exhaust_allowed() -> None:
    message = read_one(frame(struct.pack("<I", MORE_TO_COME) + kind0({"ok": 1})))
    assert message.more_to_come and not message.exhaust_allowed and not message.checksum_present
    message = read_one(frame(struct.pack("<I", EXHAUST_ALLOWED) + kind0({"hello": 1})))
    assert message.exhaust_allowed and not message.more_to_come


def test_checksum_verified() -> None:
    unsigned = frame(struct.pack("<I", CHECKSUM_PRESENT) + kind0({"ok": 1}))
    length = len(unsigned) + 4
    whole = struct.pack("<i", length) + unsigned[4:]
    good = whole + struct.pack("<I", crc32c(whole))
    message = read_one(good)
    assert message.checksum_present and message.body == {"ok": 1}
    bad = good[:-1] + bytes([good[-1] ^ 1])
    refused(bad, "checksum mismatch")
    corrupted = bytearray(good)
    corrupted[-8] ^= 0x40  # inside the document, which would still decode
    refused(bytes(corrupted), "checksum mismatch")


def test_checksum_flag_without_room_for_one() -> None:
    refused(frame(struct.pack("<I", CHECKSUM_PRESENT) + b"\x00" + encode({})), None)


# -- writing ------------------------------------------------------------------------------


def test_encode_layout() -> None:
    data = encode_op_msg({"ping": 1, "$db": "admin"}, request_id=42)
    body = encode({"ping": 1, "$db": "admin"})
    assert data == struct.pack("<iiiiIB", 21 + len(body), 42, 0, 2013, 0, 0) + body


def test_encode_with_sequences_layout() -> None:
    docs = [{"_id": 1}, {"_id": 2}]
    data = encode_op_msg({"insert": "c"}, request_id=1, sequences={"documents": docs})
    body = encode({"insert": "c"})
    section = b"documents\x00" + b"".join(encode(d) for d in docs)
    assert data[21 + len(body) :] == b"\x01" + struct.pack("<i", 4 + len(section)) + section
    assert struct.unpack_from("<i", data)[0] == len(data)


def test_round_trip_with_every_option() -> None:
    ids = RequestIds(start=100)
    for flags, checksum in [(0, False), (MORE_TO_COME, False), (0, True), (MORE_TO_COME, True)]:
        data = encode_op_msg(
            {"insert": "c", "$db": "d"},
            request_id=ids.next(),
            response_to=5,
            sequences=[("documents", [{"a": 1}]), ("x", [])],
            flags=flags,
            checksum=checksum,
        )
        message = read_one(data)
        assert message.flags == flags | (CHECKSUM_PRESENT if checksum else 0)
        assert message.response_to == 5
        assert message.sequences == {"documents": [{"a": 1}], "x": []}


def test_buffers_pass_encoded_documents_through() -> None:
    raw = RawDocument(encode({"_id": 1, "x": "y"}))
    as_bytes = encode({"_id": 2})
    as_view = memoryview(encode({"_id": 3}))
    body = encode({"insert": "c"})
    buffers = encode_op_msg_buffers(
        body, request_id=1, sequences={"documents": [raw, as_bytes, as_view]}
    )
    assert any(b is body for b in buffers)
    assert any(b is raw.raw for b in buffers)
    assert any(b is as_bytes for b in buffers)
    assert any(b is as_view for b in buffers)
    message = read_one(b"".join(buffers))
    assert message.sequences["documents"] == [{"_id": 1, "x": "y"}, {"_id": 2}, {"_id": 3}]


def test_bad_pre_encoded_documents_are_refused() -> None:
    with pytest.raises(LocalProtocolError, match="pre-encoded"):
        encode_op_msg(b"\x05\x00\x00\x00", request_id=1)
    with pytest.raises(LocalProtocolError, match="pre-encoded"):
        encode_op_msg({"a": 1}, request_id=1, sequences={"d": [b"\x06\x00\x00\x00\x00"]})
    with pytest.raises(LocalProtocolError, match="mapping"):
        encode_op_msg([("a", 1)], request_id=1)


@pytest.mark.parametrize(
    "bad",
    [
        b"\x06\x00\x00\x00\x00",  # length prefix says 6, 5 bytes given
        b"\x05\x00\x00\x00\x01",  # no trailing NUL
        b"\x04\x00\x00\x00",  # too short to be a document
    ],
)
@pytest.mark.parametrize("where", [0, 50, 99])
def test_a_bad_document_in_a_batch_of_encoded_documents_is_refused(bad: bytes, where: int) -> None:
    # a list of bytes takes the bulk path, whose checks must catch any one bad document
    documents = [encode({"_id": i}) for i in range(100)]
    documents[where] = bad
    with pytest.raises(LocalProtocolError, match="pre-encoded"):
        encode_op_msg({"insert": "c"}, request_id=1, sequences={"documents": documents})


def test_a_batch_of_encoded_documents_passes_through() -> None:
    documents = [encode({"_id": i, "s": "x" * i}) for i in range(100)]
    message = read_one(
        encode_op_msg({"insert": "c"}, request_id=1, sequences={"documents": documents})
    )
    assert message.sequences["documents"] == [{"_id": i, "s": "x" * i} for i in range(100)]


def test_encoder_refuses_unknown_required_flags() -> None:
    with pytest.raises(LocalProtocolError, match="flagBits"):
        encode_op_msg({"ping": 1}, request_id=1, flags=1 << 5)
    with pytest.raises(LocalProtocolError, match="flagBits"):
        encode_op_msg({"ping": 1}, request_id=1, flags=-1)


def test_checksum_flag_bit_means_checksum() -> None:
    data = encode_op_msg({"ping": 1}, request_id=1, flags=CHECKSUM_PRESENT)
    assert read_one(data).checksum_present
    assert struct.unpack_from("<I", data, len(data) - 4)[0] == crc32c(data[:-4])


def test_exhaust_allowed_only_on_hello_and_get_more() -> None:
    for name in ("hello", "isMaster", "ismaster", "getMore"):
        encode_op_msg({name: 1}, request_id=1, flags=EXHAUST_ALLOWED)
    with pytest.raises(LocalProtocolError, match="exhaustAllowed"):
        encode_op_msg({"find": "c"}, request_id=1, flags=EXHAUST_ALLOWED)


def test_request_id_must_be_int32() -> None:
    with pytest.raises(LocalProtocolError, match="int32"):
        encode_op_msg({"ping": 1}, request_id=2**31)


def test_duplicate_sequences_refused() -> None:
    with pytest.raises(LocalProtocolError, match="twice"):
        encode_op_msg({"a": 1}, request_id=1, sequences=[("d", []), ("d", [])])
    with pytest.raises(LocalProtocolError, match="NUL"):
        encode_op_msg({"a": 1}, request_id=1, sequences={"a\x00b": []})


def test_max_message_size_on_encode() -> None:
    with pytest.raises(DocumentTooLarge, match="maximum message size"):
        encode_op_msg({"s": "x" * 100}, request_id=1, max_message_size=100)


def test_request_ids_wrap_and_are_per_counter() -> None:
    a, b = RequestIds(), RequestIds()
    assert [a.next(), a.next(), b()] == [1, 2, 1]
    late = RequestIds(start=2**31 - 1)
    assert [late.next(), late.next()] == [2**31 - 1, 1]
    with pytest.raises(LocalProtocolError):
        RequestIds(start=0)


def test_error_offsets_count_from_the_message_start() -> None:
    doc = bytearray(encode({"a": "xyz"}))
    doc[4] = 0x77  # an unknown element type in the body
    bad_body = frame(struct.pack("<IB", 0, 0) + bytes(doc))
    second_body = frame(struct.pack("<IB", 0, 0) + encode({"ok": 1}) + b"\x00" + encode({}))
    for bad, where in ((bad_body, r"bad document at offset 21:"), (second_body, r"offset 34$")):
        reader = MessageReader()
        reader.receive_data(encode_op_msg({"first": 1}, request_id=1) + bad)
        reader.next_message()
        with pytest.raises(ProtocolError, match=where):
            reader.next_message()


def test_a_batch_of_raw_documents_is_written_as_their_bytes() -> None:
    encoded = [encode({"_id": i, "x": "y" * i}) for i in range(5)]
    body = {"insert": "c", "$db": "d"}
    as_bytes = encode_op_msg(body, request_id=1, sequences={"documents": encoded})
    raw = [RawDocument(data) for data in encoded]
    assert encode_op_msg(body, request_id=1, sequences={"documents": raw}) == as_bytes
    # views into a larger buffer (not whole RawDocuments) and mixed batches: the general loop
    outer = RawDocument(encode({"a": {"_id": 0, "x": ""}}))
    view = outer["a"]
    mixed = [raw[0], view, encoded[2], {"_id": 3, "x": "yyy"}]
    expected = [encoded[0], encode({"_id": 0, "x": ""}), encoded[2], encoded[3]]
    assert encode_op_msg(body, request_id=1, sequences={"documents": mixed}) == encode_op_msg(
        body, request_id=1, sequences={"documents": expected}
    )
    # a whole RawDocument first, then something that is not one: the general loop again
    for tail in ({"_id": 9}, encoded[1], view):
        batch = [raw[0], tail]
        want = [encoded[0], encode(dict(tail)) if not isinstance(tail, bytes) else tail]
        assert encode_op_msg(body, request_id=1, sequences={"documents": batch}) == (
            encode_op_msg(body, request_id=1, sequences={"documents": want})
        )


def test_raw_documents_from_a_stream_of_many_are_views_not_whole() -> None:
    from mongo_sansio.bson import CodecOptions, decode_iter

    stream = b"".join(encode({"_id": i}) for i in range(3))
    views = list(decode_iter(stream, CodecOptions(document_class=RawDocument)))
    assert [v._whole for v in views] == [None, None, None]  # the first starts at 0 but is short
    body = {"insert": "c", "$db": "d"}
    assert encode_op_msg(body, request_id=1, sequences={"documents": views}) == encode_op_msg(
        body, request_id=1, sequences={"documents": [encode({"_id": i}) for i in range(3)]}
    )


def test_a_batch_of_a_raw_document_subclass_is_written_as_its_bytes() -> None:
    class Tagged(RawDocument):
        __slots__ = ()

    encoded = [encode({"_id": i}) for i in range(3)]
    body = {"insert": "c", "$db": "d"}
    assert encode_op_msg(
        body, request_id=1, sequences={"documents": [Tagged(d) for d in encoded]}
    ) == encode_op_msg(body, request_id=1, sequences={"documents": encoded})


# -- a batch of dicts: encoded in one run of the encoder ----------------------------------


def test_a_batch_of_dicts_is_written_as_each_encoding() -> None:
    docs: list[dict[str, Any]] = [{"_id": i, "s": "x" * i, "d": {"l": [i]}} for i in range(100)]
    docs[3] = {}
    body = {"insert": "c", "$db": "d"}
    for checksum in (False, True):
        data = encode_op_msg(body, request_id=1, sequences={"documents": docs}, checksum=checksum)
        section = b"documents\x00" + b"".join(encode(d) for d in docs)
        start = 21 + len(encode(body))
        end = start + 5 + len(section)
        assert data[start:end] == b"\x01" + struct.pack("<i", 4 + len(section)) + section
        assert struct.unpack_from("<i", data)[0] == len(data)
        assert read_one(data).sequences["documents"] == docs


def test_a_batch_of_dicts_mixed_with_encoded_documents() -> None:
    # a dict first, then other kinds: the general loop writes them all
    docs: list[Any] = [{"_id": 0}, encode({"_id": 1}), RawDocument(encode({"_id": 2})), {"_id": 3}]
    message = read_one(encode_op_msg({"insert": "c"}, request_id=1, sequences={"d": docs}))
    assert message.sequences["d"] == [{"_id": i} for i in range(4)]


@pytest.mark.parametrize("where", [0, 50, 99])
@pytest.mark.parametrize(
    "bad", [{"a": {"b": object()}}, {"k\x00": 1}, {"a": [{"n": 2**64}]}, {"s": "x" * 2000}]
)
def test_a_bad_dict_in_a_batch_raises_what_encoding_it_raises(
    bad: dict[str, Any], where: int
) -> None:
    opts = CodecOptions(max_document_size=1000)
    docs: list[dict[str, Any]] = [{"_id": i} for i in range(100)]
    docs[where] = bad
    with pytest.raises(Exception) as expected:
        encode(bad, opts)
    with pytest.raises(type(expected.value)) as got:
        encode_op_msg({"insert": "c"}, request_id=1, sequences={"d": docs}, codec_options=opts)
    assert str(got.value) == str(expected.value)
    assert getattr(got.value, "path", None) == getattr(expected.value, "path", None)
