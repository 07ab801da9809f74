"""Unit tests of BSON Binary subtype 9 vectors beyond the spec files: header and element
validation in both directions, error types, the PACKED_BIT helpers, and round-trip properties
for every dtype."""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.bson.errors import BSONError
from mongo_sansio.bson.types import BINARY_SUBTYPE, VECTOR_SUBTYPE, Binary
from mongo_sansio.bson.vector import (
    BinaryVector,
    BinaryVectorDtype,
    InvalidVectorBytes,
    InvalidVectorInput,
    VectorError,
    binary_to_vector,
    pack_bits,
    unpack_bits,
    vector_to_binary,
)
from mongo_sansio.errors import LocalProtocolError, MongoError, RemoteProtocolError

INT8 = BinaryVectorDtype.INT8
FLOAT32 = BinaryVectorDtype.FLOAT32
PACKED_BIT = BinaryVectorDtype.PACKED_BIT

FLT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


def _f32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


# --- errors ------------------------------------------------------------------------------


def test_error_hierarchy() -> None:
    assert issubclass(VectorError, BSONError)
    assert issubclass(VectorError, ValueError)
    assert issubclass(VectorError, MongoError)
    assert issubclass(InvalidVectorInput, LocalProtocolError)
    assert issubclass(InvalidVectorBytes, RemoteProtocolError)
    assert not issubclass(InvalidVectorInput, RemoteProtocolError)


# --- encoding ----------------------------------------------------------------------------


def test_dtype_values_are_header_bytes() -> None:
    assert INT8.value == b"\x03"
    assert FLOAT32.value == b"\x27"
    assert PACKED_BIT.value == b"\x10"


def test_encode_int8() -> None:
    binary = vector_to_binary([-1, 0, 1, -128, 127], INT8)
    assert isinstance(binary, Binary)
    assert binary.subtype == VECTOR_SUBTYPE
    assert bytes(binary) == b"\x03\x00\xff\x00\x01\x80\x7f"


def test_encode_float32_little_endian() -> None:
    assert bytes(vector_to_binary([1.0, -2.5], FLOAT32)) == b"\x27\x00" + struct.pack(
        "<ff", 1.0, -2.5
    )
    assert bytes(vector_to_binary([1.0], FLOAT32))[2:] == b"\x00\x00\x80\x3f"


def test_encode_packed_bit() -> None:
    # the spec's example: 12 elements in two bytes, the last 4 bits unused
    assert bytes(vector_to_binary([0xEE, 0xE0], PACKED_BIT, 4)) == b"\x10\x04\xee\xe0"


def test_encode_from_binary_vector() -> None:
    vector = BinaryVector([0x80], PACKED_BIT, 7)
    assert vector_to_binary(vector) == Binary(b"\x10\x07\x80", VECTOR_SUBTYPE)
    assert vector.to_binary() == vector_to_binary(vector)


def test_encode_binary_vector_refuses_dtype_or_padding() -> None:
    vector = BinaryVector([1], INT8)
    with pytest.raises(InvalidVectorInput):
        vector_to_binary(vector, INT8)
    with pytest.raises(InvalidVectorInput):
        vector_to_binary(vector, padding=1)


def test_encode_list_needs_dtype() -> None:
    with pytest.raises(InvalidVectorInput, match="dtype"):
        vector_to_binary([1, 2])


@pytest.mark.parametrize("dtype", list(BinaryVectorDtype))
def test_empty_vectors(dtype: BinaryVectorDtype) -> None:
    binary = vector_to_binary([], dtype)
    assert bytes(binary) == dtype.value + b"\x00"
    assert binary_to_vector(binary) == BinaryVector([], dtype)


@pytest.mark.parametrize("value", [128, -129, 2**64])
def test_int8_out_of_range(value: int) -> None:
    with pytest.raises(InvalidVectorInput, match="outside -128..127"):
        vector_to_binary([0, value], INT8)


@pytest.mark.parametrize("value", [256, -1])
def test_packed_bit_out_of_range(value: int) -> None:
    with pytest.raises(InvalidVectorInput, match="outside 0..255"):
        vector_to_binary([value], PACKED_BIT)


