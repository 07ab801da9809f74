"""BSON Decimal128 (element type 0x13): IEEE 754-2008 decimal128 in the BID encoding.

A value is 128 bits, stored in BSON as 16 little-endian bytes.  Read as one unsigned integer:

* bit 127 is the sign;
* if bits 126-122 are ``11111`` the value is a NaN (bit 121 set: signalling NaN), and if they
  are ``11110`` it is an infinity; the remaining bits are ignored (a NaN "payload" is not kept);
* otherwise, if bits 126-125 are not ``11``, bits 126-113 hold the exponent biased by 6176
  and bits 112-0 hold the coefficient (the significand, an unsigned integer);
* if bits 126-125 are ``11`` (and the value is not special), bits 124-111 hold the biased
  exponent and the coefficient would be ``0b100`` followed by bits 110-0.  That coefficient is
  at least 2**113, above the largest allowed one, so the value is a zero.

The value is ``(-1)**sign * coefficient * 10**exponent`` with ``0 <= coefficient <= 10**34 - 1``
and ``-6176 <= exponent <= 6111``.  A coefficient above ``10**34 - 1`` is non-canonical and means
zero, so every 16-byte string is a valid value.  Values are not normalised: ``1.0`` (10E-1)
and ``1.00`` (100E-2) are different bit patterns, and :class:`Decimal128` compares the bits.

Parsing never rounds.  A number that needs more than 34 significant digits, or whose exponent
cannot be brought into range by exact clamping (padding the coefficient with zeros to lower a
too-large exponent, or dropping trailing zeros to raise a too-small one), raises
:class:`~mongo_sansio.bson.errors.InvalidDecimal128`.
"""

from __future__ import annotations

import decimal
import re
from typing import Any

from mongo_sansio.bson._twins import pymongo_marker
from mongo_sansio.bson.errors import InvalidDecimal128

__all__ = ["Decimal128"]

_MAX_DIGITS = 34
_MAX_COEFFICIENT = 10**_MAX_DIGITS - 1
_EXPONENT_BIAS = 6176
# The range of the coefficient's exponent: IEEE's Emin - (p - 1) and Emax - (p - 1), with
# p = 34 digits, Emin = -6143 and Emax = 6144.
_MIN_EXPONENT = -6176
_MAX_EXPONENT = 6111

_SIGN_BIT = 1 << 127
_COEFFICIENT_MASK = (1 << 113) - 1
_EXPONENT_MASK = 0x3FFF  # 14 bits

_INFINITY = 0x1E << 122  # combination field 11110
_NAN = 0x1F << 122  # combination field 11111
_SNAN = 0x3F << 121  # 11111 and then the signalling bit

# The grammar is parsed here rather than by decimal.Decimal(), which also accepts surrounding
# whitespace, underscores and other scripts' digits (as does re's \d, hence [0-9]); the corpus
# rejects whitespace.  Callers use fullmatch, since "$" would also match before a final "\n".
_FINITE = re.compile(r"([+-]?)(?:([0-9]+)(?:\.([0-9]*))?|\.([0-9]+))(?:[eE]([+-]?)([0-9]+))?", re.ASCII)
_SPECIAL = re.compile(r"([+-]?)(inf|infinity|nan|snan)", re.ASCII | re.IGNORECASE)

# Exponents longer than this many digits are replaced by +-10**_HUGE_EXPONENT_DIGITS.  Such a
# magnitude dwarfs any digit count a string in memory can offset, so the outcome (overflow,
# underflow or a clamped zero) is unchanged, and int() never sees an enormous digit string.
_HUGE_EXPONENT_DIGITS = 40

# Repr of a rejected value is cut to this length in error messages.
_MAX_REPR = 100


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > _MAX_REPR:
        text = text[: _MAX_REPR - 3] + "..."
    return text


def _pack(negative: bool, coefficient: int, exponent: int) -> bytes:
    bits = (exponent + _EXPONENT_BIAS) << 113 | coefficient
    if negative:
        bits |= _SIGN_BIT
    return bits.to_bytes(16, "little")


