"""Write batching: split an insert, update or delete into OP_MSG messages the server accepts.

Inputs: the command (``{"insert": "coll", "ordered": True, "$db": "db", ...}``), the
documents (insert documents, update or delete statements: mappings, RawDocuments or BSON
bytes) and the server's limits from its hello reply (:class:`WriteLimits`).  Outputs: a list
of :class:`WriteBatch` -- which documents go together, already encoded, and the size of the
message they make -- and, per batch, the buffers to send (:func:`encode_write_batch`).  Pure:
no I/O, and request ids come from the caller.

The rules (OP_MSG, the server write commands and bulk write specifications):

* the documents travel as a kind-1 document sequence (``documents``, ``updates`` or
  ``deletes``), the rest of the command as the kind-0 body;
* a batch holds at most ``maxWriteBatchSize`` documents, and its whole message -- header,
  flagBits, the body section, the sequence section header, the documents and the checksum
  when one is written -- at most ``maxMessageSizeBytes`` (the uncompressed size);
* a batch is closed as soon as the next document would break either limit, so the order of
  the documents is kept and every batch but the last is as full as the limits allow;
* an insert document larger than ``maxBsonObjectSize``, or an update/delete statement larger
  than ``maxBsonObjectSize`` + 16 KiB (the server's allowance for command overhead), raises
  :class:`~mongo_sansio.errors.DocumentTooLarge` naming its index -- unless
  ``check_document_size=False`` (the bulk write specification lets acknowledged writes leave
  that check to the server); a document too large for any message under
  ``maxMessageSizeBytes`` always raises, since no message could carry it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.bson._size import plain_size
from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.errors import DocumentTooLarge, LocalProtocolError
from mongo_sansio.wire.compression import Compressor
from mongo_sansio.wire.encode import Buffer, document_bytes, encode_op_msg_buffers
from mongo_sansio.wire.messages import DEFAULT_MAX_MESSAGE_SIZE, HEADER_SIZE

__all__ = [
    "WriteLimits",
    "WriteBatch",
    "WRITE_SEQUENCES",
    "COMMAND_OVERHEAD",
    "split_write_command",
    "write_batches",
    "encode_write_batch",
]

#: command name -> the argument that travels as a document sequence
WRITE_SEQUENCES: Mapping[str, str] = {
    "insert": "documents",
    "update": "updates",
    "delete": "deletes",
}

#: what a command document may exceed maxBsonObjectSize by (16 KiB)
COMMAND_OVERHEAD = 16 * 1024


def _positive(_inst: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise LocalProtocolError(f"{attribute.name} must be a positive integer, not {value!r}")


@attrs.frozen(kw_only=True)
class WriteLimits:
    """The server's limits, from its hello reply (the defaults are the server's defaults)."""

    max_write_batch_size: int = attrs.field(default=100_000, validator=_positive)
    max_message_size: int = attrs.field(default=DEFAULT_MAX_MESSAGE_SIZE, validator=_positive)
    max_bson_object_size: int = attrs.field(default=16 * 1024 * 1024, validator=_positive)

    @classmethod
    def from_hello(cls, hello: Mapping[str, Any]) -> WriteLimits:
        """The limits a hello reply states; those it leaves out keep their defaults."""
        names = {
            "maxWriteBatchSize": "max_write_batch_size",
            "maxMessageSizeBytes": "max_message_size",
            "maxBsonObjectSize": "max_bson_object_size",
        }
        return cls(**{field: int(hello[key]) for key, field in names.items() if key in hello})


@attrs.frozen(kw_only=True)
class WriteBatch:
    """One message's share of the documents: ``documents[start:start + count]`` of the
    caller's list, encoded, under the sequence ``identifier``; ``message_size`` is the size of
    the uncompressed OP_MSG they make with the command."""

    identifier: str
    start: int
    documents: tuple[Buffer, ...]
    message_size: int

    @property
    def count(self) -> int:
        return len(self.documents)

    @property
    def end(self) -> int:
        """One past the index of the batch's last document in the caller's list."""
        return self.start + len(self.documents)


def split_write_command(
    command: Mapping[str, Any],
    documents: Iterable[Any] | None = None,
    *,
    limits: WriteLimits = WriteLimits(),  # noqa: B008 -- frozen, so one shared default is safe
    identifier: str | None = None,
    checksum: bool = False,
    check_document_size: bool = True,
    codec_options: CodecOptions | None = None,
) -> tuple[bytes, list[WriteBatch]]:
    """Split a write command's documents into batches; return ``(body, batches)``.

    ``body`` is the encoded command without the sequence argument (the kind-0 document every
    batch shares).  ``documents`` may be left out when ``command`` holds them under the
    sequence argument (``command["documents"]`` for an insert); the caller's mapping is not
    changed.  ``identifier`` defaults from the command name.  ``checksum`` reserves room for
    the CRC-32C in every message.  An empty list of documents gives no batches.
    """
    body, batches = _split(
        command, documents, limits, identifier, checksum, check_document_size, codec_options,
        keep_body=True,
    )  # fmt: skip
    assert body is not None
    return body, batches


def write_batches(
    command: Mapping[str, Any],
    documents: Iterable[Any] | None = None,
    *,
    limits: WriteLimits = WriteLimits(),  # noqa: B008 -- frozen, so one shared default is safe
    identifier: str | None = None,
    checksum: bool = False,
    check_document_size: bool = True,
    codec_options: CodecOptions | None = None,
    db: str | None = None,
) -> list[WriteBatch]:
    """The batches of :func:`split_write_command`, for a caller that sends the command as a
    mapping (with fields added at sending, within the room it left in ``limits``): the body is
    only measured, and a body of plain values (the usual write command) is measured without
    being encoded (:func:`~mongo_sansio.bson._size.plain_size`).  ``db``: measured as if the
    command ended with ``$db: db``, as the connection sends it (without a copy of the command
    to say so)."""
    return _split(
        command, documents, limits, identifier, checksum, check_document_size, codec_options,
        keep_body=False, db=db,
    )[1]  # fmt: skip


def _split(
    command: Mapping[str, Any],
    documents: Iterable[Any] | None,
    limits: WriteLimits,
    identifier: str | None,
    checksum: bool,
    check_document_size: bool,
    codec_options: CodecOptions | None,
    *,
    keep_body: bool,
    db: str | None = None,
) -> tuple[bytes | None, list[WriteBatch]]:
    opts = DEFAULT_CODEC_OPTIONS if codec_options is None else codec_options
    name = next(iter(command), "")
    if identifier is None:
        identifier = WRITE_SEQUENCES.get(name)
        if identifier is None:
            raise LocalProtocolError(
                f"cannot batch a {name!r} command: give the sequence identifier "
                "(insert, update and delete have one)"
            )
    if identifier in command:
        if documents is not None:
            raise LocalProtocolError(f"documents given twice: as an argument and as {identifier!r}")
        documents = command[identifier]
        command = {key: value for key, value in command.items() if key != identifier}
    if documents is None:
        raise LocalProtocolError(f"no documents to write: pass them or set {identifier!r}")
    body: bytes | None = None
    body_size = None if keep_body or type(command) is not dict else plain_size(command)
    if db is not None:
        if body_size is not None and "$db" not in command:
            body_size += 10 + len(db.encode())  # type, "$db" and NUL, length, UTF-8, NUL
        else:
            command = {**command, "$db": db}
            body_size = None
    if body_size is None:
        encoded_body = document_bytes(command, opts)
        body_size = len(encoded_body)
        if keep_body:
            body = bytes(encoded_body)
    if body_size > limits.max_bson_object_size + COMMAND_OVERHEAD:
        raise DocumentTooLarge(
            f"the {name!r} command document is {body_size} bytes, over maxBsonObjectSize "
            f"+ 16 KiB ({limits.max_bson_object_size + COMMAND_OVERHEAD})",
            size=body_size,
            limit=limits.max_bson_object_size + COMMAND_OVERHEAD,
        )
    # header, flagBits, kind byte + body, kind byte + size + identifier + NUL, checksum
    overhead = HEADER_SIZE + 4 + 1 + body_size + 1 + 4 + len(identifier.encode()) + 1
    overhead += 4 if checksum else 0
    room = limits.max_message_size - overhead  # bytes of documents one message can carry
    per_document = limits.max_bson_object_size
    if name in ("update", "delete"):
        per_document += COMMAND_OVERHEAD  # statements carry a document plus their own keys
    max_count = limits.max_write_batch_size

    batches: list[WriteBatch] = []
    current: list[Buffer] = []
    used = 0
    start = 0
    for index, document in enumerate(documents):
        encoded = document_bytes(document, opts)
        size = len(encoded)
        if size > room or (check_document_size and size > per_document):
            limit = room if size > room else per_document
            why = (
                f"what one message under maxMessageSizeBytes {limits.max_message_size} can carry"
                if size > room
                else "maxBsonObjectSize" + (" + 16 KiB" if name in ("update", "delete") else "")
            )
            raise DocumentTooLarge(
                f"{identifier}[{index}] is {size} bytes, over the limit of {limit} ({why})",
                index=index,
                size=size,
                limit=limit,
            )
        if current and (used + size > room or len(current) == max_count):
            batches.append(WriteBatch(identifier=identifier, start=start, documents=tuple(current),
                                      message_size=overhead + used))  # fmt: skip
            current, used, start = [], 0, index
        current.append(encoded)
        used += size
    if current:
        batches.append(WriteBatch(identifier=identifier, start=start, documents=tuple(current),
                                  message_size=overhead + used))  # fmt: skip
    return body, batches


def encode_write_batch(
    body: bytes,
    batch: WriteBatch,
    *,
    request_id: int,
    flags: int = 0,
    checksum: bool = False,
    compressor: Compressor | None = None,
) -> list[Buffer]:
    """The buffers of one batch's OP_MSG (the documents pass through without a copy).  Pass
    the same ``checksum`` as to :func:`split_write_command`; an unacknowledged write sets
    moreToCome in ``flags``."""
    sequences: Sequence[tuple[str, Sequence[Buffer]]] = ((batch.identifier, batch.documents),)
    return encode_op_msg_buffers(
        body,
        request_id=request_id,
        sequences=sequences,
        flags=flags,
        checksum=checksum,
        compressor=compressor,
    )
