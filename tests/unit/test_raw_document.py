"""RawDocument and RawArray (mongo_sansio.bson.raw): lazy, zero-copy views over BSON bytes.

Documents are built byte by byte (see test_bson_decode.py for the helpers' twins) so that
corrupt tails and odd layouts are easy to make.
"""

from __future__ import annotations

import datetime
import pickle
import struct
from collections import OrderedDict
from typing import Any

import pytest
from bson_strategies import plain
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import _walkers
from mongo_sansio.bson._decode import decode
from mongo_sansio.bson._encode import encode
from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.raw import RawArray, RawDocument
from mongo_sansio.bson.types import Code, DBRef, Int64


def i32(value: int) -> bytes:
    return struct.pack("<i", value)


def cstr(text: str) -> bytes:
    return text.encode() + b"\x00"


def string(text: str) -> bytes:
    data = text.encode()
    return i32(len(data) + 1) + data + b"\x00"


def el(type_byte: int, key: str, payload: bytes = b"") -> bytes:
    return bytes([type_byte]) + cstr(key) + payload


def doc(*elements: bytes) -> bytes:
    body = b"".join(elements)
    return i32(len(body) + 5) + body + b"\x00"


def array(*payloads: tuple[int, bytes]) -> bytes:
    return doc(*(el(t, str(i), p) for i, (t, p) in enumerate(payloads)))


OID = bytes(range(12))

TWEETISH = doc(
    el(0x02, "text", string("hello world")),
    el(0x12, "in_reply_to", struct.pack("<q", 22773233453)),
    el(0x0A, "geo"),
    el(0x08, "truncated", b"\x00"),
    el(0x03, "entities", doc(el(0x04, "urls", doc()), el(0x04, "idx", array((0x10, i32(0)), (0x10, i32(9)))))),
    el(0x03, "user", doc(el(0x02, "name", string("Jo")), el(0x10, "followers", i32(218)))),
    el(0x10, "retweets", i32(5)),
    el(0x12, "id", struct.pack("<q", 22824602300)),
)

CHANGE_EVENT = doc(
    el(0x03, "_id", doc(el(0x02, "_data", string("8265A1B2")))),
    el(0x02, "operationType", string("update")),
    el(0x11, "clusterTime", struct.pack("<II", 7, 1705000000)),
    el(0x03, "ns", doc(el(0x02, "db", string("bench")), el(0x02, "coll", string("tweets")))),
    el(0x03, "documentKey", doc(el(0x07, "_id", OID))),
    el(0x03, "fullDocument", TWEETISH),
)


def test_lookups_agree_with_decode() -> None:
    for _ in range(3):  # cold, then with the shape trie warm
        raw = RawDocument(TWEETISH)
        full = decode(TWEETISH)
        for key in reversed(list(full)):  # out of order: later keys first, then index hits
            value = raw[key]
            expected = full[key]
            if isinstance(value, RawDocument):
                value = value.to_dict()
            assert value == expected
        assert list(raw) == list(full)
        assert len(raw) == len(full)
        assert raw.to_dict() == full
        assert raw == full and full == raw


def test_nested_views_share_the_buffer() -> None:
    raw = RawDocument(CHANGE_EVENT)
    assert raw["operationType"] == "update"
    assert raw["ns"]["coll"] == "tweets"
    key = raw["documentKey"]
    assert isinstance(key, RawDocument) and key["_id"] == ObjectId(OID)
    assert isinstance(key.raw, memoryview) and key.raw.obj is CHANGE_EVENT
    full = raw["fullDocument"]
    assert isinstance(full, RawDocument) and full["user"]["name"] == "Jo"
    assert bytes(full.raw) == TWEETISH
    idx = full["entities"]["idx"]
    assert isinstance(idx, RawArray) and idx.raw.obj is CHANGE_EVENT
    assert list(idx) == [0, 9] and idx == [0, 9] and idx[-1] == 9


def test_raw_attribute() -> None:
    raw = RawDocument(TWEETISH)
    assert raw.raw is TWEETISH
    copied = RawDocument(bytearray(TWEETISH))
    assert type(copied.raw) is bytes and copied.raw == TWEETISH
    assert RawDocument(memoryview(TWEETISH)).raw == TWEETISH


@pytest.mark.usefixtures("fresh_trie")  # (which puts the learning budget back after)
def test_walks_only_as_far_as_needed() -> None:
    _walkers.COMPLETIONS[0] = 0  # no whole walks left to spend on learning shapes
    corrupt_tail = TWEETISH[:-12] + b"\xee" * 11 + b"\x00"
    raw = RawDocument(corrupt_tail)
    assert raw["text"] == "hello world"
    assert "geo" in raw and raw["geo"] is None
    assert list(raw._index) == ["text", "in_reply_to", "geo"]
    with pytest.raises(InvalidBSON):
        raw["id"]
    with pytest.raises(InvalidBSON):
        list(raw)
    assert raw["text"] == "hello world"  # what was read before still reads


