"""Shape decoders: straight-line decoders for the document and array shapes decoding has met.

Input: a shape, as for the walkers of :mod:`._walkers` (the trie nodes of one whole
container's elements, in order), and whether the container is an array.  Output:
``decoder(data, start, end, depth) -> dict | list | None`` which, for a container of exactly
that shape at ``data[start:end]`` (its length prefix checked by the caller) at nesting
``depth``, returns it decoded with the default codec options; for anything else, None (or,
see below, :class:`Fallback`), and the general decoder decodes the same bytes, raising what
it raises.

Why: the general loop spends a round of interpreted bytecode per element.  A decoder reads
every header and fixed-size value up to the next length-prefixed value with one precompiled
struct call, compares the headers at once, and builds the dict (or list) with one display.
Embedded documents and arrays go through the ``nested`` and ``array`` helpers, which try the
decoders of the element's own trie root; empty ones are made on the spot.  The rare types
(regex, DBPointer, symbol, code with scope) are read by the general ``value`` helper.

Layouts: a document decoder also learns the byte layout of the documents it decodes and
tries that first (:mod:`._decode_layouts`): one masked comparison and one struct call for a
document whose headers, lengths and NULs are those of the learned one.

Refusals: a decoder checks every header, length and the final NUL of its container before
it decodes any embedded document or array, so a container of another shape that begins alike
(a getMore reply with a ``postBatchResumeToken`` after its batch, tried against the shape of
one without) is refused before its batch is decoded, not after.  A document decoder returns
None for anything it does not take.  An array decoder
returns None only while it has decoded no container (a document, an array, or a rare value
that may hold one), so that an array of another length is decoded the general way on its
own, in place, at the cost of its own scalars at most; any later refusal raises
:class:`Fallback`, which gives up the whole attempt at the outermost document, so no hostile
nesting can make inner levels decode again at every level above.  Embedded containers are
decoded by a direct call of the decoder their trie root last compiled for their first
element (when there is one), and by the helpers when that one refuses.

A decoder accepts only what the general decoder accepts, and gives the same values: the same
length minimums, NUL terminators, boolean bytes, strict UTF-8, int64 values
as Int64, datetimes per the default options, and the last element ending at the container's
NUL.  Shapes with a repeated key or a ``$ref`` key (a DBRef when embedded) get no decoder.
The source holds integers, the ``repr`` of the header bytes and the ``repr`` of the keys (as
the dict display's literals, which evaluate to exactly the key), so no document content can
become code.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Sequence
from typing import Any

from mongo_sansio.bson._decode_layouts import LayoutPlan, learn_layout
from mongo_sansio.bson._decode_parts import (
    EPOCH_NAIVE,
    MAXKEY,
    MINKEY,
    MISS,
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

__all__ = ["ARRAY_BUCKET", "Decoder", "Fallback", "bucket_of", "compile_decoder"]

Decoder = Callable[[bytes, int, int, int], "dict[str, Any] | list[Any] | None"]

# Added to an array shape's bucket number (see bucket_of): the documents and arrays of one
# array share a trie root, and a document must never get an array's decoder.
ARRAY_BUCKET = 1 << 16


def bucket_of(data: bytes, pos: int) -> int:
    """The bucket (see _walkers.remember_shape) of a container whose first element, or that
    element's header, starts at ``pos``: its type byte and the first byte of its key."""
    return data[pos] << 8 | data[pos + 1]


def _child_decoder(node: Any, is_array: bool) -> Decoder | None:
    """A decoder for the container of element ``node``: the first of the bucket its trie
    root predicts (the last container decoded there began so), or None."""
    sub = node[4]
    if sub is None or not sub[8] or sub[0] is MISS:
        return None
    shapes = sub[8].get(bucket_of(sub[0][7][0], 0) | (ARRAY_BUCKET if is_array else 0))
    return None if not shapes else shapes[0][2]
_MAX_DEPTH = DEFAULT_CODEC_OPTIONS.max_nesting_depth


class Fallback(Exception):
    """A shape decoder refused a container after decoding part of it: the whole attempt is
    given up, and the general decoder decodes the outermost document once.

    Raised through every enclosing shape decoder (none catches it).  Falling back level by
    level instead would decode a deep document's inner levels again at every level above.
    """


