"""BSON Binary subtype 9 vectors (specifications/source/bson-binary-vector/tests).

Each file holds cases for one dtype and a ``test_key``; a valid case gives the vector's
numbers, ``dtype_hex`` and ``padding`` plus the canonical BSON of ``{test_key: Binary}``
(upper-case hex).  Valid cases must encode to exactly that document and decode back to the
same numbers, dtype and padding; invalid cases must fail to encode (when they give ``vector``)
and fail to decode (when they give ``canonical_bson``).  The README's prose tests (non-zero
ignored bits, equality) follow the file-driven cases.

The document around the binary is built and read with the package's BSON codec when it is
importable, otherwise by a small local helper that handles a one-element document; either way
the vector code under test is the same.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from _specs import suite_cases

from mongo_sansio.bson.types import VECTOR_SUBTYPE, Binary
from mongo_sansio.bson.vector import (
    BinaryVector,
    BinaryVectorDtype,
    InvalidVectorInput,
    VectorError,
    binary_to_vector,
    vector_to_binary,
)

# the JSON files sit in the suite's tests/ folder; naming it keeps ids like "int8: Simple Vector INT8"
SUITE = "bson-binary-vector/tests"
_BINARY_TYPE = 0x05


def _local_encode(document: dict[str, Any]) -> bytes:
    """A document of binary elements: int32 size, (0x05, key, int32 len, subtype, data)*, 0x00."""
    elements = b""
    for key, value in document.items():
        assert isinstance(value, Binary)
        elements += (
            bytes((_BINARY_TYPE,))
            + key.encode("utf-8")
            + b"\x00"
            + struct.pack("<i", len(value))
            + bytes((value.subtype,))
            + bytes(value)
        )
    return struct.pack("<i", 4 + len(elements) + 1) + elements + b"\x00"


def _local_decode(data: bytes) -> dict[str, Any]:
    """The inverse of :func:`_local_encode`; asserts the framing is exactly right."""
    (total,) = struct.unpack_from("<i", data, 0)
    assert total == len(data) and data[-1] == 0, "document framing"
    document: dict[str, Any] = {}
    pos = 4
    while pos < total - 1:
        assert data[pos] == _BINARY_TYPE, f"element type 0x{data[pos]:02x} is not binary"
        end = data.index(b"\x00", pos + 1)
        key = data[pos + 1 : end].decode("utf-8")
        (size,) = struct.unpack_from("<i", data, end + 1)
        subtype = data[end + 5]
        start = end + 6
        document[key] = Binary(data[start : start + size], subtype)
        pos = start + size
    assert pos == total - 1, "element sizes add up to the document size"
    return document


def _codec() -> tuple[Callable[[dict[str, Any]], bytes], Callable[[bytes], dict[str, Any]]]:
    # looked up by name so that this file type-checks whether or not the codec has landed
    try:
        encode = importlib.import_module("mongo_sansio.bson._encode").encode
        decode = importlib.import_module("mongo_sansio.bson._decode").decode
    except ImportError:
        return _local_encode, _local_decode
    return encode, decode


_encode_document, _decode_document = _codec()


def _expand(path: Path, data: Any) -> Iterable[tuple[str, Any]]:
    for case in data["tests"]:
        yield case["description"], {**case, "test_key": data["test_key"]}


def _number(value: Any) -> Any:
    """A JSON vector element: a number, ``{"$numberDouble": ...}`` or a bare "inf"-style string."""
    if isinstance(value, dict):
        return float(value["$numberDouble"])
    if isinstance(value, str):
        return float(value)
    return value


def _dtype(dtype_hex: str) -> BinaryVectorDtype:
    code = bytes((int(dtype_hex, 16),))
    try:
        return BinaryVectorDtype(code)
    except ValueError:
        raise InvalidVectorInput(f"unknown dtype {dtype_hex}") from None


def _as_float32(values: list[Any]) -> list[float]:
    return [struct.unpack("<f", struct.pack("<f", v))[0] for v in values]


@pytest.mark.spec
@pytest.mark.parametrize("case", suite_cases(SUITE, _expand))
def test_vector_case(case: dict[str, Any]) -> None:
    key = case["test_key"]
    padding = case.get("padding", 0)
    if case["valid"]:
        _check_valid(case, key, padding)
    else:
        _check_invalid(case, key, padding)


def _check_valid(case: dict[str, Any], key: str, padding: int) -> None:
    dtype = _dtype(case["dtype_hex"])
    numbers = [_number(v) for v in case["vector"]]
    canonical = bytes.fromhex(case["canonical_bson"])

    # encode {test_key: Binary} from the numbers, dtype and padding; it must match exactly
    binary = vector_to_binary(numbers, dtype, padding)
    assert binary.subtype == VECTOR_SUBTYPE
    assert _encode_document({key: binary}) == canonical
    # the same through the BinaryVector value
    assert _encode_document({key: BinaryVector(numbers, dtype, padding).to_binary()}) == canonical

    # decode canonical_bson back into numbers, dtype and padding
    stored = _decode_document(canonical)[key]
    assert isinstance(stored, Binary) and stored.subtype == VECTOR_SUBTYPE
    vector = binary_to_vector(stored)
    assert vector.dtype is dtype
    assert vector.padding == padding
    if dtype is BinaryVectorDtype.FLOAT32:
        # Python has no native float32, so the input is compared after rounding to binary32
        # (exact equality, infinities included); the round trip must reproduce it.
        assert vector.data == _as_float32(numbers)
        assert binary_to_vector(vector_to_binary(vector)) == vector
    else:
        assert vector.data == numbers
        assert all(type(v) is int for v in vector.data)
    assert vector_to_binary(vector) == binary


def _check_invalid(case: dict[str, Any], key: str, padding: int) -> None:
    assert "vector" in case or "canonical_bson" in case, "an invalid case must test something"
    if "vector" in case:
        numbers = [_number(v) for v in case["vector"]]
        with pytest.raises(VectorError):
            vector_to_binary(numbers, _dtype(case["dtype_hex"]), padding)
        with pytest.raises(VectorError):
            BinaryVector(numbers, _dtype(case["dtype_hex"]), padding)
    if "canonical_bson" in case:
        # the document itself is well-formed BSON; only the vector payload inside is corrupt
        stored = _decode_document(bytes.fromhex(case["canonical_bson"]))[key]
        assert isinstance(stored, Binary) and stored.subtype == VECTOR_SUBTYPE
        with pytest.raises(VectorError):
            binary_to_vector(stored)


# README prose tests: treatment of non-zero ignored bits.  This implementation takes the
# preferred route and rejects such bits both when encoding and when decoding.


def test_prose_encoding_nonzero_ignored_bits() -> None:
    with pytest.raises(ValueError):
        vector_to_binary([0b11111111], BinaryVectorDtype.PACKED_BIT, padding=7)


def test_prose_decoding_nonzero_ignored_bits() -> None:
    with pytest.raises(ValueError):
        binary_to_vector(Binary(b"\x10\x07\xff", VECTOR_SUBTYPE))


def test_prose_comparison() -> None:
    b1 = Binary(b"\x10\x07\x80", VECTOR_SUBTYPE)  # one bit, ignored bits zero
    b2 = Binary(b"\x10\x07\xff", VECTOR_SUBTYPE)  # one bit, ignored bits one
    b3 = vector_to_binary([0b10000000], BinaryVectorDtype.PACKED_BIT, padding=7)
    assert b1 != b2
    assert b1 == b3
    assert binary_to_vector(b1) == binary_to_vector(b3)
    # b2 cannot become a BinaryVector at all, so the vector-level b1/b2 comparison is moot
    with pytest.raises(VectorError):
        binary_to_vector(b2)
