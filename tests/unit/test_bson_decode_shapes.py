"""Shape decoders (mongo_sansio.bson._decode_shapes): compiled decoders for known shapes.

Every result is compared with the general decoder, reached through a CodecOptions equal to
the default but not the same object (shape decoders serve the default options object only):
the same value, or the same InvalidBSON with the same message.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from bson_strategies import every_type_documents
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson._decode import decode
from mongo_sansio.bson._decode_parts import TRIE, new_root
from mongo_sansio.bson._encode import encode
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.types import DBRef, Int64

GENERAL = CodecOptions()


pytestmark = pytest.mark.usefixtures("fresh_trie")


def outcome(call: Any) -> Any:
    """A decode's value (as BSON bytes, so a NaN equals its copy) or its error message."""
    try:
        return ("value", encode(call(), DEFAULT_CODEC_OPTIONS))
    except InvalidBSON as exc:
        return ("invalid", str(exc))


def decoders(root: Any) -> list[Any]:
    shapes = [shape for bucket in (root[8] or {}).values() for shape in bucket]
    return [shape[2] for shape in shapes if shape[2] is not None]


TWEETISH = {
    "text": "hello",
    "id": Int64(22824602300),
    "small": Int64(5),
    "n": 7,
    "f": 2.5,
    "ok": True,
    "none": None,
    "user": {"name": "Jo", "followers": 218, "tags": ["a", "b"]},
    "raw": b"\x01\x02",
}


def test_the_second_decode_of_a_shape_compiles_a_decoder_and_the_third_uses_it() -> None:
    data = encode(TWEETISH)
    decode(data)
    assert decoders(TRIE[0]) == []
    decode(data)
    assert len(decoders(TRIE[0])) == 1
    other = encode({**TWEETISH, "text": "a much longer text ünïcödé", "user": {
        "name": "Someone", "followers": 1, "tags": []}})
    assert decode(other) == decode(other, GENERAL)
    assert decode(data) == TWEETISH == decode(data, GENERAL)


def test_embedded_documents_get_decoders_at_their_own_roots() -> None:
    data = encode(TWEETISH)
    for _ in range(4):
        assert decode(data) == TWEETISH
    user_node = TRIE[0][0]
    while user_node[7][2] != "user":
        user_node = user_node[0]
    assert len(decoders(user_node[4])) == 1


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        (lambda b: b.replace(b"\x08ok\x00\x01", b"\x08ok\x00\x02"), "boolean byte"),
        (lambda b: b.replace(b"hello\x00", b"hel\xffo\x00"), "invalid UTF-8"),
        (lambda b: b.replace(b"hello\x00", b"hello!"), "not NUL-terminated"),
        (lambda b: b[:-1] + b"\x01", "not NUL"),
    ],
    ids=["boolean", "utf8", "string-nul", "document-nul"],
)
def test_bad_bytes_in_a_known_shape_raise_what_the_general_decoder_raises(
    patch: Any, reason: str
) -> None:
    data = encode(TWEETISH)
    for _ in range(3):
        decode(data)
    bad = patch(data)
    assert bad != data
    got = outcome(lambda: decode(bad))
    assert got == outcome(lambda: decode(bad, GENERAL))
    assert got[0] == "invalid" and reason in got[1]


def test_nesting_depth_is_enforced_as_by_the_general_decoder() -> None:
    def nest(levels: int) -> bytes:
        body = b"\x10leaf\x00" + struct.pack("<i", 1)
        for _ in range(levels - 1):
            inner = struct.pack("<i", len(body) + 5) + body + b"\x00"
            body = b"\x03a\x00" + inner
        return struct.pack("<i", len(body) + 5) + body + b"\x00"

    deepest = nest(DEFAULT_CODEC_OPTIONS.max_nesting_depth)
    for _ in range(4):
        assert outcome(lambda: decode(deepest)) == outcome(lambda: decode(deepest, GENERAL))
    too_deep = nest(DEFAULT_CODEC_OPTIONS.max_nesting_depth + 1)
    got = outcome(lambda: decode(too_deep))
    assert got == outcome(lambda: decode(too_deep, GENERAL)) and got[0] == "invalid"


