"""Shape walkers: straight-line indexers for the document shapes RawDocument has met before.

Input: a *shape*, the element headers (type byte, key, NUL) of one whole document in order,
as the nodes of the decoder's shape trie give them.  Output: a walker and its key table.
``walker(data, pos, stop) -> tuple[int, ...] | None`` gives, for a document of exactly that
shape whose first element starts at ``pos`` and whose trailing NUL is at ``stop``, the
position where each element starts, in document order and relative to the document's start
(its length prefix, at ``pos - 4``); the key table maps each key to its
element's number in that tuple, and all documents of the shape share it.  For any other
bytes the walker returns None, and the caller walks element by element as before, which
also reports what is wrong.

Why: a lazy lookup must find an element by walking over the ones before it, and a general
walk costs a round of interpreted bytecode per element.  A walker knows the shape, so it
reads every header up to the next value whose length must be read (a string, document,
array or binary) with one precompiled struct call, compares them all at once, and computes
the positions with a few additions.  The tweet of the driver benchmark (17 elements) is
checked in 7 struct calls.  A walker also remembers the layout (every header and length) of
a document it indexed and checks the next one against it first, with one masked integer
comparison: the documents of a shape often share their layout as well (see RELEARN_AFTER).

A walker accepts exactly what the element-by-element walk accepts (headers equal, lengths
at least their minimum, the last element ending at ``stop``), so a walker can never change
a result.  Positions only grow from one value to the next, so a document that runs past
``stop`` fails the final comparison; a read past the buffer raises struct.error, which is
turned into None.

Walkers are made by generating Python source and compiling it, the way attrs and
namedtuple make their methods.  The source holds only integers and the ``repr`` of bytes,
which are literals, so no document content can become code.  Only shapes with distinct keys
and without the rare types whose length is not a prefix (regex, DBPointer, code with scope,
symbol and unknown types) get a walker.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from mongo_sansio.bson import _decode_layouts
from mongo_sansio.bson._decode_layouts import masked_check, time_to_learn
from mongo_sansio.bson._decode_parts import I32, MISS
from mongo_sansio.bson._decode_shapes import ARRAY_BUCKET, bucket_of, compile_decoder

__all__ = ["COMPLETIONS", "Walker", "compile_walker", "remember_shape"]

Walker = Callable[[bytes, int, int], "tuple[int, ...] | None"]

# skip mode (see _decode_parts) -> least valid length of the value: string, document, binary
_LEAST = {1: 1, 2: 5, 3: 0}


def _segments(nodes: Sequence[Any]) -> list[list[Any]] | None:
    """Split a shape into runs that end on a value with a length prefix (or at the end)."""
    segments: list[list[Any]] = [[]]
    for node in nodes:
        walk = node[7]  # (header, unpack_from, key, size, len(header), skip mode, type)
        if walk[5] == 4:
            return None
        segments[-1].append(walk)
        if walk[5]:
            segments.append([])
    if not segments[-1]:
        segments.pop()
    return segments


def compile_walker(nodes: Sequence[Any]) -> tuple[Walker, dict[str, int]] | None:
    """The walker and key table for the shape whose trie nodes are ``nodes`` (first element
    first), or None when the shape repeats a key or holds a type a walker does not handle."""
    segments = _segments(nodes)
    keys = {node[7][2]: number for number, node in enumerate(nodes)}
    if segments is None or not nodes or len(keys) != len(nodes):
        return None
    walks = [node[7] for node in nodes]
    state: list[Any] = [None, True, 0, 0]  # see _learn_layout
    names: dict[str, Any] = {"error": struct.error, "state": state, "walks": walks,
                             "learn": _learn_layout}
    lines = [
        "def walker(data, q0, stop):",
        "    fixed = state[0]",
        "    if fixed is not None:",
        "        p = fixed(data, q0, stop)",
        "        if p is not None:",
        "            return p",
        "    try:",
    ]
    entries: list[str] = []
    for number, segment in enumerate(segments):
        fmt = ["<"]
        offset = 0
        headers = []
        for hdr, _, _, size, hlen, skip, _ in segment:
            entries.append(f"q{number} + {offset}" if offset else f"q{number}")
            headers.append(hdr)
            if skip:
                fmt.append(f"{hlen}si")  # the value's int32 length prefix
                base = offset + (hlen if skip == 2 else size + 1 if skip == 3 else size)
                least = _LEAST[skip]
            else:
                fmt.append(f"{hlen}s{size - hlen}x" if size > hlen else f"{hlen}s")
            offset += size
        names[f"u{number}"] = struct.Struct("".join(fmt)).unpack_from
        read = f"u{number}(data, q{number})"
        last_skip = segment[-1][5]
        if not last_skip:  # only fixed-size values: the segment closes the document
            lines.append(f"        if {read} != {tuple(headers)!r}:")
            lines.append("            return None")
            lines.append(f"        q{number + 1} = q{number} + {offset}")
        elif len(headers) == 1:
            lines.append(f"        h, n = {read}")
            lines.append(f"        if n < {least} or h != {headers[0]!r}:")
            lines.append("            return None")
            lines.append(f"        q{number + 1} = q{number} + {base} + n")
        else:
            lines.append(f"        g = {read}")
            lines.append("        n = g[-1]")
            lines.append(f"        if n < {least} or g[:-1] != {tuple(headers)!r}:")
            lines.append("            return None")
            lines.append(f"        q{number + 1} = q{number} + {base} + n")
    lines.append("    except error:")
    lines.append("        return None")
    lines.append(f"    if q{len(segments)} != stop:")
    lines.append("        return None")
    lines.append("    s = q0 - 4")  # positions are relative to the document's length prefix
    lines.append("    p = (" + ", ".join(f"{entry} - s" for entry in entries) + ",)")
    lines.append("    if state[1]:")
    lines.append("        learn(state, walks, data, p, q0, stop)")
    lines.append("    return p")
    exec(compile("\n".join(lines), "<mongo_sansio shape walker>", "exec"), names)  # noqa: S102
    walker: Walker = names["walker"]
    return walker, keys


# Layouts: a walker remembers the layout of a document it indexed -- every header and every
# length prefix, so every position -- and first checks the next document against it: a small
# document's bytes read as one integer, masked to the header and length-prefix bytes, and
# compared with the remembered one (a larger one's headers and prefixes in one struct call).
# That costs about 0.34 us for the driver benchmark's small document against 0.9 us for its
# eight segment reads, and the positions, the same for every document of the layout, are one
# shared tuple.  Documents of one shape often share their layout too (fixed-width strings:
# ids, codes, timestamps as text; numbers, dates, ObjectIds), and a document of another
# layout just takes the segment reads.  When to learn a layout (RELEARN_AFTER misses in a
# row, at most MAX_LAYOUTS times) is the policy the shape decoders' layouts follow too
# (_decode_layouts.time_to_learn), and so is the choice of the integer (BYTES_PER_ITEM).


class LayoutPositions(tuple[int, ...]):
    """The positions a layout check gives for every document of its layout, with the
    layout's key table (:func:`_layout_table`) as ``table``."""

    table: dict[str, Any]