def _pack_digits(value: object, negative: bool, digits: str, exponent: int) -> bytes:
    """Encode ``digits * 10**exponent`` exactly, clamping the exponent where that is exact.

    ``digits`` is a non-empty string of ASCII digits and may be arbitrarily long (int() refuses
    strings over 4300 digits, so no arithmetic happens until at most 34 digits remain).
    """
    digits = digits.lstrip("0")
    if not digits:
        # Zero has no significant digits: any exponent is exact once clamped into range.
        exponent = min(max(exponent, _MIN_EXPONENT), _MAX_EXPONENT)
        return _pack(negative, 0, exponent)

    # Too many digits: only trailing zeros may go, each raising the exponent by one.  Dropping
    # just enough keeps the exponent as close as possible to the one written.
    excess = len(digits) - _MAX_DIGITS
    if excess > 0:
        if digits[-excess:].strip("0"):
            raise InvalidDecimal128(
                f"Decimal128 value {_describe(value)} is inexact: it has more than "
                f"{_MAX_DIGITS} significant digits"
            )
        digits = digits[:-excess]
        exponent += excess

    if exponent > _MAX_EXPONENT:
        # Lower the exponent by appending zeros to the coefficient, if they fit.
        pad = exponent - _MAX_EXPONENT
        if len(digits) + pad > _MAX_DIGITS:
            raise InvalidDecimal128(f"Decimal128 value {_describe(value)} overflows (too large)")
        digits += "0" * pad
        exponent = _MAX_EXPONENT
    elif exponent < _MIN_EXPONENT:
        # Raise the exponent by dropping trailing zeros, if there are enough.  digits has no
        # leading zeros, so dropping all of it would change the value too.
        drop = _MIN_EXPONENT - exponent
        if drop >= len(digits) or digits[-drop:].strip("0"):
            raise InvalidDecimal128(
                f"Decimal128 value {_describe(value)} is inexact: too small or too precise "
                f"(exponent below {_MIN_EXPONENT})"
            )
        digits = digits[:-drop]
        exponent = _MIN_EXPONENT

    return _pack(negative, int(digits), exponent)


def _special(negative: bool, bits: int) -> bytes:
    if negative:
        bits |= _SIGN_BIT
    return bits.to_bytes(16, "little")


def _from_string(value: str) -> bytes:
    match = _FINITE.fullmatch(value)
    if match is not None:
        sign, integer, fraction, bare_fraction, exp_sign, exp_digits = match.groups()
        if bare_fraction is not None:
            integer, fraction = "", bare_fraction
        elif fraction is None:
            fraction = ""
        exponent = 0
        if exp_digits is not None:
            exp_digits = exp_digits.lstrip("0")
            if len(exp_digits) > _HUGE_EXPONENT_DIGITS:
                exponent = 10**_HUGE_EXPONENT_DIGITS
            elif exp_digits:
                exponent = int(exp_digits)
            if exp_sign == "-":
                exponent = -exponent
        return _pack_digits(value, sign == "-", integer + fraction, exponent - len(fraction))

    match = _SPECIAL.fullmatch(value)
    if match is not None:
        sign, word = match.groups()
        word = word.lower()
        bits = _NAN if word == "nan" else _SNAN if word == "snan" else _INFINITY
        return _special(sign == "-", bits)

    raise InvalidDecimal128(f"{_describe(value)} is not a valid Decimal128 string")


def _from_decimal(value: decimal.Decimal) -> bytes:
    sign, digit_tuple, exponent = value.as_tuple()
    negative = sign == 1
    if exponent == "n":
        return _special(negative, _NAN)
    if exponent == "N":
        return _special(negative, _SNAN)
    if exponent == "F":
        return _special(negative, _INFINITY)
    assert isinstance(exponent, int)
    return _pack_digits(value, negative, "".join(map(str, digit_tuple)), exponent)


def _from_int(value: int) -> bytes:
    if -_MAX_COEFFICIENT <= value <= _MAX_COEFFICIENT:
        return _pack(value < 0, abs(value), 0)
    # Larger integers need trailing zeros moved into the exponent.  decimal.Decimal converts
    # ints of any size, where str() stops at 4300 digits.
    return _from_decimal(decimal.Decimal(value))


# Decimal is immutable, so the special values can be shared.
_SPECIAL_DECIMALS = {
    (negative, kind): decimal.Decimal(("-" if negative else "") + text)
    for negative in (False, True)
    for kind, text in (("n", "NaN"), ("N", "sNaN"), ("F", "Infinity"))
}


def _unpack(bid: bytes) -> tuple[bool, int, int | str]:
    """``(negative, coefficient, exponent)``; exponent is "n", "N" or "F" for the specials,
    as in :meth:`decimal.Decimal.as_tuple`."""
    bits = int.from_bytes(bid, "little")
    negative = bool(bits & _SIGN_BIT)
    combination = (bits >> 122) & 0x1F
    if combination == 0x1F:
        return negative, 0, "N" if bits & (1 << 121) else "n"
    if combination == 0x1E:
        return negative, 0, "F"
    if (bits >> 125) & 0b11 == 0b11:
        # The "11" form only encodes coefficients >= 2**113, which are all non-canonical.
        return negative, 0, ((bits >> 111) & _EXPONENT_MASK) - _EXPONENT_BIAS
    coefficient = bits & _COEFFICIENT_MASK
    if coefficient > _MAX_COEFFICIENT:
        coefficient = 0
    return negative, coefficient, ((bits >> 113) & _EXPONENT_MASK) - _EXPONENT_BIAS


