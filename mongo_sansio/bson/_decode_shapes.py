"""Shape decoders: straight-line decoders for the document shapes :func:`decode` has met.

Input: a shape, as for the walkers of :mod:`._walkers` (the trie nodes of one whole document's
elements, in order).  Output: ``decoder(data, start, end, depth) -> dict | None`` which, for
a document of exactly that shape at ``data[start:end]`` (its length prefix checked by the
caller) at nesting ``depth``, returns the document decoded with the default codec options; for
anything else, None, and the general decoder decodes the same bytes, raising what it raises.

Why: the general loop spends a round of interpreted bytecode per element.  A decoder reads
every header and fixed-size value up to the next length-prefixed value with one precompiled
struct call, compares the headers at once, and builds the dict with one dict display.
Embedded documents go through :func:`nested`, which tries the decoders of the element's own
trie root and falls back on the general decoder; arrays always take the general decoder.

A decoder accepts only what the general decoder accepts, and gives the same values: the same
length minimums, NUL terminators, boolean bytes, strict UTF-8, int64 values that fit an int32
as Int64, datetimes per the default options, and the last element ending at the document's
NUL.  Shapes with a repeated key, a ``$ref`` key (a DBRef when embedded) or a type listed
nowhere below get no decoder.  The source holds integers, the ``repr`` of the header bytes
and the ``repr`` of the keys (as the dict display's literals, which evaluate to exactly the
key), so no document content can become code.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Sequence
from typing import Any

from mongo_sansio.bson._decode_parts import (
    EPOCH_NAIVE,
    MAXKEY,
    MINKEY,
    OBJECTID,
    UNDEFINED,
    binary_value,
    datetime_value,
    make_code,
    make_timestamp,
)
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS
from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.types import DATETIME_MAX_MS, DATETIME_MIN_MS, Int64

__all__ = ["Decoder", "compile_decoder"]

Decoder = Callable[[bytes, int, int, int], "dict[str, Any] | None"]

# type byte -> (struct format of the fixed part, its size, how the value is finished)
_FIXED: dict[int, tuple[str, int, str]] = {
    0x01: ("d", 8, "{x}"),
    0x10: ("i", 4, "{x}"),
    0x12: ("q", 8, "Int64({x}) if -2147483648 <= {x} <= 2147483647 else {x}"),
    0x08: ("B", 1, "bools[{x}]"),  # a byte over 1: IndexError, so None
    0x0A: ("", 0, "None"),
    0x07: ("12s", 12, "oid({x})"),
    0x09: ("q", 8, "epoch + delta(0, 0, 0, {x}) if {lo} <= {x} <= {hi} else dtv({x}, opts)"),
    0x11: ("Q", 8, "ts({x} >> 32, {x} & 0xFFFFFFFF)"),
    0x13: ("16s", 16, "dec({x})"),
    0xFF: ("", 0, "minkey"),
    0x7F: ("", 0, "maxkey"),
    0x06: ("", 0, "undefined"),
}
# string, document, array, binary, code: a length prefix
_VARIABLE = {0x02, 0x03, 0x04, 0x05, 0x0D}


def compile_decoder(nodes: Sequence[Any], nested: Any, array: Any) -> Decoder | None:
    """The decoder for the shape of trie ``nodes``, or None when the shape does not allow one.

    ``nested(data, start, end, depth, node)`` decodes an embedded document (``node`` is its
    element's trie node) and ``array(data, start, end, depth)`` an array.
    """
    keys = [node[7][2] for node in nodes]
    if not nodes or len(set(keys)) != len(keys) or "$ref" in keys:
        return None
    names: dict[str, Any] = {
        "error": (struct.error, IndexError, UnicodeDecodeError, ValueError, ArithmeticError),
        "Int64": Int64, "bools": (False, True), "oid": OBJECTID, "epoch": EPOCH_NAIVE,
        "delta": datetime.timedelta, "dtv": datetime_value, "opts": DEFAULT_CODEC_OPTIONS,
        "ts": make_timestamp, "binv": binary_value, "nested": nested, "array": array,
        "dec": Decimal128.from_bid, "minkey": MINKEY, "maxkey": MAXKEY, "undefined": UNDEFINED,
        "code": make_code,
    }
    body: list[str] = []
    values: list[str] = []
    fmt = "<"  # the open run: struct format, unpacked names, expected headers
    fields: list[str] = []
    headers: list[bytes] = []
    offset = 0  # of the run's next field, from q (where the run starts)
    run = 0

    def read_run() -> None:
        """Emit the open run's struct call and its header check."""
        nonlocal fmt, fields, headers, run
        names[f"u{run}"] = struct.Struct(fmt).unpack_from
        targets = ", ".join(fields) + ","
        body.append(f"    {targets} = u{run}(data, q)")
        check = f"({', '.join(h for h in fields if h.startswith('h'))},) != {tuple(headers)!r}"
        body.append(f"    if {check}:\n        return None")
        fmt = "<"
        fields, headers = [], []
        run += 1

    for n, node in enumerate(nodes):
        hdr, t = node[7][0], node[7][6]
        fmt += f"{len(hdr)}s"
        fields.append(f"h{n}")
        headers.append(hdr)
        offset += len(hdr)
        fixed = _FIXED.get(t)
        if fixed is not None:
            part, size, finish = fixed
            if part:
                fmt += part
                fields.append(f"x{n}")
                offset += size
            values.append(finish.format(x=f"x{n}", lo=DATETIME_MIN_MS, hi=DATETIME_MAX_MS))
            continue
        if t not in _VARIABLE:
            return None
        fmt += "iB" if t == 0x05 else "i"
        fields.append(f"n{n}")
        if t == 0x05:
            fields.append(f"b{n}")
        read_run()
        start = offset + (5 if t == 0x05 else 0 if t in (0x03, 0x04) else 4)  # the value's data
        body.append(f"    s = q + {start}")
        if t == 0x02 or t == 0x0D:
            body.append(f"    e = s + n{n} - 1")
            body.append(f"    if n{n} < 1 or data[e]:\n        return None")
            text = "data[s:e].decode()"
            body.append(f"    x{n} = {text if t == 0x02 else f'code({text})'}")
            body.append("    q = e + 1")
        elif t == 0x05:
            body.append(f"    if n{n} < 0:\n        return None")
            body.append(f"    q = s + n{n}")
            body.append(f"    x{n} = binv(data, s, q, b{n}, opts)")
        else:
            body.append(f"    if n{n} < 5:\n        return None")
            body.append(f"    q = s + n{n}")
            call = (
                f"nested(data, s, q, depth + 1, node{n})"
                if t == 0x03
                else "array(data, s, q, depth + 1)"
            )
            names[f"node{n}"] = node
            body.append(f"    x{n} = {call}")
        values.append(f"x{n}")
        offset = 0
    if fields:
        read_run()
        body.append(f"    q += {offset}")
    source = "\n".join([
        "def decoder(data, start, end, depth):",
        "  try:",
        "    q = start + 4",
        *body,
        "    if q != end - 1 or data[q]:",
        "        return None",
        "    return {" + ", ".join(f"{k!r}: {v}" for k, v in zip(keys, values, strict=True)) + "}",
        "  except error:",
        "    return None",
    ])
    exec(compile(source, "<mongo_sansio shape decoder>", "exec"), names)  # noqa: S102
    decoder: Decoder = names["decoder"]
    return decoder