@pytest.mark.parametrize("dtype", [INT8, PACKED_BIT])
@pytest.mark.parametrize("value", [1.0, 1.5, True, "1", None, Fraction(1, 1)])
def test_integer_dtypes_refuse_non_integers(dtype: BinaryVectorDtype, value: Any) -> None:
    # floats, even integral ones, are refused: the spec defines no float-to-integer conversion
    with pytest.raises(InvalidVectorInput, match="element 0 must be an integer"):
        vector_to_binary([value], dtype)


def test_float32_accepts_ints_and_rationals() -> None:
    values: list[Any] = [1, Fraction(1, 4), 0.5]
    vector = BinaryVector(values, FLOAT32)
    assert vector.data == [1.0, 0.25, 0.5]
    assert all(type(v) is float for v in vector.data)


@pytest.mark.parametrize("value", [True, "1.0", None, 1j, b"x"])
def test_float32_refuses_non_reals(value: Any) -> None:
    with pytest.raises(InvalidVectorInput, match="must be a real number"):
        vector_to_binary([value], FLOAT32)


def test_float32_rounds_to_nearest() -> None:
    vector = BinaryVector([0.1, 127.7, 1e-50], FLOAT32)
    assert vector.data == [_f32(0.1), _f32(127.7), 0.0]
    # just above FLT_MAX still rounds down to FLT_MAX
    assert BinaryVector([FLT_MAX * (1 + 2**-26)], FLOAT32).data == [FLT_MAX]


@pytest.mark.parametrize("value", [1e39, -1e300, 2**200])
def test_float32_refuses_finite_overflow(value: float) -> None:
    with pytest.raises(InvalidVectorInput, match="too large"):
        vector_to_binary([value], FLOAT32)


def test_float32_infinities_and_nan() -> None:
    data = BinaryVector([math.inf, -math.inf, math.nan, -0.0], FLOAT32).data
    assert data[:2] == [math.inf, -math.inf]
    assert math.isnan(data[2])
    assert math.copysign(1.0, data[3]) == -1.0


@pytest.mark.parametrize("padding", [-1, 8, 255])
def test_padding_out_of_range(padding: int) -> None:
    with pytest.raises(InvalidVectorInput, match="padding must be from 0 to 7"):
        vector_to_binary([0], PACKED_BIT, padding)


@pytest.mark.parametrize("padding", [1.0, True, "1", None])
def test_padding_must_be_an_int(padding: Any) -> None:
    with pytest.raises(InvalidVectorInput, match="padding must be an integer"):
        vector_to_binary([0], PACKED_BIT, padding)


@pytest.mark.parametrize("dtype", [INT8, FLOAT32])
def test_padding_only_for_packed_bit(dtype: BinaryVectorDtype) -> None:
    with pytest.raises(InvalidVectorInput, match=f"padding must be 0 for dtype {dtype.name}"):
        vector_to_binary([1], dtype, 1)


def test_padding_with_empty_packed_bit() -> None:
    with pytest.raises(InvalidVectorInput, match="empty vector cannot have padding"):
        vector_to_binary([], PACKED_BIT, 1)


@pytest.mark.parametrize(("last", "padding"), [(0xFF, 7), (0x01, 1), (0x08, 4), (0x81, 1)])
def test_packed_bit_unused_bits_must_be_zero(last: int, padding: int) -> None:
    with pytest.raises(InvalidVectorInput, match="unused low bits"):
        vector_to_binary([0xFF, last], PACKED_BIT, padding)


def test_packed_bit_used_bits_may_be_anything() -> None:
    assert bytes(vector_to_binary([0xFF, 0xF8], PACKED_BIT, 3)) == b"\x10\x03\xff\xf8"


def test_dtype_must_be_the_enum() -> None:
    with pytest.raises(InvalidVectorInput, match="BinaryVectorDtype"):
        BinaryVector([1], b"\x03")  # type: ignore[arg-type]


@pytest.mark.parametrize("data", ["abc", {1: 2}, 5, None])
def test_data_must_be_a_sequence(data: Any) -> None:
    with pytest.raises(InvalidVectorInput, match="sequence of numbers"):
        BinaryVector(data, INT8)


def test_data_is_copied_and_accepts_any_iterable() -> None:
    source = [1, 2, 3]
    vector = BinaryVector(source, INT8)
    source.append(4)
    assert vector.data == [1, 2, 3]
    assert BinaryVector((1, 2), INT8).data == [1, 2]
    assert BinaryVector(b"\x7f\x07", PACKED_BIT).data == [127, 7]


