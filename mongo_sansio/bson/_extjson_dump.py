"""The Extended JSON writer: Python values in, JSON-ready values out (:func:`to_extjson_value`).

Inputs: any value the BSON encoder accepts (usually a document), whether to write canonical or
relaxed Extended JSON v2, optional :class:`CodecOptions` (``uuid_representation`` says how a
``uuid.UUID`` is stored -- STANDARD, binary subtype 4, when it is UNSPECIFIED --, and
``max_nesting_depth`` bounds nesting) and whether to sort document keys.

Outputs: plain ``dict``/``list``/``str``/``int``/``float``/``bool``/``None`` values, with
every BSON type written as its type wrapper (``{"$numberLong": "5"}``, ``{"$date": ...}``), in
the order the documents give their keys, ready for ``json.dumps``.  Canonical mode wraps every
number; relaxed mode writes int32, int64 and finite doubles as JSON numbers and datetimes of
the years 1970 to 9999 as ISO-8601 strings (milliseconds shown only when not zero, as the
BSON corpus spells them).  Regular expression options are written in alphabetical order.
Canonical doubles are Python's shortest round-trip text with an upper-case exponent and a
fractional part (``1.0E+300``), ``-0.0``, ``Infinity``, ``-Infinity`` and ``NaN``.

Errors: :class:`InvalidDocument` for values BSON cannot hold (integers outside int64, keys
that are not str or contain NUL, nesting deeper than ``max_nesting_depth``, a container that
contains itself) and :class:`UnencodableType` for Python types with no BSON counterpart; both
name the key path.  The walk keeps its own stack, so no input makes it recurse.
"""

from __future__ import annotations

import base64
import datetime
import math
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions, UuidRepresentation
from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.errors import InvalidDocument, UnencodableType
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.types import (
    DATETIME_MAX_MS,
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
    datetime_to_ms,
)
from mongo_sansio.bson.vector import BinaryVector

