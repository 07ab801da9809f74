"""The Extended JSON reader: JSON text in, Python values out (:func:`loads`).

Inputs: Extended JSON text as ``str``, ``bytes``, ``bytearray`` or ``memoryview`` (the bytes
forms must be UTF-8), and optional :class:`CodecOptions` (``document_class``, ``tz_aware``,
``tzinfo``, ``datetime_conversion``, ``uuid_representation`` and ``max_nesting_depth`` apply,
as they do to :func:`mongo_sansio.bson.decode`).  :func:`from_extjson_value` takes JSON that
is already parsed (dicts, lists, str, int, float, bool, None) instead of text.

Outputs: the value the text describes, with the types the BSON decoder would give for the same
BSON: ``$numberInt`` -> int, ``$numberLong`` -> Int64, ``$numberDouble`` -> float, ``$date`` ->
datetime (DatetimeMS out of range), ``$binary`` subtype 0 -> bytes, other subtypes -> Binary
(or uuid.UUID when ``uuid_representation`` says so), ``$regularExpression`` -> Regex (options
sorted), and so on.  Relaxed JSON numbers follow the spec: an integer is an int (a float
beyond int64), anything with a fraction or exponent is a float.  Besides canonical and relaxed
Extended JSON v2 these legacy forms are read: ``{"$binary": "<base64>", "$type": "<hex>"}``,
``{"$regex": "<pattern>", "$options": "<letters>"}`` (a ``$regex`` whose value is not a string
is the query operator and stays a document) and ``{"$uuid": "<hex>"}``.  ``{"$date": <number>}``
is refused, as the BSON corpus requires.  Subdocuments shaped like a DBRef become
:class:`DBRef`; the top-level object and code scopes never do.  A top-level object that is a
type wrapper is read as its value (``loads('{"$oid": "..."}')`` gives an ObjectId).

Errors: every problem with the text -- invalid JSON or UTF-8, bare NaN/Infinity, numbers out of
range, a wrapper with missing, extra or mistyped keys, bad base64/hex/dates/UUIDs, NUL in a key
or regex, lone surrogates, nesting deeper than ``max_nesting_depth`` -- raises
:class:`InvalidExtendedJSON`, and nothing else escapes.

How: ``json.loads`` with hooks.  Its ``object_pairs_hook`` sees each object after its values
are converted (bottom-up), so wrappers are recognised where they are parsed and no pass of our
own recurses.  Checks that cost a scan of every string (NUL in keys, lone surrogates, depth)
run only when a cheap look at the text says they could fail.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.bson._decode_parts import converter, datetime_value, finish_dbref
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions, UuidRepresentation
from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.errors import BSONError, InvalidExtendedJSON
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.types import (
    Binary,
    Code,
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

__all__ = ["loads", "from_extjson_value"]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT32_MAX = 2**32 - 1

_INTEGER = re.compile(r"-?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}
_HEX_SUBTYPE = re.compile(r"[0-9a-fA-F]{1,2}")
_OID = re.compile(r"[0-9a-fA-F]{24}")
_UUID = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[0-9a-fA-F]{32}"
)
_ISO_DATE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:([Zz])|([+-])([0-9]{2}):?([0-9]{2}))"
)
_EPOCH = datetime.datetime(1970, 1, 1)
_LEGACY_UUIDS = (
    UuidRepresentation.PYTHON_LEGACY,
    UuidRepresentation.JAVA_LEGACY,
    UuidRepresentation.CSHARP_LEGACY,
)

# The keys that make an object a type wrapper, and the type each one belongs to.  ("$type" and
# "$options" are not here: alone they are query operators, and with "$binary" / "$regex" the
# key named here decides.)
_TRIGGERS = {
    "$oid": "$oid",
    "$symbol": "$symbol",
    "$numberInt": "$numberInt",
    "$numberLong": "$numberLong",
    "$numberDouble": "$numberDouble",
    "$numberDecimal": "$numberDecimal",
    "$binary": "$binary",
    "$uuid": "$uuid",
    "$code": "$code",
    "$scope": "$code",
    "$timestamp": "$timestamp",
    "$regularExpression": "$regularExpression",
    "$dbPointer": "$dbPointer",
    "$date": "$date",
    "$minKey": "$minKey",
    "$maxKey": "$maxKey",
    "$undefined": "$undefined",
    "$regex": "$regex",
    "$ref": "$ref",
}
_TRIGGER_KEYS = frozenset(_TRIGGERS)


def _fail(reason: str) -> InvalidExtendedJSON:
    return InvalidExtendedJSON(f"invalid Extended JSON: {reason}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _reject_constant(name: str) -> Any:
    raise _fail(f"{name} is not a JSON value (use {{\"$numberDouble\": \"{name}\"}})")


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise _fail(f"number {text[:40]} is out of the range of a double")
    return value


def _parse_int(text: str) -> int | float:
    """A JSON integer: an int while int64 holds it, else a double (the spec's rule)."""
    if len(text) <= 20:
        value = int(text)
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
    return _parse_float(text)


# --- the wrappers: each single-key wrapper is read from its value ---------------------------


def _string(value: Any, what: str) -> str:
    if type(value) is not str:
        raise _fail(f"{what} must be a string, not {_show(value)}")
    return value


def _inner(value: Any, what: str, *keys: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(f"{what} must be an object, not {_show(value)}")
    if len(value) != len(keys) or any(key not in value for key in keys):
        raise _fail(f"{what} must have exactly the keys {list(keys)}, not {list(value)}")
    return value


def _integer(value: Any, low: int, high: int, what: str) -> int:
    text = _string(value, what)
    if len(text) > 21 or not _INTEGER.fullmatch(text):
        raise _fail(f"{what} {_show(text)} is not an integer string")
    number = int(text)
    if not low <= number <= high:
        raise _fail(f"{what} {text} is out of range")
    return number


def _number_double(value: Any, opts: CodecOptions) -> float:
    text = _string(value, "$numberDouble")
    special = _NON_FINITE.get(text)
    if special is not None:
        return special
    if len(text) > 1100 or not _DOUBLE.fullmatch(text):
        raise _fail(f"$numberDouble {_show(text)} is not a decimal number string")
    return _parse_float(text)


def _number_decimal(value: Any, opts: CodecOptions) -> Decimal128:
    text = _string(value, "$numberDecimal")
    try:
        return Decimal128(text)
    except BSONError as exc:
        raise _fail(f"$numberDecimal {_show(text)}: {exc}") from None


def _binary_value(data: bytes, subtype: int, opts: CodecOptions) -> Any:
    """As the decoder gives binary: bytes for subtype 0, UUIDs when asked for, else Binary."""
    if subtype == 0:
        return data
    value = Binary(data, subtype)
    if (subtype == 3 or subtype == 4) and len(data) == 16:
        rep = opts.uuid_representation
        if (subtype == 4 and rep == UuidRepresentation.STANDARD) or (
            subtype == 3 and rep in _LEGACY_UUIDS
        ):
            return value.as_uuid(rep)
    return value


def _binary(payload: Any, subtype: Any, what: str, opts: CodecOptions) -> Any:
    text = _string(subtype, f"{what} subtype")
    if not _HEX_SUBTYPE.fullmatch(text):
        raise _fail(f"{what} subtype {_show(text)} is not a one- or two-digit hex string")
    payload = _string(payload, f"{what} base64")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise _fail(f"{what} base64 {_show(payload)} is not valid base64") from None
    return _binary_value(data, int(text, 16), opts)


def _v_binary(value: Any, opts: CodecOptions) -> Any:
    inner = _inner(value, "$binary", "base64", "subType")
    return _binary(inner["base64"], inner["subType"], "$binary", opts)


def _v_uuid(value: Any, opts: CodecOptions) -> Any:
    text = _string(value, "$uuid")
    if not _UUID.fullmatch(text):
        raise _fail(f"$uuid {_show(text)} is not a UUID in its canonical text form")
    return _binary_value(bytes.fromhex(text.replace("-", "")), 4, opts)


def _v_oid(value: Any, opts: CodecOptions) -> ObjectId:
    text = _string(value, "$oid")
    if not _OID.fullmatch(text):
        raise _fail(f"$oid {_show(text)} is not 24 hex digits")
    return ObjectId(bytes.fromhex(text))


def _v_timestamp(value: Any, opts: CodecOptions) -> Timestamp:
    inner = _inner(value, "$timestamp", "t", "i")
    time, inc = inner["t"], inner["i"]
    for name, number in (("t", time), ("i", inc)):
        if type(number) is not int or not 0 <= number <= _UINT32_MAX:
            raise _fail(f"$timestamp {name} must be an unsigned 32-bit integer, not {_show(number)}")
    return Timestamp(time, inc)


def _regex(pattern: Any, options: Any, what: str) -> Regex:
    pattern = _string(pattern, f"{what} pattern")
    options = _string(options, f"{what} options")
    if "\x00" in pattern or "\x00" in options:
        raise _fail(f"{what} pattern and options must not contain NUL")
    return Regex(pattern, "".join(sorted(options)))


def _v_regular_expression(value: Any, opts: CodecOptions) -> Regex:
    inner = _inner(value, "$regularExpression", "pattern", "options")
    return _regex(inner["pattern"], inner["options"], "$regularExpression")


def _v_db_pointer(value: Any, opts: CodecOptions) -> DBPointer:
    # the inner {"$ref": ..., "$id": ...} has been read as a DBRef already
    if (
        type(value) is not DBRef
        or value.database is not None
        or value.extra
        or not isinstance(value.id, ObjectId)
    ):
        raise _fail(f'$dbPointer must be {{"$ref": <string>, "$id": <ObjectId>}}, not {_show(value)}')
    return DBPointer(value.collection, value.id)


def _iso_date(text: str) -> int:
    """Milliseconds since the epoch of an RFC 3339 date-time (sub-millisecond digits dropped)."""
    match = _ISO_DATE.fullmatch(text)
    if match is None:
        raise _fail(f"$date {_show(text)} is not an ISO-8601 date-time with a time zone")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        when = datetime.datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second)
        )
    except ValueError as exc:
        raise _fail(f"$date {_show(text)} is not a valid date-time ({exc})") from None
    delta = when - _EPOCH
    ms = (delta.days * 86400 + delta.seconds) * 1000
    if fraction:
        ms += int(fraction[:3].ljust(3, "0"))
    if not zulu:
        hours, minutes = int(off_h), int(off_m)
        if hours > 23 or minutes > 59:
            raise _fail(f"$date {_show(text)} has an invalid UTC offset")
        offset = (hours * 60 + minutes) * 60000
        ms = ms - offset if sign == "+" else ms + offset
    return ms


