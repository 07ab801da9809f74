"""Arrays of documents decoded document by document through one shared shape root.

Input: the bytes of an array (``data[start:end]``, its length prefix checked by the caller)
whose elements are documents, the nesting depth of those documents, the trie root the
documents of this array share (see the comment on the shape trie in :mod:`._decode_parts`),
and two decoders of one document: by its root's shape decoders (the document and the shape
decoder that took it, or None when none takes it), and the general way (which also teaches
the root the document's shape).  Output: the list of
decoded documents, or None when the array is not one of plain documents (the caller then
decodes it the general way, which also reports anything malformed).

Why: a cursor's ``firstBatch`` / ``nextBatch`` and an insert's ``documents`` are arrays of
hundreds of documents that nearly always share one shape.  The general decoder tracks an
array's elements by their keys ("0", "1", ...), which differ from one element to the next, so
past the first few hundred it stops predicting and decodes each document key by key; and an
array's own shape decoder serves only arrays of the length it was compiled for.  Here each
element's header is stepped over (array keys are ignored, as the general decoder ignores
them) and each document goes to the shape decoders of the one root all of them share: first
to the one that took the document before it (no bucket lookup, no search), then, when that
one refuses it, to all of them.

The result is what the general decoder gives for the same bytes: the same documents (shape
decoders give what the general decoder gives, or refuse), and anything this loop does not
take -- an element that is not a document, a length that does not fit, a last element not
ending at the array's NUL -- returns None when met before any document was decoded, and
raises :class:`~._decode_shapes.Fallback` after (the whole attempt is then given up, as a
shape decoder's late refusal gives it up).  Errors from the general decoder of one document
propagate to the caller.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from mongo_sansio.bson._decode_shapes import Fallback

__all__ = ["read_document_array"]

_I32 = struct.Struct("<i").unpack_from

TakenBy = Callable[[dict[int, Any], bytes, int, int, int], Any]
General = Callable[[bytes, int, int, int, Any], Any]


def read_document_array(
    data: bytes,
    start: int,
    end: int,
    depth: int,
    root: list[Any],
    taken_by: TakenBy,
    general: General,
) -> list[Any] | None:
    """The documents of the array at ``data[start:end]``, or None (see the module
    docstring).  ``depth`` is the documents' nesting depth.  May raise what ``general``
    raises, struct.error or ValueError on truncated bytes (the caller converts them)."""
    documents: list[Any] = []
    append = documents.append
    find = data.index
    pos = start + 4
    stop = end - 1  # where the array's trailing NUL must be
    last: Any = None  # the shape decoder that took the last document: tried first
    while pos < stop:
        if data[pos] != 3:  # not a document: the general way
            _refuse(documents)
            return None
        value = find(0, pos + 1) + 1  # the key is skipped, as the general decoder does
        size = _I32(data, value)[0]
        pos = value + size
        if size < 5 or pos > stop:
            _refuse(documents)
            return None
        document = None
        if last is not None:
            try:
                document = last(data, value, pos, depth)
            except (Fallback, RecursionError):
                last = None
                document = general(data, value, pos, depth, root)
        if document is None:
            buckets = root[8]  # (read anew: the general decode of a document may fill it)
            found = taken_by(buckets, data, value, pos, depth) if buckets else None
            if found is None:
                last = None
                document = general(data, value, pos, depth, root)
            else:
                document, last = found
        append(document)
    if pos != stop or data[stop]:
        _refuse(documents)
        return None
    return documents


def _refuse(decoded: list[Any]) -> None:
    # Before any document was decoded the array is decoded the general way, in place; after,
    # the whole attempt is given up (Fallback), so that nested batches refused late are not
    # decoded again at every level above.
    if decoded:
        raise Fallback
