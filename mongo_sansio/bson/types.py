"""Python value classes for the BSON types that have no natural builtin counterpart.

Builtins map directly: float <-> double, str <-> string, dict <-> document, list <-> array,
bytes <-> binary subtype 0, bool, None, int <-> int32 or int64 (by size), datetime <-> UTC
datetime.  Everything else has a class here; deprecated types (DBPointer, Symbol, Undefined,
code with scope) keep their own classes so a decode-encode round trip never changes bytes.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson.codec_options import UuidRepresentation
from mongo_sansio.bson.errors import InvalidDocument
from mongo_sansio.bson.objectid import ObjectId

__all__ = [
    "Int64",
    "Timestamp",
    "Binary",
    "Regex",
    "Code",
    "MinKey",
    "MaxKey",
    "DBRef",
    "DBPointer",
    "Symbol",
    "Undefined",
    "DatetimeMS",
    "BINARY_SUBTYPE",
    "OLD_BINARY_SUBTYPE",
    "OLD_UUID_SUBTYPE",
    "UUID_SUBTYPE",
    "VECTOR_SUBTYPE",
]

BINARY_SUBTYPE = 0
OLD_BINARY_SUBTYPE = 2
OLD_UUID_SUBTYPE = 3
UUID_SUBTYPE = 4
VECTOR_SUBTYPE = 9

_UINT32_MAX = 0xFFFFFFFF
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class Int64(int):
    """An integer stored as BSON int64 even when it would fit in an int32."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Int64({int(self)})"


class Timestamp:
    """The internal MongoDB timestamp: (seconds, increment), both unsigned 32-bit."""

    __slots__ = ("time", "inc")

    time: int
    inc: int

    def __init__(self, time: int | datetime.datetime, inc: int) -> None:
        if isinstance(time, datetime.datetime):
            offset = time.utcoffset()
            if offset is not None:
                time = time - offset
            time = int(time.replace(tzinfo=datetime.UTC).timestamp())
        if not isinstance(time, int) or not isinstance(inc, int):
            raise TypeError("Timestamp time and inc must be integers")
        if not 0 <= time <= _UINT32_MAX or not 0 <= inc <= _UINT32_MAX:
            raise ValueError("Timestamp time and inc must fit in an unsigned 32-bit integer")
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "inc", inc)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Timestamp is immutable")

    def as_datetime(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.time, datetime.UTC)

    def _key(self) -> tuple[int, int]:
        return (self.time, self.inc)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Timestamp):
            return self._key() == other._key()
        return NotImplemented

    def __lt__(self, other: Timestamp) -> bool:
        if isinstance(other, Timestamp):
            return self._key() < other._key()
        return NotImplemented

    def __le__(self, other: Timestamp) -> bool:
        if isinstance(other, Timestamp):
            return self._key() <= other._key()
        return NotImplemented

    def __gt__(self, other: Timestamp) -> bool:
        if isinstance(other, Timestamp):
            return self._key() > other._key()
        return NotImplemented

    def __ge__(self, other: Timestamp) -> bool:
        if isinstance(other, Timestamp):
            return self._key() >= other._key()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("Timestamp", self.time, self.inc))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Timestamp, (self.time, self.inc))

    def __repr__(self) -> str:
        return f"Timestamp({self.time}, {self.inc})"


class Binary(bytes):
    """Binary data with a subtype (0-255).  Plain ``bytes`` is binary subtype 0."""

    subtype: int

    def __new__(cls, data: bytes | bytearray | memoryview, subtype: int = BINARY_SUBTYPE) -> Binary:
        if not isinstance(subtype, int) or not 0 <= subtype <= 255:
            raise ValueError("a binary subtype is an integer from 0 to 255")
        self = bytes.__new__(cls, data)
        self.subtype = subtype
        return self

    @classmethod
    def from_uuid(
        cls,
        value: uuid.UUID,
        uuid_representation: UuidRepresentation = UuidRepresentation.STANDARD,
    ) -> Binary:
        """Store ``value`` in the given UUID representation (the UUID spec's byte orders)."""
        if not isinstance(value, uuid.UUID):
            raise TypeError("from_uuid needs a uuid.UUID")
        rep = UuidRepresentation(uuid_representation)
        if rep == UuidRepresentation.UNSPECIFIED:
            raise InvalidDocument(
                "cannot encode a uuid.UUID with uuid_representation UNSPECIFIED; "
                "choose a representation or use Binary.from_uuid"
            )
        if rep == UuidRepresentation.STANDARD:
            return cls(value.bytes, UUID_SUBTYPE)
        if rep == UuidRepresentation.PYTHON_LEGACY:
            return cls(value.bytes, OLD_UUID_SUBTYPE)
        if rep == UuidRepresentation.JAVA_LEGACY:
            raw = value.bytes
            return cls(raw[7::-1] + raw[:7:-1], OLD_UUID_SUBTYPE)
        return cls(value.bytes_le, OLD_UUID_SUBTYPE)

    def as_uuid(
        self, uuid_representation: UuidRepresentation = UuidRepresentation.STANDARD
    ) -> uuid.UUID:
        """Read this binary as a UUID in the given representation."""
        rep = UuidRepresentation(uuid_representation)
        if rep == UuidRepresentation.UNSPECIFIED:
            raise ValueError("cannot read a UUID with uuid_representation UNSPECIFIED")
        expected = UUID_SUBTYPE if rep == UuidRepresentation.STANDARD else OLD_UUID_SUBTYPE
        if self.subtype != expected or len(self) != 16:
            raise ValueError(
                f"binary subtype {self.subtype} of length {len(self)} is not a UUID in "
                f"representation {rep.name}"
            )
        raw = bytes(self)
        if rep == UuidRepresentation.JAVA_LEGACY:
            return uuid.UUID(bytes=raw[7::-1] + raw[:7:-1])
        if rep == UuidRepresentation.CSHARP_LEGACY:
            return uuid.UUID(bytes_le=raw)
        return uuid.UUID(bytes=raw)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Binary):
            return self.subtype == other.subtype and bytes.__eq__(self, other)
        # plain bytes is subtype 0, so it equals a subtype-0 Binary holding the same data
        if isinstance(other, bytes):
            return self.subtype == BINARY_SUBTYPE and bytes.__eq__(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((bytes(self), self.subtype))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Binary, (bytes(self), self.subtype))

    def __repr__(self) -> str:
        return f"Binary({bytes(self)!r}, {self.subtype})"


