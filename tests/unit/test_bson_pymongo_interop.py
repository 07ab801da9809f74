"""PyMongo's bson values through our codec, with PyMongo's own bson as the oracle.

Encoding: documents holding PyMongo's classes (``bson.ObjectId``, ``bson.Int64``, SON,
RawBSONDocument...) encode to exactly the bytes PyMongo's ``bson.encode`` gives.  Decoding with
``CodecOptions(pymongo_types=True)`` gives exactly what ``bson.decode`` gives: equal values of
the same classes.
"""

from __future__ import annotations

import datetime
import sys
import uuid
from typing import Any

import pytest
from bson_strategies import documents, every_type_documents, shared_scalars
from hypothesis import given, settings

from mongo_sansio.bson import (
    CodecOptions,
    DatetimeConversion,
    Int64,
    ObjectId,
    RawDocument,
    UnencodableType,
    UuidRepresentation,
    decode,
    decode_all,
    encode,
)
from mongo_sansio.bson._decode import read_document
from mongo_sansio.bson._encode_many import encode_many
from mongo_sansio.errors import ConfigurationError

bson = pytest.importorskip("bson", reason="PyMongo (the test oracle) is not installed")
from bson.codec_options import CodecOptions as PyMongoCodecOptions  # noqa: E402
from bson.codec_options import TypeRegistry  # noqa: E402
from bson.raw_bson import RawBSONDocument  # noqa: E402
from bson.son import SON  # noqa: E402

AUTO = DatetimeConversion.DATETIME_AUTO
PYMONGO_AUTO: Any = PyMongoCodecOptions(datetime_conversion=AUTO.value)
OURS_AUTO = CodecOptions(pymongo_types=True, datetime_conversion=AUTO)


def typed(value: Any) -> Any:
    """``value`` with the class of every part made visible (``Int64(1) == 1`` hides it)."""
    if isinstance(value, dict):
        return (type(value), [(key, typed(item)) for key, item in value.items()])
    if isinstance(value, list):
        return (list, [typed(item) for item in value])
    if isinstance(value, bson.Code):
        return (bson.Code, str(value), None if value.scope is None else typed(value.scope))
    if isinstance(value, bson.DBRef):
        return (bson.DBRef, typed(value.as_doc()))
    return (type(value), value)


# --- decoding into PyMongo's classes -----------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(every_type_documents)
def test_decoding_gives_what_pymongo_decodes(document: dict[str, Any]) -> None:
    data = encode(document)
    assert typed(decode(data, OURS_AUTO)) == typed(bson.decode(data, PYMONGO_AUTO))


@settings(max_examples=200, deadline=None)
@given(documents(shared_scalars))
def test_pymongo_values_encode_back_to_the_same_bytes(document: dict[str, Any]) -> None:
    data = encode(document)
    assert encode(decode(data, OURS_AUTO)) == data  # our decode, PyMongo's classes, our encode
    assert encode(bson.decode(data)) == data  # PyMongo's decode, our encode
    assert encode(bson.decode(data, PyMongoCodecOptions(document_class=SON))) == data


def test_the_id_is_pymongos_object_id_and_int64_stays_int64() -> None:
    data = bson.encode({"_id": bson.ObjectId(), "small": bson.Int64(1), "int": 1, "big": 2**40})
    document = decode(data, CodecOptions(pymongo_types=True))
    assert isinstance(document["_id"], bson.ObjectId)
    assert type(document["small"]) is bson.Int64 and type(document["big"]) is bson.Int64
    assert type(document["int"]) is int
    assert decode_all(data + data, CodecOptions(pymongo_types=True)) == [document, document]
    # the piece the wire layer reads replies with follows the option too
    reply = read_document(data, 0, len(data), CodecOptions(pymongo_types=True))
    assert typed(reply) == typed(document)


def test_decoding_follows_the_other_options() -> None:
    value = uuid.UUID(int=7)
    data = bson.encode({"u": bson.Binary.from_uuid(value), "when": datetime.datetime(2020, 1, 2)})
    standard = CodecOptions(
        pymongo_types=True, uuid_representation=UuidRepresentation.STANDARD, tz_aware=True
    )
    document = decode(data, standard)
    assert document["u"] == value
    assert document["when"] == datetime.datetime(2020, 1, 2, tzinfo=datetime.UTC)
    unspecified = decode(data, CodecOptions(pymongo_types=True))["u"]
    assert type(unspecified) is bson.Binary and unspecified.subtype == 4
    as_son = decode(data, CodecOptions(pymongo_types=True, document_class=SON))
    assert type(as_son) is SON