def test_missing_keys() -> None:
    raw = RawDocument(TWEETISH)
    with pytest.raises(KeyError):
        raw["nope"]
    assert raw.get("nope") is None and raw.get("nope", 5) == 5
    assert raw.get("retweets") == 5
    assert "nope" not in raw and 3 not in raw  # type: ignore[comparison-overlap]
    assert raw["text"] == "hello world"


def test_mapping_methods() -> None:
    raw = RawDocument(TWEETISH)
    full = decode(TWEETISH)
    assert list(raw.keys()) == list(full)
    assert [k for k, _ in raw.items()] == list(full)
    assert len(list(raw.values())) == len(full)
    assert bool(raw) and not RawDocument(doc())
    assert dict(RawDocument(doc(el(0x10, "a", i32(1))))) == {"a": 1}


def test_equality() -> None:
    assert RawDocument(TWEETISH) == RawDocument(bytearray(TWEETISH))
    other = doc(el(0x10, "a", i32(1)))
    assert RawDocument(TWEETISH) != RawDocument(other)
    assert RawDocument(other) == {"a": 1}
    assert RawDocument(other) == OrderedDict(a=1)
    assert RawDocument(other) != {"a": 2}
    assert RawDocument(other) != [("a", 1)]
    with pytest.raises(TypeError):
        hash(RawDocument(other))


def test_repr() -> None:
    assert repr(RawDocument(doc(el(0x10, "a", i32(1))))) == "RawDocument({'a': 1})"
    arr = RawDocument(doc(el(0x04, "a", array((0x10, i32(1))))))["a"]
    assert repr(arr) == "RawArray([1])"


def test_codec_options_apply() -> None:
    data = doc(el(0x09, "when", struct.pack("<q", 0)), el(0x12, "small", struct.pack("<q", 3)))
    raw = RawDocument(data, CodecOptions(tz_aware=True))
    assert raw["when"] == datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    assert raw["when"].tzinfo is not None
    assert type(raw["small"]) is Int64
    bad = doc(el(0x02, "s", i32(3) + b"\xffa\x00"))
    with pytest.raises(InvalidBSON):
        RawDocument(bad)["s"]
    assert RawDocument(bad, CodecOptions(unicode_decode_error_handler="replace"))["s"] == "\ufffda"


def test_duplicate_keys() -> None:
    data = doc(el(0x10, "a", i32(1)), el(0x10, "b", i32(2)), el(0x10, "a", i32(3)))
    for _ in range(2):
        raw = RawDocument(data)
        assert raw["a"] == 1
        assert list(raw) == ["a", "b"] and len(raw) == 2
        assert raw["a"] == 1
        assert raw.to_dict() == {"a": 3, "b": 2} == decode(data)


@pytest.mark.parametrize(
    "data",
    [b"", b"\x05\x00\x00\x00", doc()[:-1] + b"\x01", doc() + b"\x00", i32(7) + b"\x00\x00", i32(4) + b"\x00"],
)
def test_construction_checks_the_envelope(data: bytes) -> None:
    with pytest.raises(InvalidBSON):
        RawDocument(data)


def test_construction_checks_only_the_envelope() -> None:
    raw = RawDocument(i32(6) + b"\x00\x00")  # a stray NUL where an element should start
    with pytest.raises(InvalidBSON):
        len(raw)


def test_construction_checks_max_document_size() -> None:
    with pytest.raises(InvalidBSON, match="max_document_size"):
        RawDocument(TWEETISH, CodecOptions(max_document_size=10))


def test_other_types_through_views() -> None:
    cws_scope = doc(el(0x10, "x", i32(1)))
    cws_body = string("f") + cws_scope
    data = doc(
        el(0x0F, "cws", i32(len(cws_body) + 4) + cws_body),
        el(0x03, "ref", doc(el(0x02, "$ref", string("c")), el(0x10, "$id", i32(1)))),
        el(0x05, "bin", i32(2) + b"\x00ab"),
        el(0x0B, "re", cstr("a") + cstr("i")),
        el(0xFF, "min"),
    )
    for _ in range(2):
        raw = RawDocument(data)
        assert raw["cws"] == Code("f", {"x": 1})
        assert isinstance(raw["ref"], RawDocument)  # a view, not a DBRef
        assert raw.to_dict()["ref"] == DBRef("c", 1)
        assert raw["bin"] == b"ab"
        assert raw.to_dict() == decode(data)


def test_raw_array() -> None:
    items = [(0x10, i32(i)) for i in range(10)]
    raw = RawDocument(doc(el(0x04, "a", array(*items))))
    arr = raw["a"]
    assert arr[3] == 3 and arr[-1] == 9 and arr[2:5] == [2, 3, 4]
    assert len(arr) == 10 and 7 in arr and arr.index(7) == 7
    assert arr.to_list() == list(range(10)) == list(arr)
    with pytest.raises(IndexError):
        arr[10]
    with pytest.raises(IndexError):
        arr[-11]
    assert arr == list(range(10)) and arr == tuple(range(10)) and arr != "abc"
    assert arr == RawDocument(doc(el(0x04, "a", array(*items))))["a"]