_RE_FLAG_LETTERS = {"i": 2, "l": 4, "m": 8, "s": 16, "u": 32, "x": 64}


class Regex:
    """A BSON regular expression: a pattern and its option letters, kept exactly as given."""

    __slots__ = ("pattern", "flags")

    pattern: str
    flags: str

    def __init__(self, pattern: str, flags: str | int = "") -> None:
        if not isinstance(pattern, str):
            raise TypeError("a Regex pattern is a str")
        if isinstance(flags, int):
            flags = "".join(ch for ch, bit in sorted(_RE_FLAG_LETTERS.items()) if flags & bit)
        if not isinstance(flags, str):
            raise TypeError("Regex flags are a str of option letters or re flags")
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "flags", flags)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Regex is immutable")

    @classmethod
    def from_native(cls, regex: Any) -> Regex:
        """From a compiled ``re.Pattern`` (its flags become option letters)."""
        import re

        if not isinstance(regex, re.Pattern):
            raise TypeError("from_native needs a compiled re.Pattern")
        if not isinstance(regex.pattern, str):
            raise TypeError("only str patterns can be stored in BSON")
        letters = ""
        for letter, flag in (("i", re.I), ("l", re.L), ("m", re.M), ("s", re.S), ("u", re.U), ("x", re.X)):
            if regex.flags & flag:
                letters += letter
        return cls(regex.pattern, letters)

    def try_compile(self) -> Any:
        """Compile with Python's ``re``; BSON patterns are not always valid Python patterns."""
        import re

        flags = 0
        for letter, flag in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)):
            if letter in self.flags:
                flags |= flag
        return re.compile(self.pattern, flags)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Regex):
            return self.pattern == other.pattern and self.flags == other.flags
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("Regex", self.pattern, self.flags))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Regex, (self.pattern, self.flags))

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r}, {self.flags!r})"


class Code(str):
    """JavaScript code, optionally with a scope document (the deprecated code-with-scope type)."""

    scope: Mapping[str, Any] | None

    def __new__(cls, code: str, scope: Mapping[str, Any] | None = None) -> Code:
        if not isinstance(code, str):
            raise TypeError("Code holds a str")
        if scope is not None and not isinstance(scope, Mapping):
            raise TypeError("a Code scope is a mapping or None")
        self = str.__new__(cls, code)
        self.scope = scope
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Code):
            return str.__eq__(self, other) and self.scope == other.scope
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((str(self), "Code"))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Code, (str(self), self.scope))

    def __repr__(self) -> str:
        return f"Code({str(self)!r}, {self.scope!r})"


class Symbol(str):
    """The deprecated BSON symbol type; behaves as a str but keeps its type."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Symbol):
            return str.__eq__(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash((str(self), "Symbol"))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Symbol, (str(self),))

    def __repr__(self) -> str:
        return f"Symbol({str(self)!r})"


class _Singleton:
    """Base of the valueless types: every instance equals every other of the same class."""

    __slots__ = ()
    _order = 0

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __ne__(self, other: object) -> bool:
        return type(other) is not type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ())

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class MinKey(_Singleton):
    """Compares below every other BSON value."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return not isinstance(other, MinKey)

    def __le__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return False

    def __ge__(self, other: object) -> bool:
        return isinstance(other, MinKey)


