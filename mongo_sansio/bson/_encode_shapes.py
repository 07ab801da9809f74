"""Shape encoders: straight-line encoders for the dict shapes :func:`encode` meets repeatedly.

Input: a top-level ``dict`` encoded with the default codec options.  Output: its BSON bytes,
or None, and then :func:`~mongo_sansio.bson._encode.encode` encodes it the general way.

A *shape* is a dict's keys in order together with the exact type of each value.  The first
document of a shape is only remembered; the second compiles an encoder for it.  The encoder
is Python source generated from the shape and compiled once (the way attrs and namedtuple
make their methods): it unpacks the values, packs every run of headers and fixed-size values
with one precompiled struct call whose first field is the document's total length (summed
from constants and the lengths of the variable parts; adjacent constants are one field),
and joins the pieces once.  Embedded documents and arrays get encoders of their own shapes
the same way (arrays are shaped by their length and types), or else are encoded by the
general encoder; the nesting depth is counted along and checked against the default
``max_nesting_depth``.  Encoders are found by keys alone (arrays by types) and check their
values' types themselves, and each place in an encoder that holds a container remembers the
encoder that served it last and calls it directly (a document's keys compared first), so
the common case pays no table lookup; empty containers are written on the spot.

An encoder gives exactly the general encoder's bytes or None: any value it does not expect
(a value of another type, an int whose size class differs from the compiled one, a string
that is not UTF-8, an aware datetime, a length over int32, an embedded value that fails)
makes it return None (or give up, see :class:`_GiveUp`), and the general encoder then
encodes the document, or raises with the key path.  The source
holds only integers and the ``repr`` of bytes (the headers), never a key or value as text,
so no document content can become code.  Shapes of more than MAX_KEYS keys and shapes with
types not listed in ``_compile_element`` get no encoder; memory is bounded by MAX_SHAPES.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable
from typing import Any

from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS
from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.bson.types import (
    Binary,
    Code,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Timestamp,
    Undefined,
)

__all__ = ["shaped"]

ShapeEncoder = Callable[[dict[str, Any]], "bytes | None"]

MAX_KEYS = 256  # containers with more entries are left to the general encoder
MAX_SHAPES = 256  # per table; a full table is emptied
_INT32 = range(-(2**31), 2**31)
_MAX_DEPTH = DEFAULT_CODEC_OPTIONS.max_nesting_depth
MAX_COMPILES = 4  # per key while it stays in its table: types that keep changing stop it
_UNSHAPED = object()  # an entry's encoder slot: this shape gets no encoder
# (values' types tuple, encoder or None (not compiled yet) or _UNSHAPED, compiles so far), by
# keys tuple for documents and by the types tuple for arrays (whose keys follow from their
# length).  An entry is a tuple, replaced whole: no thread sees an encoder with other types.
_Entry = tuple[tuple[type, ...], Any, int]
_DOCUMENTS: dict[tuple[Any, ...], _Entry] = {}
_ARRAYS: dict[tuple[Any, ...], _Entry] = {}


class _GiveUp(Exception):
    """The shape attempt is given up whole, and the general encoder encodes the top-level
    document once (reporting any error with its key path).

    Raised for nesting beyond max_nesting_depth, for an embedded container the general
    encoder refuses, and by an encoder that fails after it encoded an embedded container:
    passed through every enclosing encoder, so that nothing is encoded again at every level
    above (which, for a failure at the bottom of a deep document, would take time exponential
    in its depth)."""


def _encoder(
    table: dict[tuple[Any, ...], _Entry],
    key: tuple[Any, ...],
    types: tuple[type, ...],
    container: Any,
    is_array: bool,
) -> Any:
    """The shape's encoder from ``table``, compiled at the shape's second sight; or None."""
    entry = table.get(key)
    if entry is None:
        if len(table) >= MAX_SHAPES:
            table.clear()  # a fresh start beats tracking recency
        table[key] = (types, None, 0)
        return None
    compiles = entry[2]
    if entry[0] != types:  # the types changed: compile at their next sight, up to a limit
        table[key] = (types, None if compiles < MAX_COMPILES else _UNSHAPED, compiles)
        return None
    encoder = entry[1]
    if encoder is None:
        encoder = _compile(container, is_array)
        table[key] = (types, encoder, compiles + 1)
    return None if encoder is _UNSHAPED else encoder


def shaped(document: dict[str, Any]) -> bytes | None:
    """``document``'s BSON bytes by its shape's encoder, or None (see the module docs)."""
    if len(document) > MAX_KEYS:
        return None
    try:
        return _dispatch(_DOCUMENTS, tuple(document), document, 1, False, None)
    except _GiveUp:
        return None


def _dispatch(
    table: dict[tuple[Any, ...], _Entry],
    key: tuple[Any, ...],
    container: Any,
    depth: int,
    is_array: bool,
    site: list[Any] | None,
) -> bytes | None:
    """``container``'s bytes by the encoder of its shape in ``table``, or None.

    The encoder checks the values' types itself, so the common case costs one lookup; the
    types are worked out only when it refuses or is not compiled yet (to notice new types).
    ``site``: the calling encoder's cache of the last encoder that served it (see
    :func:`_compile`), set here when an encoder succeeds.
    """
    entry = table.get(key)
    encoder = None if entry is None else entry[1]
    result: bytes | None = None
    if encoder is not None and encoder is not _UNSHAPED:
        result = encoder(container, depth)
    if result is None:
        types = key if is_array else tuple(map(type, container.values()))
        fresh = _encoder(table, key, types, container, is_array)
        if fresh is None or fresh is _UNSHAPED or fresh is encoder:  # (that one refused it)
            return None
        encoder, result = fresh, fresh(container, depth)
        if result is None:
            return None
    if site is not None:
        site[0] = (encoder, None if is_array else key)  # one store: thread-safe
    return result


def _options(depth: int) -> Any:
    """Codec options for a container at ``depth`` encoded as if it were a top-level one."""
    options = _NESTED_OPTIONS.get(depth)
    if options is None:
        options = _NESTED_OPTIONS[depth] = DEFAULT_CODEC_OPTIONS.with_options(
            max_nesting_depth=_MAX_DEPTH - depth + 1
        )
    return options


_NESTED_OPTIONS: dict[int, Any] = {}


def _nested(value: Any, depth: int, is_array: bool, site: list[Any] | None) -> bytes:
    """An embedded document or array at ``depth``: by its shape's encoder, else the general
    encoder (an array as the document of its index keys).  ``site`` as for _dispatch."""
    if depth > _MAX_DEPTH:
        raise _GiveUp
    # an array's shape is its types (its keys follow from its length)
    key = tuple(map(type, value)) if is_array else tuple(value)
    if len(key) <= MAX_KEYS:
        result = _dispatch(_ARRAYS if is_array else _DOCUMENTS, key, value, depth, is_array, site)
        if result is not None:
            return result
    if is_array:
        value = {str(index): item for index, item in enumerate(value)}
    try:
        return _general()(value, _options(depth))  # type: ignore[no-any-return]
    except Exception:  # reported by the general encoder of the whole document
        raise _GiveUp from None


_GENERAL: list[Any] = []


def _general() -> Any:
    """The general encoder (imported on first use: _encode imports this module)."""
    if not _GENERAL:
        from mongo_sansio.bson._encode import encode

        _GENERAL.append(encode)
    return _GENERAL[0]


class _Builder:
    """Collects an encoder's statements and its output as runs of struct fields and pieces.

    Constant bytes (headers, NULs) next to each other are packed as one field, and a run of
    constants alone becomes a bytes literal."""

    def __init__(self) -> None:
        self.lines: list[str] = []  # statements before the output is built: first checks
        self.deep_lines: list[str] = []  # and conversions, then the embedded containers
        self.checks: list[str] = []  # conditions on the values' types, any true: refuse
        self.fixed_size = 4  # bytes of the struct-packed parts, the length prefix included
        self.lengths: list[str] = []  # expressions: the lengths of the variable pieces
        self.output: list[str] = []  # expressions joined into the result
        self.fmt = "<i"  # the open run: struct format and argument expressions
        self.args = ["total"]
        self.constant_bytes = b""  # constants waiting to join the open run
        self.names: dict[str, Any] = {}

    def constant(self, data: bytes) -> None:
        self.constant_bytes += data
        self.fixed_size += len(data)

    def _flush(self) -> None:
        if self.constant_bytes:
            self.fmt += f"{len(self.constant_bytes)}s"
            self.args.append(repr(self.constant_bytes))
            self.constant_bytes = b""

    def field(self, fmt: str, expr: str, size: int) -> None:
        self._flush()
        self.fmt += fmt
        self.args.append(expr)
        self.fixed_size += size

    def header(self, type_byte: int, key_cstring: bytes) -> None:
        self.constant(bytes([type_byte]) + key_cstring)

    def piece(self, expr: str) -> None:
        """A variable-size piece (bytes) after the open run; its length counts in the total."""
        self.close_run()
        self.output.append(expr)
        self.lengths.append(f"len({expr})")

    def close_run(self) -> None:
        if not self.args:  # constants only: a literal
            if self.constant_bytes:
                self.output.append(repr(self.constant_bytes))
                self.constant_bytes = b""
            return
        self._flush()
        name = f"p{len(self.names)}"
        self.names[name] = struct.Struct(self.fmt).pack
        self.output.append(f"{name}({', '.join(self.args)})")
        self.fmt, self.args = "<", []

    def string(self, type_byte: int, key_cstring: bytes, text: str) -> None:
        """A string-like value: int32 length counting the NUL, UTF-8, NUL."""
        self.header(type_byte, key_cstring)
        self.lines.append(f"    {text}b = {text}.encode()")
        self.field("i", f"len({text}b) + 1", 4)
        self.piece(f"{text}b")
        self.constant(b"\x00")

    def container(self, n: int, is_array: bool) -> None:
        """Statements that encode value ``n``, an embedded document or array, into ``b{n}``:
        empty at once; else by the encoder that served this place last time (a document's
        keys checked here, the types by the encoder), else by :func:`_nested`."""
        v, site = f"v{n}", f"s{n}"
        self.names[site] = [None]  # (encoder, keys or None for an array) or None
        empty = b"\x05\x00\x00\x00\x00"
        keys = "" if is_array else f" and tuple({v}) == c[1]"
        self.deep_lines.append(f"""    c = {site}[0]
    if not {v} and depth < {_MAX_DEPTH}:
        b{n} = {empty!r}
    elif c is not None and depth < {_MAX_DEPTH}{keys}:
        b{n} = c[0]({v}, depth + 1)
        if b{n} is None:
            b{n} = nested({v}, depth + 1, {is_array}, {site})
    else:
        b{n} = nested({v}, depth + 1, {is_array}, {site})""")


def _compile_element(out: _Builder, n: int, key_cstring: bytes, value: Any) -> bool:
    """Add element ``n`` (value in variable ``v{n}``) to ``out``; False for a type or value
    the encoders do not handle."""
    v = f"v{n}"
    t = type(value)
    if value is None:
        out.checks.append(f"{v} is not None")
    else:
        out.names[f"T{n}"] = t
        out.checks.append(f"type({v}) is not T{n}")
    if t is str:
        out.string(0x02, key_cstring, v)
    elif t is int:
        if value in _INT32:  # int32; 'i' refuses larger values: then the general encoder
            out.header(0x10, key_cstring)
            out.field("i", v, 4)
        else:  # int64: an int that fits int32 is written as int32 by the general encoder
            out.lines.append(f"    if -2147483648 <= {v} <= 2147483647:\n        return None")
            out.header(0x12, key_cstring)
            out.field("q", v, 8)
    elif t is bool:
        out.header(0x08, key_cstring)
        out.field("?", v, 1)
    elif value is None or t is MinKey or t is MaxKey or t is Undefined:
        type_byte = 0x0A if value is None else 0xFF if t is MinKey else 0x7F if t is MaxKey else 6
        out.header(type_byte, key_cstring)
    elif t is float:
        out.header(0x01, key_cstring)
        out.field("d", v, 8)
    elif t is Int64:
        out.header(0x12, key_cstring)
        out.field("q", v, 8)
    elif t is dict or t is list:
        out.container(n, t is list)
        out.header(0x03 if t is dict else 0x04, key_cstring)
        out.piece(f"b{n}")
    elif t is bytes:
        out.header(0x05, key_cstring)
        out.field("i", f"len({v})", 4)
        out.constant(b"\x00")  # subtype 0
        out.piece(v)
    elif t is Binary:
        # (the old subtype 2 repeats the length inside the payload: left to the general one)
        out.lines.append(f"    if {v}.subtype == 2:\n        return None")
        out.header(0x05, key_cstring)
        out.field("iB", f"len({v}), {v}.subtype", 5)
        out.piece(v)
    elif t is ObjectId:
        out.header(0x07, key_cstring)
        out.field("12s", f"{v}._id", 12)
    elif t is datetime.datetime and value.tzinfo is None:
        out.lines.append(f"    if {v}.tzinfo is not None:\n        return None")
        out.lines.append(f"    {v} = {v} - epoch")
        out.header(0x09, key_cstring)
        ms = f"({v}.days * 86400 + {v}.seconds) * 1000 + {v}.microseconds // 1000"
        out.field("q", ms, 8)
    elif t is Timestamp:
        out.header(0x11, key_cstring)
        out.field("II", f"{v}.inc, {v}.time", 8)
    elif t is Decimal128:
        out.header(0x13, key_cstring)
        out.field("16s", f"{v}.bid", 16)
    elif t is Regex:
        out.header(0x0B, key_cstring)
        out.piece(f"regex({v})")
    elif t is Code and value.scope is None:
        out.lines.append(f"    if {v}.scope is not None:\n        return None")
        out.string(0x0D, key_cstring, v)
    elif t is Code and type(value.scope) is dict:
        # code with scope: int32 total length, the code as a string, the scope document
        out.lines.append(f"    if type({v}.scope) is not dict:\n        return None")
        out.lines.append(f"    {v}b = {v}.encode()")
        out.deep_lines.append(f"    {v}s = nested({v}.scope, depth + 1, False, None)")
        out.header(0x0F, key_cstring)
        out.field("ii", f"len({v}b) + len({v}s) + 9, len({v}b) + 1", 8)
        out.piece(f"{v}b")
        out.constant(b"\x00")
        out.piece(f"{v}s")
    else:
        return False
    return True


def _compile(container: Any, is_array: bool) -> Any:
    """The encoder for ``container``'s shape (int sizes as in it), or _UNSHAPED."""
    from mongo_sansio.bson._encode import _regex

    out = _Builder()
    items = enumerate(container) if is_array else enumerate(container.items())
    for n, item in items:
        key, value = (str(n), item) if is_array else item
        if type(key) is not str or "\x00" in key:
            return _UNSHAPED
        try:
            key_cstring = key.encode() + b"\x00"
        except UnicodeEncodeError:
            return _UNSHAPED
        if not _compile_element(out, n, key_cstring, value):
            return _UNSHAPED
    out.constant(b"\x00")  # the container's trailing NUL
    out.close_run()
    values = "".join(f"v{n}, " for n in range(len(container)))
    total = " + ".join([str(out.fixed_size), *out.lengths])
    deep = bool(out.deep_lines)
    source = "\n".join([
        "def encoder(container, depth):",
        *(["  deep = False"] if deep else []),
        "  try:",
        f"    {values or '()'} = container" + ("" if is_array else ".values()"),
        *([f"    if {' or '.join(out.checks)}:", "        return None"] if out.checks else []),
        *out.lines,
        *(["    deep = True", *out.deep_lines] if out.deep_lines else []),
        f"    total = {total}",  # over int32: packing it fails, and so the general encoder
        f"    return join(({', '.join(out.output)},))",
        "  except giveup:",
        "    raise",
        "  except Exception:  # the general encoder encodes it, or says what is wrong",
        *(["    if deep:\n        raise giveup from None"] if deep else []),
        "    return None",
    ])
    names = {
        **out.names,
        "join": b"".join,
        "nested": _nested,
        "giveup": _GiveUp,
        "regex": _regex,
        "epoch": datetime.datetime(1970, 1, 1),
    }
    exec(compile(source, "<mongo_sansio shape encoder>", "exec"), names)  # noqa: S102
    return names["encoder"]