def test_pymongo_types_needs_pymongo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bson", None)  # "import bson" now raises ImportError
    with pytest.raises(ConfigurationError, match="PyMongo"):
        CodecOptions(pymongo_types=True)
    CodecOptions()  # nothing needs bson without the option


def test_pymongo_types_refuses_an_immutable_document_class() -> None:
    with pytest.raises(ConfigurationError, match="document_class"):
        CodecOptions(pymongo_types=True, document_class=RawDocument)
    with pytest.raises(ConfigurationError, match="document_class"):
        CodecOptions(document_class=RawDocument).with_options(pymongo_types=True)


# --- encoding PyMongo's values ----------------------------------------------------------------


def every_pymongo_value() -> dict[str, Any]:
    return {
        "oid": bson.ObjectId(b"a" * 12),
        "small": bson.Int64(5),
        "dec": bson.Decimal128("1.5E-7"),
        "re": bson.Regex("a.c", "mix"),
        "re_bytes": bson.Regex(b"x+", 0),
        "bin": bson.Binary(b"xy", 0x80),
        "bin0": bson.Binary(b"zz"),
        "old": bson.Binary(b"old", 2),
        "uuid": bson.Binary.from_uuid(uuid.UUID(int=9)),
        "ts": bson.Timestamp(1, 2),
        "min": bson.MinKey(),
        "max": bson.MaxKey(),
        "code": bson.Code("f()"),
        "scoped": bson.Code("g()", {"n": bson.Int64(1)}),
        "ref": bson.DBRef("c", bson.ObjectId(b"b" * 12), "db", extra=1),
        "son": SON([("z", 1), ("a", bson.Int64(2))]),
        "raw": RawBSONDocument(bson.encode({"q": [1, 2]})),
        "far": bson.DatetimeMS(-(10**15)),
        "arr": [bson.Int64(3), bson.ObjectId(b"c" * 12), (bson.MinKey(),)],
    }


def test_every_pymongo_value_encodes_as_pymongo_encodes_it() -> None:
    document = every_pymongo_value()
    document["nested"] = every_pymongo_value()
    assert encode(document) == bson.encode(document)
    assert encode(document, CodecOptions(max_nesting_depth=50)) == bson.encode(document)
    assert encode_many([document, {"x": bson.Int64(1)}]) == bson.encode(document) + bson.encode(
        {"x": bson.Int64(1)}
    )


def test_values_that_subclass_str_bytes_and_int_keep_their_bson_type() -> None:
    # bson.Int64 is an int, bson.Binary bytes and bson.Code a str: none may pass as its base
    for value, type_byte in (
        (bson.Int64(1), 0x12),
        (bson.Binary(b"x", 5), 0x05),
        (bson.Code("f"), 0x0D),
    ):
        assert encode({"v": value})[4] == type_byte
        assert encode({"v": value}) == bson.encode({"v": value})
    assert encode({"v": bson.Binary(b"x", 5)})[-3] == 5  # the subtype, not 0


def test_documents_pymongo_hands_out_encode_unchanged() -> None:
    data = bson.encode(SON([("b", 1), ("a", {"c": bson.Int64(2)})]))
    raw = RawBSONDocument(data)
    assert encode(raw) == data  # top level: the bytes as they are
    assert encode({"r": raw}) == bson.encode({"r": raw})
    assert encode(SON([("b", 1), ("a", {"c": bson.Int64(2)})])) == data


def test_subclasses_of_pymongo_classes_convert_as_their_base() -> None:
    my_id = type("MyId", (bson.ObjectId,), {})  # a user's subclass
    value = my_id(b"d" * 12)
    assert encode({"_id": value}) == encode({"_id": ObjectId(b"d" * 12)})


def test_pymongo_values_that_bson_cannot_hold_are_refused_with_their_path() -> None:
    with pytest.raises(UnencodableType, match="'a.0'") as info:
        encode({"a": [TypeRegistry()]})
    assert "bson.codec_options.TypeRegistry" in str(info.value)
    with pytest.raises(Exception, match="int64"):
        encode({"big": bson.Int64(2**63)})


def test_our_values_still_encode_as_before() -> None:
    document = {"id": ObjectId(b"e" * 12), "n": Int64(1), "t": (1, 2), "u": uuid.UUID(int=1)}
    options = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
    pymongo: Any = PyMongoCodecOptions(uuid_representation=4)
    assert encode(document, options) == bson.encode(
        {"id": bson.ObjectId(b"e" * 12), "n": bson.Int64(1), "t": [1, 2], "u": uuid.UUID(int=1)},
        codec_options=pymongo,
    )