def test_raw_array_corrupt_tail() -> None:
    data = doc(el(0x04, "a", array((0x10, i32(1)), (0x02, i32(99) + b"x\x00"))))
    arr = RawDocument(data)["a"]
    assert arr[0] == 1
    with pytest.raises(InvalidBSON):
        arr[1]
    with pytest.raises(InvalidBSON):
        len(arr)


def test_pickle() -> None:
    raw = RawDocument(CHANGE_EVENT)
    again = pickle.loads(pickle.dumps(raw))
    assert again == raw and again["ns"]["db"] == "bench"
    nested = pickle.loads(pickle.dumps(raw["ns"]))
    assert nested == {"db": "bench", "coll": "tweets"}
    arr = pickle.loads(pickle.dumps(RawDocument(TWEETISH)["entities"]["idx"]))
    assert arr == [0, 9]


def test_decode_with_raw_document_class() -> None:
    value = decode(CHANGE_EVENT, CodecOptions(document_class=RawDocument))
    assert isinstance(value, RawDocument) and value["ns"]["coll"] == "tweets"
    assert value.to_dict() == decode(CHANGE_EVENT)


# --- properties ----------------------------------------------------------------------------

pymongo_bson = pytest.importorskip("bson", reason="PyMongo (the test oracle) is not installed")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.binary(max_size=10),
)
keys = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00$."), max_size=6)
values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, values, max_size=8), st.randoms(use_true_random=False))
def test_views_agree_with_decode(document: dict[str, Any], rnd: Any) -> None:
    data = pymongo_bson.encode(document)
    full = decode(data)
    raw = RawDocument(data)
    order = list(full)
    rnd.shuffle(order)
    for key in order:
        assert plain(raw[key]) == full[key]
    assert list(raw) == list(full) and raw == full


def same_bson(left: Any, right: Any) -> bool:
    """Equal as BSON bytes, so a NaN (never == itself) still compares equal to its copy."""
    return bool(encode({"v": left}) == encode({"v": right}))


def bad_or(call: Any) -> Any:
    try:
        return call()
    except InvalidBSON:
        return InvalidBSON


# type byte -> size of its value, for the types whose size is not read from the value
_FIXED_SIZES = {1: 8, 6: 0, 7: 12, 8: 1, 9: 8, 10: 0, 16: 4, 17: 8, 18: 8, 19: 16, 127: 0, 255: 0}


def first_occurrences(data: bytes) -> tuple[dict[str, Any], set[str]]:
    """The top-level keys of the well-formed document ``data`` with the value of each one's
    FIRST element, which is what a view's lookup gives (decode keeps the last), and the keys
    that occur more than once.  Steps over the elements on its own, so that it is no copy of
    the walk it checks."""
    firsts: dict[str, Any] = {}
    repeated: set[str] = set()
    pos = 4
    while pos < len(data) - 1:
        t = data[pos]
        key_end = data.index(0, pos + 1)
        start = key_end + 1
        if t in _FIXED_SIZES:
            end = start + _FIXED_SIZES[t]
        elif t == 11:  # regex: two C strings
            end = data.index(0, data.index(0, start) + 1) + 1
        else:  # by its length prefix (plus a DBPointer's ObjectId)
            length = struct.unpack_from("<i", data, start)[0]
            end = start + length + {2: 4, 13: 4, 14: 4, 12: 16, 5: 5}.get(t, 0)
        key = data[pos + 1 : key_end].decode()
        if key in firsts:
            repeated.add(key)
        else:
            firsts[key] = decode(doc(data[pos:end]))[key]
        pos = end
    return firsts, repeated


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(keys, values, min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=3),
)
# a mutated type byte (document -> double) turns the document's own bytes into a second
# element with the same key "": the lookup gives the double, decode the datetime after it
@example(document={"": {"\x80": [False]}}, mutations=[(0, 1)])
def test_mutated_views_raise_only_invalid_bson(
    document: dict[str, Any], mutations: list[tuple[int, int]]
) -> None:
    buffer = bytearray(pymongo_bson.encode(document))
    for where, byte in mutations:  # anywhere between the length prefix and the trailing NUL
        buffer[4 + where % (len(buffer) - 5)] = byte
    blob = bytes(buffer)
    RawDocument(pymongo_bson.encode(document)).to_dict()  # teach the trie the original shape
    try:
        raw = RawDocument(blob)
    except InvalidBSON:
        return
    whole = bad_or(lambda: decode(blob))
    firsts, repeated = ({}, set()) if whole is InvalidBSON else first_occurrences(blob)
    for key in document:
        got = bad_or(lambda key=key: plain(raw.get(key)))
        if key in repeated:  # made twice by the mutations: lookups give the first value
            assert same_bson(got, firsts[key])
        elif key in firsts:
            assert same_bson(got, whole[key])
    listed = bad_or(lambda: list(raw))
    if whole is not InvalidBSON:
        assert listed == list(whole)
        assert same_bson(raw.to_dict(), whole)
    else:
        assert bad_or(raw.to_dict) is InvalidBSON
