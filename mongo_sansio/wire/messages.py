"""Wire messages: the constants, the message records, and the parsers of one message's bytes.

What lives here: the op codes and flag bits, the frozen records the reader returns
(:class:`OpMsg`, :class:`OpReply`, :class:`OpQuery`), and one parser per op code that turns
the bytes of one complete message -- already framed and length-checked by the reader -- into
a record.  What it must not know: where the bytes came from or how they were chunked (that is
:mod:`.reader`), or how to write them (:mod:`.encode`).

Every record has ``op_code``, ``request_id``, ``response_to``, ``flags``, ``body`` (the
command or reply document) and ``sequences`` (identifier -> documents of OP_MSG kind-1
sections; empty for the legacy op codes), and ``compressor_id``: the compressor of the
OP_COMPRESSED frame it arrived in, or None.

Every malformed input raises :class:`~mongo_sansio.errors.ProtocolError` naming the offset
(from the first byte of the message's header; for a compressed message, of the message it
wraps, as if its own header were there) and the reason.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

from mongo_sansio.bson._decode import document_end, read_document
from mongo_sansio.bson._decode_parts import TRIE
from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.raw import RawDocument
from mongo_sansio.errors import ProtocolError
from mongo_sansio.wire.crc32c import crc32c

__all__ = [
    "OP_REPLY",
    "OP_QUERY",
    "OP_COMPRESSED",
    "OP_MSG",
    "CHECKSUM_PRESENT",
    "MORE_TO_COME",
    "EXHAUST_ALLOWED",
    "REQUIRED_FLAG_BITS",
    "HEADER_SIZE",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "MIN_MESSAGE_SIZE",
    "OpMsg",
    "OpReply",
    "OpQuery",
    "Message",
    "parse_op_msg",
    "parse_op_reply",
    "parse_op_query",
]

OP_REPLY = 1
OP_QUERY = 2004
OP_COMPRESSED = 2012
OP_MSG = 2013

# OP_MSG flagBits.  The low 16 bits are required: a receiver must fail on one it does not
# know.  The high 16 are optional: unknown ones are ignored.
CHECKSUM_PRESENT = 1 << 0
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16
REQUIRED_FLAG_BITS = 0xFFFF
UNKNOWN_REQUIRED_BITS = REQUIRED_FLAG_BITS & ~(CHECKSUM_PRESENT | MORE_TO_COME)

# OP_REPLY responseFlags
CURSOR_NOT_FOUND = 1 << 0
QUERY_FAILURE = 1 << 1
AWAIT_CAPABLE = 1 << 3

HEADER_SIZE = 16
DEFAULT_MAX_MESSAGE_SIZE = 48_000_000

#: the smallest well-formed message of each op code, header included: a header that announces
#: less is refused before any body byte is awaited
MIN_MESSAGE_SIZE: Mapping[int, int] = {
    OP_MSG: HEADER_SIZE + 4 + 1 + 5,  # flags, one kind-0 section with an empty document
    OP_COMPRESSED: HEADER_SIZE + 9,  # originalOpcode, uncompressedSize, compressorId
    OP_REPLY: HEADER_SIZE + 20,  # responseFlags, cursorID, startingFrom, numberReturned
    OP_QUERY: HEADER_SIZE + 4 + 1 + 8 + 5,  # flags, "" namespace, skip/return, query
}

_I32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_FLAGS_KIND = struct.Struct("<IB").unpack_from
_REPLY_FIELDS = struct.Struct("<iqii").unpack_from
_SKIP_RETURN = struct.Struct("<ii").unpack_from
_NO_SEQUENCES: Mapping[str, list[Any]] = MappingProxyType({})


# The records are tuple subclasses (typing.NamedTuple fields, then a subclass that adds the
# op code, the flag properties and class-sensitive equality): the reader builds one per
# message, and ``tuple.__new__(OpMsg, fields)`` is one C call, where a frozen attrs class
# went through a guarded setter per field.  Measured with callgrind (instructions to frame
# a one-document reply): building the record through the six slot setters of an attrs class
# cost ~4.7k of ~23k; the tuple, a few hundred.  What callers see is the same: the same
# field names, keyword construction, read-only attributes, ``==`` only between records of
# one class, and the same repr.


class _OpMsgFields(NamedTuple):
    request_id: int
    response_to: int
    flags: int
    body: Any
    sequences: Mapping[str, list[Any]] = _NO_SEQUENCES
    compressor_id: int | None = None


_tuple_eq: Callable[[Any, Any], bool] = tuple.__eq__


class _Record:
    """Equality and hashing of the records: as attrs' ``eq``, two records are equal only when
    they are of the same class (a plain tuple with the same items is not equal)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and _tuple_eq(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


class OpMsg(_Record, _OpMsgFields):
    """An OP_MSG: the command or reply ``body`` (kind 0) and the kind-1 document sequences."""

    __slots__ = ()
    op_code: ClassVar[int] = OP_MSG

    @property
    def checksum_present(self) -> bool:
        return bool(self.flags & CHECKSUM_PRESENT)

    @property
    def more_to_come(self) -> bool:
        """On a request: no reply is wanted.  On a reply: another reply follows, whose
        ``response_to`` is this one's ``request_id``, and no request may be sent until a reply
        without the bit arrives."""
        return bool(self.flags & MORE_TO_COME)

    @property
    def exhaust_allowed(self) -> bool:
        """On a request: the sender accepts a stream of moreToCome replies."""
        return bool(self.flags & EXHAUST_ALLOWED)


class _OpReplyFields(NamedTuple):
    request_id: int
    response_to: int
    flags: int
    cursor_id: int
    starting_from: int
    documents: list[Any]
    compressor_id: int | None = None


class OpReply(_Record, _OpReplyFields):
    """A legacy OP_REPLY (the answer to the first OP_QUERY hello).  ``flags`` are the
    responseFlags; ``body`` is the first document (None when there is none)."""

    __slots__ = ()
    op_code: ClassVar[int] = OP_REPLY

    @property
    def number_returned(self) -> int:
        return len(self.documents)

    @property
    def body(self) -> Any:
        return self.documents[0] if self.documents else None

    @property
    def sequences(self) -> Mapping[str, list[Any]]:
        return _NO_SEQUENCES

    @property
    def query_failure(self) -> bool:
        return bool(self.flags & QUERY_FAILURE)


class _OpQueryFields(NamedTuple):
    request_id: int
    response_to: int
    flags: int
    full_collection_name: str
    number_to_skip: int
    number_to_return: int
    query: Any
    return_fields_selector: Any = None
    compressor_id: int | None = None


class OpQuery(_Record, _OpQueryFields):
    """A legacy OP_QUERY (what a client sends as its first hello); ``body`` is the query."""

    __slots__ = ()
    op_code: ClassVar[int] = OP_QUERY

    @property
    def body(self) -> Any:
        return self.query

    @property
    def sequences(self) -> Mapping[str, list[Any]]:
        return _NO_SEQUENCES


Message = OpMsg | OpReply | OpQuery

#: ``new_record(OpMsg, (request_id, response_to, flags, body, sequences, compressor_id))``:
#: a record from its fields in order, without the Python-level ``__new__`` of NamedTuple
new_record: Callable[..., Any] = tuple.__new__


def _op_msg(
    request_id: int,
    response_to: int,
    flags: int,
    body: Any,
    sequences: Mapping[str, list[Any]],
    compressor_id: int | None,
) -> OpMsg:
    message: OpMsg = new_record(
        OpMsg, (request_id, response_to, flags, body, sequences, compressor_id)
    )
    return message


def _document(
    data: bytes, pos: int, limit: int, opts: CodecOptions, lazy: bool, base: int, depth: int = 1
) -> tuple[Any, int]:
    """The document at ``data[pos:]``, which must end by ``limit``; and where it ends.
    (``base`` is where the message starts in ``data``: errors count offsets from there;
    ``depth`` is the nesting depth its top level counts as, see :func:`parse_op_msg`.)"""
    try:
        end = document_end(data, pos, limit, opts)
        if lazy:
            return RawDocument._view(data, pos, end, opts, TRIE[0]), end
        return read_document(data, pos, end, opts, depth), end
    except InvalidBSON as exc:
        raise ProtocolError(f"bad document at offset {pos - base}: {exc.reason}") from exc


def _cstring(data: bytes, pos: int, limit: int, what: str, base: int) -> tuple[str, int]:
    """The NUL-terminated UTF-8 string at ``pos`` (ending before ``limit``); and what follows."""
    nul = data.find(b"\x00", pos, limit)
    if nul < 0:
        raise ProtocolError(f"{what} at offset {pos - base} has no terminating NUL")
    try:
        return data[pos:nul].decode(), nul + 1
    except UnicodeDecodeError:
        raise ProtocolError(f"{what} at offset {pos - base} is not valid UTF-8") from None


def parse_op_msg(
    data: bytes,
    start: int,
    end: int,
    request_id: int,
    response_to: int,
    opts: CodecOptions,
    lazy: bool,
    compressor_id: int | None = None,
    header: bytes | None = None,
    depth: int = 1,
) -> OpMsg:
    """The OP_MSG whose flagBits start at ``data[start]`` and whose last byte is ``end - 1``.

    The checksum, when present, covers the whole message from its header: ``data[start - 16:
    end - 4]``, unless the message was decompressed, when ``header`` is the 16 bytes its header
    would have had.  ``depth`` is the nesting depth each section's document counts as against
    ``opts.max_nesting_depth`` (1: the limit applies to the message's documents as they are;
    ``1 - n`` gives them ``n`` more levels, for replies whose wrapper is not the user's).
    RawDocument views (``lazy``) count from 1 when they are read, wherever they sit.
    """
    if end - start < 5:
        raise ProtocolError(f"OP_MSG of {end - start + HEADER_SIZE} bytes cannot hold a section")
    flags, kind = _FLAGS_KIND(data, start)
    if flags & UNKNOWN_REQUIRED_BITS:
        raise ProtocolError(
            f"OP_MSG flagBits 0x{flags:08x} set required bits this client does not know "
            f"(0x{flags & UNKNOWN_REQUIRED_BITS:04x})"
        )
    if flags & CHECKSUM_PRESENT:
        end -= 4
        if end - start < 5:
            raise ProtocolError("OP_MSG with checksumPresent is too short for its checksum")
        expected = _U32(data, end)[0]
        if header is None:
            actual = crc32c(memoryview(data)[start - HEADER_SIZE : end])
        else:
            actual = crc32c(memoryview(data)[start:end], crc32c(header))
        if actual != expected:
            raise ProtocolError(
                f"OP_MSG checksum mismatch: the message says 0x{expected:08x}, "
                f"its bytes give 0x{actual:08x}"
            )
    base = start - HEADER_SIZE  # offsets in errors count from the message's first byte
    pos = start + 4
    if kind == 0 and end - pos >= 6 and _I32(data, pos + 1)[0] == end - pos - 1:
        # The common reply: flags, then one kind-0 section filling the rest, whose length
        # prefix was just checked (document_end's other check is max_document_size).
        try:
            if opts.max_document_size is not None:
                document_end(data, pos + 1, end, opts)
            if lazy:
                only = RawDocument._view(data, pos + 1, end, opts, TRIE[0])
            else:
                only = read_document(data, pos + 1, end, opts, depth)
        except InvalidBSON as exc:
            raise ProtocolError(f"bad document at offset {pos + 1 - base}: {exc.reason}") from exc
        return _op_msg(request_id, response_to, flags, only, _NO_SEQUENCES, compressor_id)
    body: Any = None
    sequences: dict[str, list[Any]] = {}
    while pos < end:
        kind = data[pos]
        if kind == 0:
            if body is not None:
                raise ProtocolError(f"OP_MSG has a second kind-0 section at offset {pos - base}")
            body, pos = _document(data, pos + 1, end, opts, lazy, base, depth)
        elif kind == 1:
            pos = _sequence(data, pos + 1, end, opts, lazy, sequences, base, depth)
        else:
            raise ProtocolError(
                f"OP_MSG section at offset {pos - base} has unknown payload type {kind}"
            )
    if body is None:
        raise ProtocolError("OP_MSG has no kind-0 (body) section")
    return _op_msg(request_id, response_to, flags, body, sequences, compressor_id)


def _sequence(
    data: bytes,
    pos: int,
    end: int,
    opts: CodecOptions,
    lazy: bool,
    into: dict[str, list[Any]],
    base: int,
    depth: int = 1,
) -> int:
    """Read the kind-1 section whose size field is at ``pos`` into ``into``; where it ends."""
    if end - pos < 4:
        raise ProtocolError(f"OP_MSG kind-1 section at offset {pos - base} is cut short")
    size: int = _I32(data, pos)[0]
    if size < 5 or size > end - pos:
        raise ProtocolError(
            f"OP_MSG kind-1 section size {size} at offset {pos - base} does not fit "
            f"the {end - pos} bytes left (5 at least)"
        )
    section_end = pos + size
    identifier, doc_pos = _cstring(data, pos + 4, section_end, "OP_MSG sequence identifier", base)
    if identifier in into:
        raise ProtocolError(f"OP_MSG repeats the document sequence {identifier!r}")
    documents = []
    while doc_pos < section_end:
        document, doc_pos = _document(data, doc_pos, section_end, opts, lazy, base, depth)
        documents.append(document)
    into[identifier] = documents
    return section_end


def parse_op_reply(
    data: bytes,
    start: int,
    end: int,
    request_id: int,
    response_to: int,
    opts: CodecOptions,
    lazy: bool,
    compressor_id: int | None = None,
    depth: int = 1,
) -> OpReply:
    """The OP_REPLY whose responseFlags start at ``data[start]`` and that ends at ``end``
    (``depth``: as for :func:`parse_op_msg`)."""
    if end - start < 20:
        raise ProtocolError(f"OP_REPLY of {end - start + HEADER_SIZE} bytes is too short")
    flags, cursor_id, starting_from, number_returned = _REPLY_FIELDS(data, start)
    base = start - HEADER_SIZE
    pos = start + 20
    documents = []
    while pos < end:
        document, pos = _document(data, pos, end, opts, lazy, base, depth)
        documents.append(document)
    if number_returned != len(documents):
        raise ProtocolError(
            f"OP_REPLY says numberReturned {number_returned} but holds {len(documents)} documents"
        )
    return OpReply(
        request_id=request_id,
        response_to=response_to,
        flags=flags & 0xFFFFFFFF,
        cursor_id=cursor_id,
        starting_from=starting_from,
        documents=documents,
        compressor_id=compressor_id,
    )


def parse_op_query(
    data: bytes,
    start: int,
    end: int,
    request_id: int,
    response_to: int,
    opts: CodecOptions,
    lazy: bool,
    compressor_id: int | None = None,
    depth: int = 1,
) -> OpQuery:
    """The OP_QUERY whose flags start at ``data[start]`` and that ends at ``end`` (what a
    server -- the simulated one -- reads as a client's first hello; ``depth``: as for
    :func:`parse_op_msg`)."""
    if end - start < 4 + 1 + 8 + 5:
        raise ProtocolError(f"OP_QUERY of {end - start + HEADER_SIZE} bytes is too short")
    flags = _U32(data, start)[0]
    base = start - HEADER_SIZE
    namespace, pos = _cstring(data, start + 4, end, "OP_QUERY fullCollectionName", base)
    if end - pos < 8:
        raise ProtocolError(f"OP_QUERY is cut short at offset {pos - base}")
    number_to_skip, number_to_return = _SKIP_RETURN(data, pos)
    query, pos = _document(data, pos + 8, end, opts, lazy, base, depth)
    selector = None
    if pos < end:
        selector, pos = _document(data, pos, end, opts, lazy, base, depth)
    if pos != end:
        raise ProtocolError(f"{end - pos} bytes follow the OP_QUERY")
    return OpQuery(
        request_id=request_id,
        response_to=response_to,
        flags=flags,
        full_collection_name=namespace,
        number_to_skip=number_to_skip,
        number_to_return=number_to_return,
        query=query,
        return_fields_selector=selector,
        compressor_id=compressor_id,
    )
