"""RawDocument and RawArray: lazy, zero-copy, read-only views over BSON bytes.

Input: one BSON document as ``bytes``, ``bytearray`` or ``memoryview`` (the latter two are
copied to ``bytes`` once; ``bytes`` are used as they are), and optional :class:`CodecOptions`
for the values read from it.  Only the outer length prefix and the trailing NUL are checked
up front.

Output: a :class:`collections.abc.Mapping`.  Looking a key up walks the elements forward
from where the previous walk stopped, only as far as that key, recording every key it passes
in an index; so the first keys are cheap and keys seen before cost a dict lookup.  A document
whose shape has been met before is indexed whole by that shape's compiled walker
(:mod:`._walkers`) on its first lookup, which costs less than walking to its third key; while
no walker takes a document, a lookup that stopped early walks on to the end (within a
budget), so that readers of a few leading fields also teach the shapes they meet.  Values
are decoded on each access: embedded documents come back as :class:`RawDocument` and arrays
as :class:`RawArray` over the same buffer (nothing is copied), everything else as
:func:`~mongo_sansio.bson.decode` would give it.  :meth:`RawDocument.to_dict` decodes the whole
document.  :attr:`RawDocument.raw` is the document's bytes, which the encoder writes through
unchanged.

Malformed bytes raise :class:`InvalidBSON` when the walk reaches them, so a document with a
corrupt tail still yields its first keys.  Where a key occurs twice, lookups give the first
occurrence and iteration lists the key once (``to_dict``, like ``decode``, keeps the last
value).  Embedded documents stay views: a ``{"$ref": ..., "$id": ...}`` subdocument is a
RawDocument here, a DBRef in ``to_dict()``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, overload

from mongo_sansio.bson._decode import KIND_ARRAY, as_bytes, document_end, read_document, read_value
from mongo_sansio.bson._decode_parts import (
    DOUBLE,
    I32,
    I64,
    LEARN_BUDGET,
    LEARN_DEPTH,
    TRIE,
    bad_string,
    count_nodes,
    new_node,
    value_end,
)
from mongo_sansio.bson._walkers import COMPLETIONS as completions
from mongo_sansio.bson._walkers import LAYOUT_INT32, LAYOUT_STRING, remember_shape
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.types import Int64

__all__ = ["RawDocument", "RawArray"]

_new = object.__new__
_DICT_OPTIONS: dict[int, tuple[CodecOptions, CodecOptions]] = {}


def _dict_options(opts: CodecOptions) -> CodecOptions:
    """``opts`` with dict as the document class (for full decodes), made once per options."""
    if opts.document_class is dict:
        return opts
    entry = _DICT_OPTIONS.get(id(opts))
    if entry is None or entry[0] is not opts:
        if len(_DICT_OPTIONS) >= 64:
            _DICT_OPTIONS.clear()
        as_dicts = opts.with_options(document_class=dict)
        if as_dicts == DEFAULT_CODEC_OPTIONS:  # the shape decoders serve that very object
            as_dicts = DEFAULT_CODEC_OPTIONS
        entry = _DICT_OPTIONS[id(opts)] = (opts, as_dicts)
    return entry[1]


def _value(data: bytes, t: int, pos: int, stop: int, opts: CodecOptions) -> Any:
    """The value of type ``t`` at ``pos`` (inside a container whose NUL is at ``stop``)."""
    if t == 3 or t == 4:
        end = document_end(data, pos, stop, opts)
        if t == 3:
            return RawDocument._view(data, pos, end, opts, None)
        return RawArray._view(data, pos, end, opts)
    return read_value(data, t, pos, stop, opts)[0]


def _walk_miss(data: bytes, pos: int, node: Any, learn: int) -> tuple[Any, int, str, int, int]:
    """A walk's element that the trie did not predict: read its header, find or learn its
    node.  Returns the new node (None: stop following the trie), the type byte, the key,
    where the value starts and the remaining learning budget."""
    t = data[pos]
    kend = data.index(0, pos + 1)
    hdr = data[pos : kend + 1]
    kids = node[3]
    nxt = None if kids is None else kids.get(hdr)
    if nxt is not None:
        node[0] = nxt
        return nxt, t, nxt[1][2], kend + 1, learn
    key = data[pos + 1 : kend].decode()
    if learn and node[6] < LEARN_DEPTH:
        nxt = new_node(hdr, t, key, node[6] + 1)
        if kids is None:
            node[3] = kids = {}
        kids[hdr] = nxt
        node[0] = nxt
        return nxt, t, key, kend + 1, learn - 1
    return None, t, key, kend + 1, learn


def _to_front(buckets: dict[int, list[Any]], bucket: int, shapes: list[Any], shape: Any) -> None:
    """Put ``shape`` first in its bucket, in a new list: other threads may read the old one."""
    buckets[bucket] = [shape, *(other for other in shapes if other is not shape)]


# The index of a view not walked yet: one empty dict shared by all of them (a view costs a
# dict less; a batch of a thousand documents makes a thousand views).  Never written to:
# the first walk gives the view a dict of its own.
UNWALKED: Final[dict[str, int]] = {}


class RawDocument(Mapping[str, Any]):
    """A read-only mapping over the bytes of one BSON document, decoded lazily.

    ``RawDocument(data, codec_options=None)``; see the module documentation.
    """

    __slots__ = (
        "_data", "_start", "_end", "_opts", "_index", "_scan", "_node", "_whole", "_positions"
    )

    _data: bytes
    _start: int
    _end: int
    _opts: CodecOptions
    _index: dict[str, Any]  # key -> where its element starts (or its number, see below)
    _scan: int  # where the walk goes on, or -1 once it has reached the end
    _node: Any  # the walk's place in the decoder's shape trie, or None
    # ``_data`` when the document spans all of it, else None: a batch of whole documents is
    # then written out by one C-level pass over this slot (wire/encode.py, _encode_all).
    _whole: bytes | None
    # None, or when a shape walker indexed the document: where each element starts, in
    # order and relative to ``_start`` (so documents of one layout share the tuple), and
    # then ``_index`` is the shape's shared key table (key -> element number), or when a
    # layout check took the document the layout's (_walkers._layout_table: some values'
    # places as well).
    _positions: tuple[int, ...] | None

    def __init__(
        self, data: bytes | bytearray | memoryview, codec_options: CodecOptions | None = None
    ) -> None:
        opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
        if type(data) is not bytes:
            data = as_bytes(data)
        size = len(data)
        if size < 5 or I32(data, 0)[0] != size or data[size - 1]:
            end = document_end(data, 0, size, opts)
            if end != size:
                raise InvalidBSON(f"{size - end} bytes follow the document", end)
            raise InvalidBSON(f"document ends with byte {data[size - 1]}, not NUL", size - 1)
        if opts.max_document_size is not None:
            document_end(data, 0, size, opts)
        self._data = data
        self._start = 0
        self._end = size
        self._opts = opts
        self._index = UNWALKED
        self._scan = 4
        self._node = TRIE[0]
        self._whole = data
        self._positions = None

    @classmethod
    def _view(
        cls, data: bytes, start: int, end: int, opts: CodecOptions, node: Any
    ) -> RawDocument:
        """A view of ``data[start:end]``, whose length prefix the caller has checked."""
        if data[end - 1]:
            raise InvalidBSON(f"document ends with byte {data[end - 1]}, not NUL", end - 1)
        self = _new(cls)
        self._data = data
        self._start = start
        self._end = end
        self._opts = opts
        self._index = UNWALKED
        self._scan = start + 4
        self._node = node
        self._whole = data if start == 0 and end == len(data) else None
        self._positions = None
        return self

    @property
    def raw(self) -> bytes | memoryview:
        """The document's bytes: the ``bytes`` object itself when the view spans all of it
        (a top-level document made from ``bytes``), else a read-only memoryview slice."""
        data = self._data
        if self._start == 0 and self._end == len(data):
            return data
        return memoryview(data)[self._start : self._end]

    @property
    def codec_options(self) -> CodecOptions:
        return self._opts

    def _walk(self, target: Any, root: Any = None) -> int:
        """Walk on, indexing keys, until ``target`` is passed; return its index entry.

        Returns -1 when the walk reaches the end without meeting ``target`` (pass None to
        walk to the end).  The walk follows the decoder's shape trie while the document
        looks like those seen before, so known keys need no search and no decoding.
        ``root``: the trie root a walk from the first element started at, for a walk that
        goes on from where that one stopped (the shape is remembered when it ends whole).
        """
        pos = self._scan
        if pos < 0:
            return -1
        data = self._data
        stop = self._end - 1
        node = self._node
        if node is not None and pos == self._start + 4:
            buckets = node[8]  # (a root's): the shapes met before, see _walkers
            # (_decode_shapes.bucket_of, inlined: this is the hot path of every first lookup)
            walkers = buckets.get(data[pos] << 8 | data[pos + 1]) if buckets and pos < stop else None
            if walkers:
                for pair in walkers:
                    positions = pair[0](data, pos, stop)
                    if positions is not None:
                        if pair is not walkers[0]:
                            _to_front(buckets, data[pos] << 8 | data[pos + 1], walkers, pair)
                        # shared, never written to: the shape's key table, or the layout's
                        keys = self._index = pair[1] if type(positions) is tuple else positions.table
                        self._positions = positions
                        self._scan = -1
                        self._node = None
                        number = keys.get(target)
                        if number is None:
                            return -1
                        if type(number) is tuple:  # (a layout's entry: its number is last)
                            number = number[3]
                        found: int = positions[number] + self._start
                        return found
            root = node
        index = self._index
        if index is UNWALKED:  # the first walk: the view gets an index of its own
            index = self._index = {}
        setdefault = index.setdefault
        learn = LEARN_BUDGET
        found = -1
        end = pos
        try:
            while pos < stop:
                if node is not None:
                    nxt = node[0]
                    hdr, unpack, key, size, hlen, skip, t = nxt[7]
                    try:
                        h, n = unpack(data, pos)
                    except struct.error:
                        h = None
                    if h == hdr:
                        node = nxt
                        if skip == 0:
                            end = pos + size
                        elif skip == 1:  # string or code: n is its length
                            if n < 1:
                                raise bad_string("string", n, pos + hlen)
                            end = pos + size + n
                        elif skip == 2:  # document or array: n is its length
                            if n < 5:
                                raise InvalidBSON(f"embedded document length {n} is too small", pos)
                            end = pos + hlen + n
                        elif skip == 3:  # binary: n is its payload's length
                            if n < 0:
                                raise InvalidBSON(f"binary length {n} is negative", pos)
                            end = pos + size + 1 + n
                        else:
                            end = value_end(data, t, pos + hlen)
                    else:
                        node, t, key, vpos, learn = _walk_miss(data, pos, node, learn)
                        end = value_end(data, t, vpos)
                else:
                    t = data[pos]
                    kend = data.index(0, pos + 1)
                    key = data[pos + 1 : kend].decode()
                    end = value_end(data, t, kend + 1)
                # the index keeps where the element starts; an element that runs past the
                # document shows at the end of the walk, or below when its value is wanted
                setdefault(key, pos)  # the first occurrence of a key wins
                if key == target:  # (not indexed before, or the walk would not be looking)
                    if end > stop:
                        raise InvalidBSON("an element runs past the end of its document", pos)
                    found = pos
                    pos = end
                    break
                pos = end
            else:
                if pos != stop:
                    raise InvalidBSON("an element runs past the end of its document", stop)
            if pos == stop:  # the whole document is indexed
                pos = -1
                if node is not None and root is TRIE[0] and node[6] == len(self._index):
                    remember_shape(root, node)
        except InvalidBSON:
            raise
        except (IndexError, struct.error) as exc:
            raise InvalidBSON(f"data ends inside an element ({exc})", pos) from None
        except UnicodeDecodeError as exc:
            raise InvalidBSON(f"invalid UTF-8 in a key ({exc.reason})", pos) from None
        except ValueError as exc:
            raise InvalidBSON(f"key is not NUL-terminated ({exc})", pos) from None
        finally:
            if learn != LEARN_BUDGET:
                count_nodes(LEARN_BUDGET - learn)
        self._scan = pos
        self._node = node
        if root is not None and pos >= 0 and completions[0] > 0:
            # A lookup stopped early in a document no shape walker took: index the rest too,
            # so that its shape is remembered and gets a walker (a document is remembered
            # only once it has been walked whole, and a reader of a few leading fields never
            # walks one whole).  A tail that fails is left for the lookups that reach it.
            completions[0] -= 1
            try:
                self._walk(None, root)
            except InvalidBSON:
                pass
        return found

    def __getitem__(self, key: str) -> Any:
        epos = self._index.get(key)
        if epos is None:
            epos = self._walk(key)
            if epos < 0:
                raise KeyError(key)
            if self._positions is not None:  # a walker indexed it: its layout may fix the value
                entry = self._index.get(key)
                if type(entry) is tuple:
                    return self._fixed_value(entry)
        elif self._positions is not None:
            if type(epos) is tuple:
                return self._fixed_value(epos)
            epos = self._positions[epos] + self._start
        data = self._data
        t = data[epos]
        # the value follows the header: type byte, the key's UTF-8, NUL
        vpos = epos + 2 + (len(key) if key.isascii() else len(key.encode()))
        stop = self._end - 1
        if t == 2:  # the commonest cases inline; the rest in _value
            n = I32(data, vpos)[0]
            end = vpos + 4 + n
            if n < 1 or end > stop or data[end - 1]:
                raise bad_string("string", n, vpos)
            try:
                return data[vpos + 4 : end - 1].decode("utf-8", self._opts.unicode_decode_error_handler)
            except UnicodeDecodeError as exc:
                raise InvalidBSON(f"invalid UTF-8 in a string ({exc.reason})", vpos) from None
        if t == 3:
            n = I32(data, vpos)[0]
            if n < 5 or vpos + n > stop:
                raise InvalidBSON(f"embedded document length {n} does not fit", vpos)
            end = vpos + n
            if data[end - 1]:
                raise InvalidBSON(f"document ends with byte {data[end - 1]}, not NUL", end - 1)
            view = _new(RawDocument)
            view._data = data
            view._start = vpos
            view._end = end
            view._opts = self._opts
            view._index = UNWALKED
            view._scan = vpos + 4
            view._node = None
            view._whole = None
            view._positions = None
            return view
        if t == 18 and vpos + 8 <= stop:  # int64: an Int64
            value = I64(data, vpos)[0]
            return Int64(value)
        return _value(data, t, vpos, stop, self._opts)

    def _fixed_value(self, entry: tuple[int, int, int, int]) -> Any:
        """The value a layout's key table places (see _walkers._layout_table): the layout
        check has matched its header and length prefix already; a string's NUL is checked
        here."""
        t, value, end, _number = entry
        start = self._start
        data = self._data
        if t == LAYOUT_STRING:
            if data[start + end]:  # (the layout fixed the length, not the NUL after the text)
                raise bad_string("string", end - value + 1, start + value - 4)
            try:
                return data[start + value : start + end].decode("utf-8", self._opts.unicode_decode_error_handler)
            except UnicodeDecodeError as exc:
                # (at its length prefix, as the element-by-element lookup reports it)
                raise InvalidBSON(f"invalid UTF-8 in a string ({exc.reason})", start + value - 4) from None
        if t == LAYOUT_INT32:
            return I32(data, start + value)[0]
        return DOUBLE(data, start + value)[0]

    def get(self, key: str, default: Any = None) -> Any:
        try:  # (one lookup, not a membership test and then another)
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in self._index or self._walk(key) >= 0

    def __iter__(self) -> Iterator[str]:
        self._walk(None)
        return iter(self._index)

    def __len__(self) -> int:
        self._walk(None)
        return len(self._index)

    def __bool__(self) -> bool:
        return self._end - self._start > 5

    def to_dict(self) -> Any:
        """Decode the whole document, as :func:`~mongo_sansio.bson.decode` would."""
        opts = _dict_options(self._opts)
        # the top-level shapes serve a top-level document and a batch's (a view from a reply,
        # made on that root: its walk has kept a node or indexed it by a walker), not the
        # documents embedded in one, whose shapes would crowd them out
        top = self._start == 0 or self._node is not None or self._positions is not None
        return read_document(self._data, self._start, self._end, opts, shapes=top)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawDocument):
            return self.raw == other.raw
        if isinstance(other, Mapping):
            return bool(self.to_dict() == (other if isinstance(other, dict) else dict(other)))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # like dict: equal to dicts, so unhashable

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (bytes(self.raw), self._opts))

    def __repr__(self) -> str:
        try:
            content = repr(self.to_dict())
        except InvalidBSON:
            content = repr(bytes(self.raw))
        return f"{type(self).__name__}({content})"


class RawArray(Sequence[Any]):
    """A read-only sequence over the bytes of one BSON array, decoded lazily.

    Made by :class:`RawDocument` (and by itself, for nested arrays); items are walked to
    only as far as an index asks, and decoded on each access like RawDocument's values.
    """

    __slots__ = ("_data", "_start", "_end", "_opts", "_codes", "_scan")

    _data: bytes
    _start: int
    _end: int
    _opts: CodecOptions
    _codes: list[int]  # per item: (value position << 8) | type byte
    _scan: int

    @classmethod
    def _view(cls, data: bytes, start: int, end: int, opts: CodecOptions) -> RawArray:
        if data[end - 1]:
            raise InvalidBSON(f"array ends with byte {data[end - 1]}, not NUL", end - 1)
        self = _new(cls)
        self._data = data
        self._start = start
        self._end = end
        self._opts = opts
        self._codes = []
        self._scan = start + 4
        return self

    @property
    def raw(self) -> memoryview:
        """The array's bytes (a BSON document whose keys are "0", "1", ...)."""
        return memoryview(self._data)[self._start : self._end]

    def _walk(self, count: int) -> None:
        """Walk on until ``count`` items are known (or the array ends)."""
        pos = self._scan
        if pos < 0:
            return
        data = self._data
        codes = self._codes
        stop = self._end - 1
        find = data.index
        try:
            while pos < stop and len(codes) < count:
                t = data[pos]
                vpos = find(0, pos + 1) + 1  # the key's text is ignored, as by decode
                end = value_end(data, t, vpos)
                if end > stop:
                    raise InvalidBSON("an element runs past the end of its array", pos)
                codes.append(vpos << 8 | t)
                pos = end
        except InvalidBSON:
            raise
        except (IndexError, struct.error) as exc:
            raise InvalidBSON(f"data ends inside an element ({exc})", pos) from None
        except ValueError as exc:
            raise InvalidBSON(f"key is not NUL-terminated ({exc})", pos) from None
        self._scan = -1 if pos >= stop else pos

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
            if index < 0:
                raise IndexError("array index out of range")
        codes = self._codes
        if index >= len(codes):
            self._walk(index + 1)
            if index >= len(codes):
                raise IndexError("array index out of range")
        code = codes[index]
        return _value(self._data, code & 0xFF, code >> 8, self._end - 1, self._opts)

    def __len__(self) -> int:
        self._walk(1 << 62)
        return len(self._codes)

    def __iter__(self) -> Iterator[Any]:
        i = 0
        while True:
            if i >= len(self._codes):
                self._walk(i + 1)
                if i >= len(self._codes):
                    return
            code = self._codes[i]
            yield _value(self._data, code & 0xFF, code >> 8, self._end - 1, self._opts)
            i += 1

    def to_list(self) -> list[Any]:
        """Decode the whole array, as :func:`~mongo_sansio.bson.decode` would."""
        opts = _dict_options(self._opts)
        return list(read_document(self._data, self._start, self._end, opts, 1, KIND_ARRAY, False))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawArray):
            return self.raw == other.raw
        if isinstance(other, Sequence) and not isinstance(other, str | bytes | bytearray):
            return self.to_list() == list(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_array, (bytes(self.raw), self._opts))

    def __repr__(self) -> str:
        try:
            content = repr(self.to_list())
        except InvalidBSON:
            content = repr(bytes(self.raw))
        return f"RawArray({content})"


def _rebuild_array(data: bytes, opts: CodecOptions) -> RawArray:
    end = document_end(data, 0, len(data), opts)
    return RawArray._view(data, 0, end, opts)