# value types whose place and length a layout fixes, read straight by RawDocument lookups
LAYOUT_STRING, LAYOUT_INT32, LAYOUT_DOUBLE = 0x02, 0x10, 0x01


def _layout_table(
    walks: list[Any], data: bytes, start: int, positions: tuple[int, ...]
) -> dict[str, Any]:
    """The key table of a layout: like the shape's (key -> element number), but a string,
    int32 or double maps to ``(type, value start, value end, element number)``, relative to
    the document's start (a string's end excludes its NUL): every document of the layout
    has that value there, so a lookup reads it without reading the header or the length."""
    table: dict[str, Any] = {}
    for number, walk in enumerate(walks):
        key, hlen, t = walk[2], walk[4], walk[6]
        value = positions[number] + hlen
        if t == LAYOUT_STRING:
            n = I32(data, start + value)[0]
            table[key] = (t, value + 4, value + 3 + n, number)
        elif t == LAYOUT_INT32:
            table[key] = (t, value, value + 4, number)
        elif t == LAYOUT_DOUBLE:
            table[key] = (t, value, value + 8, number)
        else:
            table[key] = number
    return table


def _learn_layout(
    state: list[Any], walks: list[Any], data: bytes, positions: tuple[int, ...], q0: int,
    stop: int,
) -> None:
    """Called by a walker that indexed ``data`` (first element at ``q0``) by its segment
    reads, while it learns; ``positions`` are relative to the document's start, ``q0 - 4``.

    ``state``: [layout checker or None, still learning, misses in a row (a document the
    checker takes sets them back to 0), layouts learned].  The checker accepts exactly the documents whose headers and length
    prefixes equal those of ``data`` and whose size is the same: the segment reads accepted
    ``data``, so they accept those as well, with the same positions.  Its callers have read
    the byte at ``stop`` (the document's trailing NUL), so the slice it reads is never short.
    """
    if not time_to_learn(state):
        return
    size = stop - q0
    fmt = ["<"]  # a struct format that reads every header and length prefix
    expected: list[Any] = []
    mask = bytearray(size)  # 0xFF where a byte must equal this document's: the same bytes
    for number, walk in enumerate(walks):
        at = positions[number] - 4  # (relative to q0)
        hdr, hlen, skip = walk[0], walk[4], walk[5]
        span = (positions[number + 1] - 4 if number + 1 < len(positions) else size) - at
        expected.append(hdr)
        if skip:  # the length prefix follows the header (binary: then the subtype)
            fmt.append(f"{hlen}si")
            expected.append(I32(data, q0 + at + hlen)[0])
            kept = hlen + 4
        else:
            fmt.append(f"{hlen}s")
            kept = hlen
        if span > kept:
            fmt.append(f"{span - kept}x")
        mask[at : at + kept] = b"\xff" * kept
    if size <= _decode_layouts.BYTES_PER_ITEM * len(expected):
        check = "from_bytes(data[q0:stop], 'little') & mask != expected"
        names: dict[str, Any] = masked_check(mask, data[q0:stop])
    else:
        check = "unpack(data, q0) != expected"  # (the length check keeps it in bounds)
        names = {"unpack": struct.Struct("".join(fmt)).unpack_from, "expected": tuple(expected)}
    names["state"] = state
    names["positions"] = LayoutPositions(positions)
    names["positions"].table = _layout_table(walks, data, q0 - 4, positions)
    source = "\n".join([
        "def fixed(data, q0, stop):",
        f"    if stop - q0 != {size} or {check}:",
        "        return None",
        "    state[2] = 0",  # a document of the layout: the misses start again
        "    return positions",
    ])
    exec(compile(source, "<mongo_sansio layout check>", "exec"), names)  # noqa: S102
    state[0] = names["fixed"]