def _v_date(value: Any, opts: CodecOptions) -> Any:
    if type(value) is str:
        ms = _iso_date(value)
    elif type(value) is Int64:  # {"$numberLong": "..."}, read already
        ms = int(value)
    else:
        raise _fail(f'$date must be an ISO-8601 string or {{"$numberLong": ...}}, not {_show(value)}')
    return datetime_value(ms, opts)


def _one(value: Any, what: str) -> None:
    if type(value) is not int or value != 1:
        raise _fail(f"{what} must be 1, not {_show(value)}")


def _v_undefined(value: Any, opts: CodecOptions) -> Undefined:
    if value is not True:
        raise _fail(f"$undefined must be true, not {_show(value)}")
    return Undefined()


def _v_min_key(value: Any, opts: CodecOptions) -> MinKey:
    _one(value, "$minKey")
    return MinKey()


def _v_max_key(value: Any, opts: CodecOptions) -> MaxKey:
    _one(value, "$maxKey")
    return MaxKey()


# the wrappers with one key: key -> how its value is read
_SINGLE: dict[str, Callable[[Any, CodecOptions], Any]] = {
    "$numberInt": lambda value, _: _integer(value, _INT32_MIN, _INT32_MAX, "$numberInt"),
    "$numberLong": lambda value, _: Int64(_integer(value, _INT64_MIN, _INT64_MAX, "$numberLong")),
    "$numberDouble": _number_double,
    "$oid": _v_oid,
    "$date": _v_date,
    "$numberDecimal": _number_decimal,
    "$binary": _v_binary,
    "$uuid": _v_uuid,
    "$code": lambda value, _: Code(_string(value, "$code")),
    "$symbol": lambda value, _: Symbol(_string(value, "$symbol")),
    "$timestamp": _v_timestamp,
    "$regularExpression": _v_regular_expression,
    "$dbPointer": _v_db_pointer,
    "$minKey": _v_min_key,
    "$maxKey": _v_max_key,
    "$undefined": _v_undefined,
}