def test_embedded_dbrefs_stay_dbrefs() -> None:
    document = {"a": {"$ref": "coll", "$id": 1}, "b": 2}
    data = encode(document)
    for _ in range(4):
        value = decode(data)
        assert isinstance(value["a"], DBRef) and value == decode(data, GENERAL)


def test_decoder_code_carries_keys_only_as_literals() -> None:
    key = "k'\"\n\\); __import__('os') #"
    data = encode({key: "v", "n": 1})
    for _ in range(3):
        assert decode(data) == {key: "v", "n": 1}
    code = decoders(TRIE[0])[0].__code__
    assert key in code.co_consts or any(
        isinstance(c, tuple) and key in c for c in code.co_consts
    )
    assert not {"os", "__import__"} & set(code.co_names)


@settings(max_examples=300, deadline=None)
@given(every_type_documents, st.data())
def test_shape_decoders_agree_with_the_general_decoder(document: dict[str, Any], data: Any) -> None:
    TRIE[0], TRIE[1] = new_root(), 0
    blob = encode(document)
    for _ in range(3):
        assert outcome(lambda: decode(blob)) == outcome(lambda: decode(blob, GENERAL))
    mutated = bytearray(blob)
    for _ in range(data.draw(st.integers(0, 3))):
        if len(mutated) > 6:
            mutated[data.draw(st.integers(4, len(mutated) - 2))] = data.draw(st.integers(0, 255))
    bad = bytes(mutated)
    # (the general decoder's wording can depend on what the trie predicted, which the first
    # of the two calls changes: so errors are compared by kind only)
    got, expected = outcome(lambda: decode(bad)), outcome(lambda: decode(bad, GENERAL))
    assert got[0] == expected[0] and (got[0] == "invalid" or got == expected)


def test_two_shapes_at_one_root_both_get_decoders() -> None:
    first, second = encode({"a": 1, "s": "x"}), encode({"b": 2.5, "t": None})
    for _ in range(3):
        assert decode(first) == {"a": 1, "s": "x"}
        assert decode(second) == {"b": 2.5, "t": None}
    assert len(decoders(TRIE[0])) == 2


