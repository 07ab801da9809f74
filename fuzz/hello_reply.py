"""atheris target for hello replies: the handshake's description and the connection machine.

Invariant, for any bytes:

* read as one BSON document (when they are one), the reply gives a ConnectionDescription or
  raises InvalidHelloReply or a ServerError -- nothing else; a description's compatibility
  check raises only IncompatibleServerError, its negotiated compressor is one we offered, and
  the whole establish flow fed that reply ends in a description or one of those errors;
* read as the bytes a server sent to a Connection awaiting the reply to request 1 (as OP_MSG
  and as the legacy OP_QUERY, whole and in chunks whose size the first byte picks), the
  machine returns replies, NEED_DATA or CLOSED, or raises ProtocolError or NetworkError --
  nothing else -- and after an error every input raises that same error.

Run a campaign:  python fuzz/hello_reply.py CORPUS_DIR -max_total_time=3600  (docs/fuzzing.md)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import InvalidBSON, decode
from mongo_sansio.connection import (
    CLOSED,
    NEED_DATA,
    Connection,
    ConnectionDescription,
    HandshakeOptions,
    InvalidHelloReply,
    Reply,
    check_compatible,
    establish,
)
from mongo_sansio.errors import IncompatibleServerError, NetworkError, ProtocolError, ServerError

ADDRESS = ("fuzz.example.com", 27017)
OFFERED = ("zstd", "zlib")
METADATA = {"driver": {"name": "fuzz", "version": "0"}, "os": {"type": "unknown"}}


class _Ids:
    """Request ids 1, 2, 3, ... (a fresh counter per machine keeps runs reproducible)."""

    def __init__(self) -> None:
        self.last = 0

    def __call__(self) -> int:
        self.last += 1
        return self.last


def check_document(reply: Any) -> ConnectionDescription | None:
    """The description invariant for one decoded reply."""
    load_balanced = isinstance(reply, Mapping) and reply.get("loadBalanced") is True
    try:
        description = ConnectionDescription.from_hello(
            ADDRESS, reply, compressors=OFFERED, load_balanced=load_balanced
        )
    except (InvalidHelloReply, ServerError):
        description = None
    if description is not None:
        assert description.compressor is None or description.compressor in OFFERED
        description.to_server_info()
        try:
            check_compatible(description, load_balanced=load_balanced)
        except IncompatibleServerError:
            pass
    options = HandshakeOptions(compressors=OFFERED, load_balanced=load_balanced)
    flow = establish(address=ADDRESS, options=options, metadata=METADATA)
    next(flow)
    try:
        flow.send(reply)
    except StopIteration as stop:
        assert isinstance(stop.value, ConnectionDescription)
    except (InvalidHelloReply, ServerError, IncompatibleServerError):
        pass
    else:
        raise AssertionError("establish asked for more than the hello without an authenticator")
    return description


def _feed(data: bytes, chunk: int, op_query: bool) -> list[Reply]:
    """Feed ``data`` to a connection awaiting request 1; the replies it gave."""
    conn = Connection(ADDRESS, request_ids=_Ids())
    conn.send_command("admin", {"isMaster" if op_query else "hello": 1}, op_query=op_query)
    replies: list[Reply] = []
    try:
        for start in range(0, len(data), chunk):
            conn.receive_data(data[start : start + chunk])
            while (reply := conn.next_reply()) is not NEED_DATA:
                assert isinstance(reply, Reply), "CLOSED before the end of the stream"
                replies.append(reply)
        conn.receive_eof()
        while (reply := conn.next_reply()) is not CLOSED:
            assert isinstance(reply, Reply), "NEED_DATA after the end of the stream"
            replies.append(reply)
    except (ProtocolError, NetworkError) as exc:
        for again in (conn.next_reply, conn.receive_eof, lambda: conn.receive_data(b"x")):
            try:
                again()
            except (ProtocolError, NetworkError) as repeated:
                assert repeated is exc, "the error state is not sticky"
            else:
                raise AssertionError("the connection accepted input after an error") from exc
    for reply in replies:
        check_document(reply.document)
    return replies


def check_bytes(data: bytes) -> None:
    """The connection invariant: the same outcome whole and chunked."""
    chunk = 1 + (data[0] % 13) if data else 1
    for op_query in (False, True):
        whole = _feed(data, max(len(data), 1), op_query)
        chunked = _feed(data, chunk, op_query)
        assert [repr(reply) for reply in whole] == [repr(reply) for reply in chunked], (
            "chunking changed the replies"
        )


def check_one(data: bytes) -> None:
    try:
        document = decode(data)
    except InvalidBSON:
        pass
    else:
        check_document(document)
    check_bytes(data)


if __name__ == "__main__":
    from _runner import fuzz  # fuzz/ is sys.path[0] when a target runs as a script

    fuzz(check_one)
