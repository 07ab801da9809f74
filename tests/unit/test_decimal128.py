"""Decimal128: the BSON corpus's decimal128 files, round-trip properties, and edge cases.

The corpus lives outside the repository, in ``$MONGO_SANSIO_SPECS/bson-corpus/tests`` (default
``../shared/specs`` beside the checkout); without it the corpus tests skip with one message.
Each valid case's ``canonical_bson`` is the document ``{"d": <decimal128>}``, whose 16 value
bytes start at offset 7 (4 length bytes, type 0x13, key "d" and its NUL).
"""

from __future__ import annotations

import copy
import decimal
import json
import os
import pickle
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.errors import InvalidDecimal128

REPO_ROOT = Path(__file__).resolve().parents[2]
SPECS = Path(os.environ.get("MONGO_SANSIO_SPECS") or REPO_ROOT.parent / "shared" / "specs")
CORPUS = SPECS / "bson-corpus" / "tests"
MISSING = f"MONGO_SANSIO_SPECS folder {CORPUS} not found (set MONGO_SANSIO_SPECS)"

MAX_COEFFICIENT = 10**34 - 1
MIN_EXPONENT = -6176
MAX_EXPONENT = 6111


# --- corpus ------------------------------------------------------------------------------


def _number(extjson: str) -> str:
    value = json.loads(extjson)["d"]["$numberDecimal"]
    assert isinstance(value, str)
    return value


def _corpus(kind: str) -> list[Any]:
    """pytest params for the corpus's ``kind`` cases ("valid" or "parseErrors")."""
    files = sorted(CORPUS.glob("decimal128-*.json")) if CORPUS.is_dir() else []
    if not files:
        return [pytest.param(None, id="corpus-missing", marks=pytest.mark.skip(reason=MISSING))]
    params = []
    seen: dict[str, int] = {}
    for path in files:
        for case in json.loads(path.read_text(encoding="utf-8")).get(kind, []):
            case_id = f"{path.stem}: {case['description']}"
            # A few descriptions repeat within a file; number the repeats.
            seen[case_id] = seen.get(case_id, 0) + 1
            if seen[case_id] > 1:
                case_id = f"{case_id} ({seen[case_id]})"
            params.append(pytest.param(case, id=case_id))
    return params


VALID = _corpus("valid")
PARSE_ERRORS = _corpus("parseErrors")
DEGENERATE = [p for p in VALID if p.values[0] is None or "degenerate_extjson" in p.values[0]]


def _bid(case: dict[str, Any]) -> bytes:
    document = bytes.fromhex(case["canonical_bson"])
    assert len(document) == 24 and document[4] == 0x13, "not a {'d': Decimal128} document"
    return document[7:23]


@pytest.mark.parametrize("case", VALID)
def test_corpus_bid_to_string(case: dict[str, Any]) -> None:
    assert str(Decimal128.from_bid(_bid(case))) == _number(case["canonical_extjson"])


@pytest.mark.parametrize("case", VALID)
def test_corpus_string_to_bid(case: dict[str, Any]) -> None:
    canonical = _number(case["canonical_extjson"])
    parsed = Decimal128(canonical)
    if not case.get("lossy"):
        assert parsed.bid == _bid(case)
    # Lossy cases (NaN kinds, non-canonical zeros) still print back to their canonical string.
    assert str(parsed) == canonical


@pytest.mark.parametrize("case", DEGENERATE)
def test_corpus_degenerate_string_to_bid(case: dict[str, Any]) -> None:
    assert Decimal128(_number(case["degenerate_extjson"])).bid == _bid(case)


@pytest.mark.parametrize("case", VALID)
def test_corpus_to_decimal(case: dict[str, Any]) -> None:
    value = Decimal128.from_bid(_bid(case))
    result = value.to_decimal()
    canonical = _number(case["canonical_extjson"])
    if canonical == "NaN":
        assert result.is_nan()
    else:
        assert result.compare_total(Decimal(canonical)) == 0
    if not case.get("lossy"):
        assert Decimal128(result).bid == _bid(case)


@pytest.mark.parametrize("case", PARSE_ERRORS)
def test_corpus_parse_error(case: dict[str, Any]) -> None:
    with pytest.raises(InvalidDecimal128):
        Decimal128(case["string"])