# type byte -> (struct format of the fixed part, its size, how the value is finished)
_FIXED: dict[int, tuple[str, int, str]] = {
    0x01: ("d", 8, "{x}"),
    0x10: ("i", 4, "{x}"),
    0x12: ("q", 8, "Int64({x})"),
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


def compile_decoder(
    nodes: Sequence[Any], nested: Any, array: Any, value: Any, is_array: bool = False
) -> Decoder | None:
    """The decoder for the shape of trie ``nodes``, or None when the shape does not allow one.

    ``nested(data, start, end, depth, node)`` decodes an embedded document and
    ``array(data, start, end, depth, node)`` an array (``node`` is its element's trie node);
    ``value(data, t, pos, stop, opts, depth)`` reads any value, returning it and its end.
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
        "code": make_code, "value": value, "fallback": Fallback,
    }
    # how a refusal is made (see the module docs): an array's turns into a Fallback at its
    # first container; the generated ``deep`` tells its error handler whether that was passed
    deep = False

    def refuse() -> str:
        return "raise fallback" if deep else "return None"

    def enter_container() -> None:
        nonlocal deep
        if is_array and not deep:
            deep = True
            body.append("    deep = True")
    body: list[str] = []
    later: list[str] = []  # decoding the embedded containers, after the last check
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
        names_h = [h for h in fields if h.startswith("h")]
        if len(names_h) == 1:  # one header: compared alone (no tuples built)
            check = f"{names_h[0]} != {headers[0]!r}"
        else:
            check = f"({', '.join(names_h)},) != {tuple(headers)!r}"
        body.append(f"    if {check}:\n        {refuse()}")
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
        values.append(f"x{n}")
        if t not in _VARIABLE:  # a rare type: read by the general helper
            read_run()
            enter_container()  # (it may be code with scope)
            body.append(f"    x{n}, q = value(data, {t}, q + {offset}, end - 1, opts, depth)")
            offset = 0
            continue
        fmt += "iB" if t == 0x05 else "i"
        fields.append(f"n{n}")
        if t == 0x05:
            fields.append(f"b{n}")
        read_run()
        start = offset + (5 if t == 0x05 else 0 if t in (0x03, 0x04) else 4)  # the value's data
        body.append(f"    s = q + {start}")
        if t == 0x02 or t == 0x0D:
            body.append(f"    e = s + n{n} - 1")
            body.append(f"    if n{n} < 1 or data[e]:\n        {refuse()}")
            text = "data[s:e].decode()"
            body.append(f"    x{n} = {text if t == 0x02 else f'code({text})'}")
            body.append("    q = e + 1")
        elif t == 0x05:
            body.append(f"    if n{n} < 0:\n        {refuse()}")
            body.append(f"    q = s + n{n}")
            body.append(f"    x{n} = binv(data, s, q, b{n}, opts)")
        else:
            body.append(f"    if n{n} < 5:\n        {refuse()}")
            body.append(f"    q = s + n{n}")
            # decoded once every header of this container has been checked (see `later`):
            # a document of another shape is refused before any of its containers is decoded
            body.append(f"    s{n} = s")
            # an empty one is made on the spot (its NUL and the depth checked as the helpers
            # would, though a trie root always sits at one depth, so a shape compiled there
            # passed that check already); otherwise its trie root's decoders are tried
            empty, helper = ("{}", "nested") if t == 0x03 else ("[]", "array")
            names[f"node{n}"] = node
            child = _child_decoder(node, t == 0x04)
            e = f"s{n} + n{n}"
            if child is None:
                later.append(
                    f"    x{n} = {empty} if n{n} == 5 and depth < {_MAX_DEPTH} and not data[{e} - 1]"
                    f" else {helper}(data, s{n}, {e}, depth + 1, node{n})"
                )
            else:  # called directly, saving the helper's dispatch; the helper if it refuses
                names[f"d{n}"] = child
                later.append(
                    f"    x{n} = {empty} if n{n} == 5 and not data[{e} - 1] and depth < {_MAX_DEPTH}"
                    f" else d{n}(data, s{n}, {e}, depth + 1) if depth < {_MAX_DEPTH} else None"
                )
                later.append(
                    f"    if x{n} is None:\n"
                    f"        x{n} = {helper}(data, s{n}, {e}, depth + 1, node{n})"
                )
        offset = 0
    if fields:
        read_run()
        body.append(f"    q += {offset}")
    if is_array:
        result = "[" + ", ".join(values) + "]"
    else:
        result = "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(keys, values, strict=True)) + "}"
    last_refusal = refuse()  # (before the containers: a refusal here decoded none of them)
    if later and is_array and not deep:
        deep = True
        later.insert(0, "    deep = True")
    # a document's decoder learns layouts (see _decode_layouts) and tries its layout first
    types = [node[7][6] for node in nodes]
    layouts = not is_array and LayoutPlan.takes(types)
    if layouts:
        elements = [(n, key, t, len(node[7][0])) for n, (key, t, node) in enumerate(zip(keys, types, nodes, strict=True))]
        names["state"] = [None, True, 0, 0]
        names["learn"] = learn_layout
        names["plan"] = LayoutPlan(elements, names, result, later)
    source = "\n".join([
        "def decoder(data, start, end, depth):",
        *(["  deep = False"] if deep else []),
        *(["  if state[0] is not None:",
           "    r = state[0](data, start, end, depth)",
           "    if r is not None:",
           "      return r"] if layouts else []),
        "  try:",
        "    q = start + 4",
        *body,
        "    if q != end - 1 or data[q]:",
        f"        {last_refusal}",
        *later,
        *([f"    r = {result}",
           "    if state[1]:",
           "      learn(state, plan, data, start, end)",
           "    return r"] if layouts else [f"    return {result}"]),
        "  except error:",
        *(["    if deep:\n        raise fallback"] if deep else []),
        "    return None",
    ])
    exec(compile(source, "<mongo_sansio shape decoder>", "exec"), names)  # noqa: S102
    decoder: Decoder = names["decoder"]
    return decoder
