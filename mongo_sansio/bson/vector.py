"""BSON Binary subtype 9: dense vectors of INT8, FLOAT32 or PACKED_BIT elements.

A vector is the payload of a BSON binary element whose subtype is 9.  The payload is::

    byte 0      dtype     0x03 INT8, 0x27 FLOAT32, 0x10 PACKED_BIT
    byte 1      padding   0..7; the number of low bits of the last data byte that carry no
                          element.  Only PACKED_BIT may have a non-zero padding, and only when it
                          has at least one data byte.
    bytes 2..   data      INT8:       one two's-complement signed byte per element
                          FLOAT32:    IEEE 754 binary32 per element, least significant byte first
                          PACKED_BIT: one bit per element, most significant bit first

The spec (specifications/source/bson-binary-vector) calls the dtype byte a type code (high
nibble) and a size code (low nibble), and the padding byte five reserved bits (which must be
zero) above a three-bit padding field.  Only the three dtypes above are defined; every other
header is invalid.

What this module enforces, in both directions (building a vector from Python values and
reading one from bytes):

* the header is one of the defined patterns (known dtype, padding 0..7, padding only for a
  non-empty PACKED_BIT vector);
* the unused bits of a padded PACKED_BIT vector's last byte are zero (the spec says "SHOULD"
  for readers and "MUST" for writers; rejecting on both sides keeps byte equality and vector
  equality the same thing);
* a FLOAT32 payload holds a whole number of 4-byte elements;
* INT8 elements are integers in -128..127, PACKED_BIT elements are bytes (integers 0..255),
  FLOAT32 elements are real numbers that fit binary32 after rounding to nearest (a finite
  value too large for binary32 is refused rather than silently turned into infinity).

PACKED_BIT data is kept packed -- ``data`` is the list of bytes -- as the spec requires an
API that does not unpack; :func:`pack_bits` and :func:`unpack_bits` convert to and from a list
of 0/1 elements.

The module is pure: it touches no I/O and depends only on ``struct``, ``enum``, ``numbers``
and ``attrs``.
"""

from __future__ import annotations

import enum
import numbers
import operator
import struct
from collections.abc import Iterable, Sequence
from typing import Any, cast

import attrs

from mongo_sansio.bson.errors import BSONError
from mongo_sansio.bson.types import VECTOR_SUBTYPE, Binary
from mongo_sansio.errors import LocalProtocolError, MongoError, RemoteProtocolError

__all__ = [
    "BinaryVectorDtype",
    "BinaryVector",
    "VectorError",
    "InvalidVectorInput",
    "InvalidVectorBytes",
    "vector_to_binary",
    "binary_to_vector",
    "pack_bits",
    "unpack_bits",
]

_HEADER_SIZE = 2
_MAX_PADDING = 7
_FLOAT32_SIZE = 4


class VectorError(BSONError, MongoError):
    """A vector that the binary subtype 9 spec does not allow (a :class:`ValueError`)."""


class InvalidVectorInput(VectorError, LocalProtocolError):
    """Values, dtype or padding handed to the API that do not make a valid vector."""


class InvalidVectorBytes(VectorError, RemoteProtocolError):
    """A stored binary payload that is not a valid subtype 9 vector."""


class BinaryVectorDtype(enum.Enum):
    """The element type of a vector; each value is the header's first byte."""

    INT8 = b"\x03"
    FLOAT32 = b"\x27"
    PACKED_BIT = b"\x10"


# The first header byte as an int, for looking a payload's dtype up without slicing.
_DTYPE_BY_CODE = {member.value[0]: member for member in BinaryVectorDtype}


def _is_integer(value: object) -> bool:
    # bool is an int subclass, but True in a vector of bytes is almost surely a mistake
    # (a caller meaning unpacked bits); pack_bits is the way to hand over booleans.
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    # numbers.Real admits float, int, fractions.Fraction and NumPy scalars.  Decimal is not
    # registered as Real by the standard library, so it is refused like any other non-number.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_padding(dtype: BinaryVectorDtype, padding: object, empty: bool) -> int:
    if not _is_integer(padding):
        raise InvalidVectorInput(f"vector padding must be an integer, not {type(padding).__name__}")
    pad = operator.index(cast(Any, padding))
    if not 0 <= pad <= _MAX_PADDING:
        raise InvalidVectorInput(f"vector padding must be from 0 to {_MAX_PADDING}, got {pad}")
    if pad and dtype is not BinaryVectorDtype.PACKED_BIT:
        raise InvalidVectorInput(f"padding must be 0 for dtype {dtype.name}, got {pad}")
    if pad and empty:
        raise InvalidVectorInput(f"an empty vector cannot have padding, got {pad}")
    return pad


