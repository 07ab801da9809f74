"""The encoded size of a plain document, worked out without encoding it.

Input: a ``dict`` whose values are ``str``, ``bool``, ``int``, ``float``, ``None``, ``Int64``
or plain dicts of the same (a write command without its statements: ``{insert: "coll",
ordered: true, writeConcern: {w: 1}, $db: "db"}``).  Output: the exact length of its BSON
encoding with the default codec options, or None for a document holding anything else (its
size is then learned by encoding it).

Why: a write is split into batches by its message size, which includes the command's own
body; encoding the body only to measure it cost a sixth of a small insert_one's encoding work.
The arithmetic here follows the encoder's choices: an ``int`` is an int32 when it fits one,
else an int64 (an ``int`` beyond int64 is left to the encoder, which refuses it); strings and
keys count their UTF-8 bytes and a NUL; a key holding NUL, or a string that is not UTF-8,
gives None (the encoder then reports it).
"""

from __future__ import annotations

from typing import Any

from mongo_sansio.bson.types import Int64

__all__ = ["plain_size"]

_MAX_DEPTH = 8  # plain command bodies nest one or two levels; deeper ones are encoded
_INT32 = range(-(2**31), 2**31)
_INT64 = range(-(2**63), 2**63)
# value type -> its fixed size (the element's type byte and key counted apart)
_FIXED = {bool: 1, float: 8, Int64: 8, type(None): 0}


def plain_size(document: dict[str, Any], _depth: int = 0) -> int | None:
    """The encoded size of ``document`` (see the module docstring), or None."""
    if _depth > _MAX_DEPTH:
        return None
    size = 5  # the length prefix and the final NUL
    try:
        for key, value in document.items():
            if type(key) is not str or "\x00" in key:
                return None
            kind = type(value)
            fixed = _FIXED.get(kind)
            if fixed is not None:
                width = fixed
            elif kind is str:
                width = 5 + len(value.encode())  # length prefix, UTF-8, NUL
            elif kind is int:
                if value in _INT32:
                    width = 4
                elif value in _INT64:
                    width = 8
                else:
                    return None
            elif kind is dict:
                inner = plain_size(value, _depth + 1)
                if inner is None:
                    return None
                width = inner
            else:
                return None
            size += 2 + (len(key) if key.isascii() else len(key.encode())) + width
    except UnicodeEncodeError:  # a lone surrogate: the encoder says where
        return None
    return size
