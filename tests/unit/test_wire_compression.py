"""OP_COMPRESSED: every compressor through the reader, the commands that must not be
compressed, corrupt and oversized frames, cramjam as an independent oracle for snappy/zstd
frames, and the error when cramjam is missing."""

from __future__ import annotations

import struct
import sys
import zlib
from typing import Any

import pytest

from mongo_sansio.bson import encode
from mongo_sansio.errors import ConfigurationError, LocalProtocolError, ProtocolError
from mongo_sansio.wire import (
    OP_COMPRESSED,
    OP_MSG,
    MessageReader,
    NoopCompressor,
    ZlibCompressor,
    compress_message,
    compressor_for,
    encode_op_msg,
    encode_op_query,
    encode_op_reply,
    may_compress,
)
from mongo_sansio.wire import compression as compression_module

try:
    import cramjam
except ImportError:  # pragma: no cover
    cramjam = None

needs_cramjam = pytest.mark.skipif(
    cramjam is None, reason="cramjam (the mongo-sansio[compression] extra) is not installed"
)
NAMES = [
    "noop",
    "zlib",
    pytest.param("snappy", marks=needs_cramjam),
    pytest.param("zstd", marks=needs_cramjam),
]
COMMAND = {"find": "coll", "filter": {"x": {"$gt": 1}}, "$db": "test", "s": "abc" * 200}


def read_one(data: bytes) -> Any:
    reader = MessageReader()
    reader.receive_data(data)
    return reader.next_message()


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(name: str) -> None:
    compressor = compressor_for(name)
    data = encode_op_msg(
        COMMAND,
        request_id=3,
        response_to=2,
        sequences={"documents": [{"i": i} for i in range(20)]},
        compressor=compressor,
    )
    length, request_id, response_to, op_code, original, size, compressor_id = struct.unpack_from(
        "<iiiiiiB", data
    )
    assert (length, request_id, response_to, op_code) == (len(data), 3, 2, OP_COMPRESSED)
    assert (original, compressor_id) == (OP_MSG, compressor.compressor_id)
    message = read_one(data)
    assert message.body == COMMAND
    assert message.sequences == {"documents": [{"i": i} for i in range(20)]}
    assert (message.request_id, message.response_to) == (3, 2)
    assert message.compressor_id == compressor.compressor_id
    plain = encode_op_msg(
        COMMAND, request_id=3, response_to=2, sequences={"documents": [{"i": i} for i in range(20)]}
    )
    assert size == len(plain) - 16


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_with_checksum(name: str) -> None:
    data = encode_op_msg(COMMAND, request_id=1, checksum=True, compressor=compressor_for(name))
    assert struct.unpack_from("<i", data, 12)[0] == OP_COMPRESSED
    message = read_one(data)
    assert message.checksum_present and message.body == COMMAND


@pytest.mark.parametrize("name", NAMES)
def test_legacy_messages_compress_too(name: str) -> None:
    compressor = compressor_for(name)
    reply = encode_op_reply([{"ok": 1.0}], request_id=5, response_to=4)
    message = read_one(compress_message(reply, compressor))
    assert message.op_code == 1 and message.body == {"ok": 1.0}
    assert message.compressor_id == compressor.compressor_id
    query = encode_op_query({"isMaster": 1}, request_id=6)
    assert read_one(compress_message(query, compressor)).query == {"isMaster": 1}


@pytest.mark.parametrize(
    "name",
    ["hello", "isMaster", "ismaster", "ISMASTER", "saslStart", "saslContinue", "getnonce",
     "authenticate", "createUser", "updateUser", "copydbSaslStart", "copydbgetnonce", "copydb"],
)  # fmt: skip
def test_forbidden_commands_are_never_compressed(name: str) -> None:
    assert not may_compress(name)
    data = encode_op_msg({name: 1, "$db": "admin"}, request_id=1, compressor=ZlibCompressor())
    assert struct.unpack_from("<i", data, 12)[0] == OP_MSG
    assert data == encode_op_msg({name: 1, "$db": "admin"}, request_id=1)


def test_other_commands_are_compressed() -> None:
    for name in ("find", "insert", "ping", "helloWorld", "saslStartX"):
        assert may_compress(name)
    data = encode_op_msg({"ping": 1}, request_id=1, compressor=NoopCompressor())
    assert struct.unpack_from("<i", data, 12)[0] == OP_COMPRESSED


def compressed_frame(
    payload: bytes, size: int, compressor_id: int, original: int = OP_MSG
) -> bytes:
    return (
        struct.pack(
            "<iiiiiiB", 25 + len(payload), 1, 0, OP_COMPRESSED, original, size, compressor_id
        )
        + payload
    )


def inner_op_msg(doc: dict) -> bytes:
    return encode_op_msg(doc, request_id=1)[16:]


def refused(data: bytes, match: str) -> None:
    reader = MessageReader()
    with pytest.raises(ProtocolError, match=match):
        reader.receive_data(data)
        reader.next_message()


def test_unknown_compressor_id() -> None:
    inner = inner_op_msg({"ok": 1})
    refused(compressed_frame(inner, len(inner), 9), "unknown compressorId 9")


def test_wrapped_op_code_must_be_a_message() -> None:
    inner = inner_op_msg({"ok": 1})
    refused(compressed_frame(inner, len(inner), 0, original=OP_COMPRESSED), "cannot be wrapped")
    refused(compressed_frame(inner, len(inner), 0, original=2002), "cannot be wrapped")


