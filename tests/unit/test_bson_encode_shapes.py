"""Shape encoders (mongo_sansio.bson._encode_shapes): compiled encoders for repeated dict shapes.

Every result is compared with the general encoder, reached by passing the default codec
options explicitly (the shape path serves ``codec_options=None`` only): the same bytes, or
the same error with the same key path.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from bson_strategies import every_type_documents
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson import _encode_shapes as shapes
from mongo_sansio.bson._encode import encode
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS
from mongo_sansio.bson.errors import InvalidDocument
from mongo_sansio.bson.types import (
    Binary,
    Code,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Timestamp,
    Undefined,
)


@pytest.fixture(autouse=True)
def fresh_tables() -> Iterator[None]:
    shapes._DOCUMENTS.clear()
    shapes._ARRAYS.clear()
    yield
    shapes._DOCUMENTS.clear()
    shapes._ARRAYS.clear()


def general(document: Any) -> bytes:
    return encode(document, DEFAULT_CODEC_OPTIONS)


def outcome(call: Any) -> Any:
    try:
        return ("bytes", call())
    except (InvalidDocument, TypeError) as exc:
        return (type(exc), str(exc), getattr(exc, "path", None))


def compiled(document: dict[str, Any]) -> bool:
    entry = shapes._DOCUMENTS.get(tuple(document))
    return entry is not None and entry[1] not in (None, shapes._UNSHAPED)


def warm(document: dict[str, Any], times: int = 4) -> None:
    """Encode enough times that the document's shape and its nested shapes are compiled."""
    for _ in range(times):
        encode(document)


EVERY_TYPE = {
    "s": "text",
    "i32": 5,
    "i64": 2**40,
    "I64": Int64(7),
    "f": 1.5,
    "t": True,
    "n": None,
    "b": b"\x00\x01",
    "bin": Binary(b"\x00\x01\x02", 4),  # a session id's subtype (every command's lsid)
    "d": {"x": 1, "y": [1, "two", {"z": None}]},
    "l": [1, 2.5, "three", [], {}],
    "dt": datetime.datetime(2020, 1, 2, 3, 4, 5, 678000),
    "ts": Timestamp(5, 6),
    "re": Regex("a.c", "mi"),
    "code": Code("f()"),
    "cws": Code("g()", {"v": 1}),
    "min": MinKey(),
    "max": MaxKey(),
    "u": Undefined(),
}


def test_the_second_document_of_a_shape_compiles_its_encoder() -> None:
    encode(EVERY_TYPE)
    assert not compiled(EVERY_TYPE)
    warm(EVERY_TYPE)
    assert compiled(EVERY_TYPE)
    assert encode(EVERY_TYPE) == general(EVERY_TYPE)


@pytest.mark.parametrize(
    ("key", "other"),
    [
        ("i32", 2**31),  # int32 compiled, an int64 comes
        ("i64", 3),  # int64 compiled, an int32 comes
        ("i64", 2**63),  # out of int64 range: the general error
        ("s", "\ud800"),  # not UTF-8: the general error
        ("dt", datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)),  # aware
        ("cws", Code("g()")),  # the scope went away
        ("code", Code("f()", {"a": 1})),  # a scope came
        ("re", Regex("a\x00", "")),  # NUL in a pattern: the general error
        ("bin", Binary(b"\x07" * 16, 5)),  # another subtype and length, same encoder
        ("bin", Binary(b"\x07", 2)),  # the old subtype repeats its length: the general one
        ("bin", b"\x07"),  # plain bytes (subtype 0) where a Binary was
        ("l", list(range(300))),  # over the shape size: general for the array
        ("l", list(range(2000))),
        ("d", {"x": 2**63}),  # an error inside an embedded document, with its path
        ("d", {"x": 1, "y": [1, "two", {"z": object()}]}),
    ],
)
def test_values_the_encoder_does_not_expect_give_the_general_result(key: str, other: Any) -> None:
    warm(EVERY_TYPE)
    changed = {**EVERY_TYPE, key: other}
    assert outcome(lambda: encode(changed)) == outcome(lambda: general(changed))


def test_nesting_depth_is_enforced_as_by_the_general_encoder() -> None:
    def nest(levels: int) -> dict[str, Any]:
        document: dict[str, Any] = {"leaf": 1}
        for _ in range(levels - 1):
            document = {"a": document}
        return document

    deepest = nest(DEFAULT_CODEC_OPTIONS.max_nesting_depth)
    warm(deepest, 6)
    assert encode(deepest) == general(deepest)
    too_deep = nest(DEFAULT_CODEC_OPTIONS.max_nesting_depth + 1)
    warm_outcome = [outcome(lambda: encode(too_deep)) for _ in range(4)]
    assert warm_outcome[-1] == outcome(lambda: general(too_deep))
    assert warm_outcome[-1][0] is InvalidDocument


def test_empty_and_single_element_containers() -> None:
    documents: list[dict[str, Any]] = [{}, {"a": []}, {"a": {}}, {"a": [[]]}, {"a": [{}]}, {"x": 1}]
    for document in documents:
        warm(document)
        assert encode(document) == general(document)


def test_keys_the_shape_path_leaves_to_the_general_encoder() -> None:
    documents: list[dict[Any, Any]] = [{"a\x00": 1}, {1: 2}, {"\ud800": 1}]
    for document in documents:
        results = [outcome(lambda document=document: encode(document)) for _ in range(3)]
        assert results[-1] == outcome(lambda document=document: general(document))
        assert results[-1][0] != "bytes"