# --- properties --------------------------------------------------------------------------


@st.composite
def representable(draw: st.DrawFn) -> Decimal:
    sign = draw(st.integers(0, 1))
    coefficient = draw(
        st.one_of(
            st.integers(0, MAX_COEFFICIENT),
            st.integers(0, 34).map(lambda n: 10**n - 1 if n else 0),  # all nines
            st.integers(0, 33).map(lambda n: 10**n),  # trailing zeros
        )
    )
    exponent = draw(
        st.one_of(
            st.integers(MIN_EXPONENT, MAX_EXPONENT),
            st.integers(-12, 6),  # where plain and scientific notation meet
            st.sampled_from([MIN_EXPONENT, MAX_EXPONENT]),
        )
    )
    return Decimal((sign, tuple(int(d) for d in str(coefficient)), exponent))


@settings(max_examples=500, deadline=None)
@given(representable())
def test_decimal_round_trip(d: Decimal) -> None:
    value = Decimal128(d)
    assert value.to_decimal().as_tuple() == d.as_tuple()
    assert value.to_decimal().compare_total(d) == 0
    # Python's str(Decimal) is the same to-scientific-string.
    assert str(value) == str(d)
    assert Decimal128(str(value)).bid == value.bid
    assert Decimal128(str(d)) == value
    assert Decimal128.from_bid(value.bid) == value


@settings(max_examples=300, deadline=None)
@given(st.integers(1, MAX_COEFFICIENT), st.integers(0, 33), st.booleans())
def test_exact_clamping(coefficient: int, extra: int, high: bool) -> None:
    digits = str(coefficient).rstrip("0")
    if len(digits) + extra > 34:
        extra = 34 - len(digits)
    if high:
        # Exponent above the range: the coefficient is padded with zeros.
        value = Decimal128(f"{digits}E+{MAX_EXPONENT + extra}")
        expected = Decimal((0, tuple(int(c) for c in digits + "0" * extra), MAX_EXPONENT))
    else:
        # Exponent below the range: trailing zeros are dropped.
        value = Decimal128(f"{digits}{'0' * extra}E{MIN_EXPONENT - extra}")
        expected = Decimal((0, tuple(int(c) for c in digits), MIN_EXPONENT))
    assert value.to_decimal().as_tuple() == expected.as_tuple()


@settings(max_examples=200, deadline=None)
@given(st.integers(10**34, 10**60).filter(lambda n: n % 10 != 0), st.integers(-40, 40))
def test_too_many_digits_is_inexact(coefficient: int, exponent: int) -> None:
    with pytest.raises(InvalidDecimal128):
        Decimal128(f"{coefficient}E{exponent}")
    with pytest.raises(InvalidDecimal128):
        Decimal128(Decimal(f"{coefficient}E{exponent}"))


@settings(max_examples=500, deadline=None)
@given(st.binary(min_size=16, max_size=16))
def test_any_bytes_print_and_parse(data: bytes) -> None:
    value = Decimal128.from_bid(data)
    assert value.bid == data
    text = str(value)
    reparsed = Decimal128(text)
    assert str(reparsed) == text
    d = value.to_decimal()
    if d.is_nan():
        assert text == "NaN"
    else:
        # The string and the Decimal both land on the canonical encoding of the value.
        assert Decimal128(d) == reparsed
        assert reparsed.to_decimal().compare_total(d) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**80), 10**80))
def test_int_matches_decimal(n: int) -> None:
    try:
        expected = Decimal128(Decimal(n))
    except InvalidDecimal128:
        with pytest.raises(InvalidDecimal128):
            Decimal128(n)
    else:
        assert Decimal128(n) == expected
        assert Decimal128(n).to_decimal() == n


# --- edge cases --------------------------------------------------------------------------


def _le(high: int, low: int = 0) -> bytes:
    return (high << 64 | low).to_bytes(16, "little")


