"""Layouts: the decoders of :mod:`._decode_shapes` learn the exact byte layout of documents.

Input: a document decoder's plan (its elements' keys, types and header lengths, the names
its generated code uses, the display that builds its result, and the lines that decode its
embedded documents and arrays) and a document that decoder has just decoded.  Output: a
*layout decoder* ``layout(data, start, end, depth) -> dict | None`` that decodes, with the
same values, exactly the documents whose headers, length prefixes and NUL terminators are
byte for byte those of the learned one, and returns None for anything else (the shape
decoder then runs as before).

Why: documents of one shape often share their layout as well -- fixed-width strings (ids,
codes, resume tokens, timestamps as text), numbers, dates, ObjectIds -- so every value sits
at the same offset.  A layout decoder checks the whole structure at once, by reading the
document as one integer masked to its structural bytes and comparing it with the learned
one, then reads every value with one precompiled struct call: the driver benchmark's small
document (13 fields) decodes in about 1.1 us against 2.4 us by the shape decoder's segment
reads, and the C extension's 1.0.

What it accepts: the learned document passed the shape decoder, whose checks (length
minimums, string NULs, the container's final NUL) depend only on the bytes the mask covers,
so an equal-masked document passes them too.  The value checks that depend on the value bytes
stay: strict UTF-8 (a failure returns None), boolean bytes (likewise), datetimes and int64
finished by the same expressions, embedded containers decoded by the same lines (their own
decoders, helpers and :class:`~._decode_shapes.Fallback`).  The integer read costs about
0.65 ns a byte, so a layout is learned only for documents of at most
:data:`BYTES_PER_ITEM` bytes for each structural item; larger ones keep the segment reads.

The learning policy is shared with the walkers of :mod:`._walkers`: a state list
``[layout or None, still learning, misses, layouts learned]``.  A document the layout does not
take is a miss; a document it takes sets the misses back to 0.  After :data:`RELEARN_AFTER`
misses in a row (no document of the layout in between) the current document's layout is
learned, at most :data:`MAX_LAYOUTS` times; then the layout is dropped and learning stops.
So a layout that most documents share is kept however many other documents come between
them, and documents whose layouts keep changing soon stop paying for a check.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from mongo_sansio.bson._decode_parts import I32

__all__ = [
    "BYTES_PER_ITEM", "MAX_LAYOUTS", "RELEARN_AFTER", "LayoutPlan", "learn_layout", "masked_check",
    "time_to_learn",
]

RELEARN_AFTER = 64
MAX_LAYOUTS = 8
# Reading a document as an integer costs about 0.65 ns a byte, a struct item about 15 ns:
# the integer wins on small documents.  It is used up to this many bytes for each
# structural item (a header or a length prefix) the layout fixes.
BYTES_PER_ITEM = 24

# value types whose bytes a layout decoder reads with its struct call: format, size
_FIXED_READS: dict[int, tuple[str, int]] = {
    0x01: ("d", 8), 0x10: ("i", 4), 0x12: ("q", 8), 0x08: ("B", 1), 0x0A: ("", 0),
    0x07: ("12s", 12), 0x09: ("q", 8), 0x11: ("Q", 8), 0x13: ("16s", 16),
    0xFF: ("", 0), 0x7F: ("", 0), 0x06: ("", 0),
}
_STRINGS = {0x02: "{x}.decode()", 0x0D: "code({x}.decode())"}
_CONTAINERS = {0x03, 0x04}
_BINARY = 0x05


class LayoutPlan:
    """What a document decoder hands its layouts: its elements as (number, key, type,
    header length), the namespace of its generated code, its result display, and for each
    embedded container the lines that decode it from ``s{n}`` (where its bytes start) and
    ``n{n}`` (its length)."""

    __slots__ = ("elements", "names", "result", "later")

    def __init__(
        self, elements: Sequence[tuple[int, str, int, int]], names: dict[str, Any], result: str,
        later: Sequence[str],
    ) -> None:
        self.elements = tuple(elements)
        self.names = names
        self.result = result
        self.later = tuple(later)

    @staticmethod
    def takes(types: Sequence[int]) -> bool:
        """Whether documents of these element types can have layouts (no rare types)."""
        return all(
            t in _FIXED_READS or t in _STRINGS or t in _CONTAINERS or t == _BINARY for t in types
        )


def time_to_learn(state: list[Any]) -> bool:
    """The shared policy (see the module docs), called with a document the layout in
    ``state[0]`` (if any) did not take: whether to learn this one's layout now.  With no
    layout (none learned yet, or the last document was too long for one) it is learned at
    once.  After :data:`MAX_LAYOUTS` layouts the layout is dropped and learning stops."""
    if state[0] is not None:
        state[2] += 1
        if state[2] < RELEARN_AFTER:
            return False
    if state[3] >= MAX_LAYOUTS:
        state[0] = None
        state[1] = False
        return False
    state[2] = 0
    state[3] += 1
    return True


def masked_check(mask: bytearray, learned: bytes) -> dict[str, Any]:
    """The names of the generated check ``from_bytes(<the document's bytes>, 'little') & mask
    != expected`` (true for a document of another layout): ``mask`` is 0xFF on the bytes that
    must equal those of ``learned``, the learned document's bytes over the same span."""
    wanted = int.from_bytes(mask, "little")
    return {
        "from_bytes": int.from_bytes,
        "mask": wanted,
        "expected": int.from_bytes(learned, "little") & wanted,
    }


def learn_layout(state: list[Any], plan: LayoutPlan, data: bytes, start: int, end: int) -> None:
    """Called by a document decoder that decoded ``data[start:end]`` while it learns: sets
    ``state[0]`` to a layout decoder for that document's layout (when it is small enough)."""
    if not time_to_learn(state):
        return
    size = end - start
    mask = bytearray(size)
    mask[:4] = b"\xff\xff\xff\xff"  # the document's length prefix
    mask[-1] = 0xFF  # and its final NUL
    reads = ["<4x"]  # the struct format of the values, from ``start``
    targets: list[str] = []  # the names the struct call assigns
    lines: list[str] = []  # then, the values it does not finish itself
    items = 2
    pos = start + 4
    for number, _key, t, hlen in plan.elements:
        at = pos - start
        mask[at : at + hlen] = b"\xff" * hlen
        reads.append(f"{hlen}x")
        items += 1
        vpos = pos + hlen
        fixed = _FIXED_READS.get(t)
        if fixed is not None:
            fmt, width = fixed
            if fmt:
                reads.append(fmt)
                targets.append(f"x{number}")
            pos = vpos + width
            continue
        n = I32(data, vpos)[0]
        mask[at + hlen : at + hlen + 4] = b"\xff\xff\xff\xff"
        items += 1
        if t in _STRINGS:
            mask[at + hlen + 4 + n - 1] = 0xFF  # the string's NUL
            reads.append(f"4x{n - 1}s1x")
            targets.append(f"x{number}")
            lines.append(f"    x{number} = " + _STRINGS[t].format(x=f"x{number}"))
            pos = vpos + 4 + n
        elif t == _BINARY:
            mask[at + hlen + 4] = 0xFF  # the subtype
            reads.append(f"5x{n}x" if n else "5x")
            value = vpos + 5 - start
            lines.append(
                f"    x{number} = binv(data, start + {value}, start + {value + n}, {data[vpos + 4]}, opts)"
            )
            pos = vpos + 5 + n
        else:  # an embedded document or array: decoded by the decoder's own lines
            reads.append(f"{n}x")
            lines.append(f"    s{number} = start + {vpos - start}")
            lines.append(f"    n{number} = {n}")
            pos = vpos + n
    if size > BYTES_PER_ITEM * items:
        state[0] = None  # a document this long keeps the segment reads (one of the tries)
        return
    names = plan.names
    unpack = struct.Struct("".join(reads)).unpack_from
    read = f"    {', '.join(targets)}, = unpack(data, start)" if targets else ""
    source = "\n".join([
        "def layout(data, start, end, depth):",
        f"  if end - start != {size} or from_bytes(data[start:end], 'little') & mask != expected:",
        "    return None",
        "  state[2] = 0",  # a document of the layout: the misses start again (see time_to_learn)
        "  try:",
        *([read] if read else []),
        *lines,
        *plan.later,
        f"    return {plan.result}",
        "  except error:",
        "    return None",
    ])
    scope = {**names, **masked_check(mask, data[start:end]), "unpack": unpack, "state": state}
    exec(compile(source, "<mongo_sansio layout decoder>", "exec"), scope)  # noqa: S102
    state[0] = scope["layout"]