def _normalize_ints(values: Sequence[object], low: int, high: int, dtype_name: str) -> list[int]:
    result: list[int] = []
    for index, value in enumerate(values):
        if not _is_integer(value):
            raise InvalidVectorInput(
                f"{dtype_name} vector element {index} must be an integer, "
                f"not {type(value).__name__} ({value!r})"
            )
        number = operator.index(cast(Any, value))
        if not low <= number <= high:
            raise InvalidVectorInput(
                f"{dtype_name} vector element {index} is {number}, outside {low}..{high}"
            )
        result.append(number)
    return result


def _normalize_floats(values: Sequence[object]) -> list[float]:
    # Round every element to binary32 now, so that a vector compares equal to itself after an
    # encode/decode round trip and ``data`` shows what will actually be stored.
    rounded: list[float] = []
    pack = struct.Struct("<f").pack
    unpack = struct.Struct("<f").unpack
    for index, value in enumerate(values):
        if not _is_real(value):
            raise InvalidVectorInput(
                f"FLOAT32 vector element {index} must be a real number, "
                f"not {type(value).__name__} ({value!r})"
            )
        try:
            (single,) = unpack(pack(float(cast(Any, value))))
        except OverflowError:
            raise InvalidVectorInput(
                f"FLOAT32 vector element {index} ({value!r}) is too large for a 32-bit float"
            ) from None
        rounded.append(single)
    return rounded


def _check_unused_bits(data: Sequence[int], padding: int, error: type[VectorError]) -> None:
    if padding and data[-1] & ((1 << padding) - 1):
        raise error(
            f"the {padding} unused low bits of a PACKED_BIT vector's last byte must be zero, "
            f"got last byte 0x{data[-1]:02x}"
        )


def _to_list(values: Iterable[int] | Iterable[float]) -> list[int] | list[float]:
    # The converter only copies (so the caller's list can change without touching the vector);
    # validation needs the dtype and so runs in __attrs_post_init__.
    if isinstance(values, str | dict):
        # both iterate, but never as the elements of a vector
        raise InvalidVectorInput(
            f"vector data must be a sequence of numbers, not {type(values).__name__}"
        )
    try:
        return cast("list[int] | list[float]", list(values))
    except TypeError:
        raise InvalidVectorInput(
            f"vector data must be a sequence of numbers, not {type(values).__name__}"
        ) from None


@attrs.frozen
class BinaryVector:
    """A validated vector: its elements, element type and (PACKED_BIT only) padding.

    Construction validates everything the spec asks for and raises :class:`InvalidVectorInput`
    otherwise, so a ``BinaryVector`` always encodes.  ``data`` is stored as a fresh list:
    ints for INT8 and PACKED_BIT (the packed bytes, 0..255), floats already rounded to binary32
    for FLOAT32.  Equality compares dtype, padding and elements; like Python lists, a NaN
    element is not equal to another NaN.  ``len()`` is the element count (bits for
    PACKED_BIT), so an empty vector is falsy.  The ``data`` list makes instances unhashable.
    """

    data: list[int] | list[float] = attrs.field(converter=_to_list)
    dtype: BinaryVectorDtype
    padding: int = 0

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.dtype, BinaryVectorDtype):
            raise InvalidVectorInput(
                f"vector dtype must be a BinaryVectorDtype, not {type(self.dtype).__name__}"
            )
        padding = _check_padding(self.dtype, self.padding, not self.data)
        data: list[int] | list[float]
        if self.dtype is BinaryVectorDtype.INT8:
            data = _normalize_ints(self.data, -128, 127, "INT8")
        elif self.dtype is BinaryVectorDtype.PACKED_BIT:
            data = _normalize_ints(self.data, 0, 255, "PACKED_BIT")
            _check_unused_bits(data, padding, InvalidVectorInput)
        else:
            data = _normalize_floats(self.data)
        # frozen attrs classes are set up this way from inside the class
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "padding", padding)

    @classmethod
    def _trusted(
        cls, data: list[int] | list[float], dtype: BinaryVectorDtype, padding: int
    ) -> BinaryVector:
        # binary_to_vector has already validated the bytes and produced normalized elements;
        # skipping __init__ avoids checking every element a second time.
        self = object.__new__(cls)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "padding", padding)
        return self

    def __len__(self) -> int:
        """The number of elements (bits, for PACKED_BIT)."""
        if self.dtype is BinaryVectorDtype.PACKED_BIT:
            return 8 * len(self.data) - self.padding
        return len(self.data)

    def to_binary(self) -> Binary:
        """This vector as a subtype 9 :class:`Binary`."""
        return vector_to_binary(self)

    @classmethod
    def from_binary(cls, binary: bytes | bytearray | memoryview) -> BinaryVector:
        """Read a subtype 9 payload; see :func:`binary_to_vector`."""
        return binary_to_vector(binary)