def test_binary_vector_is_frozen() -> None:
    vector = BinaryVector([1], INT8)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        vector.padding = 1  # type: ignore[misc]


def test_len_counts_elements() -> None:
    assert len(BinaryVector([1, 2, 3], INT8)) == 3
    assert len(BinaryVector([1.0], FLOAT32)) == 1
    assert len(BinaryVector([0xFF, 0xF0], PACKED_BIT, 4)) == 12
    assert len(BinaryVector([], PACKED_BIT)) == 0


def test_equality() -> None:
    assert BinaryVector([1, 2], INT8) == BinaryVector([1, 2], INT8)
    assert BinaryVector([1, 2], INT8) != BinaryVector([1, 2], PACKED_BIT)
    assert BinaryVector([0x80], PACKED_BIT, 7) != BinaryVector([0x80], PACKED_BIT, 0)
    assert BinaryVector([1], FLOAT32) == BinaryVector([1.0], FLOAT32)


# --- decoding ----------------------------------------------------------------------------


def test_decode_examples_from_the_spec() -> None:
    assert binary_to_vector(b"\x03\x00\xff\x00\x01") == BinaryVector([-1, 0, 1], INT8)
    assert binary_to_vector(b"\x10\x07\x80") == BinaryVector([0x80], PACKED_BIT, 7)
    vector = binary_to_vector(b"\x27\x00\x00\x00\x80\x3f\x34\x12\x80\x7f")
    assert vector.data[0] == 1.0 and math.isnan(vector.data[1])
    assert unpack_bits(binary_to_vector(b"\x10\x04\xee\xe0")) == [1, 1, 1, 0] * 3
    assert unpack_bits(binary_to_vector(b"\x10\x00\xf0\x42")) == [
        1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0,
    ]  # fmt: skip


def test_decode_accepts_bytes_like() -> None:
    payload = b"\x03\x00\x05"
    expected = BinaryVector([5], INT8)
    assert binary_to_vector(payload) == expected
    assert binary_to_vector(bytearray(payload)) == expected
    assert binary_to_vector(memoryview(payload)) == expected
    assert binary_to_vector(Binary(payload, VECTOR_SUBTYPE)) == expected
    assert BinaryVector.from_binary(payload) == expected


def test_decode_refuses_other_binary_subtypes() -> None:
    with pytest.raises(InvalidVectorBytes, match="subtype 0 is not a vector"):
        binary_to_vector(Binary(b"\x03\x00\x05", BINARY_SUBTYPE))


def test_decoded_elements_have_python_types() -> None:
    assert all(type(v) is int for v in binary_to_vector(b"\x03\x00\x80\x7f").data)
    assert all(type(v) is int for v in binary_to_vector(b"\x10\x00\x80\x7f").data)
    assert all(type(v) is float for v in binary_to_vector(b"\x27\x00" + bytes(8)).data)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"", "2-byte header"),
        (b"\x03", "2-byte header"),
        (b"\x00\x00", "unknown vector dtype 0x00"),
        (b"\x28\x00", "unknown vector dtype 0x28"),
        (b"\x11\x00\x01", "unknown vector dtype 0x11"),
        (b"\x03\x01\x01", "padding must be 0 for dtype INT8"),
        (b"\x27\x01" + bytes(4), "padding must be 0 for dtype FLOAT32"),
        (b"\x10\x08\x00", "padding must be from 0 to 7"),
        (b"\x10\x09\x00", "padding must be from 0 to 7"),  # a reserved bit set
        (b"\x10\x01", "empty vector cannot have padding"),
        (b"\x10\x01\x01", "unused low bits"),
        (b"\x10\x07\xff", "unused low bits"),
        (b"\x27\x00\x00", "not a multiple of 4"),
        (b"\x27\x00" + bytes(7), "not a multiple of 4"),
    ],
)
def test_decode_refuses_invalid_payloads(payload: bytes, message: str) -> None:
    with pytest.raises(InvalidVectorBytes, match=message):
        binary_to_vector(Binary(payload, VECTOR_SUBTYPE))


# --- PACKED_BIT helpers ------------------------------------------------------------------