__all__ = ["to_extjson_value"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_EPOCH = datetime.datetime(1970, 1, 1)
_float_repr = float.__repr__


def double_text(value: float) -> str:
    """The ``$numberDouble`` string of ``value``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = _float_repr(value)
    mantissa, e, exponent = text.partition("e")
    if not e:
        return text
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{int(exponent):+d}"


def _int(value: int, canonical: bool) -> Any:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise InvalidDocument("integer out of int64 range")
    if not canonical:
        return int(value)
    if _INT32_MIN <= value <= _INT32_MAX:
        return {"$numberInt": str(int(value))}
    return {"$numberLong": str(int(value))}


def _int64(value: int, canonical: bool) -> Any:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise InvalidDocument("integer out of int64 range")
    return {"$numberLong": str(int(value))} if canonical else int(value)


def _float(value: float, canonical: bool) -> Any:
    if canonical or not math.isfinite(value):
        return {"$numberDouble": double_text(value)}
    return float(value)


def _binary(data: bytes, subtype: int) -> dict[str, Any]:
    return {
        "$binary": {"base64": base64.b64encode(data).decode("ascii"), "subType": f"{subtype:02x}"}
    }


def date_value(ms: int, canonical: bool) -> dict[str, Any]:
    """The ``$date`` wrapper of a UTC datetime given as milliseconds since the epoch."""
    if canonical or not 0 <= ms <= DATETIME_MAX_MS:
        return {"$date": {"$numberLong": str(ms)}}
    return {"$date": _iso(_EPOCH + datetime.timedelta(milliseconds=ms))}


def _iso(when: datetime.datetime) -> str:
    """A naive UTC datetime as RFC 3339 text: milliseconds (truncated) only when not zero."""
    if when.microsecond >= 1000:
        return when.isoformat(timespec="milliseconds") + "Z"
    return when.isoformat(timespec="seconds") + "Z"


def _datetime(value: datetime.datetime, canonical: bool) -> dict[str, Any]:
    if not canonical and value.tzinfo is None and value.year >= 1970:
        return {"$date": _iso(value)}  # the common case, without the trip through ms
    return date_value(datetime_to_ms(value), canonical)


def _regex(pattern: str, flags: str) -> dict[str, Any]:
    if "\x00" in pattern or "\x00" in flags:
        raise InvalidDocument("a regular expression must not contain a NUL character")
    return {"$regularExpression": {"pattern": pattern, "options": "".join(sorted(flags))}}


def _pattern(value: re.Pattern[Any]) -> dict[str, Any]:
    if not isinstance(value.pattern, str):
        raise InvalidDocument("only str regular expression patterns can be stored in BSON")
    regex = Regex.from_native(value)
    return _regex(regex.pattern, regex.options)


# exact type -> how a value of it is written: (value, canonical) -> JSON-ready value
# (subclasses take the first entry they are an instance of: Int64 before int, Binary before
# bytes)
_SCALARS: dict[type, Callable[[Any, bool], Any]] = {
    Int64: _int64,
    int: _int,
    float: _float,
    Symbol: lambda value, _: {"$symbol": str(value)},
    Binary: lambda value, _: _binary(value, value.subtype),
    bytes: lambda value, _: _binary(value, 0),
    bytearray: lambda value, _: _binary(bytes(value), 0),
    memoryview: lambda value, _: _binary(value.tobytes(), 0),
    BinaryVector: lambda value, _: _binary(value.to_binary(), 9),
    ObjectId: lambda value, _: {"$oid": str(value)},
    datetime.datetime: _datetime,
    DatetimeMS: lambda value, canonical: date_value(int(value), canonical),
    Regex: lambda value, _: _regex(value.pattern, value.options),
    re.Pattern: lambda value, _: _pattern(value),
    DBPointer: lambda value, _: {
        "$dbPointer": {"$ref": value.namespace, "$id": {"$oid": str(value.id)}}
    },
    Timestamp: lambda value, _: {"$timestamp": {"t": value.time, "i": value.inc}},
    Decimal128: lambda value, _: {"$numberDecimal": str(value)},
    MinKey: lambda value, _: {"$minKey": 1},
    MaxKey: lambda value, _: {"$maxKey": 1},
    Undefined: lambda value, _: {"$undefined": True},
}

_RAW: list[type] = []

# class -> how to make its values ours (PyMongo's bson classes), or None for any other class;
# filled as classes are met (PyMongo's bson is never imported here)
_PYMONGO: dict[type, Callable[[Any], Any] | None] = {}


def _ours(value: Any) -> Any:
    """PyMongo's bson value (``bson.ObjectId``, ``bson.Code``... as a client in PyMongo's
    values mode returns them) as ours; any other value unchanged."""
    cls = type(value)
    try:
        convert = _PYMONGO[cls]
    except KeyError:
        convert = None
        if any(base.__module__.partition(".")[0] == "bson" for base in cls.__mro__):
            from mongo_sansio.bson._pymongo_types import to_ours_converter  # late: rare

            convert = to_ours_converter(cls)
        if len(_PYMONGO) >= 256:
            _PYMONGO.clear()
        _PYMONGO[cls] = convert
    return value if convert is None else convert(value)


def _raw_array() -> type:
    if not _RAW:
        from mongo_sansio.bson.raw import RawArray  # late: raw imports the decoder

        _RAW.append(RawArray)
    return _RAW[0]


def _scalar(value: Any, canonical: bool, uuid_rep: UuidRepresentation) -> Any:
    """A value that is not a container, written for JSON; UnencodableType if it has no BSON."""
    write = _SCALARS.get(type(value))
    if write is not None:
        return write(value, canonical)
    if isinstance(value, Code):  # (with a scope it is a container: never here)
        return {"$code": str(value)}
    if isinstance(value, uuid.UUID):
        binary = Binary.from_uuid(value, uuid_rep)
        return _binary(binary, binary.subtype)
    for cls, write in _SCALARS.items():  # other subclasses: the first class they belong to
        if isinstance(value, cls):
            return write(value, canonical)
    if isinstance(value, str):
        return str(value)
    name = type(value).__qualname__
    if type(value).__module__ != "builtins":
        name = f"{type(value).__module__}.{name}"
    raise UnencodableType(f"cannot encode an object of type {name}")


def _check_key(key: Any) -> None:
    if not isinstance(key, str):
        raise InvalidDocument(f"document keys must be str, not {type(key).__name__}")
    if "\x00" in key:
        raise InvalidDocument("document keys must not contain a NUL character")


def _items(value: Mapping[Any, Any], sort_keys: bool) -> Iterator[tuple[Any, Any]]:
    if not sort_keys:
        return iter(value.items())
    for key in value:
        _check_key(key)
    return iter(sorted(value.items(), key=lambda item: item[0]))


# A frame of the walk: (the container's items, where its output goes, is it an array, the
# source object (its id marks it as being walked: a cycle), the key it has in its parent).
_Frame = tuple[Iterator[tuple[Any, Any]], Any, bool, Any, Any]


def _open(value: Any, sort_keys: bool) -> tuple[Any, Any, Iterator[tuple[Any, Any]], bool] | None:
    """If ``value`` is a container: (JSON for it, the part its items go to, its items, is it
    an array).  None for everything else."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        return out, out, _items(value, sort_keys), False
    if isinstance(value, list | tuple) or isinstance(value, _raw_array()):
        array: list[Any] = []
        return array, array, enumerate(cast(Iterable[Any], value)), True
    if isinstance(value, DBRef):
        out = {}
        return out, out, iter(value.as_doc().items()), False
    if isinstance(value, Code) and value.scope is not None:
        scope: dict[str, Any] = {}
        return {"$code": str(value), "$scope": scope}, scope, _items(value.scope, sort_keys), False
    return None