def test_announced_size_must_match() -> None:
    inner = inner_op_msg({"ok": 1})
    squeezed = zlib.compress(inner)
    refused(compressed_frame(squeezed, len(inner) + 1, 2), "zlib")
    refused(compressed_frame(squeezed, len(inner) - 1, 2), "zlib")
    refused(compressed_frame(inner, len(inner) + 1, 0), "noop")


def test_announced_size_over_the_maximum_is_refused_before_inflating() -> None:
    bomb = zlib.compress(b"\x00" * 10_000_000)
    reader = MessageReader(max_message_size=1_000_000)
    with pytest.raises(ProtocolError, match="uncompressed bytes"):
        reader.receive_data(compressed_frame(bomb, 10_000_000, 2))
        reader.next_message()


def test_zlib_frame_that_inflates_past_its_announced_size() -> None:
    inner = inner_op_msg({"ok": 1})
    refused(compressed_frame(zlib.compress(inner + b"\x00" * 100_000), len(inner), 2), "zlib")


def test_corrupt_zlib() -> None:
    refused(compressed_frame(b"not zlib at all", 30, 2), "zlib")


@needs_cramjam
@pytest.mark.parametrize("compressor_id", [1, 3])
def test_corrupt_cramjam_frames(compressor_id: int) -> None:
    refused(compressed_frame(b"\xff" * 40, 30, compressor_id), "OP_COMPRESSED")


@needs_cramjam
def test_cramjam_frames_that_lie_about_their_size() -> None:
    inner = inner_op_msg({"ok": 1, "s": "x" * 100})
    snappy = bytes(cramjam.snappy.compress_raw(inner))
    refused(compressed_frame(snappy, len(inner) - 1, 1), "snappy")
    refused(compressed_frame(snappy, len(inner) + 1, 1), "snappy")
    zstd = bytes(cramjam.zstd.compress(inner))
    refused(compressed_frame(zstd, len(inner) - 1, 3), "zstd")
    refused(compressed_frame(zstd, len(inner) + 1, 3), "zstd")


# -- cramjam as an independent oracle ------------------------------------------------------


@needs_cramjam
def test_our_snappy_and_zstd_frames_decompress_with_cramjam() -> None:
    plain = encode_op_msg(COMMAND, request_id=1)
    for name, inflate in (
        ("snappy", cramjam.snappy.decompress_raw),
        ("zstd", cramjam.zstd.decompress),
    ):
        data = encode_op_msg(COMMAND, request_id=1, compressor=compressor_for(name))
        assert bytes(inflate(data[25:])) == plain[16:]


@needs_cramjam
def test_cramjam_frames_decompress_with_our_reader() -> None:
    inner = inner_op_msg(COMMAND)
    for compressor_id, squeeze in (
        (1, cramjam.snappy.compress_raw),
        (3, cramjam.zstd.compress),
    ):
        message = read_one(compressed_frame(bytes(squeeze(inner)), len(inner), compressor_id))
        assert message.body == COMMAND and message.compressor_id == compressor_id


def test_zlib_frames_match_the_standard_library() -> None:
    inner = inner_op_msg(COMMAND)
    data = encode_op_msg(COMMAND, request_id=1, compressor=ZlibCompressor(level=9))
    assert zlib.decompress(data[25:]) == inner
    assert read_one(compressed_frame(zlib.compress(inner, 1), len(inner), 2)).body == COMMAND


# -- configuration -------------------------------------------------------------------------


def test_unknown_compressor_name() -> None:
    with pytest.raises(ConfigurationError, match="unknown compressor"):
        compressor_for("lz4")


@pytest.mark.parametrize("level", [-2, 10, "3", None])
def test_zlib_level_is_checked(level: Any) -> None:
    with pytest.raises(ConfigurationError, match="zlibCompressionLevel"):
        ZlibCompressor(level)


def test_missing_cramjam_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cramjam", None)  # makes `import cramjam` fail
    monkeypatch.setattr(compression_module, "_CRAMJAM", [])
    for name in ("snappy", "zstd"):
        with pytest.raises(ConfigurationError, match=r"mongo-sansio\[compression\]"):
            compressor_for(name)
    # A reader accepts snappy frames lazily; without cramjam a frame is a clear error.
    inner = inner_op_msg({"ok": 1})
    reader = MessageReader()
    reader.receive_data(compressed_frame(inner, len(inner), 1))
    with pytest.raises(ProtocolError, match=r"mongo-sansio\[compression\]"):
        reader.next_message()
    # zlib and noop need nothing but the standard library
    assert read_one(encode_op_msg({"ping": 1}, request_id=1, compressor=ZlibCompressor())).body == {
        "ping": 1
    }


def test_core_does_not_import_cramjam_eagerly() -> None:
    import subprocess

    code = "import sys, mongo_sansio.wire; print('cramjam' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_compress_message_checks_its_input() -> None:
    with pytest.raises(LocalProtocolError):
        compress_message(b"short", NoopCompressor())
    with pytest.raises(LocalProtocolError):
        compress_message(encode({"a": 1}) * 3, NoopCompressor())


def test_compressor_by_name() -> None:
    data = encode_op_msg(COMMAND, request_id=1, compressor="zlib")
    assert struct.unpack_from("<iiiiiiB", data)[6] == 2
    assert read_one(data).body == COMMAND


def test_reader_accepts_only_the_compressors_it_is_given() -> None:
    data = encode_op_msg(COMMAND, request_id=1, compressor="zlib")
    reader = MessageReader(compressors={0: NoopCompressor()})
    reader.receive_data(data)
    with pytest.raises(ProtocolError, match="unknown compressorId 2"):
        reader.next_message()