def test_a_deep_document_that_fails_at_the_bottom_is_decoded_once_more_not_once_per_level(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def nest(levels: int, leaf: bytes) -> bytes:
        body = b"\x08leaf\x00" + leaf
        for _ in range(levels - 1):
            body = b"\x03a\x00" + struct.pack("<i", len(body) + 5) + body + b"\x00"
        return struct.pack("<i", len(body) + 5) + body + b"\x00"

    good, bad = nest(12, b"\x01"), nest(12, b"\x07")  # a boolean byte of 7
    for _ in range(3):
        decode(good)
    calls = general_reads(monkeypatch)
    with pytest.raises(InvalidBSON, match="boolean byte 7"):
        decode(bad)
    assert len(calls) <= 2


def test_array_keys_are_not_decoded_whatever_the_trie_knows() -> None:
    # {"a": [1]} with the array's key "0" replaced by a byte that is not UTF-8
    good = encode({"a": [1]})
    bad = good.replace(b"\x100\x00", b"\x10\x80\x00")
    assert decode(bad, GENERAL) == {"a": [1]}  # a cold trie
    for _ in range(3):
        decode(good)
    assert decode(bad) == decode(bad, GENERAL) == {"a": [1]}  # a warm one, and a decoder


def general_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the calls of the general decoder from now on."""
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


def test_arrays_get_decoders_and_a_known_document_with_an_array_of_another_length_stays_on_its_decoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    document = {"n": 1, "mentions": [{"at": [3, 9], "who": "jo"}], "tags": ["a", "b"]}
    data = encode(document)
    for _ in range(3):
        assert decode(data) == document
    calls = general_reads(monkeypatch)  # (decode itself calls it once, then tries shapes)
    assert decode(data) == document and len(calls) == 1  # arrays included: nothing general
    longer = {**document, "tags": ["a", "b", "c"]}
    assert decode(encode(longer)) == longer
    assert len(calls) == 3  # and the longer array alone, the general way
    assert decode(encode(longer), GENERAL) == longer


@pytest.mark.parametrize("container", [[], {}], ids=["array", "document"])
def test_empty_containers_at_the_depth_limit_are_refused_as_by_the_general_decoder(
    container: Any,
) -> None:
    # (a trie root always sits at one depth, so a decoder compiled there has only ever seen
    # depths the general decoder accepted: this pins the behaviour, not a reachable branch)
    def nest(levels: int, leaf: bytes) -> bytes:
        body = leaf
        for _ in range(levels - 1):
            body = b"\x03a\x00" + struct.pack("<i", len(body) + 5) + body + b"\x00"
        return struct.pack("<i", len(body) + 5) + body + b"\x00"

    leaf = (b"\x04" if isinstance(container, list) else b"\x03") + b"e\x00" + encode({})
    limit = DEFAULT_CODEC_OPTIONS.max_nesting_depth
    for levels in (limit - 1, limit, limit - 1, limit):
        data = nest(levels, leaf)
        for _ in range(3):
            assert outcome(lambda d=data: decode(d)) == outcome(lambda d=data: decode(d, GENERAL))
    assert outcome(lambda: decode(nest(limit - 1, leaf)))[0] == "value"
    assert outcome(lambda: decode(nest(limit, leaf)))[0] == "invalid"


def test_deep_arrays_that_fail_at_the_bottom_are_decoded_once_more_not_once_per_level(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def nest(levels: int, leaf: bytes) -> bytes:
        body = b"\x080\x00" + leaf + b"\x101\x00" + struct.pack("<i", 5)
        for _ in range(levels - 1):
            body = b"\x040\x00" + struct.pack("<i", len(body) + 5) + body + b"\x00"
            body += b"\x021\x00" + struct.pack("<i", 2) + b"x\x00"  # [inner, "x"]
        return struct.pack("<i", len(body) + 5) + body + b"\x00"

    good, bad = nest(12, b"\x01"), nest(12, b"\x07")  # a boolean byte of 7
    for _ in range(3):
        assert decode(good) == decode(good, GENERAL)
    calls = general_reads(monkeypatch)
    with pytest.raises(InvalidBSON, match="boolean byte 7"):
        decode(bad)
    assert len(calls) <= 2


def test_an_array_refused_after_its_first_elements_gives_up_the_whole_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    known = {"a": [{"k": 1}, 2], "z": 0}
    odd = {"a": [{"k": 1}, "two"], "z": 0}  # the same first run, another second element
    for _ in range(3):
        assert decode(encode(known)) == known
    calls = general_reads(monkeypatch)  # (decode itself calls it once, then tries shapes)
    assert decode(encode(odd)) == odd
    assert len(calls) == 1  # the general decode of the whole document is that call


def test_a_shape_is_compiled_once_though_its_decoder_refuses_what_lies_inside() -> None:
    for _ in range(3):
        assert decode(encode({"a": {"x": 1}})) == {"a": {"x": 1}}
    for _ in range(6):
        assert decode(encode({"a": {"y": "s"}})) == {"a": {"y": "s"}}
    assert len(decoders(TRIE[0])) == 1


def test_rare_types_are_read_in_a_shape_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    from mongo_sansio.bson.types import Code, DBPointer, ObjectId, Regex, Symbol

    document = {
        "r": Regex("^a", "im"),
        "c": Code("f()", {"x": 1}),
        "p": DBPointer("db.c", ObjectId(b"0123456789ab")),
        "s": Symbol("sym"),
        "n": 1,
    }
    data = encode(document)
    for _ in range(3):
        assert decode(data) == document
    calls = general_reads(monkeypatch)  # (decode itself calls it once, then tries shapes)
    assert decode(data) == document
    assert len(calls) == 2  # and the scope document, read by the general helper
    assert decode(data, GENERAL) == document
