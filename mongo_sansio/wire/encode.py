"""Writing wire messages: documents in, bytes (or a list of buffers) out.

* :func:`encode_op_msg_buffers` returns an OP_MSG as a list of buffers: a small prefix (header,
  flagBits, section kind), then the body's bytes, then each sequence's section header followed
  by its documents.  Already-encoded documents -- :class:`~mongo_sansio.bson.RawDocument`,
  ``bytes``, ``bytearray``, ``memoryview`` -- are placed in the list as they are, never
  copied; a transport writes the list with one ``writelines``/``sendmsg``.
  :func:`encode_op_msg` joins the same list into one ``bytes``.
* With ``checksum=True`` a CRC-32C of the whole message is appended (flag bit 0).  With a
  ``compressor`` the message is wrapped in OP_COMPRESSED -- unless its command is one the
  compression specification forbids to compress (hello, legacy hello, the authentication and
  user commands: :func:`~.compression.may_compress`), which then goes uncompressed.
* :func:`encode_op_query` writes the legacy OP_QUERY a client sends as its first hello
  (namespace ``admin.$cmd``, numberToReturn -1); :func:`encode_op_reply` writes the OP_REPLY a
  server answers it with (the simulated server needs it); :func:`compress_message` wraps any
  encoded message in OP_COMPRESSED.

Request ids are the caller's: they come from a :class:`RequestIds` counter the caller owns
(one per client), never from module state.  Bad arguments raise
:class:`~mongo_sansio.errors.LocalProtocolError` (or the BSON encoder's InvalidDocument, which
is one).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import Any, cast

from mongo_sansio.bson import encode
from mongo_sansio.bson._encode_many import encode_batch
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.raw import RawDocument
from mongo_sansio.errors import DocumentTooLarge, LocalProtocolError
from mongo_sansio.wire.compression import Compressor, compressor_for, may_compress
from mongo_sansio.wire.crc32c import crc32c
from mongo_sansio.wire.messages import (
    CHECKSUM_PRESENT,
    EXHAUST_ALLOWED,
    HEADER_SIZE,
    OP_COMPRESSED,
    OP_MSG,
    OP_QUERY,
    OP_REPLY,
    UNKNOWN_REQUIRED_BITS,
)

__all__ = [
    "RequestIds",
    "Buffer",
    "encode_op_msg",
    "encode_op_msg_buffers",
    "encode_op_query",
    "encode_op_reply",
    "compress_message",
    "document_bytes",
    "first_key",
]

Buffer = bytes | bytearray | memoryview

_PREFIX = struct.Struct("<iiiiIB").pack  # header, flagBits, kind 0 of the body section
_HEADER = struct.Struct("<iiii").pack
_COMPRESSED_HEADER = struct.Struct("<iiiiiiB").pack
_KIND1 = struct.Struct("<Bi").pack
_U32 = struct.Struct("<I").pack
_I32 = struct.Struct("<i").unpack_from
_LAST_BYTE = itemgetter(-1)
_ONLY_BYTES = {bytes}
# RawDocument's ``_whole`` slot read straight from its descriptor: a C call per document that
# refuses (TypeError) anything that is not a RawDocument.
_WHOLE: Callable[[Any], bytes | None] = vars(RawDocument)["_whole"].__get__
_QUERY_FIELDS = struct.Struct("<ii").pack
_REPLY_FIELDS = struct.Struct("<iqii").pack
_INT32_MAX = 0x7FFFFFFF
_EXHAUST_COMMANDS = frozenset({"hello", "ismaster", "getmore"})
_IDENTIFIERS: dict[str, bytes] = {}


class RequestIds:
    """A request-id counter: 1, 2, 3, ... up to 2**31 - 1, then 1 again.

    One per client (all its connections draw from it, so an id names one request); tests and
    simulations pass their own, so runs are reproducible.  ``next()`` (or calling it) gives
    the next id.
    """

    __slots__ = ("_last",)

    def __init__(self, start: int = 1) -> None:
        if not isinstance(start, int) or not 1 <= start <= _INT32_MAX:
            raise LocalProtocolError(f"request ids start at 1 to 2**31-1, not {start!r}")
        self._last = start - 1

    def next(self) -> int:
        value = self._last + 1
        if value > _INT32_MAX:
            value = 1
        self._last = value
        return value

    __call__ = next

    def __repr__(self) -> str:
        return f"RequestIds(next={1 if self._last >= _INT32_MAX else self._last + 1})"


def document_bytes(document: Any, codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS) -> Buffer:
    """The BSON bytes of ``document``: a mapping is encoded; a RawDocument's bytes and
    already-encoded ``bytes``/``bytearray``/``memoryview`` pass through (their length prefix
    and trailing NUL are checked, not their contents)."""
    kind = type(document)
    if kind is dict:
        return encode(document, codec_options)
    if kind is bytes or kind is bytearray or kind is memoryview:
        return _checked_encoded(document)
    if isinstance(document, RawDocument):
        return document.raw
    if isinstance(document, Mapping):
        return encode(document, codec_options)
    if isinstance(document, bytes | bytearray | memoryview):
        return _checked_encoded(document)
    raise LocalProtocolError(
        f"a document must be a mapping, a RawDocument or BSON bytes, not {kind.__name__}"
    )


def _checked_encoded(data: Buffer) -> Buffer:
    size = len(data)
    if size < 5 or _I32(data, 0)[0] != size or data[size - 1] != 0:
        raise LocalProtocolError(
            f"pre-encoded document of {size} bytes has a bad length prefix or no trailing NUL"
        )
    return data


def _encode_all(documents: Iterable[Any], opts: CodecOptions) -> tuple[list[Buffer], int]:
    """The documents' bytes (as :func:`document_bytes`) and their total size, with the two
    common cases -- a dict to encode, a well-formed ``bytes`` -- inlined: this loop runs once
    per document of every insert."""
    if type(documents) is list and documents:
        first = type(documents[0])
        if first is dict:
            # A batch of dicts (an insert): encoded in one run of the encoder, whose setup
            # would otherwise be paid per document, into one buffer.  Anything else in the
            # list, or a document that does not encode, falls to the loop below.
            batch = encode_batch(documents, opts)
            if batch is not None:
                return [batch], len(batch)
        elif first is RawDocument:
            # A batch of RawDocuments (PyMongo's RawBSONDocument case): each was checked when
            # it was built, and ``_whole`` holds its bytes when it spans its whole buffer, so
            # one C-level pass collects them (a loop over the slots cost twice as much per
            # document).  Anything else in the list -- not a RawDocument, or a view -- falls
            # to the general loop below, which says why.
            try:
                wholes = list(map(_WHOLE, documents))
            except (TypeError, AttributeError):
                pass
            else:
                if all(wholes):  # no None (a document's bytes are never empty)
                    whole_bytes = cast("list[Buffer]", wholes)
                    return whole_bytes, sum(map(len, whole_bytes))
        elif set(map(type, documents)) == _ONLY_BYTES:
            # A batch of encoded documents (the bulk-insert path): every check runs inside C
            # iterators -- each length prefix equals the length, each last byte is NUL -- so
            # a document costs no Python bytecode.  Any failure falls to the loop, which
            # says why.
            sizes = list(map(len, documents))
            if (
                min(sizes) >= 5
                and list(map(_I32, documents)) == list(zip(sizes))
                and not any(map(_LAST_BYTE, documents))
            ):
                return documents, sum(sizes)
    out: list[Buffer] = []
    append = out.append
    total = 0
    for document in documents:
        kind = type(document)
        if kind is dict:
            data: Buffer = encode(document, opts)
        elif (
            kind is bytes
            and len(document) >= 5
            and _I32(document, 0)[0] == len(document)
            and document[-1] == 0
        ):
            data = document
        else:
            data = document_bytes(document, opts)
        append(data)
        total += len(data)
    return out, total


def first_key(data: Buffer) -> str:
    """The first key of the encoded document ``data`` (the command name), "" when empty."""
    if len(data) < 6 or data[4] == 0:
        return ""
    head = bytes(data[5:261])  # command names are short; never copy a whole large document
    end = head.find(b"\x00")
    return head[: end if end >= 0 else None].decode("utf-8", "replace")


def _identifier(name: str) -> bytes:
    cached = _IDENTIFIERS.get(name)
    if cached is None:
        if not isinstance(name, str) or "\x00" in name:
            raise LocalProtocolError(f"a sequence identifier must be a str without NUL: {name!r}")
        cached = name.encode() + b"\x00"
        if len(_IDENTIFIERS) < 256:
            _IDENTIFIERS[name] = cached
    return cached


def encode_op_msg_buffers(
    body: Any,
    *,
    request_id: int,
    sequences: Mapping[str, Iterable[Any]] | Iterable[tuple[str, Iterable[Any]]] | None = None,
    flags: int = 0,
    checksum: bool = False,
    compressor: Compressor | str | None = None,
    response_to: int = 0,
    codec_options: CodecOptions | None = None,
    max_message_size: int | None = None,
) -> list[Buffer]:
    """An OP_MSG as a list of buffers whose concatenation is the message.

    ``body``: the kind-0 document (a mapping, RawDocument or BSON bytes).  ``sequences``:
    identifier -> documents, each written as a kind-1 section (a mapping or a list of pairs).
    ``flags``: flagBits; the checksumPresent bit is the same as ``checksum=True``;
    exhaustAllowed is refused on commands other than hello/isMaster/getMore (the OP_MSG
    specification forbids it).  ``compressor``: a compressor object, or a handshake name
    (``"zlib"``, ``"snappy"``, ``"zstd"``, ``"noop"``).  ``max_message_size``: when given, a message over it raises
    DocumentTooLarge (the size counted is the uncompressed one).
    """
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    if type(flags) is not int or flags & UNKNOWN_REQUIRED_BITS or not 0 <= flags <= 0xFFFFFFFF:
        raise LocalProtocolError(f"OP_MSG flagBits {flags!r} set bits this library does not know")
    if checksum:
        flags |= CHECKSUM_PRESENT
    body_bytes = document_bytes(body, opts)
    if flags & EXHAUST_ALLOWED and first_key(body_bytes).lower() not in _EXHAUST_COMMANDS:
        raise LocalProtocolError(
            f"exhaustAllowed is only allowed on hello and getMore, not {first_key(body_bytes)!r}"
        )
    parts: list[Buffer] = [b"", body_bytes]
    total = HEADER_SIZE + 5 + len(body_bytes)
    if sequences:
        seen: set[str] = set()
        pairs = (
            sequences.items()
            if type(sequences) is dict or isinstance(sequences, Mapping)
            else sequences
        )
        for identifier, documents in pairs:
            ident = _identifier(identifier)
            if identifier in seen:
                raise LocalProtocolError(f"document sequence {identifier!r} is given twice")
            seen.add(identifier)
            encoded, size = _encode_all(documents, opts)
            size += 4 + len(ident)
            parts.append(_KIND1(1, size) + ident)
            parts += encoded
            total += 1 + size
    if flags & CHECKSUM_PRESENT:
        total += 4
    if max_message_size is not None and total > max_message_size:
        raise DocumentTooLarge(
            f"OP_MSG of {total} bytes is over the maximum message size {max_message_size}",
            size=total,
            limit=max_message_size,
        )
    try:
        parts[0] = _PREFIX(total, request_id, response_to, OP_MSG, flags, 0)
    except struct.error:
        raise LocalProtocolError(
            f"request_id {request_id!r} / response_to {response_to!r} must be int32 values, "
            f"and the message ({total} bytes) must fit in an int32 length"
        ) from None
    if flags & CHECKSUM_PRESENT:
        crc = 0
        for part in parts:
            crc = crc32c(part, crc)
        parts.append(_U32(crc))
    if compressor is not None and may_compress(first_key(body_bytes)):
        if isinstance(compressor, str):
            compressor = compressor_for(compressor)
        prefix = parts[0]
        parts[0] = prefix[HEADER_SIZE:]
        return _compressed(b"".join(parts), OP_MSG, request_id, response_to, compressor)
    return parts


def encode_op_msg(
    body: Any,
    *,
    request_id: int,
    sequences: Mapping[str, Iterable[Any]] | Iterable[tuple[str, Iterable[Any]]] | None = None,
    flags: int = 0,
    checksum: bool = False,
    compressor: Compressor | str | None = None,
    response_to: int = 0,
    codec_options: CodecOptions | None = None,
    max_message_size: int | None = None,
) -> bytes:
    """An OP_MSG as one ``bytes`` (see :func:`encode_op_msg_buffers` for the arguments)."""
    if (
        type(body) is dict
        and not sequences
        and not flags
        and not checksum
        and compressor is None
        and max_message_size is None
    ):
        # The plain command (most of them): one prefix and the body, nothing to decide.
        data = encode(body, DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options)
        try:
            return (
                _PREFIX(HEADER_SIZE + 5 + len(data), request_id, response_to, OP_MSG, 0, 0) + data
            )
        except struct.error:
            pass  # out-of-range ids: the general path explains
    return b"".join(
        encode_op_msg_buffers(
            body,
            request_id=request_id,
            sequences=sequences,
            flags=flags,
            checksum=checksum,
            compressor=compressor,
            response_to=response_to,
            codec_options=codec_options,
            max_message_size=max_message_size,
        )
    )


def _compressed(
    payload: bytes, op_code: int, request_id: int, response_to: int, compressor: Compressor
) -> list[Buffer]:
    """OP_COMPRESSED around ``payload`` (a message without its 16-byte header)."""
    squeezed = compressor.compress(payload)
    header = _COMPRESSED_HEADER(
        HEADER_SIZE + 9 + len(squeezed),
        request_id,
        response_to,
        OP_COMPRESSED,
        op_code,
        len(payload),
        compressor.compressor_id,
    )
    return [header, squeezed]


def compress_message(message: Buffer, compressor: Compressor) -> bytes:
    """Wrap an encoded OP_MSG, OP_QUERY or OP_REPLY in OP_COMPRESSED (keeping its request id
    and responseTo).  The caller decides whether the message may be compressed."""
    if len(message) < HEADER_SIZE:
        raise LocalProtocolError("not an encoded message: shorter than a header")
    length, request_id, response_to, op_code = struct.unpack_from("<iiii", message)
    if length != len(message) or op_code not in (OP_MSG, OP_QUERY, OP_REPLY):
        raise LocalProtocolError(f"not an encoded OP_MSG/OP_QUERY/OP_REPLY (op code {op_code})")
    payload = bytes(memoryview(message)[HEADER_SIZE:])
    return b"".join(_compressed(payload, op_code, request_id, response_to, compressor))


def encode_op_query(
    query: Any,
    *,
    request_id: int,
    full_collection_name: str = "admin.$cmd",
    flags: int = 0,
    number_to_skip: int = 0,
    number_to_return: int = -1,
    return_fields_selector: Any = None,
    response_to: int = 0,
    codec_options: CodecOptions | None = None,
) -> bytes:
    """A legacy OP_QUERY: by default the command form a client's first hello uses
    (``admin.$cmd``, numberToReturn -1)."""
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    if "\x00" in full_collection_name:
        raise LocalProtocolError("fullCollectionName must not contain NUL")
    namespace = full_collection_name.encode() + b"\x00"
    parts: list[Buffer] = [b"", b"", namespace, b"", document_bytes(query, opts)]
    if return_fields_selector is not None:
        parts.append(document_bytes(return_fields_selector, opts))
    try:
        parts[1] = _U32(flags)
        parts[3] = _QUERY_FIELDS(number_to_skip, number_to_return)
        total = sum(map(len, parts)) + HEADER_SIZE
        parts[0] = _HEADER(total, request_id, response_to, OP_QUERY)
    except struct.error as exc:
        raise LocalProtocolError(f"OP_QUERY field out of range: {exc}") from None
    return b"".join(parts)


def encode_op_reply(
    documents: Iterable[Any],
    *,
    request_id: int,
    response_to: int,
    flags: int = 0,
    cursor_id: int = 0,
    starting_from: int = 0,
    codec_options: CodecOptions | None = None,
) -> bytes:
    """A legacy OP_REPLY carrying ``documents`` (what a server answers an OP_QUERY with)."""
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    encoded = [document_bytes(document, opts) for document in documents]
    total = HEADER_SIZE + 20 + sum(map(len, encoded))
    try:
        prefix = _HEADER(total, request_id, response_to, OP_REPLY) + _REPLY_FIELDS(
            flags, cursor_id, starting_from, len(encoded)
        )
    except struct.error as exc:
        raise LocalProtocolError(f"OP_REPLY field out of range: {exc}") from None
    return b"".join([prefix, *encoded])
