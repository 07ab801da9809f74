"""Wire compression (the Wire Compression specification): pluggable compressor objects.

A compressor is any object with ``name``, ``compressor_id``, ``compress(data) -> bytes`` and
``decompress(data, uncompressed_size) -> bytes`` (:class:`Compressor`).  The four the
specification names are here: noop (0) and zlib (2) from the standard library, snappy (1) and
zstd (3) from cramjam, which is imported the first time a snappy or zstd compressor is used --
the core has no hard dependency on it; when it is missing the error names the
``mongo-sansio[compression]`` extra.

``decompress`` must return exactly ``uncompressed_size`` bytes and must not produce more: the
size comes from the OP_COMPRESSED header, which the reader has already checked against the
maximum message size, so a small frame cannot blow up into a huge buffer.

:func:`may_compress` says whether a command may travel compressed: the handshake and
authentication commands the specification lists must not be.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any, Protocol

from mongo_sansio.errors import ConfigurationError

__all__ = [
    "Compressor",
    "NoopCompressor",
    "ZlibCompressor",
    "SnappyCompressor",
    "ZstdCompressor",
    "CompressionFailed",
    "COMPRESSOR_IDS",
    "UNCOMPRESSIBLE_COMMANDS",
    "compressor_for",
    "default_compressors",
    "may_compress",
]

#: handshake name -> compressorId
COMPRESSOR_IDS: Mapping[str, int] = {"noop": 0, "snappy": 1, "zlib": 2, "zstd": 3}

#: commands that must never be compressed (lower case: they are compared case-insensitively,
#: since the server also accepts ``ismaster`` for ``isMaster``)
UNCOMPRESSIBLE_COMMANDS = frozenset(
    name.lower()
    for name in (
        "hello",
        "isMaster",
        "saslStart",
        "saslContinue",
        "getnonce",
        "authenticate",
        "createUser",
        "updateUser",
        "copydbSaslStart",
        "copydbgetnonce",
        "copydb",
    )
)


def may_compress(command_name: str) -> bool:
    """May a message carrying the command ``command_name`` (its first key) be compressed?"""
    return command_name.lower() not in UNCOMPRESSIBLE_COMMANDS


class CompressionFailed(ValueError):
    """The compressed bytes are corrupt or do not inflate to the announced size.  (The reader
    turns it into a ProtocolError; it is a separate class so compressors need not import the
    reader's error types.)"""


class Compressor(Protocol):
    """What the reader and the encoder need from a compressor."""

    @property
    def name(self) -> str: ...

    @property
    def compressor_id(self) -> int: ...

    def compress(self, data: bytes) -> bytes: ...

    def decompress(self, data: bytes | memoryview, uncompressed_size: int) -> bytes: ...


class NoopCompressor:
    """compressorId 0: the bytes travel as they are (used for testing)."""

    name = "noop"
    compressor_id = 0

    def compress(self, data: bytes) -> bytes:
        return bytes(data)

    def decompress(self, data: bytes | memoryview, uncompressed_size: int) -> bytes:
        if len(data) != uncompressed_size:
            raise CompressionFailed(f"noop payload is {len(data)} bytes, not {uncompressed_size}")
        return bytes(data)


class ZlibCompressor:
    """compressorId 2: zlib from the standard library.  ``level`` is zlibCompressionLevel
    (-1, the library default, to 9)."""

    name = "zlib"
    compressor_id = 2

    def __init__(self, level: int = -1) -> None:
        if not isinstance(level, int) or not -1 <= level <= 9:
            raise ConfigurationError(
                f"zlibCompressionLevel must be an integer from -1 to 9, not {level!r}"
            )
        self.level = level

    def compress(self, data: bytes) -> bytes:
        return zlib.compress(data, self.level)

    def decompress(self, data: bytes | memoryview, uncompressed_size: int) -> bytes:
        inflater = zlib.decompressobj()
        try:
            # max_length bounds the output: a frame cannot inflate past what it announced
            out = inflater.decompress(data, uncompressed_size + 1)
        except zlib.error as exc:
            raise CompressionFailed(f"zlib: {exc}") from None
        if len(out) != uncompressed_size or not inflater.eof:
            raise CompressionFailed(
                f"zlib payload inflates to {len(out)}{'' if inflater.eof else '+'} bytes, "
                f"not the announced {uncompressed_size}"
            )
        return out


_CRAMJAM: list[Any] = []


def _cramjam(name: str) -> Any:
    """The cramjam module, imported on first use; a clear error when it is not installed."""
    if not _CRAMJAM:
        try:
            import cramjam
        except ImportError:
            raise ConfigurationError(
                f"compressors={name} needs the cramjam package: "
                "install the mongo-sansio[compression] extra"
            ) from None
        _CRAMJAM.append(cramjam)
    return _CRAMJAM[0]


def _into_exact(decompress_into: Any, data: bytes | memoryview, size: int, name: str) -> bytes:
    """Inflate into a buffer of exactly ``size`` bytes (cramjam refuses to overrun it)."""
    out = bytearray(size)
    try:
        written = decompress_into(bytes(data), out)
    except Exception as exc:  # cramjam raises its own DecompressionError (an Exception)
        raise CompressionFailed(f"{name}: {exc}") from None
    if written != size:
        raise CompressionFailed(f"{name} payload inflates to {written} bytes, not {size}")
    return bytes(out)


class SnappyCompressor:
    """compressorId 1: raw (unframed) snappy, through cramjam."""

    name = "snappy"
    compressor_id = 1

    def __init__(self) -> None:
        _cramjam(self.name)  # fail when configured, not at the first message

    def compress(self, data: bytes) -> bytes:
        return bytes(_cramjam(self.name).snappy.compress_raw(data))

    def decompress(self, data: bytes | memoryview, uncompressed_size: int) -> bytes:
        snappy = _cramjam(self.name).snappy
        try:  # snappy states its length up front: refuse a mismatch before inflating
            announced = snappy.decompress_raw_len(bytes(data))
        except Exception as exc:
            raise CompressionFailed(f"snappy: {exc}") from None
        if announced != uncompressed_size:
            raise CompressionFailed(f"snappy payload is {announced} bytes, not {uncompressed_size}")
        return _into_exact(snappy.decompress_raw_into, data, uncompressed_size, self.name)


class ZstdCompressor:
    """compressorId 3: zstd, through cramjam.  ``level`` None is zstd's default."""

    name = "zstd"
    compressor_id = 3

    def __init__(self, level: int | None = None) -> None:
        _cramjam(self.name)
        self.level = level

    def compress(self, data: bytes) -> bytes:
        zstd = _cramjam(self.name).zstd
        if self.level is None:
            return bytes(zstd.compress(data))
        return bytes(zstd.compress(data, level=self.level))

    def decompress(self, data: bytes | memoryview, uncompressed_size: int) -> bytes:
        # A buffer one byte longer than announced shows an over-long frame as a count past the
        # announced size (cramjam fills what it can and reports the count); the output can
        # still not grow beyond the buffer.
        zstd = _cramjam(self.name).zstd
        out = bytearray(uncompressed_size + 1)
        try:
            written = zstd.decompress_into(bytes(data), out)
        except Exception as exc:  # cramjam's DecompressionError, or the buffer overrun
            raise CompressionFailed(f"zstd: {exc}") from None
        if written != uncompressed_size:
            raise CompressionFailed(
                f"zstd payload inflates to {written} bytes, not {uncompressed_size}"
            )
        del out[uncompressed_size:]
        return bytes(out)


def compressor_for(name: str, *, zlib_compression_level: int = -1) -> Compressor:
    """The compressor for a handshake name (``"snappy"``, ``"zlib"``, ``"zstd"``, ``"noop"``)."""
    if name == "zlib":
        return ZlibCompressor(zlib_compression_level)
    if name == "snappy":
        return SnappyCompressor()
    if name == "zstd":
        return ZstdCompressor()
    if name == "noop":
        return NoopCompressor()
    raise ConfigurationError(f"compressors: unknown compressor {name!r} (snappy, zlib, zstd)")


class _Lazy:
    """A compressor built on first use, so that a reader can accept snappy and zstd frames
    without importing cramjam until one arrives."""

    def __init__(self, name: str, compressor_id: int) -> None:
        self.name = name
        self.compressor_id = compressor_id
        self._real: Compressor | None = None

    def _get(self) -> Compressor:
        if self._real is None:
            self._real = compressor_for(self.name)
        return self._real

    def compress(self, data: bytes) -> bytes:
        return self._get().compress(data)

    def decompress(self, data: bytes | memoryview, uncompressed_size: int) -> bytes:
        return self._get().decompress(data, uncompressed_size)


def default_compressors() -> dict[int, Compressor]:
    """compressorId -> compressor for every id the specification defines (snappy and zstd
    load cramjam when the first such frame arrives)."""
    return {
        0: NoopCompressor(),
        1: _Lazy("snappy", 1),
        2: ZlibCompressor(),
        3: _Lazy("zstd", 3),
    }