class _Reader:
    """The per-call state of one parse: options, and the DBRefs made from plain objects."""

    __slots__ = ("opts", "convert", "check_keys", "dbrefs")

    def __init__(self, opts: CodecOptions, check_keys: bool) -> None:
        self.opts = opts
        doc_class = opts.document_class
        self.convert: Callable[[dict[str, Any]], Any] | None = (
            None if doc_class is dict or _is_raw(doc_class) else converter(doc_class)
        )
        self.check_keys = check_keys
        # id(DBRef) -> (the DBRef, the object's pairs): the top level and code scopes are
        # documents even when shaped like a DBRef, so they are rebuilt from their pairs
        self.dbrefs: dict[int, tuple[DBRef, list[tuple[str, Any]]]] = {}

    def document(self, obj: dict[str, Any]) -> Any:
        return obj if self.convert is None else self.convert(obj)

    def revert(self, value: Any) -> Any:
        """``value`` as a document, if it is a DBRef this parse made from an object."""
        if type(value) is DBRef:
            entry = self.dbrefs.get(id(value))
            if entry is not None and entry[0] is value:
                return self.document(dict(entry[1]))
        return value

    def hook(self, pairs: list[tuple[str, Any]]) -> Any:
        """json's object_pairs_hook: one object, its values converted already."""
        if len(pairs) == 1:
            single = _SINGLE.get(pairs[0][0])
            if single is not None:  # the common wrappers, fast
                return single(pairs[0][1], self.opts)
        obj = dict(pairs)  # a repeated key: the last value wins, as in json
        if self.check_keys:
            for key in obj:
                if "\x00" in key:
                    raise _fail(f"key {_show(key)} contains NUL")
        if _TRIGGER_KEYS.isdisjoint(obj):
            return obj if self.convert is None else self.convert(obj)
        return self.wrapper(obj, pairs)

    def wrapper(self, obj: dict[str, Any], pairs: list[tuple[str, Any]]) -> Any:
        """An object with at least one of the type wrappers' keys."""
        if "$ref" in obj:
            # DBRef is a convention, not a type: an object not quite like one stays a document
            value = finish_dbref(obj, self.convert)
            if type(value) is DBRef:
                self.dbrefs[id(value)] = (value, pairs)
            return value
        kinds = {_TRIGGERS[key] for key in _TRIGGER_KEYS.intersection(obj)}
        if "$regex" in kinds:
            regex = obj["$regex"]
            if len(kinds) == 1:
                if type(regex) is str and all(key in ("$regex", "$options") for key in obj):
                    return _regex(regex, obj.get("$options", ""), "$regex")
                return self.document(obj)  # the $regex query operator
            kinds.discard("$regex")
        if len(kinds) > 1:
            raise _fail(f"object mixes the keys of several type wrappers: {list(obj)}")
        kind = kinds.pop()
        if kind == "$code" and "$scope" in obj:
            _only(obj, "$code", "$scope")
            scope = self.revert(obj["$scope"])  # a scope is a document, never a DBRef
            if not isinstance(scope, Mapping):
                raise _fail(f"$scope must be an object, not {_show(scope)}")
            return Code(_string(obj["$code"], "$code"), scope)
        if kind == "$binary" and "$type" in obj and type(obj["$binary"]) is str:
            _only(obj, "$binary", "$type")  # the legacy form
            return _binary(obj["$binary"], obj["$type"], "$binary", self.opts)
        _only(obj, kind)
        return _SINGLE[kind](obj[kind], self.opts)


