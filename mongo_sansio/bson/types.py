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

from mongo_sansio.bson._twins import pymongo_marker
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
    """An integer stored as BSON int64 even when it would fit in an int32.

    Prints as the number (``str(Int64(42)) == "42"``, f-strings too), as PyMongo's does;
    its repr is ``Int64(42)``.
    """

    __slots__ = ()

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 18

    def __repr__(self) -> str:
        return f"Int64({int(self)})"

    __str__ = int.__repr__


class Timestamp:
    """The internal MongoDB timestamp: (seconds, increment), both unsigned 32-bit.

    Equal to, ordered with and hashed like PyMongo's ``bson.Timestamp`` of the same parts.
    """

    __slots__ = ("time", "inc")

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 17

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

    @staticmethod
    def _other_key(other: object) -> tuple[int, int] | None:
        """The (time, inc) of ours or of PyMongo's Timestamp ``other``; None for others."""
        if isinstance(other, Timestamp) or pymongo_marker(type(other)) == 17:
            return (other.time, other.inc)  # type: ignore[attr-defined]
        return None

    def __eq__(self, other: object) -> bool:
        key = self._other_key(other)
        return NotImplemented if key is None else self._key() == key

    def __ne__(self, other: object) -> bool:
        key = self._other_key(other)
        return NotImplemented if key is None else self._key() != key

    def __lt__(self, other: Timestamp) -> bool:
        key = self._other_key(other)
        return NotImplemented if key is None else self._key() < key

    def __le__(self, other: Timestamp) -> bool:
        key = self._other_key(other)
        return NotImplemented if key is None else self._key() <= key

    def __gt__(self, other: Timestamp) -> bool:
        key = self._other_key(other)
        return NotImplemented if key is None else self._key() > key

    def __ge__(self, other: Timestamp) -> bool:
        key = self._other_key(other)
        return NotImplemented if key is None else self._key() >= key

    def __hash__(self) -> int:
        return hash(self.time) ^ hash(self.inc)  # PyMongo's hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (Timestamp, (self.time, self.inc))

    def __repr__(self) -> str:
        return f"Timestamp({self.time}, {self.inc})"


class Binary(bytes):
    """Binary data with a subtype (0-255).  Plain ``bytes`` is binary subtype 0.

    Equal to and hashed like PyMongo's ``bson.Binary`` of the same subtype and bytes (PyMongo's
    own ``__eq__`` answers False for ours: ``theirs == ours`` does not hold).
    """

    subtype: int

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 5

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
        if isinstance(other, Binary) or (
            isinstance(other, bytes) and pymongo_marker(type(other)) == 5
        ):
            return self.subtype == other.subtype and bytes.__eq__(self, other)  # type: ignore[attr-defined]
        # plain bytes is subtype 0, so it equals a subtype-0 Binary holding the same data
        if isinstance(other, bytes):
            return self.subtype == BINARY_SUBTYPE and bytes.__eq__(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return bytes.__hash__(self) ^ hash(self.subtype)  # PyMongo's hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (Binary, (bytes(self), self.subtype))

    def __repr__(self) -> str:
        return f"Binary({bytes(self)!r}, {self.subtype})"


_RE_FLAG_LETTERS = {"i": 2, "l": 4, "m": 8, "s": 16, "u": 32, "x": 64}  # re's bits


def _options_of(flags: int) -> str:
    return "".join(letter for letter, bit in _RE_FLAG_LETTERS.items() if flags & bit)


class Regex:
    """A BSON regular expression: a pattern and its option letters.

    ``options`` keeps the letters exactly as given or decoded (a decode-encode round trip
    keeps the bytes); ``flags`` is their ``re`` bits as an int, as PyMongo's ``Regex.flags``
    is (``re.IGNORECASE`` for ``i``; letters ``re`` has no bit for are left out).  Given int
    flags become letters.  Equal to PyMongo's ``bson.Regex`` of the same pattern and flags,
    both ways.
    """

    __slots__ = ("pattern", "options")

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 11

    pattern: str
    options: str

    def __init__(self, pattern: str, flags: str | int = "") -> None:
        if not isinstance(pattern, str):
            raise TypeError("a Regex pattern is a str")
        if isinstance(flags, int):
            flags = _options_of(flags)
        if not isinstance(flags, str):
            raise TypeError("Regex flags are a str of option letters or re flags")
        object.__setattr__(self, "pattern", pattern)
        object.__setattr__(self, "options", flags)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Regex is immutable")

    @property
    def flags(self) -> int:
        """The options as ``re`` flag bits (PyMongo's ``Regex.flags``)."""
        bits = 0
        for letter in self.options:
            bits |= _RE_FLAG_LETTERS.get(letter, 0)
        return bits

    @classmethod
    def from_native(cls, regex: Any) -> Regex:
        """From a compiled ``re.Pattern`` (its flags become option letters)."""
        import re

        if not isinstance(regex, re.Pattern):
            raise TypeError("from_native needs a compiled re.Pattern")
        if not isinstance(regex.pattern, str):
            raise TypeError("only str patterns can be stored in BSON")
        return cls(regex.pattern, _options_of(regex.flags))

    def try_compile(self) -> Any:
        """Compile with Python's ``re``; BSON patterns are not always valid Python patterns."""
        import re

        flags = 0
        for letter, flag in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)):
            if letter in self.options:
                flags |= flag
        return re.compile(self.pattern, flags)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Regex):
            return self.pattern == other.pattern and self.options == other.options
        if pymongo_marker(type(other)) == 11:  # PyMongo's: int flags
            theirs: Any = other
            return bool(self.pattern == theirs.pattern and self.flags == theirs.flags)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(("Regex", self.pattern, self.options))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Regex, (self.pattern, self.options))

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r}, {self.options!r})"


