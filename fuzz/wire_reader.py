"""atheris target for the wire message reader (mongo_sansio.wire.MessageReader).

Invariant: for any bytes, fed in any chunking, the reader returns messages, NEED_DATA or
CLOSED, or raises ProtocolError -- nothing else -- and after an error every call raises that
same error; ``wanted`` (the bytes a transport would read next) never raises and stays within
the maximum message size.  The bytes are fed twice, whole and in chunks whose sizes the input's first byte
picks, and the two readings must agree.  An OP_MSG that parses re-encodes, and re-encoding
reaches a fixed point after one round.

Run a campaign:  python fuzz/wire_reader.py CORPUS_DIR -max_total_time=3600  (docs/fuzzing.md)
"""

from __future__ import annotations

from typing import Any

from mongo_sansio.errors import ProtocolError
from mongo_sansio.wire import (
    CLOSED,
    EXHAUST_ALLOWED,
    NEED_DATA,
    MessageReader,
    OpMsg,
    encode_op_msg,
)


def _read(data: bytes, chunk: int, lazy: bool) -> tuple[list[Any], str | None]:
    """The messages read from ``data`` fed ``chunk`` bytes at a time, and the error if any."""
    reader = MessageReader(max_message_size=1 << 20, lazy=lazy)
    messages: list[Any] = []
    try:
        for start in range(0, len(data), chunk):
            reader.receive_data(data[start : start + chunk])
            # what a transport would read next: never an error, never past the maximum
            assert 0 <= reader.wanted <= reader.max_message_size, "wanted out of range"
            while (message := reader.next_message()) is not NEED_DATA:
                assert message is not CLOSED, "CLOSED before the end of the stream"
                messages.append(message)
        reader.receive_eof()
        while (message := reader.next_message()) is not CLOSED:
            assert message is not NEED_DATA, "NEED_DATA after the end of the stream"
            messages.append(message)
    except ProtocolError as exc:
        for again in (reader.next_message, reader.receive_eof, lambda: reader.receive_data(b"x")):
            try:
                again()
            except ProtocolError as repeated:
                assert repeated is exc, "the error state is not sticky"
            else:
                raise AssertionError("the reader accepted input after an error")
        return messages, str(exc)
    return messages, None


def _fields(message: Any) -> tuple[Any, ...]:
    """The message's fields, with the documents as their repr: NaN != NaN, but their reprs
    agree."""
    return (message.op_code, message.request_id, message.response_to, message.flags,
            repr(message.body), repr(dict(message.sequences)))  # fmt: skip


def _reencode(message: OpMsg) -> Any:
    """``message`` encoded by our writer and read back."""
    data = encode_op_msg(
        message.body,
        request_id=message.request_id,
        response_to=message.response_to,
        sequences=message.sequences,
        flags=message.flags & ~(1 | EXHAUST_ALLOWED),  # checksum: not re-sent; exhaust: hello only
    )
    again, error = _read(data, len(data), lazy=False)
    assert error is None and len(again) == 1, f"a parsed OP_MSG did not re-encode: {error}"
    return again[0]


def check_one(data: bytes) -> None:
    chunk = 1 + (data[0] % 17) if data else 1
    whole, error = _read(data, max(len(data), 1), lazy=False)
    chunked, chunked_error = _read(data, chunk, lazy=False)
    assert [_fields(m) for m in whole] == [_fields(m) for m in chunked], "chunking changed messages"
    assert (error is None) == (chunked_error is None), "chunking changed the outcome"
    for message in whole:
        if isinstance(message, OpMsg):
            # Re-encoding reaches a fixed point after one round (the BSON encoder normalises
            # a few things, such as the order of regex options; the framing must not change).
            once = _reencode(message)
            assert _fields(_reencode(once)) == _fields(once), "re-encoding changed the message"
    _read(data, chunk, lazy=True)  # lazy documents: the framing checks alone


if __name__ == "__main__":
    from _runner import fuzz  # fuzz/ is sys.path[0] when a target runs as a script

    fuzz(check_one)
