"""Differential tests against PyMongo (a test oracle only; the package never imports it).

PyMongo's encoders (its C extension and its pure-Python path) write OP_MSG commands, inserts
with document sequences, batched writes and compressed messages: our reader must parse them to
the same documents and sequences.  PyMongo's reply decoder (``_OpMsg.unpack``) and its
decompressor must accept what our encoder writes -- within what PyMongo reads: a reply with
one kind-0 section and no checksum.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pymongo_message = pytest.importorskip("pymongo.message", reason="PyMongo is the oracle here")
import bson as pymongo_bson  # noqa: E402  (PyMongo's bson, after the skip)
from bson.codec_options import DEFAULT_CODEC_OPTIONS as PYMONGO_OPTIONS  # noqa: E402
from pymongo import compression_support  # noqa: E402
from pymongo.errors import ProtocolError as PyMongoProtocolError  # noqa: E402

from mongo_sansio.bson import encode  # noqa: E402
from mongo_sansio.wire import (  # noqa: E402
    MORE_TO_COME,
    MessageReader,
    OpMsg,
    ZlibCompressor,
    compressor_for,
    encode_op_msg,
)

# Values both libraries map to the same Python values.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**31), 2**31 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
keys = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=8)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(keys.filter(lambda k: not k.startswith("$")), inner, max_size=4)
    ),
    max_leaves=12,
)
documents = st.dictionaries(keys.filter(lambda k: not k.startswith("$")), values, max_size=6)


def read_one(data: bytes, lazy: bool = False) -> OpMsg:
    reader = MessageReader(lazy=lazy)
    reader.receive_data(data)
    message = reader.next_message()
    assert isinstance(message, OpMsg)
    return message


def pure_op_msg(flags: int, command: dict, identifier: str, docs: list | None) -> bytes:
    """PyMongo's pure-Python OP_MSG path, with the header it adds."""
    payload, _, _ = pymongo_message._op_msg_no_header(
        flags, command, identifier, docs, PYMONGO_OPTIONS
    )
    return struct.pack("<iiii", 16 + len(payload), 77, 0, 2013) + payload


@settings(max_examples=150, deadline=None)
@given(filter_=documents, extra=documents)
def test_we_read_pymongo_find_commands(filter_: dict, extra: dict) -> None:
    command = {"find": "coll", "filter": filter_, "extra": extra}
    expected = dict(command, **{"$db": "test"})
    request_id, data, _, _ = pymongo_message._op_msg(
        0, dict(command), "test", None, PYMONGO_OPTIONS
    )
    message = read_one(data)
    assert message.request_id == request_id and message.flags == 0
    assert message.body == expected and message.sequences == {}
    raw = read_one(data, lazy=True).body
    assert bytes(raw.raw) == pymongo_bson.encode(expected)
    assert read_one(pure_op_msg(0, expected, "", None)).body == expected


@settings(max_examples=50, deadline=None)
@given(docs=st.lists(documents, min_size=1, max_size=8))
def test_we_read_pymongo_inserts_with_document_sequences(docs: list[dict]) -> None:
    command = {"insert": "coll", "documents": docs, "ordered": False}
    _, data, _, _ = pymongo_message._op_msg(0, dict(command), "db", None, PYMONGO_OPTIONS)
    message = read_one(data)
    assert message.body == {"insert": "coll", "ordered": False, "$db": "db"}
    assert message.sequences == {"documents": docs}
    pure = pure_op_msg(MORE_TO_COME, {"insert": "coll"}, "documents", docs)
    message = read_one(pure)
    assert message.more_to_come and message.sequences == {"documents": docs}