class MaxKey(_Singleton):
    """Compares above every other BSON value."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return isinstance(other, MaxKey)

    def __gt__(self, other: object) -> bool:
        return not isinstance(other, MaxKey)

    def __ge__(self, other: object) -> bool:
        return True


class Undefined(_Singleton):
    """The deprecated BSON undefined value."""

    __slots__ = ()


class DBPointer:
    """The deprecated DBPointer type: a namespace string and an ObjectId."""

    __slots__ = ("namespace", "id")

    namespace: str
    id: ObjectId

    def __init__(self, namespace: str, id: ObjectId) -> None:  # noqa: A002 - spec's name
        if not isinstance(namespace, str) or not isinstance(id, ObjectId):
            raise TypeError("DBPointer needs a str namespace and an ObjectId")
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "id", id)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("DBPointer is immutable")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DBPointer):
            return self.namespace == other.namespace and self.id == other.id
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("DBPointer", self.namespace, self.id))

    def __reduce__(self) -> tuple[Any, ...]:
        return (DBPointer, (self.namespace, self.id))

    def __repr__(self) -> str:
        return f"DBPointer({self.namespace!r}, {self.id!r})"


class DBRef:
    """A reference to a document by collection, id and optionally database (the DBRef spec).

    Extra fields beyond ``$ref``, ``$id`` and ``$db`` are kept in order in :attr:`extra`.
    Encoded as ``{"$ref": ..., "$id": ..., "$db": ..., **extra}``.
    """

    __slots__ = ("collection", "id", "database", "extra")

    collection: str
    id: Any
    database: str | None
    extra: dict[str, Any]

    def __init__(
        self, collection: str, id: Any, database: str | None = None, **extra: Any  # noqa: A002
    ) -> None:
        if not isinstance(collection, str):
            raise TypeError("a DBRef collection is a str")
        if database is not None and not isinstance(database, str):
            raise TypeError("a DBRef database is a str or None")
        object.__setattr__(self, "collection", collection)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "database", database)
        object.__setattr__(self, "extra", extra)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("DBRef is immutable")

    def as_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"$ref": self.collection, "$id": self.id}
        if self.database is not None:
            doc["$db"] = self.database
        doc.update(self.extra)
        return doc

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DBRef):
            return self.as_doc() == other.as_doc() and list(self.extra) == list(other.extra)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("DBRef", self.collection, repr(self.id), self.database))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_dbref, (self.collection, self.id, self.database, self.extra))

    def __repr__(self) -> str:
        extra = "".join(f", {key}={value!r}" for key, value in self.extra.items())
        db = f", {self.database!r}" if self.database is not None else ""
        return f"DBRef({self.collection!r}, {self.id!r}{db}{extra})"


def _rebuild_dbref(collection: str, id: Any, database: str | None, extra: dict[str, Any]) -> DBRef:  # noqa: A002
    return DBRef(collection, id, database, **extra)


_EPOCH_AWARE = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
# the datetime range in milliseconds since the epoch (both ends inclusive)
DATETIME_MIN_MS = -62135596800000
DATETIME_MAX_MS = 253402300799999


class DatetimeMS:
    """A BSON UTC datetime as integer milliseconds since the Unix epoch.

    Unlike ``datetime.datetime`` it covers the whole signed 64-bit range, so values outside
    Python's years 1-9999 decode without error.
    """

    __slots__ = ("_value",)

    _value: int

    def __init__(self, value: int | datetime.datetime) -> None:
        if isinstance(value, datetime.datetime):
            value = datetime_to_ms(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError("DatetimeMS holds an int of milliseconds or a datetime")
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError("DatetimeMS must fit in a signed 64-bit integer")
        object.__setattr__(self, "_value", int(value))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("DatetimeMS is immutable")

    def __int__(self) -> int:
        return self._value

    def as_datetime(self, tzinfo: datetime.tzinfo | None = None) -> datetime.datetime:
        """The value as an aware UTC datetime (or in ``tzinfo``); ValueError when out of range."""
        if not DATETIME_MIN_MS <= self._value <= DATETIME_MAX_MS:
            raise ValueError(f"{self!r} is outside the range of datetime.datetime")
        when = _EPOCH_AWARE + datetime.timedelta(milliseconds=self._value)
        return when.astimezone(tzinfo) if tzinfo is not None else when

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DatetimeMS):
            return self._value == other._value
        return NotImplemented

    def __lt__(self, other: DatetimeMS) -> bool:
        if isinstance(other, DatetimeMS):
            return self._value < other._value
        return NotImplemented

    def __le__(self, other: DatetimeMS) -> bool:
        if isinstance(other, DatetimeMS):
            return self._value <= other._value
        return NotImplemented

    def __gt__(self, other: DatetimeMS) -> bool:
        if isinstance(other, DatetimeMS):
            return self._value > other._value
        return NotImplemented

    def __ge__(self, other: DatetimeMS) -> bool:
        if isinstance(other, DatetimeMS):
            return self._value >= other._value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("DatetimeMS", self._value))

    def __reduce__(self) -> tuple[Any, ...]:
        return (DatetimeMS, (self._value,))

    def __repr__(self) -> str:
        return f"DatetimeMS({self._value})"


def datetime_to_ms(value: datetime.datetime) -> int:
    """Milliseconds since the epoch; naive datetimes are taken as UTC; sub-ms is truncated."""
    offset = value.utcoffset()
    if offset is not None:
        value = value - offset
    delta = value.replace(tzinfo=None) - datetime.datetime(1970, 1, 1)
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
