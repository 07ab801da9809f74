"""Relaxed Extended JSON text of decoded documents, quickly: the stream's document columns.

Input: a value decoded from BSON (a ``dict``/``list`` tree of BSON values; keys are strings).
Output: the same text :func:`mongo_sansio.bson.extjson.dumps` gives in relaxed mode.

Why: every change event renders its documents; the general writer builds a JSON-ready copy of
the whole tree in Python before ``json`` turns it into text.  Here one pass checks that every
value is of a type whose relaxed form ``json``'s C encoder writes by itself (strings, numbers,
booleans, null, dicts, lists) or that the encoder hands to :func:`_wrapper` (ObjectId,
datetime and the other BSON types, written by the general writer when not common); the text
then comes from the C encoder in one call.  Anything else takes the general writer: a string
subclass (``Code``, ``Symbol``: the C encoder would write them as plain strings), a mapping that
is not a plain ``dict``, a tuple, a non-finite double (the encoder refuses it; relaxed mode wraps
it), a type the general writer knows and this module does not list.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from mongo_sansio.bson import Binary, Decimal128, Int64, ObjectId, Timestamp, extjson
from mongo_sansio.bson.extjson import to_extjson_value

__all__ = ["relaxed_json"]

# Written as is by the C encoder (Int64 is an int: relaxed mode writes it as a number).
_NATIVE = (str, int, float, bool, type(None), Int64)
# Handed to _wrapper by the encoder (never a str, int or float subclass).
_WRAPPED = (ObjectId, datetime.datetime, Binary, bytes, Decimal128, Timestamp)
_SAFE = frozenset((*_NATIVE, *_WRAPPED))


def _wrapper(value: Any) -> Any:
    """The relaxed Extended JSON wrapper of a non-JSON value (the encoder's ``default``)."""
    kind = type(value)
    if kind is ObjectId:
        return {"$oid": str(value)}
    if kind is datetime.datetime and value.tzinfo is None and value.year >= 1970:
        # (as the general writer: milliseconds, truncated, only when not zero)
        spec = "milliseconds" if value.microsecond >= 1000 else "seconds"
        return {"$date": value.isoformat(timespec=spec) + "Z"}
    return to_extjson_value(value, "relaxed")


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False, default=_wrapper)


def _plain(document: dict[str, Any] | list[Any]) -> bool:
    """Whether every value in the tree is one the fast path writes exactly."""
    stack: list[Any] = [document]
    pop, push = stack.pop, stack.append
    while stack:
        container = pop()
        for item in container.values() if type(container) is dict else container:
            kind = type(item)
            if kind is dict or kind is list:
                push(item)
            elif kind not in _SAFE:
                return False
    return True


def relaxed_json(value: Any) -> str:
    """``extjson.dumps(value, mode="relaxed")`` for a decoded BSON value, faster."""
    kind = type(value)
    if (kind is dict or kind is list) and _plain(value):
        try:
            text: str = _ENCODER.encode(value)
        except ValueError:  # NaN or an infinity somewhere: the general writer wraps them
            pass
        else:
            if text.isascii():
                return text
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: the general writer says so
                pass
            else:
                return text
    return extjson.dumps(value, mode="relaxed")
