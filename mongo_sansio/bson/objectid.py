"""ObjectId: the 12-byte identifier (4-byte seconds, 5-byte process-random value, 3-byte counter).

This is the one module of the core allowed to read the clock and the operating system's
randomness: users expect ``ObjectId()`` to work without arguments.  Code that needs
deterministic ids passes ``ObjectId.from_parts(seconds, random5, counter)`` or raw bytes.
"""

from __future__ import annotations

import binascii
import datetime
import os
import struct
import time
from typing import Any

from mongo_sansio.bson._twins import pymongo_marker
from mongo_sansio.bson.errors import InvalidId

__all__ = ["ObjectId"]

_PACK_TIME = struct.Struct(">I")
_COUNTER_LIMIT = 0xFFFFFF
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_UTC = datetime.UTC


class _Generator:
    """Per-process state: the 5 random bytes and the 3-byte counter (drawn anew in a forked
    child, which must not repeat its parent's ids), and the 9-byte prefix of the current
    second (time and random bytes: made once a second, not once an id)."""

    __slots__ = ("random5", "counter", "second", "prefix")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.random5 = os.urandom(5)
        self.counter = int.from_bytes(os.urandom(3), "big")
        self.second = -1
        self.prefix = b""

    def next(self) -> bytes:
        self.counter = counter = (self.counter + 1) & _COUNTER_LIMIT
        second = int(time.time()) & 0xFFFFFFFF
        if second != self.second:
            self.second = second
            self.prefix = _PACK_TIME.pack(second) + self.random5
        return self.prefix + counter.to_bytes(3, "big")


_GENERATOR = _Generator()
if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork to tell apart
    os.register_at_fork(after_in_child=_GENERATOR.reset)


class _ObjectIdType(type):
    """ObjectId's metaclass: PyMongo's ``bson.ObjectId`` values are ObjectIds too
    (``isinstance(bson.ObjectId(), ObjectId)``), so code checking ids against our class keeps
    working when a client gives PyMongo's (see docs/bson.md).  Exact instances never get here
    (Python answers those itself)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return type.__instancecheck__(cls, instance) or (
            cls is ObjectId and pymongo_marker(type(instance)) == 7
        )


class ObjectId(metaclass=_ObjectIdType):
    """A BSON ObjectId: 12 bytes, ordered and hashed by those bytes.

    Equal to (and hashed like) PyMongo's ``bson.ObjectId`` of the same bytes, in both
    directions; ``isinstance(bson.ObjectId(), ObjectId)`` holds.
    """

    __slots__ = ("_id",)

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 7

    _id: bytes

    def __init__(self, oid: str | bytes | ObjectId | None = None) -> None:
        if oid is None:
            self._id = _GENERATOR.next()
        elif isinstance(oid, ObjectId):  # (PyMongo's too)
            self._id = oid.binary
        elif isinstance(oid, bytes):
            if len(oid) != 12:
                raise InvalidId(f"an ObjectId needs 12 bytes, got {len(oid)}")
            self._id = oid
        elif isinstance(oid, str):
            if len(oid) != 24 or not _HEX_DIGITS.issuperset(oid):
                raise InvalidId(f"{oid!r} is not a 24-character hex string")
            self._id = bytes.fromhex(oid)
        else:
            raise InvalidId(
                f"an ObjectId is made from 12 bytes or 24 hex characters, not {type(oid).__name__}"
            )

    @classmethod
    def _from_bytes(cls, data: bytes) -> ObjectId:
        """Build from exactly 12 bytes without validation (the decoder's fast path)."""
        new = object.__new__(cls)
        new._id = data
        return new

    @classmethod
    def from_parts(cls, seconds: int, random5: bytes, counter: int) -> ObjectId:
        """Build an id deterministically from its three parts."""
        if len(random5) != 5:
            raise InvalidId("the random part of an ObjectId is 5 bytes")
        return cls(
            _PACK_TIME.pack(seconds & 0xFFFFFFFF) + random5 + (counter & _COUNTER_LIMIT).to_bytes(3, "big")
        )

    @classmethod
    def from_datetime(cls, when: datetime.datetime) -> ObjectId:
        """The smallest id generated at ``when`` (for range queries on _id)."""
        if when.utcoffset() is not None:
            when = when - when.utcoffset()  # type: ignore[operator]
        seconds = int(when.replace(tzinfo=_UTC).timestamp())
        return cls(_PACK_TIME.pack(seconds & 0xFFFFFFFF) + b"\x00" * 8)

    @classmethod
    def is_valid(cls, oid: Any) -> bool:
        try:
            cls(oid)
        except (InvalidId, TypeError):
            return False
        return True

    @property
    def binary(self) -> bytes:
        return self._id

    @property
    def generation_time(self) -> datetime.datetime:
        seconds = _PACK_TIME.unpack_from(self._id)[0]
        return datetime.datetime.fromtimestamp(seconds, _UTC)

    def __str__(self) -> str:
        return binascii.hexlify(self._id).decode("ascii")

    def __repr__(self) -> str:
        return f"ObjectId('{self}')"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ObjectId, (self._id,))

    def __eq__(self, other: object) -> bool:
        if type(other) is ObjectId:
            return self._id == other._id
        if isinstance(other, ObjectId):  # a subclass, or PyMongo's
            return self._id == other.binary
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if type(other) is ObjectId:
            return self._id != other._id
        if isinstance(other, ObjectId):  # a subclass, or PyMongo's
            return self._id != other.binary
        return NotImplemented

    def __lt__(self, other: ObjectId) -> bool:
        if type(other) is ObjectId:
            return self._id < other._id
        if isinstance(other, ObjectId):  # a subclass, or PyMongo's
            return self._id < other.binary
        return NotImplemented

    def __le__(self, other: ObjectId) -> bool:
        if type(other) is ObjectId:
            return self._id <= other._id
        if isinstance(other, ObjectId):  # a subclass, or PyMongo's
            return self._id <= other.binary
        return NotImplemented

    def __gt__(self, other: ObjectId) -> bool:
        if type(other) is ObjectId:
            return self._id > other._id
        if isinstance(other, ObjectId):  # a subclass, or PyMongo's
            return self._id > other.binary
        return NotImplemented

    def __ge__(self, other: ObjectId) -> bool:
        if type(other) is ObjectId:
            return self._id >= other._id
        if isinstance(other, ObjectId):  # a subclass, or PyMongo's
            return self._id >= other.binary
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._id)