def test_nan() -> None:
    nan = Decimal128("NaN")
    assert nan.bid == _le(0x7C00_0000_0000_0000)
    assert str(nan) == "NaN" and repr(nan) == "Decimal128('NaN')"
    assert nan.to_decimal().is_qnan() and not nan.to_decimal().is_signed()
    assert nan == Decimal128("nan")  # bits compare equal, unlike float NaN
    negative = Decimal128("-NaN")
    assert negative.bid == _le(0xFC00_0000_0000_0000)
    assert str(negative) == "NaN"
    assert negative.to_decimal().is_qnan() and negative.to_decimal().is_signed()
    snan = Decimal128("sNaN")
    assert snan.bid == _le(0x7E00_0000_0000_0000)
    assert snan.to_decimal().is_snan()
    assert str(snan) == "NaN"
    assert Decimal128(Decimal("-sNaN")).bid == _le(0xFE00_0000_0000_0000)
    # A payload is not kept.
    assert Decimal128(Decimal("NaN123")) == nan
    assert Decimal128.from_bid(_le(0x7C00_0000_0000_0000, 123)).to_decimal().as_tuple() == (0, (), "n")


def test_infinities() -> None:
    minus = Decimal128("-Infinity")
    assert minus.bid == _le(0xF800_0000_0000_0000)
    assert str(minus) == "-Infinity"
    assert minus.to_decimal() == Decimal("-Infinity")
    assert Decimal128("-inf") == minus == Decimal128(Decimal("-Infinity"))
    assert str(Decimal128("+INF")) == "Infinity"
    assert Decimal128(Decimal("Infinity")).bid == _le(0x7800_0000_0000_0000)


def test_negative_zero() -> None:
    zero = Decimal128("-0")
    assert zero.bid == _le(0xB040_0000_0000_0000)
    assert str(zero) == "-0"
    assert zero.to_decimal().as_tuple() == (1, (0,), 0)
    assert zero != Decimal128("0")
    assert Decimal128(Decimal("-0.00")).bid == _le(0xB03C_0000_0000_0000)
    assert str(Decimal128("-0E+3")) == "-0E+3"


def test_smallest_zero() -> None:
    zero = Decimal128("0E-6176")
    assert zero.bid == bytes(16)
    assert str(Decimal128.from_bid(bytes(16))) == "0E-6176"
    assert Decimal128("0E-9999") == zero  # zeros clamp to any exponent
    assert str(Decimal128("0E+9999")) == "0E+6111"


def test_max_significand() -> None:
    largest = Decimal128("9.999999999999999999999999999999999E+6144")
    assert largest.bid == bytes.fromhex("ffffffff638e8d37c087adbe09edff5f")
    assert largest.to_decimal() == Decimal(f"{MAX_COEFFICIENT}E+{MAX_EXPONENT}")
    assert Decimal128(Decimal((0, (9,) * 34, MAX_EXPONENT))) == largest
    # One more unit in the last place does not fit.
    with pytest.raises(InvalidDecimal128):
        Decimal128("1E+6145")
    with pytest.raises(InvalidDecimal128):
        Decimal128("99999999999999999999999999999999999")  # 35 nines
    # A coefficient above 10**34 - 1 in the bytes is non-canonical: it reads as zero.
    non_canonical = Decimal128.from_bid(_le(0x3041_ED09_BEAD_87C0, 0x378D_8E64_0000_0000))
    assert str(non_canonical) == "0"


def test_clamped_exponent() -> None:
    value = Decimal128("1E+6144")
    assert value.bid == bytes.fromhex("000000000a5bc138938d44c64d31fe5f")
    assert str(value) == "1.000000000000000000000000000000000E+6144"
    assert value.to_decimal() == Decimal("1E+6144")
    assert Decimal128(Decimal("1E+6144")) == value
    assert Decimal128(10**6144) == value
    assert str(Decimal128("1.0E+6112")) == "1.0E+6112"
    assert Decimal128("10E-6177") == Decimal128("1E-6176")
    with pytest.raises(InvalidDecimal128):
        Decimal128("1E-6177")


def test_scientific_string_boundaries() -> None:
    assert str(Decimal128("0.000001")) == "0.000001"
    assert str(Decimal128("0.0000001")) == "1E-7"
    assert str(Decimal128("123E-2")) == "1.23"
    assert str(Decimal128("123E+2")) == "1.23E+4"
    assert str(Decimal128("-1.00E-8")) == "-1.00E-8"
    assert str(Decimal128("0.00")) == "0.00"


