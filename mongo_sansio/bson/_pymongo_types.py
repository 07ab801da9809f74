"""PyMongo's ``bson`` values in and out of our codec.

Code moved over from PyMongo keeps doing ``from bson import ObjectId`` and hands those values to
us, and may expect them back.  PyMongo's ``bson`` package is never our dependency: this module
imports it only when a value of one of its classes is already in hand (encoding), or when
``CodecOptions(pymongo_types=True)`` asks for its classes (decoding).

Encoding.  The encoder's fast paths look values up by exact type, so PyMongo's classes reach
its slow path, which asks :func:`to_ours_converter` (once per class; any class defined in a
``bson.*`` module, or deriving from one) how to turn such a value into ours first:

============================== ======================================================
PyMongo class                  encoded as
============================== ======================================================
ObjectId, Int64, Decimal128    our ObjectId, Int64 (always int64), Decimal128
Regex                          our Regex (int flags become option letters)
Binary                         our Binary with the same subtype (not plain bytes)
Timestamp, MinKey, MaxKey      ours
Code                           our Code, with its scope when it has one
DBRef                          its ``as_doc()`` document, as PyMongo encodes it
DatetimeMS                     our DatetimeMS
RawBSONDocument                its bytes, copied unchanged
SON                            (a dict subclass: encoded as any mapping, in order)
============================== ======================================================

Decoding.  With ``pymongo_types=True`` the decoder decodes as usual and :func:`to_pymongo`
then replaces our values by what PyMongo's ``bson.decode`` gives for the same bytes: every
int64 (an Int64 from our decoder too) becomes ``bson.Int64`` (int32 stays ``int``), ObjectId, Decimal128, Regex, Binary
(subtypes other than 0; UUIDs follow ``uuid_representation`` as before), Timestamp,
MinKey/MaxKey, Code and DBRef become PyMongo's, a DBPointer becomes a ``bson.DBRef``, a Symbol
a ``str`` and Undefined ``None``; DatetimeMS (a date outside datetime's range, or asked for)
becomes ``bson.DatetimeMS``.  Documents are converted in place, with an explicit stack (no
recursion but for the rare code scopes and DBRef ids).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, MutableMapping
from typing import Any, Final

from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.errors import InvalidDocument
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.raw import RawDocument
from mongo_sansio.bson.types import (
    Binary,
    Code,
    DatetimeMS,
    DBPointer,
    DBRef,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)
from mongo_sansio.errors import ConfigurationError

__all__ = [
    "to_ours_converter",
    "to_pymongo",
    "require_pymongo_bson",
    "pymongo_bson_loaded",
    "pymongo_object_id",
]

_Convert = Callable[[Any], Any]
_TO_OURS: dict[type, _Convert] = {}
_TO_PYMONGO: dict[type, _Convert] = {}


#: what tells PyMongo's ``bson`` package from another of that name
_NEEDED: Final = ("ObjectId", "Int64", "Decimal128", "Regex", "Binary", "Timestamp", "Code", "DBRef")


def _pymongo_bson() -> Any:
    """PyMongo's ``bson`` package, or None when it is absent (or another package of that name)."""
    try:
        import bson
        import bson.raw_bson  # noqa: F401 - checked here, used by _build_to_ours
    except ImportError:
        return None
    if not all(hasattr(bson, name) for name in _NEEDED):
        return None
    return bson


def pymongo_bson_loaded() -> bool:
    """Whether PyMongo's ``bson`` package is imported already (this never imports it): the
    clients' ``pymongo_types=None`` decodes into its classes then."""
    module = sys.modules.get("bson")
    return module is not None and all(hasattr(module, name) for name in _NEEDED)


def pymongo_object_id() -> Callable[[], Any]:
    """PyMongo's ``bson.ObjectId`` class: what makes the ``_id`` of a document inserted
    without one when values are PyMongo's (ConfigurationError without PyMongo)."""
    bson = _pymongo_bson()
    if bson is None:
        require_pymongo_bson()
    return bson.ObjectId  # type: ignore[no-any-return]


