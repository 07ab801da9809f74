"""Layout decoders (mongo_sansio.bson._decode_layouts): a shape decoder learns the byte layout
of the documents it decodes and decodes documents of that layout by one masked comparison and
one struct call.  Every result is compared with the general decoder (reached through a
CodecOptions equal to the default but not the same object): the same value, or an InvalidBSON.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import _decode_layouts
from mongo_sansio.bson._decode import decode
from mongo_sansio.bson._decode_parts import TRIE, new_root
from mongo_sansio.bson._encode import encode
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.types import Binary, Int64, ObjectId

GENERAL = CodecOptions()

pytestmark = pytest.mark.usefixtures("fresh_trie")


def outcome(call: Any) -> Any:
    try:
        return ("value", encode(call(), DEFAULT_CODEC_OPTIONS))
    except InvalidBSON:
        return ("invalid",)


def row(n: int, name: str = "abcd") -> dict[str, Any]:
    return {
        "_id": n, "name": name, "big": Int64(n), "small": Int64(3), "score": n * 1.5,
        "ok": n % 2 == 0, "none": None, "oid": ObjectId(b"abcdefghijkl"),
        "blob": Binary(b"xy", 4), "address": {"city": "Lyon", "zip": 69000 + n},
    }


def top_state() -> list[Any]:
    """The learning state of the one top-level document decoder the test made."""
    shapes = [shape for bucket in (TRIE[0][8] or {}).values() for shape in bucket]
    states = [shape[2].__globals__["state"] for shape in shapes if shape[2] is not None]
    assert len(states) == 1
    return states[0]


def counting(state: list[Any]) -> list[int]:
    """Wrap the learned layout decoder so that the test sees how many documents it took."""
    taken = [0]
    layout = state[0]

    def wrapper(data: bytes, start: int, end: int, depth: int) -> Any:
        result = layout(data, start, end, depth)
        taken[0] += result is not None
        return result

    state[0] = wrapper
    return taken


def test_a_decoder_learns_the_layout_of_its_first_document_and_takes_the_same_layout() -> None:
    for n in range(3):
        assert decode(encode(row(n))) == row(n)
    state = top_state()
    assert state[0] is not None
    taken = counting(state)
    for n in range(4, 10):  # other values, same layout (same string lengths)
        assert decode(encode(row(n))) == row(n)
    assert taken[0] == 6
    assert decode(encode(row(11, "abcde"))) == row(11, "abcde")  # another layout
    assert taken[0] == 6


@pytest.mark.parametrize(
    ("after", "value"),
    [(b"\x02name\x00\x05\x00\x00\x00", b"\xff\xfe\xfd\xfc"), (b"\x08ok\x00", b"\x02")],
    ids=["invalid UTF-8", "boolean byte 2"],
)
def test_bad_values_in_a_known_layout_fail_as_by_the_general_decoder(after: bytes, value: bytes) -> None:
    for n in range(3):
        decode(encode(row(n)))
    good = encode(row(4))
    at = good.index(after) + len(after)  # the value's bytes follow this header (and length)
    bad = good[:at] + value + good[at + len(value) :]
    with pytest.raises(InvalidBSON):
        decode(bad, GENERAL)
    with pytest.raises(InvalidBSON):
        decode(bad)


def test_long_documents_keep_the_segment_reads_and_a_short_one_still_gets_a_layout() -> None:
    long = {"a": "x" * 5000, "b": 1}
    for _ in range(3):
        assert decode(encode(long)) == long
    state = top_state()
    assert state[0] is None and state[1] is True
    short = {"a": "x", "b": 1}
    assert decode(encode(short)) == short
    assert state[0] is not None
    # long ones count as misses until a relearn, then each is a try, until the last one
    for _ in range(_decode_layouts.RELEARN_AFTER + _decode_layouts.MAX_LAYOUTS):
        assert decode(encode(long)) == long
    assert state[0] is None and state[1] is False


def test_relearning_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_decode_layouts, "RELEARN_AFTER", 2)
    monkeypatch.setattr(_decode_layouts, "MAX_LAYOUTS", 2)
    for length in range(1, 12):  # every document of a new layout
        document = {"s": "x" * length, "n": length}
        assert decode(encode(document)) == document
    state = top_state()
    assert state[0] is None and state[1] is False


names = st.text(max_size=6)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**31), 2**31 - 1), st.integers(2**31, 2**62),
    st.floats(allow_nan=False), names, st.binary(max_size=4),
    st.dictionaries(st.sampled_from("xyz"), st.integers(0, 9), max_size=2),
    st.lists(st.integers(0, 9), max_size=2),
)
layout_documents = st.dictionaries(st.text(max_size=4).filter(lambda k: "\x00" not in k and k != "$ref"), scalars, min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(layout_documents, st.data())
def test_layout_decoders_agree_with_the_general_decoder(document: dict[str, Any], data: Any) -> None:
    TRIE[0], TRIE[1] = new_root(), 0
    blob = encode(document)
    for _ in range(3):  # compiled at the second, its layout learned at the third
        assert outcome(lambda: decode(blob)) == outcome(lambda: decode(blob, GENERAL))
    mutated = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 3))):
        mutated[data.draw(st.integers(4, len(mutated) - 1))] = data.draw(st.integers(0, 255))
    bad = bytes(mutated)
    assert outcome(lambda: decode(bad)) == outcome(lambda: decode(bad, GENERAL))


def test_a_layout_most_documents_share_is_kept_among_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_decode_layouts, "RELEARN_AFTER", 3)
    common = {"s": "abcd", "n": 1}
    for _ in range(3):
        decode(encode(common))
    state = top_state()
    layout = state[0]
    assert layout is not None
    for length in range(1, 40):  # two documents of other layouts between each common one
        for other in ({"s": "x" * length, "n": 2}, {"s": "y" * (length + 40), "n": 3}):
            assert decode(encode(other)) == other
        assert decode(encode(common)) == common
    assert state[0] is layout and state[3] == 1  # never relearned
