"""The general BSON decoding loop, and its hand-over to the shape decoders.

Input: a buffer, the bounds of one container in it (its length prefix checked by the caller),
:class:`CodecOptions` with what the loop needs from them worked out once
(:func:`settings_for`), the container's nesting depth and kind, and its root in the shape
trie (or None).  Output: the decoded container, as :mod:`._decode` documents the values;
every malformation raises :class:`InvalidBSON` with its offset.  :mod:`._decode` holds the
public functions, which call :func:`read_general`; the shape decoders call back into
:func:`decode_nested` and :func:`decode_array` for the containers inside them.

One loop per call, no recursion -- nested containers are entered by pushing the parent on an
explicit list, so nesting depth is limited only by ``max_nesting_depth`` and never by the
Python stack.  Keys are mostly not searched for nor decoded: the *shape trie*
(:mod:`._decode_parts`) predicts each element's header from the documents seen before, and
one struct call checks the prediction and reads the value.  The common types are decoded
inline in if/elif chains ordered by frequency.  Structure is checked with a few comparisons
per element; slicing past the end (which Python answers with short data instead of an error)
is caught by the exact end-of-container check: every element must end exactly where its
container's trailing NUL sits.  With the default codec options, a document (or array)
whose shape was decoded before at the same trie root goes through that shape's compiled
decoder (:mod:`._decode_shapes`), which gives the same value or refuses, and then this loop
runs (on the whole top-level document, or on just the array its decoder refused).
"""

from __future__ import annotations

import datetime
import struct
from typing import Any

from mongo_sansio.bson._decode_batches import read_document_array
from mongo_sansio.bson._decode_parts import (
    DOUBLE,
    EPOCH_NAIVE,
    I32,
    I64,
    LEARN_BUDGET,
    LEARN_DEPTH,
    OBJECTID,
    TRIE,
    bad_end,
    bad_string,
    binary_value,
    code_header,
    converter,
    count_nodes,
    datetime_value,
    finish_dbref,
    make_code,
    make_timestamp,
    new_node,
    new_root,
    read_rare,
    too_deep,
)
from mongo_sansio.bson._decode_shapes import ARRAY_BUCKET, Fallback, bucket_of
from mongo_sansio.bson._walkers import remember_shape
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions, DatetimeConversion
from mongo_sansio.bson.decimal128 import Decimal128
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.types import DATETIME_MAX_MS, DATETIME_MIN_MS, Code, Int64

__all__ = [
    "DEFAULT_SETTINGS",
    "KIND_ARRAY",
    "KIND_DOC",
    "KIND_TOP",
    "Settings",
    "decode_array",
    "decode_nested",
    "read_general",
    "settings_for",
]

# Container kinds: how a container is finished when its trailing NUL is reached.  (While a
# code-with-scope's scope document is decoded, its "kind" is the code string.)
KIND_TOP = 0  # a document decoded on its own: never turned into a DBRef
KIND_DOC = 1  # an embedded document: may be a DBRef
KIND_ARRAY = 2


_RAW_CLASS: list[type] = []


def _is_raw(doc_class: type) -> bool:
    """Is ``doc_class`` the lazy RawDocument (or a subclass)?"""
    if not _RAW_CLASS:
        from mongo_sansio.bson.raw import RawDocument  # late: raw.py imports this (via _decode)

        _RAW_CLASS.append(RawDocument)
    return isinstance(doc_class, type) and issubclass(doc_class, _RAW_CLASS[0])


# strict, errors, document class, lazy (RawDocument), convert, plain dates, max depth,
# max document size
Settings = tuple[bool, str, Any, bool, Any, bool, int, int | None]
_SETTINGS: dict[int, tuple[CodecOptions, Settings]] = {}


def settings_for(opts: CodecOptions) -> Settings:
    """What the loop needs from ``opts``, worked out once per CodecOptions object."""
    entry = _SETTINGS.get(id(opts))
    if entry is not None and entry[0] is opts:
        return entry[1]
    errors = opts.unicode_decode_error_handler
    doc_class = opts.document_class
    lazy = doc_class is not dict and _is_raw(doc_class)
    settings: Settings = (
        errors == "strict",
        errors,
        doc_class,
        lazy,
        None if doc_class is dict or lazy else converter(doc_class),
        not opts.tz_aware
        and opts.datetime_conversion
        in (DatetimeConversion.DATETIME, DatetimeConversion.DATETIME_AUTO),
        opts.max_nesting_depth,
        opts.max_document_size,
    )
    if len(_SETTINGS) >= 64:
        _SETTINGS.clear()
    _SETTINGS[id(opts)] = (opts, settings)  # holding opts keeps its id from being reused
    return settings