def require_pymongo_bson() -> None:
    """Raise ConfigurationError unless PyMongo's ``bson`` package can be imported."""
    if _pymongo_bson() is None:
        raise ConfigurationError(
            "CodecOptions(pymongo_types=True) needs PyMongo's bson package, which is not "
            "installed (pip install pymongo)"
        )


# --- encoding: PyMongo's values to ours -------------------------------------------------------


def _regex(value: Any) -> Regex:
    pattern = value.pattern
    if isinstance(pattern, bytes):
        try:
            pattern = pattern.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidDocument(
                f"regular expression pattern is not UTF-8 ({exc.reason})"
            ) from None
    return Regex(pattern, value.flags)


def _build_to_ours(bson: Any) -> None:
    from bson.raw_bson import RawBSONDocument

    _TO_OURS.update(
        {
            bson.ObjectId: lambda value: ObjectId(value.binary),
            bson.Int64: lambda value: Int64(int(value)),
            bson.Decimal128: lambda value: Decimal128.from_bid(value.bid),
            bson.Regex: _regex,
            bson.Binary: lambda value: Binary(bytes(value), value.subtype),
            bson.Timestamp: lambda value: Timestamp(value.time, value.inc),
            bson.MinKey: lambda value: MinKey(),
            bson.MaxKey: lambda value: MaxKey(),
            bson.Code: lambda value: Code(str(value), value.scope),
            bson.DBRef: lambda value: value.as_doc(),
            bson.DatetimeMS: lambda value: DatetimeMS(int(value)),
            RawBSONDocument: lambda value: RawDocument(value.raw),
        }
    )


def to_ours_converter(cls: type) -> _Convert | None:
    """How to turn a value of ``cls`` (one of PyMongo's bson classes, or a subclass of one)
    into a value our encoder knows; None when ``cls`` needs no conversion (SON) or is not
    PyMongo's."""
    if not _TO_OURS:
        bson = _pymongo_bson()
        if bson is None:
            return None
        _build_to_ours(bson)
    for base in cls.__mro__:
        convert = _TO_OURS.get(base)
        if convert is not None:
            return convert
    return None


# --- decoding: our values to PyMongo's --------------------------------------------------------


def _build_to_pymongo(bson: Any) -> None:
    def dbref(value: DBRef) -> Any:
        extra = {key: to_pymongo(item) for key, item in value.extra.items()}
        return bson.DBRef(value.collection, to_pymongo(value.id), value.database, _extra=extra)

    def code(value: Code) -> Any:
        return bson.Code(str(value), None if value.scope is None else to_pymongo(value.scope))

    _TO_PYMONGO.update(
        {
            ObjectId: lambda value: bson.ObjectId(value.binary),
            Int64: lambda value: bson.Int64(int(value)),
            Decimal128: lambda value: bson.Decimal128.from_bid(value.bid),
            Regex: lambda value: bson.Regex(value.pattern, value.flags),  # int flags
            Binary: lambda value: bson.Binary(bytes(value), value.subtype),
            Timestamp: lambda value: bson.Timestamp(value.time, value.inc),
            MinKey: lambda value: bson.MinKey(),
            MaxKey: lambda value: bson.MaxKey(),
            Code: code,
            DBRef: dbref,
            DBPointer: lambda value: bson.DBRef(value.namespace, bson.ObjectId(value.id.binary)),
            Symbol: str,
            Undefined: lambda value: None,
            DatetimeMS: lambda value: bson.DatetimeMS(int(value)),
        }
    )


def to_pymongo(value: Any) -> Any:
    """``value`` as our decoder gave it, with PyMongo's classes in place of ours (documents
    and arrays converted in place)."""
    if not _TO_PYMONGO:
        bson = _pymongo_bson()
        if bson is None:
            require_pymongo_bson()
        _build_to_pymongo(bson)
    table = _TO_PYMONGO
    holder = [value]
    pending: list[Any] = [holder]
    while pending:
        container = pending.pop()
        keys = range(len(container)) if type(container) is list else list(container)
        for key in keys:
            item = container[key]
            t = type(item)
            if t is dict or t is list or isinstance(item, MutableMapping):
                pending.append(item)
            else:
                convert = table.get(t)
                if convert is not None:
                    container[key] = convert(item)
    return holder[0]
