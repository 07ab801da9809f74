"""One connection to a server, as a machine: commands in, bytes out; bytes in, replies out.

Theory of operation
-------------------
:class:`Connection` is the client side of one socket, in the manner of h11.  It owns the
request/reply bookkeeping (which request a reply must answer, whether more replies follow),
the negotiated compressor and the size limits; it frames with :mod:`mongo_sansio.wire` and
knows nothing of sockets, time or the handshake's meaning (:mod:`.establish` decides that, and
hands the outcome over with :meth:`Connection.set_description`).

Inputs:

* ``send_command(db, body, ...)`` -- a command to send; returns the bytes to write, as a list
  of buffers (encoded documents pass through uncopied).  ``$db`` is added (OP_MSG), the
  Stable API fields when a version is declared, and the message is compressed with the
  negotiated compressor unless its command may not be (hello, the SASL commands, ...).
* ``receive_data(data)`` -- bytes from the server, in any chunking; ``receive_eof()`` -- the
  server closed its side.
* ``close()`` -- the owner gives the connection up.

Outputs: ``next_reply()`` returns a :class:`Reply`, :data:`NEED_DATA` (read more), or
:data:`CLOSED` (the stream ended cleanly while no reply was awaited).  A reply that does not
answer the outstanding request, an unsolicited message, or malformed bytes raise
:class:`~mongo_sansio.errors.ProtocolError`; the stream ending while a reply is awaited (or in
the middle of one) raises :class:`~mongo_sansio.errors.NetworkError`.  Either way the machine
is CLOSED afterwards and raises the same error for any further input (sticky); using it wrongly
(sending while a reply is awaited, or after close) raises
:class:`~mongo_sansio.errors.LocalProtocolError` and changes nothing.

States (:data:`TRANSITIONS`, consulted before anything changes):

=============== ======================================== ===============
state           input                                    next
=============== ======================================== ===============
IDLE            send (a reply is wanted)                 AWAITING_REPLY
IDLE            send with moreToCome (no reply wanted)   IDLE
AWAITING_REPLY  reply                                    IDLE
AWAITING_REPLY  reply with moreToCome (exhaust)          AWAITING_REPLY
IDLE            end of stream                            CLOSED
AWAITING_REPLY  end of stream                            CLOSED (NetworkError)
any             protocol error                           CLOSED
any             close                                    CLOSED
=============== ======================================== ===============

An exhaust reply (moreToCome, allowed only when the request set exhaustAllowed) keeps the
machine awaiting: the next reply must answer the *previous reply's* request id (OP_MSG spec).
No command can be sent until a reply without moreToCome arrives; to stop a stream, close.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from mongo_sansio._state_enum import StateEnum
from mongo_sansio.bson._decode import _is_raw
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.errors import InvalidBSON
from mongo_sansio.bson.raw import RawDocument
from mongo_sansio.connection.description import ConnectionDescription
from mongo_sansio.connection.handshake import ServerApi, stable_api_fields
from mongo_sansio.errors import (
    LocalProtocolError,
    NetworkError,
    ProtocolError,
    TruncatedMessage,
)
from mongo_sansio.sdam.description import Address, format_address
from mongo_sansio.wire import (
    CLOSED,
    DEFAULT_MAX_MESSAGE_SIZE,
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    NEED_DATA,
    Closed,
    Compressor,
    MessageReader,
    NeedData,
    OpMsg,
    OpReply,
    compressor_for,
    encode_op_msg_buffers,
    encode_op_query,
)
from mongo_sansio.wire.encode import Buffer
from mongo_sansio.wire.raw_batches import decode_with_raw_batches

__all__ = [
    "REPLY_NESTING_ROOM",
    "Connection",
    "ConnectionState",
    "ConnectionInput",
    "Reply",
    "TRANSITIONS",
    "NEED_DATA",
    "CLOSED",
]


class ConnectionState(StateEnum):
    IDLE = "IDLE"
    AWAITING_REPLY = "AWAITING_REPLY"
    CLOSED = "CLOSED"


class ConnectionInput(StateEnum):
    SEND = "send"
    SEND_NO_REPLY = "send moreToCome"
    REPLY = "reply"
    STREAMED_REPLY = "reply moreToCome"
    END_OF_STREAM = "end of stream"
    PROTOCOL_ERROR = "protocol error"
    CLOSE = "close"


# The levels a cursor reply's own wrapper takes above the documents it carries: the reply (1),
# ``cursor`` (2), ``firstBatch``/``nextBatch`` (3), the document (4).  Replies decode with this
# much room beyond ``CodecOptions.max_nesting_depth``, so the limit applies to the user's
# documents (a 200-level document written by insert reads back by find) while a deeper reply
# is still refused as a ProtocolError.  A change stream event is such a document; its
# ``fullDocument`` is one level inside it.
REPLY_NESTING_ROOM = 3

_IDLE, _AWAITING, _CLOSED = ConnectionState
_I = ConnectionInput

TRANSITIONS: Mapping[tuple[ConnectionState, ConnectionInput], ConnectionState] = {
    (_IDLE, _I.SEND): _AWAITING,
    (_IDLE, _I.SEND_NO_REPLY): _IDLE,
    (_AWAITING, _I.REPLY): _IDLE,
    (_AWAITING, _I.STREAMED_REPLY): _AWAITING,
    (_IDLE, _I.END_OF_STREAM): _CLOSED,
    (_AWAITING, _I.END_OF_STREAM): _CLOSED,
    (_IDLE, _I.PROTOCOL_ERROR): _CLOSED,
    (_AWAITING, _I.PROTOCOL_ERROR): _CLOSED,
    (_IDLE, _I.CLOSE): _CLOSED,
    (_AWAITING, _I.CLOSE): _CLOSED,
}


@attrs.frozen(kw_only=True)
class Reply:
    """One reply: the decoded ``document``, its header's ``request_id`` and ``response_to``,
    and ``more_to_come`` (another reply to the same request follows).  A legacy OP_REPLY
    with the QueryFailure flag arrives as ``ok: 0`` with ``errmsg`` from its ``$err``."""

    document: Mapping[str, Any]
    request_id: int
    response_to: int
    more_to_come: bool = False


class Connection:
    """See the module documentation.

    ``address`` names the server in errors.  ``request_ids`` gives request ids (one counter
    per client, e.g. :class:`~mongo_sansio.wire.RequestIds`).  ``server_api``: the declared
    Stable API version, whose fields go on every command.  ``zlib_compression_level`` is used
    if zlib is negotiated.  ``codec_options`` decide how reply documents decode; their
    ``max_nesting_depth`` bounds the documents a cursor reply carries (the reply itself may
    nest :data:`REPLY_NESTING_ROOM` levels deeper, for its wrapper).
    """

    def __init__(
        self,
        address: Address,
        *,
        request_ids: Callable[[], int],
        server_api: ServerApi | None = None,
        zlib_compression_level: int = -1,
        codec_options: CodecOptions | None = None,
    ) -> None:
        self.address = address
        self._request_ids = request_ids
        self._api_fields = stable_api_fields(server_api)
        self._zlib_level = zlib_compression_level
        self._reader = MessageReader(
            DEFAULT_MAX_MESSAGE_SIZE, codec_options=codec_options, nesting_room=REPLY_NESTING_ROOM
        )
        self._state = ConnectionState.IDLE
        self._error: Exception | None = None
        self._eof = False
        self._compressor: Compressor | None = None
        self._max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self._description: ConnectionDescription | None = None
        self._last_request_id: int | None = None
        self._expected_response_to: int | None = None  # the request (or reply) to answer
        self._expect_legacy = False  # the outstanding request was an OP_QUERY
        self._exhaust_allowed = False
        self._reply_opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
        # the outstanding command's codec options when their document class is RawDocument:
        # its reply is read lazily and its cursor batches stay views (wire/raw_batches.py)
        self._raw_batches: CodecOptions | None = None

    # -- what the owner may look at ------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def description(self) -> ConnectionDescription | None:
        """The handshake's outcome, once :meth:`set_description` was called."""
        return self._description

    @property
    def compressor(self) -> str | None:
        """The negotiated compressor's name, or None."""
        return None if self._compressor is None else self._compressor.name

    @property
    def last_request_id(self) -> int | None:
        """The request id of the last command sent (for command monitoring)."""
        return self._last_request_id

    @property
    def awaiting_response_to(self) -> int | None:
        """The request id the next reply must answer, while a reply is awaited."""
        return self._expected_response_to if self._state is _AWAITING else None

    # -- inputs ---------------------------------------------------------------------------

    def set_description(self, description: ConnectionDescription) -> None:
        """Apply the handshake's outcome: the compressor for later commands and the server's
        maximum message size (for what we send and what we accept)."""
        self._check_open("set_description")
        if description.compressor is None:
            compressor = None
        else:
            compressor = compressor_for(
                description.compressor, zlib_compression_level=self._zlib_level
            )
        self._reader.max_message_size = description.max_message_size_bytes
        self._max_message_size = description.max_message_size_bytes
        self._compressor = compressor
        self._description = description

    @property
    def api_fields(self) -> Mapping[str, Any]:
        """The Stable API fields (``apiVersion``, ``apiStrict``, ``apiDeprecationErrors``) every
        command on this connection carries (empty without a declared API version)."""
        return self._api_fields

    def send_command(
        self,
        db: str,
        body: Mapping[str, Any],
        *,
        sequences: Mapping[str, Iterable[Any]] | None = None,
        op_query: bool = False,
        exhaust_allowed: bool = False,
        more_to_come: bool = False,
        codec_options: CodecOptions | None = None,
    ) -> list[Buffer]:
        """The bytes of ``body`` run against ``db``, as buffers to write in order (values
        encoded with ``codec_options``, default the defaults).

        ``op_query`` sends a legacy OP_QUERY to ``db.$cmd`` (the first hello only: no
        ``$db``, no compression, not allowed with a Stable API version).  ``sequences``
        become OP_MSG kind-1 sections.  ``exhaust_allowed`` lets the server stream replies
        (hello and getMore only); ``more_to_come`` asks for no reply at all (unacknowledged
        writes).  When ``codec_options``' document class is RawDocument, the reply's cursor
        batches come as RawDocument views under them (nothing decoded).  Raises
        LocalProtocolError when a reply is still awaited or the connection is closed, and
        DocumentTooLarge when the message is over the server's limit.
        """
        self._check_open("send a command")
        if self._state is not _IDLE:
            raise LocalProtocolError(
                f"cannot send a command to {self._where} while the reply "
                f"to request {self._expected_response_to} is awaited"
            )
        if self._eof:
            raise LocalProtocolError(
                f"cannot send a command: {self._where} closed the connection"
            )
        if not isinstance(db, str) or not db or "\x00" in db:
            raise LocalProtocolError(f"database name must be a non-empty string, not {db!r}")
        if not body or (type(body) is not dict and not isinstance(body, Mapping)):
            raise LocalProtocolError("a command must be a non-empty mapping")
        if exhaust_allowed and more_to_come:
            raise LocalProtocolError("exhaust_allowed and more_to_come exclude each other")
        if op_query and self._api_fields:
            raise LocalProtocolError("with a Stable API version every message is OP_MSG")
        if op_query and (sequences or exhaust_allowed or more_to_come):
            raise LocalProtocolError(
                "OP_QUERY carries no document sequences, exhaustAllowed or moreToCome"
            )
        request_id = self._request_ids()
        if op_query:
            buffers: list[Buffer] = [
                encode_op_query(
                    dict(body), request_id=request_id, full_collection_name=f"{db}.$cmd"
                )
            ]
        else:
            command = {**body, "$db": db, **self._api_fields}
            flags = (EXHAUST_ALLOWED if exhaust_allowed else 0) | (
                MORE_TO_COME if more_to_come else 0
            )
            buffers = encode_op_msg_buffers(
                command,
                request_id=request_id,
                sequences=sequences,
                flags=flags,
                compressor=self._compressor,
                max_message_size=self._max_message_size,
                codec_options=codec_options,
            )
        # Encoding succeeded: only now does the machine move.
        raw = (
            codec_options
            if codec_options is not None
            and not op_query
            and codec_options.document_class is not dict
            and _is_raw(codec_options.document_class)
            else None
        )
        if (raw is None) != (self._raw_batches is None):
            self._reader.lazy = raw is not None
        self._raw_batches = raw
        self._state = TRANSITIONS[_IDLE, _I.SEND_NO_REPLY if more_to_come else _I.SEND]
        self._last_request_id = request_id
        if not more_to_come:
            self._expected_response_to = request_id
            self._expect_legacy = op_query
            self._exhaust_allowed = exhaust_allowed
        return buffers

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Bytes that arrived from the server."""
        self._check_open("receive data")
        if self._eof:
            raise LocalProtocolError("data arrived after the end of the stream")
        self._reader.receive_data(data)

    def receive_eof(self) -> None:
        """The server closed its side.  Replies already received can still be read."""
        self._check_open("receive the end of the stream")
        if self._eof:
            raise LocalProtocolError("the end of the stream was already received")
        self._eof = True
        try:
            self._reader.receive_eof()
        except ProtocolError as exc:  # the reader had already failed on earlier bytes
            raise self._fail(exc) from None

    def close(self, error: Exception | None = None) -> None:
        """Give the connection up (the owner closes the socket).  Idempotent.  ``error``: why
        (the pool interrupted it, say); every later input raises it, so a reader that was
        waiting learns that reason rather than a misuse."""
        if self._state is not _CLOSED:
            self._state = TRANSITIONS[self._state, _I.CLOSE]
            if error is not None and self._error is None:
                self._error = error

    # -- outputs --------------------------------------------------------------------------

    @property
    def wanted(self) -> int:
        """How many more bytes complete the reply in progress (0: not known); see
        :attr:`MessageReader.wanted <mongo_sansio.wire.reader.MessageReader.wanted>`."""
        return self._reader.wanted

    def next_reply(self) -> Reply | NeedData | Closed:
        """The next reply, NEED_DATA, or CLOSED after a clean end of the stream."""
        if self._state is _CLOSED:
            if self._error is not None:
                raise self._error
            if self._eof:
                return CLOSED
            raise LocalProtocolError("the connection was closed")
        try:
            message = self._reader.next_message()
        except ProtocolError as exc:
            if isinstance(exc, TruncatedMessage):
                raise self._fail(
                    NetworkError(
                        f"connection to {self._where} closed in the middle "
                        f"of a reply ({exc})"
                    )
                ) from exc
            raise self._fail(exc) from None
        if message is NEED_DATA:
            return NEED_DATA
        if message is CLOSED:
            if self._state is _AWAITING:
                raise self._fail(
                    NetworkError(
                        f"connection to {self._where} closed before the "
                        f"reply to request {self._expected_response_to}"
                    )
                )
            self._state = TRANSITIONS[self._state, _I.END_OF_STREAM]
            return CLOSED
        return self._accept(message)

    # -- internals ------------------------------------------------------------------------

    def _check_open(self, action: str) -> None:
        if self._state is _CLOSED:
            if self._error is not None:
                raise self._error
            raise LocalProtocolError(f"cannot {action}: the connection is closed")

    def _fail(self, error: Exception) -> Exception:
        """Record ``error`` and close: every later input raises it again (sticky)."""
        if self._state is not _CLOSED:
            event = _I.END_OF_STREAM if isinstance(error, NetworkError) else _I.PROTOCOL_ERROR
            self._state = TRANSITIONS[self._state, event]
        self._error = error
        return error

    @property
    def _where(self) -> str:
        """The server as errors name it (formatted only when an error is raised)."""
        return format_address(self.address)

    def _accept(self, message: Any) -> Reply:
        """Check ``message`` against the outstanding request and move the machine."""
        if self._state is not _AWAITING:
            raise self._fail(
                ProtocolError(
                    f"{self._where} sent a message (responseTo {message.response_to}) "
                    "while no request was outstanding"
                )
            )
        expected = self._expected_response_to
        if message.response_to != expected:
            raise self._fail(
                ProtocolError(
                    f"{self._where} sent a reply to request {message.response_to}, "
                    f"but the reply to request {expected} was awaited"
                )
            )
        if self._expect_legacy:
            if not isinstance(message, OpReply):
                raise self._fail(
                    ProtocolError(f"{self._where} answered an OP_QUERY with op code {message.op_code}")
                )
            document = self._legacy_document(message, self._where)
            more_to_come = False
        else:
            if not isinstance(message, OpMsg):
                raise self._fail(
                    ProtocolError(f"{self._where} answered an OP_MSG with op code {message.op_code}")
                )
            document = message.body
            if type(document) is not dict and not isinstance(document, Mapping):
                raise self._fail(ProtocolError(f"{self._where} sent a reply body that is not a document"))
            raw = self._raw_batches
            if raw is not None and type(document) is RawDocument:
                try:
                    document = decode_with_raw_batches(
                        document._data, document._start, document._end, self._reply_opts, raw,
                        1 - REPLY_NESTING_ROOM,
                    )  # fmt: skip
                except InvalidBSON as exc:
                    raise self._fail(ProtocolError(f"{self._where} sent a bad reply: {exc}")) from None
            more_to_come = message.more_to_come
            if more_to_come and not self._exhaust_allowed:
                raise self._fail(
                    ProtocolError(
                        f"{self._where} set moreToCome on a reply to request {expected}, "
                        "which did not allow exhaust"
                    )
                )
        if more_to_come:
            self._state = TRANSITIONS[_AWAITING, _I.STREAMED_REPLY]
            self._expected_response_to = message.request_id
        else:
            self._state = TRANSITIONS[_AWAITING, _I.REPLY]
            self._expected_response_to = None
            self._exhaust_allowed = False
        return Reply(
            document=document,
            request_id=message.request_id,
            response_to=message.response_to,
            more_to_come=more_to_come,
        )

    def _legacy_document(self, message: OpReply, where: str) -> Mapping[str, Any]:
        document = message.body
        if message.number_returned != 1 or not isinstance(document, Mapping):
            raise self._fail(
                ProtocolError(
                    f"{where} answered an OP_QUERY with {message.number_returned} documents, "
                    "not one"
                )
            )
        if message.query_failure:
            # The legacy failure form: {$err, code}.  Give it the shape of a command failure.
            failure = dict(document)
            failure["ok"] = 0
            if "errmsg" not in failure and isinstance(failure.get("$err"), str):
                failure["errmsg"] = failure["$err"]
            return failure
        return document