@pytest.mark.parametrize(
    "operation, name, field",
    [(0, "insert", "documents"), (1, "update", "updates"), (2, "delete", "deletes")],
)
def test_we_read_pymongo_batched_writes(operation: int, name: str, field: str) -> None:
    ctx = SimpleNamespace(
        max_bson_size=16 << 20, max_message_size=48_000_000, max_write_batch_size=1000
    )
    docs = [{"q": {"_id": i}, "u": {"$set": {"x": i}}, "limit": 1} for i in range(50)]
    command = {name: "coll", "ordered": True, "$db": "db"}
    request_id, data, sent = pymongo_message._batched_op_msg(
        operation, command, docs, True, PYMONGO_OPTIONS, ctx
    )
    message = read_one(data)
    assert message.request_id == request_id
    assert message.body == command
    assert message.sequences == {field: docs} and len(sent) == 50


def test_we_read_pymongo_zlib_compressed_messages() -> None:
    ctx = compression_support.ZlibContext(6)
    command = {"insert": "coll", "documents": [{"a": i, "s": "x" * 30} for i in range(20)]}
    request_id, data, _, _ = pymongo_message._op_msg(
        0, dict(command), "db", None, PYMONGO_OPTIONS, ctx
    )
    message = read_one(data)
    assert message.compressor_id == 2 and message.request_id == request_id
    assert message.sequences == {"documents": command["documents"]}


# -- PyMongo reads what we write -----------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(body=documents, more_to_come=st.booleans())
def test_pymongo_reads_our_replies(body: dict, more_to_come: bool) -> None:
    flags = MORE_TO_COME if more_to_come else 0
    data = encode_op_msg(body, request_id=5, response_to=4, flags=flags)
    length, request_id, response_to, op_code = struct.unpack_from("<iiii", data)
    assert (length, request_id, response_to, op_code) == (len(data), 5, 4, 2013)
    reply = pymongo_message._OpMsg.unpack(data[16:])
    assert reply.more_to_come == more_to_come
    assert reply.unpack_response(codec_options=PYMONGO_OPTIONS) == [body]
    # PyMongo hands back the body's bytes as sent (its own encoder would move _id first)
    assert bytes(reply.raw_command_response()) == encode(body)


def test_pymongo_refuses_what_it_does_not_support() -> None:
    # PyMongo's reply decoder reads one kind-0 section without a checksum; our writer emits
    # sequences and checksums on request (the server direction needs them), so PyMongo is
    # no oracle for those -- our own reader and the hand-built layouts are.
    with_sequence = encode_op_msg({"ok": 1}, request_id=1, sequences={"cursor": [{"a": 1}]})
    with pytest.raises(PyMongoProtocolError):
        pymongo_message._OpMsg.unpack(with_sequence[16:])
    with_checksum = encode_op_msg({"ok": 1}, request_id=1, checksum=True)
    with pytest.raises(PyMongoProtocolError):
        pymongo_message._OpMsg.unpack(with_checksum[16:])


@pytest.mark.parametrize("name", ["zlib", "snappy", "zstd"])
def test_pymongo_decompresses_our_frames(name: str) -> None:
    if name == "snappy" and not compression_support._have_snappy():
        pytest.skip("PyMongo's snappy support needs python-snappy, which is not installed")
    if name == "zstd" and not compression_support._have_zstd():
        pytest.skip("PyMongo's zstd support needs zstandard, which is not installed")
    try:
        compressor = compressor_for(name) if name != "zlib" else ZlibCompressor()
    except Exception as exc:  # cramjam missing
        pytest.skip(str(exc))
    body = {"cursor": {"firstBatch": [{"i": i} for i in range(30)], "id": 0}, "ok": 1.0}
    data = encode_op_msg(body, request_id=9, response_to=8, compressor=compressor)
    header: Any = struct.unpack_from("<iiiiiiB", data)
    assert header[3] == 2012 and header[4] == 2013
    inner = compression_support.decompress(data[25:], header[6], 48_000_000)
    reply = pymongo_message._OpMsg.unpack(inner)
    assert reply.unpack_response(codec_options=PYMONGO_OPTIONS) == [body]