DEFAULT_SETTINGS = settings_for(DEFAULT_CODEC_OPTIONS)


def read_general(
    data: bytes,
    start: int,
    end: int,
    opts: CodecOptions,
    settings: Settings,
    depth: int,
    kind: Any,
    node: Any,
    # bound once, when the function is made: locals are the cheapest names to look up
    i32: Any = I32,
    i64: Any = I64,
    double: Any = DOUBLE,
    objectid: Any = OBJECTID,
    epoch: datetime.datetime = EPOCH_NAIVE,
    timedelta: Any = datetime.timedelta,
    int64: Any = Int64,
    unpack_error: Any = struct.error,
) -> Any:
    """:func:`._decode.read_document` with the settings worked out and the trie root (or None)
    given."""
    strict, errors, doc_class, lazy, convert, plain_dates, max_depth, _ = settings
    if depth > max_depth:
        raise too_deep(max_depth, start)
    # shape decoders (_decode_shapes) serve the default options: a shape met before is
    # decoded by one straight-line function; None from it means "decode the general way"
    shaped = remember = opts is DEFAULT_CODEC_OPTIONS
    top_root = node
    if shaped and kind == KIND_TOP and node is not None and node[8]:
        done = _by_shape(node[8], data, start, end, depth)
        if done is not None:
            return done
        shaped = False  # no shape decoder took it: none below it will be tried either
    find = data.index
    learn = LEARN_BUDGET  # nodes this decode may still add to the trie
    stack: list[tuple[Any, Any, int, str, Any, bool, bool]] = []
    track = node is not None  # predicting headers
    arr = kind == KIND_ARRAY and not track  # (a tracked array is a dict until it is done)
    cur: Any = [] if arr else {}
    stop = end - 1  # where this container's trailing NUL must be
    pos = start + 4
    key = ""
    value: Any
    try:
        while True:
            while pos < stop:
                if track:
                    nxt = node[0]
                    hdr, unpack, key, size, vkind = nxt[1]
                    try:
                        h, value = unpack(data, pos)
                    except unpack_error:  # the prediction runs past the data: a miss
                        h = None
                    if h == hdr:  # as predicted: the key is known, the value's fixed part read
                        node = nxt
                        pos += size
                        # (value kinds as in _decode_parts, as literals: globals are slower)
                        if vkind == 0:
                            cur[key] = value
                            continue
                        if vkind == 1:  # string; value is its length
                            s = pos
                            pos += value
                            e = pos - 1
                            if value < 1 or data[e]:
                                raise bad_string("string", value, s - 4)
                            if strict:
                                cur[key] = data[s:e].decode()
                            else:
                                cur[key] = data[s:e].decode("utf-8", errors)
                            continue
                        if vkind < 4:  # document or array; value is its length
                            e = pos + value - 5  # where its NUL must be
                            if value < 5 or e >= stop:
                                raise InvalidBSON(
                                    f"embedded document length {value} does not fit", pos - 4
                                )
                            if depth >= max_depth:
                                raise too_deep(max_depth, pos - 4)
                            if value == 5 and not lazy and convert is None:
                                # an empty container: no need to go in
                                if data[pos]:
                                    raise bad_end(data, pos, pos)
                                pos += 1
                                cur[key] = {} if vkind == 2 else []
                                continue
                            if vkind == 2 and lazy:
                                pos -= 4
                                cur[key] = doc_class._view(data, pos, pos + value, opts, None)
                                pos += value
                                continue
                            sub = nxt[4]
                            if vkind == 2 and shaped and sub is not None and sub[8]:
                                done = _by_shape(sub[8], data, pos - 4, pos - 4 + value, depth + 1)
                                if done is not None:
                                    cur[key] = done
                                    pos += value - 4
                                    continue
                                shaped = False  # the rest of this decode goes the general way
                            stack.append((cur, kind, stop, key, node, arr, track))
                            if sub is None and learn:
                                learn -= 1
                                sub = nxt[4] = new_root()
                            node = sub
                            depth += 1
                            stop = e
                            # a tracked array collects its items in a dict keyed "0", "1", ...
                            # (the trie has checked those keys) and becomes a list at its end
                            kind = vkind - 1  # KIND_DOC or KIND_ARRAY
                            if sub is not None:
                                cur = {}
                                arr = False
                                track = True
                            elif vkind == 2:
                                cur = {}
                                arr = False
                                track = False
                            else:
                                cur = []
                                arr = True
                                track = False
                            continue
                        if vkind == 4:
                            if value == 1:
                                cur[key] = True
                            elif value == 0:
                                cur[key] = False
                            else:
                                raise InvalidBSON(f"boolean byte {value} is not 0 or 1", pos - 1)
                            continue
                        if vkind == 5:
                            cur[key] = nxt[5]
                            continue
                        if vkind == 6:
                            cur[key] = int64(value)
                            continue
                        if vkind == 7:
                            cur[key] = objectid(value)
                            continue
                        if vkind == 8:
                            if plain_dates and DATETIME_MIN_MS <= value <= DATETIME_MAX_MS:
                                cur[key] = epoch + timedelta(0, 0, 0, value)
                            else:
                                cur[key] = datetime_value(value, opts)
                            continue
                        if vkind == 9:  # binary; value is its length
                            if value < 0:
                                raise InvalidBSON(f"binary length {value} is negative", pos - 4)
                            s = pos + 1
                            pos = s + value
                            if pos > stop:
                                raise InvalidBSON("binary value runs past its document", s - 5)
                            cur[key] = binary_value(data, s, pos, data[s - 1], opts)
                            continue
                        if vkind == 10:  # code; value is its length
                            s = pos
                            pos += value
                            if value < 1 or data[pos - 1]:
                                raise bad_string("code", value, s - 4)
                            cur[key] = make_code(data[s : pos - 1].decode("utf-8", errors))
                            continue
                        if vkind == 11:
                            cur[key] = make_timestamp(value >> 32, value & 0xFFFFFFFF)
                            continue
                        if vkind == 12:
                            cur[key] = Decimal128.from_bid(value)
                            continue
                        t = nxt[2]  # other types: the general code below
                    else:
                        t = data[pos]
                        kend = find(0, pos + 1)
                        hdr = data[pos : kend + 1]
                        kids = node[3]
                        nxt = None if kids is None else kids.get(hdr)
                        if nxt is not None:  # seen before after this same element
                            key = nxt[1][2]
                            node[0] = nxt
                            node = nxt
                        else:
                            if kind == 2:  # array keys are compared, never decoded: their
                                key = str(node[6])  # text is ignored, as untracked arrays do
                                fits = data[pos + 1 : kend] == key.encode()
                            else:
                                key = data[pos + 1 : kend].decode()
                                fits = True
                            if learn and node[6] < LEARN_DEPTH and fits:
                                learn -= 1
                                nxt = new_node(hdr, t, key, node[6] + 1)
                                if kind == 2:  # the documents of an array share one root
                                    shared = node[4]
                                    if shared is None:
                                        shared = node[4] = new_root()
                                    nxt[4] = shared
                                if kids is None:
                                    node[3] = kids = {}
                                kids[hdr] = nxt
                                node[0] = nxt
                                node = nxt
                            else:  # budget spent, document too long or odd array keys
                                node = None
                                track = False
                                if kind == 2:
                                    cur = list(cur.values())
                                    arr = True
                        pos = kend + 1
                elif arr:  # array keys are "0", "1", ... by convention; their text is ignored
                    t = data[pos]
                    pos = find(0, pos + 1) + 1
                else:
                    t = data[pos]
                    kend = find(0, pos + 1)
                    key = data[pos + 1 : kend].decode()
                    pos = kend + 1

                # the general code: value of type t at pos
                if t == 2:
                    n = i32(data, pos)[0]
                    s = pos + 4
                    pos = s + n
                    if n < 1 or data[pos - 1]:
                        raise bad_string("string", n, s - 4)
                    if strict:
                        value = data[s : pos - 1].decode()
                    else:
                        value = data[s : pos - 1].decode("utf-8", errors)
                elif t == 16:
                    value = i32(data, pos)[0]
                    pos += 4
                elif t == 1:
                    value = double(data, pos)[0]
                    pos += 8
                elif t == 3 or t == 4:
                    n = i32(data, pos)[0]
                    if n < 5 or pos + n > stop:
                        raise InvalidBSON(f"embedded document length {n} does not fit", pos)
                    if depth >= max_depth:
                        raise too_deep(max_depth, pos)
                    if t == 3 and lazy:
                        value = doc_class._view(data, pos, pos + n, opts, None)
                        pos += n
                    else:
                        stack.append((cur, kind, stop, key, node, arr, track))
                        if node is not None:  # the child's root in the trie
                            sub = node[4]
                            if sub is None and learn:
                                learn -= 1
                                sub = node[4] = new_root()
                            node = sub
                        depth += 1
                        stop = pos + n - 1
                        pos += 4
                        kind = 1 if t == 3 else 2
                        if t == 3 or node is not None:  # (a tracked array is a dict for now)
                            cur = {}
                            arr = False
                            track = node is not None
                        else:
                            cur = []
                            arr = True
                            track = False
                        continue
                elif t == 18:
                    value = int64(i64(data, pos)[0])
                    pos += 8
                elif t == 8:
                    value = data[pos]
                    pos += 1
                    if value == 1:
                        value = True
                    elif value == 0:
                        value = False
                    else:
                        raise InvalidBSON(f"boolean byte {value} is not 0 or 1", pos - 1)
                elif t == 10:
                    value = None
                elif t == 7:
                    value = objectid(data[pos : pos + 12])
                    pos += 12
                elif t == 9:
                    value = i64(data, pos)[0]
                    pos += 8
                    if plain_dates and DATETIME_MIN_MS <= value <= DATETIME_MAX_MS:
                        value = epoch + timedelta(0, 0, 0, value)
                    else:
                        value = datetime_value(value, opts)
                elif t == 15:
                    code, scope_start, scope_end = code_header(data, pos, stop, errors)
                    if lazy:
                        value = Code(code, doc_class._view(data, scope_start, scope_end, opts, None))
                        pos = scope_end
                    else:
                        if depth >= max_depth:
                            raise too_deep(max_depth, pos)
                        stack.append((cur, kind, stop, key, node, arr, track))
                        depth += 1
                        pos = scope_start + 4
                        stop = scope_end - 1
                        cur = {}
                        kind = code  # a str kind marks a scope document
                        arr = False
                        node = None  # scopes are rare: not worth a place in the trie
                        track = False
                        continue
                else:
                    value, pos = read_rare(data, t, pos, opts)
                if arr:
                    cur.append(value)
                else:
                    cur[key] = value

            # the current container is complete: its last element must end at its NUL
            if pos != stop or data[stop]:
                raise bad_end(data, pos, stop)
            if track and remember and node[6] == len(cur) and node[6]:
                # a whole container on the trie, keys distinct: its shape may get a decoder
                root = stack[-1][4][4] if stack else top_root
                if root is not None:
                    remember_shape(root, node, root is TRIE[0], kind == 2)
            value = cur
            if kind == 1:  # KIND_DOC
                if "$ref" in value:
                    value = finish_dbref(value, convert)
                elif convert is not None:
                    value = convert(value)
            elif kind == 2:  # KIND_ARRAY
                if not arr:  # tracked: its items are in a dict
                    value = list(value.values())
            elif kind == 0:  # KIND_TOP
                if convert is not None:
                    value = convert(value)
            else:  # a scope document; kind is the code
                value = Code(kind, value if convert is None else convert(value))
            if not stack:
                return value
            pos = stop + 1
            cur, kind, stop, key, node, arr, track = stack.pop()
            depth -= 1
            if arr:
                cur.append(value)
            else:
                cur[key] = value
    except InvalidBSON:
        raise
    except (IndexError, struct.error) as exc:
        raise InvalidBSON(f"data ends inside an element ({exc})", pos) from None
    except UnicodeDecodeError as exc:
        raise InvalidBSON(f"invalid UTF-8 in a key or string ({exc.reason})", pos) from None
    except ValueError as exc:  # bytes.index: a key without its NUL
        raise InvalidBSON(f"key is not NUL-terminated ({exc})", pos) from None
    finally:
        if learn != LEARN_BUDGET:
            count_nodes(LEARN_BUDGET - learn)


