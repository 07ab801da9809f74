"""The wire protocol: OP_MSG, OP_COMPRESSED and the legacy OP_QUERY/OP_REPLY of the first hello.

Reading: :class:`MessageReader` takes bytes in any chunking (``receive_data``, then
``receive_eof`` at the end of the stream) and returns framed messages from ``next_message()``,
or :data:`NEED_DATA`, or :data:`CLOSED` after a clean end.  Writing: :func:`encode_op_msg`
(one ``bytes``) and :func:`encode_op_msg_buffers` (a list of buffers, so encoded documents
pass through without a copy), :func:`encode_op_query` for the first hello,
:func:`encode_op_reply` for the server side.  Compression: the compressor objects of
:mod:`.compression`.  Write batching: :mod:`.batching`.  Request ids: a :class:`RequestIds`
counter the caller owns.  Malformed bytes raise :class:`~mongo_sansio.errors.ProtocolError`.
"""

from __future__ import annotations

from mongo_sansio.errors import ProtocolError
from mongo_sansio.wire.batching import (
    WriteBatch,
    WriteLimits,
    encode_write_batch,
    split_write_command,
    write_batches,
)
from mongo_sansio.wire.compression import (
    COMPRESSOR_IDS,
    Compressor,
    NoopCompressor,
    SnappyCompressor,
    ZlibCompressor,
    ZstdCompressor,
    compressor_for,
    default_compressors,
    may_compress,
)
from mongo_sansio.wire.crc32c import crc32c
from mongo_sansio.wire.encode import (
    RequestIds,
    compress_message,
    encode_op_msg,
    encode_op_msg_buffers,
    encode_op_query,
    encode_op_reply,
)
from mongo_sansio.wire.messages import (
    CHECKSUM_PRESENT,
    DEFAULT_MAX_MESSAGE_SIZE,
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    OP_COMPRESSED,
    OP_MSG,
    OP_QUERY,
    OP_REPLY,
    Message,
    OpMsg,
    OpQuery,
    OpReply,
)
from mongo_sansio.wire.reader import CLOSED, NEED_DATA, Closed, MessageReader, NeedData, ReaderState

__all__ = [
    "MessageReader",
    "ReaderState",
    "NEED_DATA",
    "CLOSED",
    "NeedData",
    "Closed",
    "Message",
    "OpMsg",
    "OpReply",
    "OpQuery",
    "encode_op_msg",
    "encode_op_msg_buffers",
    "encode_op_query",
    "encode_op_reply",
    "compress_message",
    "RequestIds",
    "Compressor",
    "NoopCompressor",
    "ZlibCompressor",
    "SnappyCompressor",
    "ZstdCompressor",
    "COMPRESSOR_IDS",
    "compressor_for",
    "default_compressors",
    "may_compress",
    "crc32c",
    "WriteLimits",
    "WriteBatch",
    "split_write_command",
    "write_batches",
    "encode_write_batch",
    "ProtocolError",
    "OP_MSG",
    "OP_COMPRESSED",
    "OP_REPLY",
    "OP_QUERY",
    "CHECKSUM_PRESENT",
    "MORE_TO_COME",
    "EXHAUST_ALLOWED",
    "DEFAULT_MAX_MESSAGE_SIZE",
]