def test_encoder_code_holds_no_document_text() -> None:
    key = "k'\"\n\\); __import__('os') #"
    document = {key: "v", "n": 1}
    warm(document)
    encoder = shapes._DOCUMENTS[tuple(document)][1]
    code = encoder.__code__
    assert not any(isinstance(constant, str) for constant in code.co_consts)
    assert not {"os", "__import__"} & set(code.co_names)
    assert encode({key: "w", "n": 2}) == general({key: "w", "n": 2})


def test_tables_stay_bounded() -> None:
    for number in range(shapes.MAX_SHAPES + 10):
        encode({f"key{number}": number})
    assert len(shapes._DOCUMENTS) <= shapes.MAX_SHAPES


@settings(max_examples=300, deadline=None)
@given(every_type_documents, st.data())
def test_shape_encoders_agree_with_the_general_encoder(document: dict[str, Any], data: Any) -> None:
    shapes._DOCUMENTS.clear()
    shapes._ARRAYS.clear()
    expected = outcome(lambda: general(document))
    for _ in range(4):
        assert outcome(lambda: encode(document)) == expected
    # another document of the same keys, some values swapped for others of any type
    other = dict(document)
    for key in data.draw(st.lists(st.sampled_from(list(document)), max_size=3)) if document else []:
        other[key] = data.draw(st.sampled_from(list(EVERY_TYPE.values()) + [2**31, -(2**31) - 1]))
    assert outcome(lambda: encode(other)) == outcome(lambda: general(other))


def test_keys_whose_types_keep_changing_stop_compiling() -> None:
    variants = [{"a": 1, "b": "x"}, {"a": 1.5, "b": "x"}]
    for _ in range(shapes.MAX_COMPILES + 2):
        for variant in variants:
            warm(variant, 2)
            assert encode(variant) == general(variant)
    types, encoder, compiles = shapes._DOCUMENTS[("a", "b")]
    assert compiles == shapes.MAX_COMPILES and encoder is shapes._UNSHAPED


def test_a_place_in_an_encoder_serves_whatever_container_comes_next() -> None:
    # the encoder of {"p": dict} remembers the encoder that served "p" last; documents of
    # other keys, other types and bad values at that place must still come out right
    children: list[Any] = [
        {"x": 1, "y": "s"},
        {"x": 1, "y": "s"},
        {"x": 1.5, "y": "s"},  # the same keys, another type
        {"y": "s", "x": 1},  # the same keys, another order
        {"x": 1},
        {},
        {"x": 2**63, "y": "s"},  # the same shape, a value out of range: the general error
        {"x": 2**31, "y": "s"},  # int32 compiled, an int64 comes
        {"x": 1, "y": "s"},
    ]
    for _ in range(2):
        for child in children:
            document = {"p": child, "n": 1}
            for _ in range(3):
                assert outcome(lambda d=document: encode(d)) == outcome(
                    lambda d=document: general(d)
                )


def test_a_place_for_an_array_serves_arrays_of_other_lengths_and_types() -> None:
    for items in ([1, 2], [1, 2], [1, 2, 3], [1], ["a", "b"], [], [1, 2], [2**40, 2], [1, 2]):
        document = {"l": items}
        for _ in range(3):
            assert encode(document) == general(document)


@pytest.mark.parametrize("empty", [{}, []], ids=["document", "array"])
def test_empty_containers_past_the_depth_limit_are_refused_as_by_the_general_encoder(
    empty: Any,
) -> None:
    def nest(levels: int) -> dict[str, Any]:
        document: dict[str, Any] = {"a": empty}
        for _ in range(levels - 1):
            document = {"a": document}
        return document

    limit = DEFAULT_CODEC_OPTIONS.max_nesting_depth
    warm(nest(3), 6)  # one shape, {"a": dict}, at every level: its encoder serves any depth
    at_limit, past_it = nest(limit - 1), nest(limit)
    assert encode(at_limit) == general(at_limit)
    got = outcome(lambda: encode(past_it))
    assert got == outcome(lambda: general(past_it)) and got[0] is InvalidDocument


def test_a_deep_document_that_fails_at_the_bottom_is_given_up_once_not_retried_per_level(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    nested = shapes._nested

    def counted(*args: Any) -> bytes:
        calls.append(1)
        return nested(*args)

    monkeypatch.setattr(shapes, "_nested", counted)  # before any encoder is compiled

    def nest(levels: int, number: int) -> dict[str, Any]:
        document: dict[str, Any] = {"x": 1}
        for _ in range(levels - 1):
            document = {"a": document, "n": number}
        return document

    warm(nest(3, 1), 6)  # "n" compiled as an int32, packed after "a" is encoded
    calls.clear()
    bad = nest(12, 2**31)  # an int64 at every level: each encoder fails after its child
    assert outcome(lambda: encode(bad)) == outcome(lambda: general(bad))
    assert len(calls) <= 2 * 12  # (retrying at every level took about 2**12 calls)


def test_binary_values_are_encoded_by_their_shape_as_by_the_general_encoder() -> None:
    # options the shape path does not serve: the general encoder's bytes, to compare with
    general_only = DEFAULT_CODEC_OPTIONS.with_options(max_document_size=16 * 1024 * 1024)
    command = {"ping": 1, "lsid": {"id": Binary(bytes(16), 4)}}
    warm(command)
    assert compiled(command) and compiled(command["lsid"])  # the session id has an encoder
    for value in (Binary(b"\x07" * 16, 5), Binary(b"", 128), Binary(b"xy", 0), Binary(b"xy", 2)):
        changed = {"ping": 1, "lsid": {"id": value}}
        assert encode(changed) == encode(changed, general_only)