def to_extjson_value(
    obj: Any,
    mode: str = "relaxed",
    *,
    codec_options: CodecOptions | None = None,
    sort_keys: bool = False,
) -> Any:
    """``obj`` as the JSON-ready value of its Extended JSON (``mode`` "relaxed" or "canonical")."""
    if mode == "canonical":
        canonical = True
    elif mode == "relaxed":
        canonical = False
    else:
        raise ValueError(f"Extended JSON mode must be 'relaxed' or 'canonical', not {mode!r}")
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    uuid_rep = opts.uuid_representation
    if uuid_rep == UuidRepresentation.UNSPECIFIED:
        uuid_rep = UuidRepresentation.STANDARD
    max_depth = opts.max_nesting_depth

    t = type(obj)
    if t is str or t is bool or obj is None:
        return obj
    obj = _ours(obj)
    opened = _open(obj, sort_keys)
    if opened is None:
        return _scalar(obj, canonical, uuid_rep)
    result, out, items, is_array = opened
    stack: list[_Frame] = [(items, out, is_array, obj, None)]
    walking = {id(obj)}
    key: Any = None
    scalars_get = _SCALARS.get
    try:
        while stack:
            items, out, is_array, _, _ = stack[-1]
            put = out.append if is_array else None
            for key, value in items:
                if put is None:
                    if type(key) is not str or "\x00" in key:
                        _check_key(key)
                t = type(value)
                if t is str or t is bool or value is None:
                    converted = value
                elif t is int:
                    if canonical or not _INT64_MIN <= value <= _INT64_MAX:
                        converted = _int(value, canonical)
                    else:
                        converted = value
                elif t is float:
                    if canonical or value - value != 0.0:  # (inf - inf and nan - nan are nan)
                        converted = _float(value, canonical)
                    else:
                        converted = value
                elif (write := scalars_get(t)) is not None:
                    converted = write(value, canonical)
                else:
                    if t is dict and not sort_keys:
                        child: dict[str, Any] = {}
                        opened = (child, child, iter(value.items()), False)
                    elif t is list:
                        array: list[Any] = []
                        opened = (array, array, enumerate(value), True)
                    else:
                        value = _ours(value)
                        opened = _open(value, sort_keys)
                    if opened is None:
                        converted = _scalar(value, canonical, uuid_rep)
                    else:
                        if id(value) in walking:
                            raise InvalidDocument("a container contains itself (a cycle)")
                        if len(stack) >= max_depth:
                            raise InvalidDocument(
                                f"document nested deeper than max_nesting_depth {max_depth}"
                            )
                        wrapped, child_out, child_items, child_is_array = opened
                        if put is None:
                            out[key] = wrapped
                        else:
                            put(wrapped)
                        stack.append((child_items, child_out, child_is_array, value, key))
                        walking.add(id(value))
                        break
                if put is None:
                    out[key] = converted
                else:
                    put(converted)
            else:
                walking.discard(id(stack.pop()[3]))
    except InvalidDocument as exc:
        path = ".".join(str(frame[4]) for frame in stack[1:])
        path = f"{path}.{key}" if path else str(key)
        raise type(exc)(exc.reason, path) from None
    return result
