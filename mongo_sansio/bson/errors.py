"""Errors raised by the BSON and Extended JSON codecs.

:class:`InvalidBSON` blames the bytes (the peer); :class:`InvalidDocument` blames the value
handed to :func:`mongo_sansio.bson.encode` (the caller).  Both are :class:`ValueError`
subclasses; encoding a value of an unsupported Python type raises :class:`UnencodableType`,
which is also a :class:`TypeError`, and an integer beyond int64 :class:`IntegerOverflow`, an
:class:`OverflowError` as in PyMongo.  :class:`BSONError` and :class:`InvalidDocument` are defined
in :mod:`mongo_sansio.errors`, so that ``DocumentTooLarge`` can be an InvalidDocument there as
in PyMongo; they are the same classes here.
"""

from __future__ import annotations

from mongo_sansio.errors import (
    BSONError,
    InvalidDocument,
    LocalProtocolError,
    RemoteProtocolError,
)

__all__ = [
    "BSONError",
    "InvalidBSON",
    "InvalidDocument",
    "UnencodableType",
    "IntegerOverflow",
    "InvalidDecimal128",
    "InvalidExtendedJSON",
    "InvalidId",
]


class InvalidBSON(BSONError, RemoteProtocolError):
    """Bytes that cannot be decoded as BSON.

    ``offset`` is the byte position (from the start of the outermost buffer) where decoding
    failed, or ``None`` where no single position is to blame; ``reason`` is the plain cause.
    """

    def __init__(self, reason: str, offset: int | None = None) -> None:
        self.reason = reason
        self.offset = offset
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"invalid BSON{where}: {reason}")


class UnencodableType(InvalidDocument, TypeError):
    """A value whose Python type has no BSON representation."""


class IntegerOverflow(OverflowError, InvalidDocument):
    """An integer outside int64's range: an :class:`OverflowError` first, as PyMongo raises
    ("BSON can only handle up to 8-byte ints"), and an :class:`InvalidDocument` naming the key
    path."""

    def __init__(self, reason: str, path: str = "") -> None:
        InvalidDocument.__init__(self, reason, path)


class InvalidDecimal128(BSONError, LocalProtocolError):
    """A string or number that is not a valid Decimal128 value."""


class InvalidExtendedJSON(BSONError, LocalProtocolError):
    """Text that is not valid (relaxed, canonical or legacy) Extended JSON."""


class InvalidId(BSONError, LocalProtocolError):
    """A value that cannot be turned into an ObjectId."""