def _only(obj: dict[str, Any], *keys: str) -> None:
    """A type wrapper must have exactly ``keys``."""
    if len(obj) != len(keys) or any(key not in obj for key in keys):
        raise _fail(f"a {keys[0]} wrapper must have exactly the keys {list(keys)}, not {list(obj)}")


_RAW_CLASS: list[type] = []


def _is_raw(doc_class: type) -> bool:
    if not _RAW_CLASS:
        from mongo_sansio.bson.raw import RawDocument  # late: raw imports the decoder

        _RAW_CLASS.append(RawDocument)
    return issubclass(doc_class, _RAW_CLASS[0])


def _as_text(text: Any) -> str:
    if isinstance(text, str):
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise _fail("text contains a lone surrogate") from None
        return text
    if isinstance(text, bytes | bytearray | memoryview):
        try:
            return bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(f"text is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    raise TypeError(f"Extended JSON text must be str or bytes, not {type(text).__name__}")


def _finish(value: Any, reader: _Reader, opts: CodecOptions, maybe_deep: bool) -> Any:
    """The top level: a document, never a DBRef; depth checked; RawDocument if asked for."""
    value = reader.revert(value)
    if maybe_deep:
        check_depth(value, opts.max_nesting_depth)
    if reader.convert is None and opts.document_class is not dict and isinstance(value, dict):
        # a RawDocument document class: build the view from the document's BSON
        from mongo_sansio.bson._decode import decode
        from mongo_sansio.bson._encode import encode

        try:
            value = decode(encode(value, opts), opts)
        except BSONError as exc:
            raise _fail(f"document cannot be held as a RawDocument: {exc}") from None
    return value


def loads(text: str | bytes | bytearray | memoryview, *, codec_options: CodecOptions | None = None) -> Any:
    """Parse Extended JSON text (canonical, relaxed or the legacy forms) into Python values."""
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    text = _as_text(text)
    # "\u0000" is the only way a NUL gets into a key (JSON forbids raw control characters)
    reader = _Reader(opts, "\\u0000" in text)
    # Only a long run of digits or a 3-digit exponent can make a number out of range: without
    # one, json's own int and float (C fast paths) are safe.
    shapes = text.translate(_NUMBER_SHAPES)
    careful = "0" * 19 in shapes or "e000" in shapes or "e-000" in shapes
    try:
        value = json.loads(
            text,
            object_pairs_hook=reader.hook,
            parse_float=_parse_float if careful else float,
            parse_int=_parse_int if careful else int,
            parse_constant=_reject_constant,
        )
    except InvalidExtendedJSON:
        raise
    except json.JSONDecodeError as exc:
        raise _fail(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise _fail("nested too deeply to parse") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a value our checks did not foresee
        raise _fail(str(exc)) from None
    if ("\\ud" in text or "\\uD" in text) and _has_lone_surrogate(text):
        raise _fail("text contains an escaped lone surrogate")
    max_depth = opts.max_nesting_depth
    maybe_deep = text.count("{") + text.count("[") > max_depth and _nests_deeper(text, max_depth)
    return _finish(value, reader, opts, maybe_deep)


# digits to 0, "E" to "e", "+" to "-": 19 digits in a row or an exponent of 3 digits show
# as "0" * 19, "e000" or "e-000"
_NUMBER_SHAPES = str.maketrans("123456789E+", "000000000e-")
# every ASCII character but the brackets, to delete (outside strings JSON text is ASCII)
_INNERMOST = re.compile(r"\[\]|\{\}")  # (one pass: exactly one level)
_ALL_BUT_BRACKETS = {code: None for code in range(128) if chr(code) not in "[]{}"}


def _nests_deeper(text: str, limit: int) -> bool:
    """Do the arrays and objects of ``text`` (valid JSON) nest deeper than ``limit``?

    JSON depth bounds the depth of the documents (type wrappers only add levels).  Strings go
    first -- with their escapes gone every quote delimits one --, then all but the brackets;
    each round of deleting adjacent pairs then removes one level.
    """
    plain = text.replace("\\\\", "").replace('\\"', "")
    brackets = "".join(plain.split('"')[::2]).translate(_ALL_BUT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = _INNERMOST.sub("", brackets)
    return bool(brackets)


def _has_lone_surrogate(text: str) -> bool:
    """Does any string of ``text`` (valid JSON) hold a lone surrogate after unescaping?"""
    try:
        plain = json.loads(text, parse_int=str, parse_float=str, parse_constant=str)
        json.dumps(plain, ensure_ascii=False, check_circular=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):  # cannot happen for text json just parsed
        return True
    return False


def check_depth(value: Any, max_depth: int) -> None:
    """Raise InvalidExtendedJSON if containers in ``value`` nest deeper than ``max_depth``.

    Documents, arrays, DBRefs and code scopes each count one level; the top level is 1.
    """
    stack: list[Any] = [iter((value,))]
    while stack:
        for item in stack[-1]:
            kind = type(item)
            if kind is str or kind is int or kind is float or kind is bool or item is None:
                continue  # the common leaves first
            if isinstance(item, Mapping):
                children: Any = item.values()
            elif isinstance(item, list):
                children = item
            elif isinstance(item, DBRef):
                children = item.as_doc().values()
            elif isinstance(item, Code) and item.scope is not None:
                children = item.scope.values()
            else:
                continue
            if len(stack) > max_depth:  # (the first frame holds just the top-level value)
                raise _fail(f"documents nested deeper than max_nesting_depth {max_depth}")
            stack.append(iter(children))
            break
        else:
            stack.pop()


def from_extjson_value(value: Any, *, codec_options: CodecOptions | None = None) -> Any:
    """Like :func:`loads`, for JSON already parsed (dicts, lists, str, int, float, bool, None)."""
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    reader = _Reader(opts, True)
    max_depth = opts.max_nesting_depth
    # post-order walk: a frame is (the container, its converted items so far, key iterator)
    result: list[Any] = []
    stack: list[tuple[Any, list[Any], Any]] = []
    pending: Any = value
    try:
        while True:
            if pending is not _NOTHING:
                item, pending = pending, _NOTHING
                if isinstance(item, dict | list):
                    if len(stack) >= 2 * max_depth + 2:  # wrappers nest twice as deep
                        raise _fail(f"documents nested deeper than max_nesting_depth {max_depth}")
                    keys = iter(item) if isinstance(item, dict) else iter(range(len(item)))
                    stack.append((item, [], keys))
                else:
                    result.append(_leaf(item))
            elif stack:
                container, items, keys = stack[-1]
                if result:
                    items.append(result.pop())
                key = next(keys, _NOTHING)
                if key is not _NOTHING:
                    if isinstance(container, dict):
                        if not isinstance(key, str):
                            raise _fail(f"object key {_show(key)} is not a string")
                        _check_string(key)
                        items.append(key)
                    pending = container[key]
                    continue
                stack.pop()
                if isinstance(container, dict):
                    result.append(reader.hook(list(zip(items[::2], items[1::2], strict=True))))
                else:
                    result.append(items)
            else:
                break
    except (ValueError, TypeError, OverflowError) as exc:
        if isinstance(exc, InvalidExtendedJSON):
            raise
        raise _fail(str(exc)) from None
    return _finish(result.pop(), reader, opts, True)


_NOTHING: Any = object()


def _check_string(text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _fail("a string contains a lone surrogate") from None


def _leaf(item: Any) -> Any:
    """A parsed JSON scalar, checked as the text parser would check it."""
    if item is None or type(item) is bool:
        return item
    if type(item) is str:
        _check_string(item)
        return item
    if type(item) is int:
        return item if _INT64_MIN <= item <= _INT64_MAX else float(item)  # OverflowError: caught
    if type(item) is float:
        if not math.isfinite(item):
            raise _fail(f"{item} is not a JSON number (use $numberDouble)")
        return item
    raise _fail(f"{type(item).__name__} is not a parsed JSON value")
