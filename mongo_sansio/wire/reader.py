"""The message reader: bytes in any chunking in, framed wire messages out.

Inputs: ``receive_data(data)`` with whatever bytes arrived (one byte, many messages, any cut),
``receive_eof()`` when the peer closed its side.  Outputs: ``next_message()`` returns the next
complete message (:class:`~.messages.OpMsg`, :class:`~.messages.OpReply` or
:class:`~.messages.OpQuery`; an OP_COMPRESSED frame comes back as the message it wraps, with
``compressor_id`` set), or the marker :data:`NEED_DATA` when more bytes are needed, or
:data:`CLOSED` once the stream has ended cleanly and everything before the end was returned.

Theory of operation.  The reader knows framing and nothing else: it never decides what a
message means, which request it answers, or when to give up waiting (the connection above it
does).  Buffering is linear in the bytes received, whatever the chunking: a ``bytes`` chunk
that arrives while nothing is buffered is kept as it is and the messages wholly inside it are
parsed in place (no copy at all -- the common case of a reply read in one piece); whatever
is left of it when more data arrives, and every other chunk, is appended to one
``bytearray``, where a read offset walks forward over consumed messages and the consumed
prefix is dropped only when the buffer empties or the prefix is the larger half.  As soon as
16 bytes of a message are present its header is checked -- known op code, length between the
op code's minimum and ``max_message_size`` -- before the body is awaited, so a bad or
oversized message is refused without buffering it.

States (a transition table, checked before anything changes):

========= ============================= =========
state      input                          next
========= ============================= =========
OPEN       data / message                 OPEN
OPEN       end of stream                  ENDING
ENDING     message                        ENDING
ENDING     drained (nothing left)         CLOSED
CLOSED     end of stream / drained        CLOSED
any        malformed bytes                ERROR
========= ============================= =========

Errors: bad bytes raise :class:`~mongo_sansio.errors.ProtocolError` from ``next_message()``
and the reader enters ERROR: every later call -- ``next_message``, ``receive_data``,
``receive_eof`` -- raises the same error object again (the connection must be closed).  A bad
header found by ``receive_data`` is recorded there (and its bytes dropped) but raised by the
next ``next_message()``, so the adapter's loop meets every error in one place.
Data after the end of the stream is the caller's mistake
(:class:`~mongo_sansio.errors.LocalProtocolError`).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Mapping
from typing import Final

from mongo_sansio.bson._decode import _is_raw
from mongo_sansio.bson._decode_parts import TRIE
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.raw import UNWALKED, RawDocument
from mongo_sansio.errors import LocalProtocolError, ProtocolError, TruncatedMessage
from mongo_sansio.wire.compression import CompressionFailed, Compressor, default_compressors
from mongo_sansio.wire.messages import (
    _NO_SEQUENCES,
    CHECKSUM_PRESENT,
    DEFAULT_MAX_MESSAGE_SIZE,
    HEADER_SIZE,
    MIN_MESSAGE_SIZE,
    OP_COMPRESSED,
    OP_MSG,
    OP_QUERY,
    OP_REPLY,
    UNKNOWN_REQUIRED_BITS,
    Message,
    OpMsg,
    new_record,
    parse_op_msg,
    parse_op_query,
    parse_op_reply,
)

__all__ = ["MessageReader", "ReaderState", "NEED_DATA", "CLOSED", "NeedData", "Closed"]


class _Marker:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


class NeedData(_Marker):
    """The type of :data:`NEED_DATA`."""


class Closed(_Marker):
    """The type of :data:`CLOSED`."""


#: ``next_message()`` needs more bytes before it can return a message
NEED_DATA: Final = NeedData("NEED_DATA")
#: the stream ended cleanly and every message before the end has been returned
CLOSED: Final = Closed("CLOSED")


class ReaderState(enum.Enum):
    OPEN = "open"
    ENDING = "ending"  # end of stream seen; buffered messages are still being returned
    CLOSED = "closed"
    ERROR = "error"


_TRANSITIONS: Mapping[tuple[ReaderState, str], ReaderState] = {
    (ReaderState.OPEN, "data"): ReaderState.OPEN,
    (ReaderState.OPEN, "eof"): ReaderState.ENDING,
    (ReaderState.ENDING, "eof"): ReaderState.ENDING,
    (ReaderState.ENDING, "drained"): ReaderState.CLOSED,
    (ReaderState.CLOSED, "eof"): ReaderState.CLOSED,
    (ReaderState.CLOSED, "drained"): ReaderState.CLOSED,
}

_HEADER = struct.Struct("<iiii").unpack_from
_HEADER_PACK = struct.Struct("<iiii").pack
_COMPRESSED_FIELDS = struct.Struct("<iiB").unpack_from
_Parser = Callable[..., Message]
_PARSERS: Mapping[int, _Parser] = {
    OP_MSG: parse_op_msg,
    OP_REPLY: parse_op_reply,
    OP_QUERY: parse_op_query,
}
_MIN_OP_MSG = MIN_MESSAGE_SIZE[OP_MSG]
_SLOW_FLAGS = CHECKSUM_PRESENT | UNKNOWN_REQUIRED_BITS  # parse_op_msg handles these
_HEAD = struct.Struct("<iiiiIBi").unpack_from  # header, then flagBits, section kind, its size
_HEAD_SIZE = 25
_OPEN = ReaderState.OPEN
_new_object = object.__new__
# The inlined RawDocument._view below assigns these slots; should RawDocument change them,
# the reader calls _view instead.
_INLINE_VIEW = RawDocument.__slots__ == (
    "_data", "_start", "_end", "_opts", "_index", "_scan", "_node", "_whole", "_positions"
)  # fmt: skip
_COMPACT_AT = 1 << 16  # drop a consumed prefix this large once it is half the buffer


class MessageReader:
    """Frames wire messages out of a byte stream (see the module documentation).

    ``max_message_size``: the largest message accepted, header included (48,000,000 until the
    handshake tells the server's maxMessageSizeBytes; assign the attribute then).
    ``codec_options``: how documents decode.  ``lazy``: return documents as
    :class:`~mongo_sansio.bson.RawDocument` views instead of decoding them (also the case when
    ``codec_options.document_class`` is RawDocument).  ``compressors``: compressorId ->
    compressor for OP_COMPRESSED frames (default: all four the specification defines).
    ``nesting_room``: how many levels deeper than ``codec_options.max_nesting_depth`` a
    message's decoded documents may nest (0: none).  A connection gives replies the levels
    their own wrapper takes, so the limit applies to the documents inside them; RawDocument
    views count from their own top level when read and need no room.
    """

    __slots__ = (
        "_buf",
        "_pos",
        "_state",
        "_error",
        "_max",
        "_opts",
        "_lazy",
        "_compressors",
        "_chunk",
        "_chunk_pos",
        "_inline",
        "_head",
        "_depth",
    )

    def __init__(
        self,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        *,
        codec_options: CodecOptions | None = None,
        lazy: bool = False,
        compressors: Mapping[int, Compressor] | None = None,
        nesting_room: int = 0,
    ) -> None:
        if not isinstance(nesting_room, int) or isinstance(nesting_room, bool) or nesting_room < 0:
            raise LocalProtocolError(
                f"nesting_room must be a non-negative int, not {nesting_room!r}"
            )
        self._depth = 1 - nesting_room  # the depth a message's top-level documents count as
        self._buf = bytearray()
        self._pos = 0
        self._chunk: bytes | None = None  # a received chunk read in place (then _buf is empty)
        self._chunk_pos = 0
        # the first 25 bytes of _chunk, unpacked by receive_data (header, flagBits, section
        # kind and size), when the chunk is exactly one lazily read OP_MSG of the common form
        # (no checksum or unknown required flag, one kind-0 section filling the rest) that
        # next_message may build at once; None otherwise, and once anything else happens
        self._head: tuple[int, int, int, int, int, int, int] | None = None
        self._state = ReaderState.OPEN
        self._error: ProtocolError | None = None
        self._max = 0
        self.max_message_size = max_message_size
        self._opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
        self._lazy = bool(lazy) or _is_raw(self._opts.document_class)
        self._compressors = dict(default_compressors() if compressors is None else compressors)
        # receive_data/next_message frame the common lazy reply themselves unless documents
        # have a size limit (max_document_size: parse_op_msg checks it)
        self._inline = self._lazy and self._opts.max_document_size is None

    @property
    def max_message_size(self) -> int:
        return self._max

    @max_message_size.setter
    def max_message_size(self, value: int) -> None:
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or value < MIN_MESSAGE_SIZE[OP_MSG]
        ):
            raise LocalProtocolError(
                f"max_message_size must be an integer of at least {MIN_MESSAGE_SIZE[OP_MSG]}, "
                f"not {value!r}"
            )
        self._max = value
        self._head = None  # the chunk's size was checked against the old maximum

    @property
    def lazy(self) -> bool:
        """Whether documents come as RawDocument views (assignable between messages: a
        connection reads one reply raw when its operation wants raw batches)."""
        return self._lazy

    @lazy.setter
    def lazy(self, value: bool) -> None:
        self._lazy = bool(value) or _is_raw(self._opts.document_class)
        self._inline = self._lazy and self._opts.max_document_size is None
        self._head = None  # worked out for the old setting: the chunk is parsed the long way

    @property
    def state(self) -> ReaderState:
        return self._state

    @property
    def buffered(self) -> int:
        """How many received bytes have not yet been returned as messages."""
        chunk = 0 if self._chunk is None else len(self._chunk) - self._chunk_pos
        return len(self._buf) - self._pos + chunk

    @property
    def wanted(self) -> int:
        """How many more bytes complete the message whose header has arrived (0 when none
        has, or when the bytes buffered hold a whole message already).

        A transport that reads this much at once gets a large reply in one piece, which is
        then parsed where it lies, instead of in 64 KiB reads joined in a buffer and copied
        out again (a 260 KB cursor batch: about a tenth of its decoding time)."""
        if self._state is not _OPEN:
            return 0
        source: bytes | bytearray
        if self._chunk is not None:
            source, pos = self._chunk, self._chunk_pos
        else:
            source, pos = self._buf, self._pos
        available = len(source) - pos
        if available < 4:
            return 0
        length = int.from_bytes(source[pos : pos + 4], "little")
        # (a header past its check: the length is within max_message_size)
        return length - available if available < length <= self._max else 0

    def _move(self, event: str) -> None:
        try:
            self._state = _TRANSITIONS[self._state, event]
        except KeyError:
            if self._error is not None:
                raise self._error from None
            raise LocalProtocolError(
                f"cannot take {event!r} in state {self._state.value}"
                + (": data arrived after the end of the stream" if event == "data" else "")
            ) from None

    def _fail(self, error: ProtocolError) -> ProtocolError:
        self._state = ReaderState.ERROR
        self._error = error
        self._buf = bytearray()
        self._pos = 0
        self._chunk = None
        self._head = None
        return error

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes that arrived from the peer."""
        if type(data) is bytes and self._chunk is None and not self._buf and self._state is _OPEN:
            # Nothing is buffered (the common case): keep the chunk itself, and unpack its
            # header together with the first section's kind and size, in one struct call
            # (each costs ~1.1k instructions under callgrind, an eighth of what PyMongo's C
            # path spends framing a whole reply).  When the chunk is exactly the common
            # reply, next_message needs no more checks: see _head.
            self._chunk = data
            self._chunk_pos = 0
            available = len(data)
            if available >= _HEAD_SIZE:
                head = _HEAD(data, 0)
                length = head[0]
                if head[3] == OP_MSG and _MIN_OP_MSG <= length <= self._max:
                    if (
                        length == available
                        and self._inline
                        and not (
                            head[4] & _SLOW_FLAGS
                            or head[5]
                            or head[6] != length - 21
                            or data[length - 1]
                        )
                    ):
                        self._head = head
                    return
            elif available < HEADER_SIZE:
                return
            self._screen(data, 0)  # the uncommon op codes, a short chunk, or an error
            return
        if self._state is not ReaderState.OPEN:
            self._move("data")
        self._head = None
        if self._chunk is not None:  # the unread end of the last chunk joins the buffer
            self._buf += memoryview(self._chunk)[self._chunk_pos :]
            self._chunk = None
        buf = self._buf
        pos = self._pos
        if pos == len(buf):  # nothing buffered
            if pos:
                buf.clear()
                self._pos = pos = 0
            if type(data) is bytes:
                # Keep the chunk itself: messages wholly inside it are parsed in place.
                self._chunk = data
                self._chunk_pos = 0
                if len(data) >= HEADER_SIZE:
                    length, _, _, op_code = _HEADER(data, 0)
                    if op_code != OP_MSG or not _MIN_OP_MSG <= length <= self._max:
                        self._screen(data, 0)  # the uncommon op codes, or an error
                return
        buf += data
        if len(buf) - pos >= HEADER_SIZE:
            self._screen(buf, pos)

    def _screen(self, source: bytes | bytearray, pos: int) -> None:
        """Check a header as soon as it is complete.  A bad one puts the reader in ERROR and
        drops what was buffered, so no more of that message is kept; as in h11, the error is
        raised by ``next_message()`` (and by any later input), not by the ``receive_data()``
        that found it."""
        try:
            self._check_header(source, pos)
        except ProtocolError:
            pass  # _check_header has recorded it (_fail)

    def receive_eof(self) -> None:
        """The peer closed its side; a message cut short by the end is a ProtocolError
        (raised by the next ``next_message()``)."""
        self._move("eof")

    def _check_header(self, source: bytes | bytearray, pos: int) -> tuple[int, int, int, int]:
        length, request_id, response_to, op_code = _HEADER(source, pos)
        minimum = MIN_MESSAGE_SIZE.get(op_code)
        if minimum is None:
            raise self._fail(ProtocolError(f"unknown op code {op_code} in message header"))
        if length < minimum or length > self._max:
            raise self._fail(
                ProtocolError(
                    f"message length {length} for op code {op_code} is outside "
                    f"[{minimum}, {self._max}] (the maximum message size)"
                )
            )
        return length, request_id, response_to, op_code

    def next_message(self) -> Message | NeedData | Closed:
        """The next complete message, or NEED_DATA, or CLOSED after a clean end of stream."""
        head = self._head
        if head is not None:
            # receive_data found the chunk to be exactly one OP_MSG of the common form, and
            # checked everything a lazy reader checks.  Building the message here, with no
            # further call, is what brings framing a reply near PyMongo's C path.
            self._head = None
            data = self._chunk
            assert data is not None
            self._chunk = None
            length = head[0]
            if _INLINE_VIEW:
                # RawDocument._view's slot assignments, inlined (a call fewer: ~1k
                # instructions); test_wire_reader pins that the two agree.
                body = _new_object(RawDocument)
                body._data = data
                body._start = 21
                body._end = length
                body._opts = self._opts
                body._index = UNWALKED
                body._scan = 25
                body._node = TRIE[0]
                body._whole = None
                body._positions = None
            else:
                body = RawDocument._view(data, 21, length, self._opts, TRIE[0])
            return new_record(  # type: ignore[no-any-return]
                OpMsg, (head[1], head[2], head[4], body, _NO_SEQUENCES, None)
            )
        if self._state is ReaderState.ERROR:
            assert self._error is not None
            raise self._error
        data = self._chunk
        if data is not None:  # parse in place: no copy at all
            start = self._chunk_pos
            available = len(data) - start
            if available < HEADER_SIZE:
                return self._short(available, HEADER_SIZE)
            length, request_id, response_to, op_code = _HEADER(data, start)
            if op_code != OP_MSG or not _MIN_OP_MSG <= length <= self._max:
                self._check_header(data, start)  # the uncommon op codes, or an error
            if available < length:
                return self._short(available, length)
            if available == length:
                self._chunk = None
            else:
                self._chunk_pos = start + length
        else:
            buf = self._buf
            pos = self._pos
            available = len(buf) - pos
            if available < HEADER_SIZE:
                return self._short(available, HEADER_SIZE)
            length, request_id, response_to, op_code = self._check_header(buf, pos)
            if available < length:
                return self._short(available, length)
            data = bytes(memoryview(buf)[pos : pos + length])  # the one copy out of the buffer
            start = 0
            pos += length
            if pos == len(buf):
                buf.clear()
                pos = 0
            elif pos >= _COMPACT_AT and pos * 2 >= len(buf):
                del buf[:pos]  # drop the consumed prefix once it is the larger part
                pos = 0
            self._pos = pos
        try:
            if op_code == OP_MSG:
                return parse_op_msg(
                    data, start + HEADER_SIZE, start + length, request_id, response_to,
                    self._opts, self._lazy, depth=self._depth,
                )  # fmt: skip
            if op_code == OP_COMPRESSED:
                return self._decompressed(data, start, length, request_id, response_to)
            return _PARSERS[op_code](
                data, start + HEADER_SIZE, start + length, request_id, response_to,
                self._opts, self._lazy, depth=self._depth,
            )  # fmt: skip
        except ProtocolError as exc:
            raise self._fail(exc) from None
        except (ValueError, IndexError, KeyError, struct.error, OverflowError) as exc:
            # A safety net: the parsers check what they read, so this is a bug in them, but
            # network input must never raise anything but the library's own errors.
            raise self._fail(ProtocolError(f"malformed message: {exc!r}")) from exc

    def _short(self, available: int, needed: int) -> NeedData | Closed:
        if self._state is ReaderState.OPEN:
            return NEED_DATA
        if available == 0:
            self._move("drained")
            return CLOSED
        raise self._fail(
            TruncatedMessage(f"the stream ended inside a message: {available} of {needed} bytes")
        )

    def _decompressed(
        self, data: bytes, pos: int, length: int, request_id: int, response_to: int
    ) -> Message:
        original, size, compressor_id = _COMPRESSED_FIELDS(data, pos + HEADER_SIZE)
        parse = _PARSERS.get(original)
        if parse is None:
            raise ProtocolError(f"OP_COMPRESSED wraps op code {original}, which cannot be wrapped")
        if not MIN_MESSAGE_SIZE[original] <= HEADER_SIZE + size <= self._max:
            raise ProtocolError(
                f"OP_COMPRESSED announces {size} uncompressed bytes of op code {original}: "
                f"outside [{MIN_MESSAGE_SIZE[original] - HEADER_SIZE}, {self._max - HEADER_SIZE}]"
            )
        compressor = self._compressors.get(compressor_id)
        if compressor is None:
            raise ProtocolError(f"OP_COMPRESSED uses unknown compressorId {compressor_id}")
        try:
            inner = compressor.decompress(
                memoryview(data)[pos + HEADER_SIZE + 9 : pos + length], size
            )
        except CompressionFailed as exc:
            raise ProtocolError(f"OP_COMPRESSED ({compressor.name}): {exc}") from None
        except LocalProtocolError as exc:  # cramjam missing: ConfigurationError names the extra
            raise ProtocolError(f"OP_COMPRESSED cannot be read: {exc}") from exc
        if original == OP_MSG:
            header = _HEADER_PACK(HEADER_SIZE + size, request_id, response_to, original)
            return parse_op_msg(
                inner, 0, size, request_id, response_to, self._opts, self._lazy,
                compressor_id, header, self._depth,
            )  # fmt: skip
        return parse(
            inner, 0, size, request_id, response_to, self._opts, self._lazy, compressor_id,
            depth=self._depth,
        )  # fmt: skip