def vector_to_binary(
    vector: BinaryVector | Sequence[int] | Sequence[float],
    dtype: BinaryVectorDtype | None = None,
    padding: int = 0,
) -> Binary:
    """Encode a vector as a subtype 9 :class:`Binary`.

    ``vector`` is either a :class:`BinaryVector` (then ``dtype`` and ``padding`` must be left
    out, the vector carries its own) or a sequence of numbers together with ``dtype`` and,
    for PACKED_BIT, ``padding``.  Invalid input raises :class:`InvalidVectorInput`.
    """
    if isinstance(vector, BinaryVector):
        if dtype is not None or padding != 0:
            raise InvalidVectorInput(
                "dtype and padding are taken from the BinaryVector; pass them only with a list"
            )
        vec = vector
    else:
        if dtype is None:
            raise InvalidVectorInput("a dtype is needed to encode a list as a vector")
        vec = BinaryVector(vector, dtype, padding)
    count = len(vec.data)
    if vec.dtype is BinaryVectorDtype.FLOAT32:
        payload = struct.pack(f"<{count}f", *vec.data)
    elif vec.dtype is BinaryVectorDtype.INT8:
        payload = struct.pack(f"<{count}b", *vec.data)
    else:
        payload = bytes(cast("list[int]", vec.data))
    return Binary(vec.dtype.value + bytes((vec.padding,)) + payload, VECTOR_SUBTYPE)


def binary_to_vector(binary: bytes | bytearray | memoryview) -> BinaryVector:
    """Decode a subtype 9 payload into a :class:`BinaryVector`.

    ``binary`` is a :class:`Binary` (which must have subtype 9) or the raw payload bytes.
    A payload the spec does not allow raises :class:`InvalidVectorBytes`.
    """
    if isinstance(binary, Binary) and binary.subtype != VECTOR_SUBTYPE:
        raise InvalidVectorBytes(
            f"binary subtype {binary.subtype} is not a vector (subtype {VECTOR_SUBTYPE})"
        )
    raw = bytes(binary)
    if len(raw) < _HEADER_SIZE:
        raise InvalidVectorBytes(
            f"a vector needs a {_HEADER_SIZE}-byte header, the payload has {len(raw)} bytes"
        )
    dtype = _DTYPE_BY_CODE.get(raw[0])
    if dtype is None:
        raise InvalidVectorBytes(f"unknown vector dtype 0x{raw[0]:02x}")
    padding = raw[1]
    body = raw[_HEADER_SIZE:]
    try:
        # the same header rules as for input; only the blame differs
        _check_padding(dtype, padding, not body)
    except InvalidVectorInput as exc:
        raise InvalidVectorBytes(str(exc)) from None
    data: list[int] | list[float]
    if dtype is BinaryVectorDtype.INT8:
        data = list(struct.unpack(f"<{len(body)}b", body))
    elif dtype is BinaryVectorDtype.FLOAT32:
        if len(body) % _FLOAT32_SIZE:
            raise InvalidVectorBytes(
                f"FLOAT32 vector data is {len(body)} bytes, not a multiple of {_FLOAT32_SIZE}"
            )
        data = list(struct.unpack(f"<{len(body) // _FLOAT32_SIZE}f", body))
    else:
        data = list(body)
        _check_unused_bits(data, padding, InvalidVectorBytes)
    return BinaryVector._trusted(data, dtype, padding)


def pack_bits(bits: Iterable[int | bool]) -> BinaryVector:
    """A PACKED_BIT vector of the given 0/1 elements, most significant bit first.

    The padding is whatever the length leaves over in the last byte.
    """
    packed: list[int] = []
    current = 0
    count = 0
    for index, bit in enumerate(bits):
        if not isinstance(bit, numbers.Integral) or bit not in (0, 1):
            raise InvalidVectorInput(f"bit {index} must be 0 or 1, got {bit!r}")
        current = (current << 1) | int(bit)
        count += 1
        if count % 8 == 0:
            packed.append(current)
            current = 0
    padding = -count % 8
    if padding:
        packed.append(current << padding)
    return BinaryVector._trusted(packed, BinaryVectorDtype.PACKED_BIT, padding)


def unpack_bits(vector: BinaryVector) -> list[int]:
    """The elements of a PACKED_BIT vector as a list of 0s and 1s."""
    if vector.dtype is not BinaryVectorDtype.PACKED_BIT:
        raise InvalidVectorInput(f"only a PACKED_BIT vector has bits, not {vector.dtype.name}")
    bits = [
        (byte >> shift) & 1 for byte in cast("list[int]", vector.data) for shift in range(7, -1, -1)
    ]
    if vector.padding:
        del bits[-vector.padding :]
    return bits
