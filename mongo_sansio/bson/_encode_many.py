"""Encoding a list of documents in one run of the encoder (an insert's documents).

Input: a list of dicts and codec options.  Output: their encodings back to back, exactly
``b"".join(encode(d) for d in documents)``, or None (:func:`encode_batch`) when they cannot be
done together -- a member that is not a plain dict, or one that does not encode -- so that the
caller encodes them one by one and :func:`~._encode.encode` raises what it raises.

Why: each call of ``encode`` pays its setup (entry checks, the parts list, two joins); for an
insert of 100 small documents that per-call cost was most of the wire encoder's framing time.
Here the documents become the elements of one top-level document, each under a private key
whose header in the dict-header cache is empty, so that document's bytes are the documents'
own encodings between one length prefix and one NUL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import repeat
from typing import Any

from mongo_sansio.bson._encode import (
    _BIG_CONTAINER,
    _BSON_SIZE_LIMIT,
    _H_DOC,
    _INT32,
    encode,
)
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions

__all__ = ["encode_many", "encode_batch"]


# The key every document of a batch sits under; its element header (in the dict cache) is
# empty.
_HEADERLESS: Any = object()


class _Batch(Mapping[Any, Any]):
    """Documents as the elements of one document, all under the key _HEADERLESS."""

    __slots__ = ("_documents",)

    def __init__(self, documents: list[dict[str, Any]]) -> None:
        self._documents = documents

    def __len__(self) -> int:
        return len(self._documents)

    def __iter__(self) -> Iterator[Any]:
        return repeat(_HEADERLESS, len(self._documents))

    def __getitem__(self, key: Any) -> Any:
        raise KeyError(key)

    def items(self) -> Any:  # what encode() iterates: a C iterator, no Python call per pair
        return zip(repeat(_HEADERLESS), self._documents)


# (options, the batch's options: one more level of nesting, no size limit of its own), for
# the options last used (usually the defaults): options are immutable, so this is never stale.
def _options_for_batch(opts: CodecOptions) -> tuple[CodecOptions, CodecOptions]:
    depth = opts.max_nesting_depth + 1
    return opts, opts.with_options(max_nesting_depth=depth, max_document_size=None)


_batch_options = _options_for_batch(DEFAULT_CODEC_OPTIONS)
_ONLY_DICTS = {dict}


def encode_many(
    documents: list[dict[str, Any]], codec_options: CodecOptions | None = None
) -> bytes:
    """``b"".join([encode(document, codec_options) for document in documents])``, faster.

    The documents are encoded in one run of the encoder (each call's setup is paid once, not
    per document).  The size and nesting limits apply to each document as in :func:`encode`,
    and what is raised for a bad document is exactly what :func:`encode` raises for the first.
    """
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    data = encode_batch(documents, opts)
    if data is None:
        return b"".join([encode(document, opts) for document in documents])
    return bytes(data)


def encode_batch(documents: list[Any], opts: CodecOptions) -> memoryview | None:
    """The concatenated encodings of ``documents`` if they are all ``dict`` and all encode
    (within ``opts``' limits), else None: then encode them one by one to learn why.

    (For the wire layer: a view, not a copy, of the batch's encoding.)
    """
    global _batch_options
    cached = _batch_options
    if cached[0] is not opts:
        _batch_options = cached = _options_for_batch(opts)
    batch_opts = cached[1]
    count = len(documents)
    try:
        if count <= _BIG_CONTAINER:
            _H_DOC[_HEADERLESS] = b""  # again each time: a full cache is emptied
            data = memoryview(encode(_Batch(documents), batch_opts))[4:-1]
        else:  # in chunks: a bigger container would be walked on the slower uncached path
            chunks = []
            for first in range(0, count, _BIG_CONTAINER):
                _H_DOC[_HEADERLESS] = b""
                chunk = documents[first : first + _BIG_CONTAINER]
                chunks.append(memoryview(encode(_Batch(chunk), batch_opts))[4:-1])
            data = memoryview(b"".join(chunks))
    except Exception:  # a value that is not a dict meets a header cache without its key, too
        return None
    limit = opts.max_document_size or _BSON_SIZE_LIMIT
    if len(data) > limit:  # then a document may be over the limit: find it
        offset = 0
        unpack_from = _INT32.unpack_from
        while offset < len(data):
            size: int = unpack_from(data, offset)[0]
            if size > limit:
                return None
            offset += size
    return data