def _by_shape(buckets: dict[int, Any], data: bytes, start: int, end: int, depth: int) -> Any:
    """The document at ``data[start:end]`` by the first shape decoder that takes it, or None
    (the caller then decodes it the general way, with no shape decoders below it)."""
    if end - start < 7:  # an empty document: no first element to choose a bucket by
        return None
    shapes = buckets.get(bucket_of(data, start + 4))
    if shapes is None:
        return None
    try:
        for shape in shapes:
            decoder = shape[2]
            if decoder is not None:
                value = decoder(data, start, end, depth)
                if value is not None:
                    return value
    except (Fallback, RecursionError):  # (the general decoder needs no call stack)
        pass
    return None


def _taken_by(buckets: dict[int, Any], data: bytes, start: int, end: int, depth: int) -> Any:
    """As _by_shape, but (the document, the shape decoder that took it), or None: a batch
    tries that decoder first on its next document.  (Not _by_shape returning a pair: that
    runs for every embedded document a shape decoder meets, where the pair would cost.)"""
    if end - start < 7:
        return None
    shapes = buckets.get(bucket_of(data, start + 4))
    if shapes is None:
        return None
    try:
        for shape in shapes:
            decoder = shape[2]
            if decoder is not None:
                value = decoder(data, start, end, depth)
                if value is not None:
                    return value, decoder
    except (Fallback, RecursionError):
        pass
    return None