def test_pack_bits() -> None:
    assert pack_bits([]) == BinaryVector([], PACKED_BIT)
    assert pack_bits([1]) == BinaryVector([0x80], PACKED_BIT, 7)
    assert pack_bits([True, False, True]) == BinaryVector([0xA0], PACKED_BIT, 5)
    assert pack_bits([1] * 8) == BinaryVector([0xFF], PACKED_BIT, 0)
    assert pack_bits([1, 1, 1, 0] * 3) == BinaryVector([0xEE, 0xE0], PACKED_BIT, 4)


@pytest.mark.parametrize("bit", [2, -1, 0.0, "1", None])
def test_pack_bits_refuses_non_bits(bit: Any) -> None:
    with pytest.raises(InvalidVectorInput, match="bit 1 must be 0 or 1"):
        pack_bits([0, bit])


def test_unpack_bits_needs_packed_bit() -> None:
    with pytest.raises(InvalidVectorInput):
        unpack_bits(BinaryVector([1], INT8))


# --- round-trip properties -----------------------------------------------------------------

int8_lists = st.lists(st.integers(-128, 127), max_size=64)
byte_lists = st.lists(st.integers(0, 255), max_size=64)
float32_values = st.floats(width=32, allow_nan=False)
bit_lists = st.lists(st.integers(0, 1), max_size=80)


@given(int8_lists)
def test_int8_round_trip(values: list[int]) -> None:
    binary = vector_to_binary(values, INT8)
    assert len(binary) == 2 + len(values)
    vector = binary_to_vector(binary)
    assert vector == BinaryVector(values, INT8)
    assert vector.data == values
    assert vector_to_binary(vector) == binary


@given(st.lists(float32_values, max_size=64))
def test_float32_round_trip(values: list[float]) -> None:
    # width=32 draws exactly representable floats, so they survive unchanged (signed zeros too)
    binary = vector_to_binary(values, FLOAT32)
    assert len(binary) == 2 + 4 * len(values)
    vector = binary_to_vector(binary)
    assert [struct.pack("<d", v) for v in vector.data] == [struct.pack("<d", v) for v in values]
    assert vector_to_binary(vector) == binary


@given(st.lists(st.floats(allow_nan=False, min_value=-FLT_MAX, max_value=FLT_MAX), max_size=16))
def test_float32_round_trip_of_doubles_is_rounding(values: list[float]) -> None:
    vector = binary_to_vector(vector_to_binary(values, FLOAT32))
    assert vector.data == [_f32(v) for v in values]
    assert vector == BinaryVector(values, FLOAT32)


@given(st.binary(max_size=64).map(lambda raw: b"\x27\x00" + raw[: len(raw) // 4 * 4]))
def test_float32_bytes_round_trip(payload: bytes) -> None:
    vector = binary_to_vector(payload)
    if not any(math.isnan(v) for v in vector.data):
        # NaN payloads are not guaranteed to survive a trip through a Python float
        assert bytes(vector_to_binary(vector)) == payload


@given(byte_lists, st.integers(0, 7))
def test_packed_bit_round_trip(values: list[int], padding: int) -> None:
    if not values:
        padding = 0
    else:
        # clear the unused bits so that the input is valid
        values = values[:-1] + [values[-1] & (0xFF << padding) & 0xFF]
    binary = vector_to_binary(values, PACKED_BIT, padding)
    assert bytes(binary)[:2] == bytes((0x10, padding))
    vector = binary_to_vector(binary)
    assert vector == BinaryVector(values, PACKED_BIT, padding)
    assert vector.data == values and vector.padding == padding
    assert vector_to_binary(vector) == binary


@given(bit_lists)
def test_pack_unpack_bits_round_trip(bits: list[int]) -> None:
    vector = pack_bits(bits)
    assert len(vector) == len(bits)
    assert unpack_bits(vector) == bits
    assert binary_to_vector(vector_to_binary(vector)) == vector


@given(st.binary(max_size=40))
def test_decoding_arbitrary_bytes_either_works_or_raises_vector_error(payload: bytes) -> None:
    try:
        vector = binary_to_vector(payload)
    except VectorError:
        return
    again = binary_to_vector(vector_to_binary(vector))
    assert again.dtype is vector.dtype and again.padding == vector.padding
    assert len(again.data) == len(vector.data)