@pytest.mark.parametrize(
    "text",
    [
        "", "E02", "..1", "1.2.3", "1e", "1E+", " 1", "1 ", "1\n", "\t1", "-", "+", "Infin",
        "Infinityy", "NaN1", "NaNs", "1_000", "1,0", "0x10", "\u0661", "1\u0660", "\u0661\u0662",
        "e5", ".", "-.", "1e1.5", "inf inity", "--Inf", "+-NaN",
    ],
)
def test_invalid_strings(text: str) -> None:
    with pytest.raises(InvalidDecimal128) as info:
        Decimal128(text)
    assert repr(text) in str(info.value)


def test_error_names_long_values_briefly() -> None:
    text = "1" * 5000
    with pytest.raises(InvalidDecimal128) as info:
        Decimal128(text)
    message = str(info.value)
    assert "111" in message and len(message) < 300


def test_long_strings_are_exact() -> None:
    # Far past int()'s 4300-digit limit, with only zeros beyond the 34th digit.
    assert str(Decimal128("1" + "0" * 5000)) == "1.000000000000000000000000000000000E+5000"
    assert str(Decimal128("0." + "0" * 5000 + "1")) == "1E-5001"
    assert str(Decimal128("0E" + "9" * 5000)) == "0E+6111"
    assert str(Decimal128("-0E-" + "9" * 5000)) == "-0E-6176"
    with pytest.raises(InvalidDecimal128):
        Decimal128("1E" + "9" * 5000)
    with pytest.raises(InvalidDecimal128):
        Decimal128("1" + "0" * 5000 + "1")


def test_ints() -> None:
    assert str(Decimal128(0)) == "0"
    assert str(Decimal128(-5)) == "-5"
    assert str(Decimal128(MAX_COEFFICIENT)) == "9999999999999999999999999999999999"
    assert str(Decimal128(10**40)) == "1.000000000000000000000000000000000E+40"
    with pytest.raises(InvalidDecimal128):
        Decimal128(10**34 + 1)


def test_context_does_not_matter() -> None:
    digits = "1234567890123456789012345678901234"
    with decimal.localcontext() as ctx:
        ctx.prec = 3
        ctx.traps[decimal.Inexact] = True
        value = Decimal128(Decimal(digits))
        assert value.to_decimal() == Decimal(digits)
        assert str(Decimal128(int(digits))) == digits


@pytest.mark.parametrize("value", [1.5, True, None, b"1", [1]])
def test_wrong_types(value: Any) -> None:
    with pytest.raises(TypeError):
        Decimal128(value)


def test_from_bid() -> None:
    data = bytes(range(16))
    for form in (data, bytearray(data), memoryview(data)):
        value = Decimal128.from_bid(form)
        assert type(value.bid) is bytes and value.bid == data
    for size in (0, 15, 17):
        with pytest.raises(InvalidDecimal128):
            Decimal128.from_bid(bytes(size))


def test_equality_and_hash() -> None:
    assert Decimal128("1.0") != Decimal128("1.00")
    assert Decimal128("1.0") == Decimal128(Decimal("1.0"))
    assert hash(Decimal128("1.0")) == hash(Decimal128("10E-1"))
    assert len({Decimal128("1.0"), Decimal128("1.00"), Decimal128("10E-1")}) == 2
    assert Decimal128("1").__eq__(Decimal("1")) is NotImplemented
    assert Decimal128("1") != Decimal("1")
    assert Decimal128("1") != 1
    assert Decimal128(Decimal128("2.5")) == Decimal128("2.5")


def test_repr() -> None:
    assert repr(Decimal128("-1.50E-3")) == "Decimal128('-0.00150')"
    assert repr(Decimal128("Infinity")) == "Decimal128('Infinity')"


def test_immutable_pickle_and_copy() -> None:
    value = Decimal128("-1.50E-3")
    with pytest.raises(AttributeError):
        value._bid = bytes(16)
    with pytest.raises(AttributeError):
        value.other = 1
    assert not hasattr(value, "__dict__")
    assert copy.copy(value) is value and copy.deepcopy(value) is value
    # Pickling keeps the exact bits, including ones the string form does not show.
    for bits in (value.bid, _le(0xFE00_0000_0000_0000, 7), _le(0x6C10_0000_0000_0000)):
        original = Decimal128.from_bid(bits)
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            restored = pickle.loads(pickle.dumps(original, protocol))
            assert type(restored) is Decimal128 and restored.bid == bits
