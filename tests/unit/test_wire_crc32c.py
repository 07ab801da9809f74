"""CRC-32C: the known vectors (RFC 3720 appendix B.4 and the usual check value), continuation,
and the slicing-by-8 loop against the plain byte loop."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mongo_sansio.wire.crc32c import _bytewise, crc32c


def test_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_empty() -> None:
    assert crc32c(b"") == 0


def test_rfc3720_vectors() -> None:
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C


def test_accepts_every_buffer_type() -> None:
    data = b"The quick brown fox jumps over the lazy dog"
    expected = crc32c(data)
    assert expected == 0x22620404
    assert crc32c(bytearray(data)) == expected
    assert crc32c(memoryview(data)) == expected
    assert crc32c(memoryview(b"xx" + data)[2:]) == expected  # an unaligned view


@given(st.binary(max_size=300), st.binary(max_size=300))
def test_continuation(first: bytes, second: bytes) -> None:
    assert crc32c(second, crc32c(first)) == crc32c(first + second)


@given(st.binary(max_size=300))
def test_word_loop_matches_byte_loop(data: bytes) -> None:
    assert crc32c(data) == _bytewise(data)
