"""Arrays of documents (a cursor's batch) decoded document by document through the trie root
their documents share (mongo_sansio.bson._decode_batches).

Every result is compared with the general decoder (a CodecOptions equal to the default but
not the same object, which shape decoders do not serve): the same value, or the same
InvalidBSON message.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from bson_strategies import every_type_documents
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson._decode import decode
from mongo_sansio.bson._encode import encode
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.types import DBRef, Int64

GENERAL = CodecOptions()
LENGTH = struct.pack("<i", 17)  # of each document {"n": i, "ok": True}

pytestmark = pytest.mark.usefixtures("fresh_trie")


def outcome(data: bytes, opts: CodecOptions | None = None) -> Any:
    try:
        return ("value", encode(decode(data, opts), DEFAULT_CODEC_OPTIONS))
    except InvalidBSON as exc:
        return ("invalid", str(exc))


def reply(batch: list[Any], field: str = "firstBatch") -> dict[str, Any]:
    return {"cursor": {field: batch, "id": Int64(7), "ns": "db.c"}, "ok": 1.0}


def general_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from mongo_sansio.bson import _decode, _decode_loop

    calls: list[int] = []
    general = _decode_loop.read_general

    def counted(*args: Any) -> Any:
        calls.append(1)
        return general(*args)

    # called by the public functions (_decode) and by the shape decoders' helpers (_decode_loop)
    monkeypatch.setattr(_decode, "read_general", counted)
    monkeypatch.setattr(_decode_loop, "read_general", counted)
    return calls


def test_a_long_batch_of_one_shape_is_decoded_by_shape_decoders_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 1000 documents: past the first few hundred the general decoder stops predicting the
    # array's keys; the batch path never tracks them, so every document takes its shape
    batch = [{"_id": i, "name": f"n{i}", "score": i * 0.5} for i in range(1000)]
    data = encode(reply(batch))
    for _ in range(3):
        assert decode(data) == reply(batch)
    calls = general_reads(monkeypatch)  # (decode itself calls it once, then tries shapes)
    assert decode(data) == reply(batch)
    assert len(calls) == 1  # no document of the batch went the general way
    other = [{"_id": i, "name": "x", "score": 1.0} for i in range(637)]  # another length
    assert decode(encode(reply(other))) == reply(other)
    assert len(calls) == 2


@pytest.mark.parametrize(
    "batch",
    [
        [{"a": 1}, {"b": "x"}, {"a": 2}, {}],  # several shapes, an empty document
        [{"a": 1}, 2, {"a": 3}],  # an element that is not a document
        [{"r": DBRef("c", 1)}, {"$ref": "c", "$id": 2}],  # DBRefs, embedded and whole
        [{"a": [{"b": 1}, {"b": 2}]}, {"a": []}],  # nested batches
        [[{"a": 1}], {"a": 1}],  # an array first
    ],
)
def test_mixed_batches_decode_as_the_general_decoder_does(batch: list[Any]) -> None:
    data = encode(reply(batch))
    for _ in range(4):
        assert outcome(data) == outcome(data, GENERAL)
        assert outcome(data)[0] == "value"


def corrupt(data: bytes, needle: bytes, replacement: bytes) -> bytes:
    assert needle in data
    return data.replace(needle, replacement, 1)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: corrupt(d, b"\x08ok\x00\x01", b"\x08ok\x00\x07"),  # a bad boolean inside
        lambda d: corrupt(d, b"\x032\x00" + LENGTH, b"\x032\x00" + struct.pack("<i", 400)),
        lambda d: corrupt(d, b"\x032\x00" + LENGTH, b"\x032\x00" + struct.pack("<i", 3)),
        lambda d: corrupt(d, b"\x032\x00" + LENGTH, b"\x0322" + LENGTH),  # key without NUL
        lambda d: corrupt(d, b"\x032\x00", b"\x102\x00"),  # an int32 reading a document
    ],
    ids=["boolean", "long", "short", "key", "type"],
)
def test_damaged_batches_raise_what_the_general_decoder_raises(damage: Any) -> None:
    batch = [{"n": i, "ok": True} for i in range(5)]
    good = encode(reply(batch))
    for _ in range(3):
        decode(good)
    bad = damage(good)
    assert outcome(bad) == outcome(bad, GENERAL)
    assert outcome(bad)[0] == "invalid"


@settings(max_examples=150, deadline=None)
@given(st.lists(every_type_documents, max_size=6), st.integers(1, 3))
def test_batches_agree_with_the_general_decoder(batch: list[Any], repeat: int) -> None:
    data = encode(reply(batch * repeat))
    for _ in range(3):
        assert outcome(data) == outcome(data, GENERAL)


def test_the_last_documents_decoder_is_tried_first_and_a_change_of_shape_is_noticed() -> None:
    # runs of one shape, then another, then the first again, then one that no shape takes:
    # the decoder remembered from the last document refuses the new shape, and the search
    # finds (or learns) the right one; nothing is decoded with the wrong decoder
    one = [{"_id": i, "name": f"n{i}"} for i in range(40)]
    two = [{"_id": i, "score": i * 0.5, "tags": ["a"]} for i in range(40)]
    same_first_key = [{"_id": f"s{i}"} for i in range(3)]  # same bucket, another type
    batch = one + two + one[:5] + same_first_key + [{"_id": 1, "name": "x", "extra": None}] + two[:3]
    data = encode(reply(batch))
    for _ in range(4):
        assert outcome(data) == outcome(data, GENERAL)
        assert decode(data) == reply(batch)