def decode_nested(data: bytes, start: int, end: int, depth: int, node: Any) -> Any:
    """An embedded document for a shape decoder (default options): by the shape decoders of
    its element ``node``'s trie root, or the general way when that root has none yet.
    Raises InvalidBSON, or Fallback when the root's decoders refuse the document."""
    if depth > DEFAULT_CODEC_OPTIONS.max_nesting_depth:
        raise too_deep(DEFAULT_CODEC_OPTIONS.max_nesting_depth, start)
    sub = node[4]
    if sub is not None and sub[8]:
        value = _by_shape(sub[8], data, start, end, depth)
        if value is None:
            raise Fallback
        return value
    return read_general(
        data, start, end, DEFAULT_CODEC_OPTIONS, DEFAULT_SETTINGS, depth, KIND_DOC, sub
    )


def decode_array(data: bytes, start: int, end: int, depth: int, node: Any) -> Any:
    """An array for a shape decoder (default options): by a shape decoder of its element
    ``node``'s trie root, or else the general way, in place (arrays often vary in length
    where the documents around them do not).  Raises Fallback when it cannot be decoded."""
    if depth > DEFAULT_CODEC_OPTIONS.max_nesting_depth:
        raise too_deep(DEFAULT_CODEC_OPTIONS.max_nesting_depth, start)
    sub = node[4]
    if end - start > 5 and data[start + 4] == 3:  # documents: each by the shapes they share
        try:
            documents = _document_array(data, start, end, depth, node)
        except (InvalidBSON, IndexError, ValueError, struct.error):
            raise Fallback from None  # reported by the general decoder of the whole document
        if documents is not None:
            return documents
    if sub is not None and sub[8] and end - start > 5:
        shapes = sub[8].get(bucket_of(data, start + 4) | ARRAY_BUCKET)
        if shapes is not None:
            for shape in shapes:  # a None is a refusal before any element was decoded
                value = shape[2](data, start, end, depth)
                if value is not None:
                    return value
    try:
        return read_general(
            data, start, end, DEFAULT_CODEC_OPTIONS, DEFAULT_SETTINGS, depth, KIND_ARRAY, sub
        )
    except InvalidBSON:  # reported by the general decoder of the whole document
        raise Fallback from None


def _general_document(data: bytes, start: int, end: int, depth: int, root: Any) -> Any:
    return read_general(
        data, start, end, DEFAULT_CODEC_OPTIONS, DEFAULT_SETTINGS, depth, KIND_DOC, root
    )


def _document_array(data: bytes, start: int, end: int, depth: int, node: Any) -> Any:
    """The array of documents of element ``node`` (default options), decoded document by
    document through the trie root its documents share (:mod:`._decode_batches`), or None."""
    sub = node[4]
    if sub is None:
        sub = node[4] = new_root()
        count_nodes(1)
    shared = sub[4]  # the root all documents of the array share, as the general decoder has it
    if shared is None:
        shared = sub[4] = new_root()
        count_nodes(1)
    return read_document_array(data, start, end, depth + 1, shared, _taken_by, _general_document)