# Marks (in a trie node's last slot) a node where a whole document ended once: the walker of
# that shape is compiled when a second document of it comes, so one-off shapes cost nothing.
# A shape that cannot have a walker is marked so, and not tried again.
SEEN = "seen"
UNWALKABLE = "unwalkable"
# How many more first lookups may walk a document whole when no walker took it (see
# RawDocument._walk): a few walks give a shape its walker; a shape that can have none would
# otherwise be walked whole at every lookup.  Each walker compiled refills the budget.
COMPLETIONS_BUDGET = 256
COMPLETIONS = [COMPLETIONS_BUDGET]
MAX_WALKERS = 4  # per bucket of a root; tried in turn, the one that fits moved to the front
MAX_BUCKETS = 64  # per root
_REPLACE_EVERY = 256  # with all places taken, a new shape evicts the last walker this rarely
_countdown = [_REPLACE_EVERY]


def _no_walker(data: bytes, pos: int, stop: int) -> None:
    """The walker of a top-level shape that has a decoder but no walker: it takes nothing."""
    return None


def remember_shape(
    root: list[Any], last: list[Any], walker: bool = True, array: bool = False
) -> None:
    """Note that a careful walk or decode from ``root`` went through a whole container,
    ending on trie node ``last`` with as many distinct keys as ``last``'s ordinal: on the
    second such container, compile the shape into ``root``'s shapes, each a tuple (walker,
    key table, decoder, ``last``).  Slot 8 of the root holds them in buckets, a dict keyed by the first
    element's type byte and first key byte (:func:`bucket_of`, plus ARRAY_BUCKET for an
    ``array``), so that with many shapes a container tries only the few that begin alike.
    ``walker``: RawDocument reads this root (the top-level one), so its shapes get walkers
    (:func:`_no_walker` where the shape allows none); elsewhere walker and key table are
    None."""
    if last is root:  # an empty container: nothing to walk
        return
    mark = last[8]
    if mark is not SEEN:
        if mark is None:
            last[8] = SEEN
        return
    buckets = root[8]
    bucket = bucket_of(root[0][7][0], 0)  # the first header, as the walk just predicted it
    if array:
        bucket |= ARRAY_BUCKET
    shapes = None if buckets is None else buckets.get(bucket)
    if shapes is not None and any(shape[3] is last for shape in shapes):
        return  # compiled before: its decoder refused this one for what lies inside
    if shapes is not None and len(shapes) >= MAX_WALKERS:
        _countdown[0] -= 1
        if _countdown[0] > 0:
            return
        _countdown[0] = _REPLACE_EVERY
    nodes = []
    node = root
    for _ in range(last[6]):  # follow the predictions, which the walk just set
        node = node[0]
        if node is MISS:  # the chain is shorter than the walk was
            return
        nodes.append(node)
    if node is not last:  # another document changed the predictions meanwhile
        return
    from mongo_sansio.bson._decode import decode_array, decode_nested, read_value

    pair = compile_walker(nodes) if walker else None  # (an array's root is never read so)
    decoder = compile_decoder(nodes, decode_nested, decode_array, read_value, array)
    if decoder is None and pair is None:
        last[8] = UNWALKABLE
        return
    if walker and pair is None:
        pair = (_no_walker, {})
    elif pair is not None:
        COMPLETIONS[0] = COMPLETIONS_BUDGET
    shape = (None, None, decoder, last) if pair is None else (*pair, decoder, last)
    # new containers each time (never changed in place): other threads may be reading
    if shapes is None:
        shapes = [shape]
    elif len(shapes) >= MAX_WALKERS:
        shapes = [*shapes[: MAX_WALKERS - 1], shape]
    else:
        shapes = [*shapes, shape]
    if buckets is None or len(buckets) >= MAX_BUCKETS:
        buckets = {}  # a fresh start beats tracking recency
    root[8] = {**buckets, bucket: shapes}