class Decimal128:
    """An immutable IEEE 754-2008 decimal128 value, held as its 16 BSON (BID) bytes.

    ``Decimal128(value)`` accepts a :class:`str` (the decimal string syntax, plus ``Inf``,
    ``Infinity``, ``NaN`` and ``sNaN`` in any case, each with an optional sign), a
    :class:`decimal.Decimal`, an :class:`int` or another :class:`Decimal128`.  Conversion is
    exact or raises :class:`~mongo_sansio.bson.errors.InvalidDecimal128`.  NaN payloads are
    not kept.

    Equality and hashing compare the bits (PyMongo's ``bson.Decimal128`` of the same bits is
    equal, both ways), so ``Decimal128("1.0") != Decimal128("1.00")``
    and a NaN equals itself; use :meth:`to_decimal` for numeric comparison.
    """

    __slots__ = ("_bid",)

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 19

    _bid: bytes

    def __init__(self, value: str | decimal.Decimal | int | Decimal128) -> None:
        if isinstance(value, str):
            bid = _from_string(value)
        elif isinstance(value, decimal.Decimal):
            bid = _from_decimal(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            # bool is refused: Decimal128(True) is far more likely a mistake than a wish for 1.
            bid = _from_int(value)
        elif isinstance(value, Decimal128):
            bid = value._bid
        else:
            raise TypeError(
                f"Decimal128 takes a str, decimal.Decimal or int, not {type(value).__name__}"
            )
        object.__setattr__(self, "_bid", bid)

    @classmethod
    def from_bid(cls, data: bytes | bytearray | memoryview) -> Decimal128:
        """The value whose BSON bytes (16, little-endian, BID encoding) are ``data``.

        Every 16-byte string is a value, so only the length is checked.
        """
        bid = bytes(data)
        if len(bid) != 16:
            raise InvalidDecimal128(f"Decimal128 needs exactly 16 bytes, got {len(bid)}")
        self = cls.__new__(cls)
        object.__setattr__(self, "_bid", bid)
        return self

    @property
    def bid(self) -> bytes:
        """The 16 bytes of the value as BSON stores them (little-endian BID)."""
        return self._bid

    def to_decimal(self) -> decimal.Decimal:
        """The exact value as a :class:`decimal.Decimal` (NaN payloads are dropped;
        non-canonical encodings give zero, with their sign and exponent)."""
        negative, coefficient, exponent = _unpack(self._bid)
        if isinstance(exponent, str):
            return _SPECIAL_DECIMALS[negative, exponent]
        # A digit tuple avoids rounding to (and any dependence on) the current context.
        digits = tuple(int(d) for d in str(coefficient))
        return decimal.Decimal((int(negative), digits, exponent))

    def __str__(self) -> str:
        # The IEEE 754 / General Decimal Arithmetic "to-scientific-string", which is what the
        # BSON corpus expects in canonical Extended JSON.
        negative, coefficient, exponent = _unpack(self._bid)
        if isinstance(exponent, str):
            # Every NaN prints as "NaN": the corpus drops both the sign and signalling.
            if exponent == "F":
                return "-Infinity" if negative else "Infinity"
            return "NaN"
        digits = str(coefficient)
        adjusted = exponent + len(digits) - 1
        if exponent <= 0 and adjusted >= -6:
            # Plain notation.
            if exponent == 0:
                text = digits
            else:
                point = len(digits) + exponent  # digits before the decimal point
                if point > 0:
                    text = f"{digits[:point]}.{digits[point:]}"
                else:
                    text = f"0.{'0' * -point}{digits}"
        else:
            # Scientific notation: one digit before the point, then the adjusted exponent.
            text = digits[0]
            if len(digits) > 1:
                text = f"{text}.{digits[1:]}"
            text = f"{text}E{adjusted:+d}"
        return f"-{text}" if negative else text

    def __repr__(self) -> str:
        return f"Decimal128('{self}')"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Decimal128):
            return self._bid == other._bid
        if pymongo_marker(type(other)) == 19:  # PyMongo's bson.Decimal128
            theirs: Any = other
            return bool(self._bid == theirs.bid)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self._bid)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Decimal128 is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Decimal128 is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle the bits, not the string: NaN kinds, -0 and non-canonical encodings survive.
        return (type(self).from_bid, (self._bid,))

    def __copy__(self) -> Decimal128:
        return self

    def __deepcopy__(self, memo: Any) -> Decimal128:
        return self