class Code(str):
    """JavaScript code, optionally with a scope document (the deprecated code-with-scope type).

    Equal to PyMongo's ``bson.Code`` of the same code and scope (PyMongo's own ``__eq__``
    answers False for ours).
    """

    scope: Mapping[str, Any] | None

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 13

    def __new__(cls, code: str, scope: Mapping[str, Any] | None = None) -> Code:
        if not isinstance(code, str):
            raise TypeError("Code holds a str")
        if scope is not None and not isinstance(scope, Mapping):
            raise TypeError("a Code scope is a mapping or None")
        self = str.__new__(cls, code)
        self.scope = scope
        return self

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Code) or (isinstance(other, str) and pymongo_marker(type(other)) == 13):
            return str.__eq__(self, other) and self.scope == other.scope  # type: ignore[attr-defined]
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
    """Base of the valueless types: every instance equals every other of the same class (and
    PyMongo's MinKey/MaxKey equal ours, which hash like them)."""

    __slots__ = ()
    _order = 0
    _type_marker: int | None = None

    def _same(self, other: object) -> bool:
        return type(other) is type(self) or (
            self._type_marker is not None and pymongo_marker(type(other)) == self._type_marker
        )

    def __eq__(self, other: object) -> bool:
        return self._same(other)

    def __ne__(self, other: object) -> bool:
        return not self._same(other)

    def __hash__(self) -> int:
        if self._type_marker is not None:
            return hash(self._type_marker)  # PyMongo's hash
        return hash(type(self).__name__)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ())

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class MinKey(_Singleton):
    """Compares below every other BSON value."""

    __slots__ = ()
    _type_marker = 255

    def __lt__(self, other: object) -> bool:
        return not self._same(other)

    def __le__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return False

    def __ge__(self, other: object) -> bool:
        return self._same(other)


class MaxKey(_Singleton):
    """Compares above every other BSON value."""

    __slots__ = ()
    _type_marker = 127

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return self._same(other)

    def __gt__(self, other: object) -> bool:
        return not self._same(other)

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
    Encoded as ``{"$ref": ..., "$id": ..., "$db": ..., **extra}``.  Equal to and hashed like
    PyMongo's ``bson.DBRef`` of the same fields, both ways.
    """

    __slots__ = ("collection", "id", "database", "extra")

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 100

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
        if pymongo_marker(type(other)) == 100:  # PyMongo's: its fields, in any order
            theirs: Any = other
            return bool(self.as_doc() == theirs.as_doc())
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        try:  # PyMongo's hash
            return hash(
                (self.collection, self.id, self.database, tuple(sorted(self.extra.items())))
            )
        except TypeError:  # an unhashable id or extra field (PyMongo's raises)
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

    #: PyMongo's marker for the type (its json_util and encoder dispatch on it)
    _type_marker = 9

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
        if pymongo_marker(type(other)) == 9:  # PyMongo's bson.DatetimeMS
            theirs: Any = other
            return self._value == int(theirs)
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
        return hash(self._value)  # PyMongo's hash

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
