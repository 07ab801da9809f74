"""A canned-reply MongoDB server for client benchmarks: every reply is encoded ahead of time,
so answering a request costs little more than finding the command's name and copying bytes.

    python benchmarks/canned_server.py [--port 0] [--batch 1000]

It prints its URI (``mongodb://127.0.0.1:PORT/?replicaSet=rs0``) and serves until stdin
closes or it is terminated.  It presents itself as the primary of a one-member replica set
that supports sessions (``logicalSessionTimeoutMinutes``) and gossips ``$clusterTime``, so
clients run with implicit sessions and retryable writes on, as against a real replica set.

What each command gets (chosen by command name, and by collection or cursor id where the
benchmark needs different answers):

* ``hello`` / ``isMaster`` (OP_QUERY or OP_MSG): the primary's hello.
* ``find`` on collection ``one``: one ``tweet``-like document, cursor id 0 (a find by _id).
* ``find`` on any other collection: the first ``--batch`` small documents, cursor id 1; a
  ``getMore`` of cursor 1: the next ``--batch``, cursor id 0 (two batches in all).
* ``aggregate`` (a change stream): an empty first batch, cursor id 2, a post-batch resume
  token; every ``getMore`` of cursor 2: ``--batch`` insert events, cursor id 2 (an endless
  stream).
* ``insert``: ``{n: <documents in the request>, ok: 1}``.
* anything else (``endSessions``, ``killCursors``, ``ping``...): ``{ok: 1}``.

Every reply carries ``$clusterTime`` and ``operationTime``.  The replies are built with
mongo_sansio's own encoder (this is a test peer, not the thing measured); the request is
read with a few slices, never decoded, except an insert whose documents are not in a
document sequence.
"""

from __future__ import annotations

import argparse
import datetime
import socket
import struct
import sys
import threading
from pathlib import Path
from typing import Any

from mongo_sansio.bson import Binary, Int64, ObjectId, Timestamp, decode, extjson
from mongo_sansio.wire import OP_MSG, OP_QUERY, encode_op_msg, encode_op_reply

_HEADER = struct.Struct("<iiii")
_I32 = struct.Struct("<i").unpack_from
_I64 = struct.Struct("<q").unpack_from

REPLSET = "rs0"
FIND_MANY_CURSOR = 1
CHANGE_STREAM_CURSOR = 2
DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data"


def data_dir() -> Path:
    import os

    return Path(os.environ.get("MONGO_SANSIO_BENCH_DATA", DATA))


def load_data_set(name: str) -> dict[str, Any]:
    """A data set of the driver benchmarking spec, as mongo_sansio documents."""
    text = (data_dir() / f"{name}.json").read_text(encoding="utf-8")
    document: dict[str, Any] = extjson.loads(text)
    return document


class CannedReplies:
    """The replies, encoded once: ``(opcode, bytes after the header)`` per answer."""

    def __init__(self, address: str, batch: int) -> None:
        cluster_time = Timestamp(1_700_000_000, 1)
        gossip = {
            "$clusterTime": {
                "clusterTime": cluster_time,
                "signature": {"hash": Binary(bytes(20), 0), "keyId": Int64(0)},
            },
            "operationTime": cluster_time,
        }
        now = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
        self.hello_document: dict[str, Any] = {
            "helloOk": True,
            "ismaster": True,
            "isWritablePrimary": True,
            "setName": REPLSET,
            "setVersion": 1,
            "hosts": [address],
            "primary": address,
            "me": address,
            "electionId": ObjectId(b"\x7f\xff\xff\xff" + bytes(8)),
            "lastWrite": {"opTime": {"ts": cluster_time, "t": Int64(1)}, "lastWriteDate": now},
            "maxBsonObjectSize": 16 * 1024 * 1024,
            "maxMessageSizeBytes": 48_000_000,
            "maxWriteBatchSize": 100_000,
            "localTime": now,
            "logicalSessionTimeoutMinutes": 30,
            "connectionId": 1,
            "minWireVersion": 0,
            "maxWireVersion": 21,
            "readOnly": False,
            "ok": 1.0,
            **gossip,
        }
        small = load_data_set("small_doc")
        tweet = load_data_set("tweet")
        first = [{"_id": i, **small} for i in range(batch)]
        second = [{"_id": batch + i, **small} for i in range(batch)]
        events = [self._event(i, small) for i in range(batch)]
        self.gossip = gossip
        self.hello_msg = self._msg(self.hello_document)
        self.hello_reply = (1, encode_op_reply([self.hello_document], request_id=0, response_to=0)[16:])
        self.ok = self._msg({"ok": 1.0})
        self.find_one = self._msg(self._cursor("bench.one", 0, "firstBatch", [{"_id": 1, **tweet}]))
        self.find_first = self._msg(self._cursor("bench.many", FIND_MANY_CURSOR, "firstBatch", first))
        self.find_second = self._msg(self._cursor("bench.many", 0, "nextBatch", second))
        self.stream_open = self._msg(
            self._cursor("bench.events", CHANGE_STREAM_CURSOR, "firstBatch", [],
                         postBatchResumeToken={"_data": "8200000000"})
        )
        self.stream_batch = self._msg(
            self._cursor("bench.events", CHANGE_STREAM_CURSOR, "nextBatch", events,
                         postBatchResumeToken=events[-1]["_id"])
        )
        self.inserted: dict[int, tuple[int, bytes]] = {}

    @staticmethod
    def _event(i: int, small: dict[str, Any]) -> dict[str, Any]:
        return {
            "_id": {"_data": f"82{i:032X}"},
            "operationType": "insert",
            "clusterTime": Timestamp(1_700_000_000, i + 1),
            "wallTime": datetime.datetime(2024, 1, 1),
            "fullDocument": {"_id": i, **small},
            "ns": {"db": "bench", "coll": "events"},
            "documentKey": {"_id": i},
        }

    def _cursor(self, ns: str, cursor_id: int, field: str, batch: list[Any],
                **extra: Any) -> dict[str, Any]:
        return {"cursor": {field: batch, "id": Int64(cursor_id), "ns": ns, **extra},
                "ok": 1.0, **self.gossip}

    @staticmethod
    def _msg(document: dict[str, Any]) -> tuple[int, bytes]:
        return OP_MSG, encode_op_msg(document, request_id=0)[16:]

    def insert_reply(self, count: int) -> tuple[int, bytes]:
        reply = self.inserted.get(count)
        if reply is None:
            reply = self.inserted[count] = self._msg({"n": count, "ok": 1.0, **self.gossip})
        return reply


def _command(data: bytes) -> tuple[str, int, int]:
    """The OP_MSG's command name, where its body starts, and where its first value starts."""
    pos = 4  # flagBits
    while data[pos] != 0:  # skip kind-1 sections to the body
        pos += 1 + _I32(data, pos + 1)[0]
    body = pos + 1
    nul = data.index(b"\x00", body + 5)
    return data[body + 5 : nul].decode(), body, nul + 1


def _documents_in_sequences(data: bytes) -> int | None:
    count = None
    pos = 4
    while pos < len(data):
        if data[pos] == 0:
            pos += 1 + _I32(data, pos + 1)[0]
            continue
        size = _I32(data, pos + 1)[0]
        end = pos + 1 + size
        nul = data.index(b"\x00", pos + 5)
        doc = nul + 1
        count = count or 0
        while doc < end:
            count += 1
            doc += _I32(data, doc)[0]
        pos = end
    return count


def answer(replies: CannedReplies, op_code: int, data: bytes) -> tuple[int, bytes]:
    """The canned reply to one request (``data``: the message after its header)."""
    if op_code == OP_QUERY:
        return replies.hello_reply
    if op_code != OP_MSG:
        raise ValueError(f"op code {op_code} is not served")
    name, body, value = _command(data)
    if name in ("hello", "isMaster", "ismaster"):
        return replies.hello_msg
    if name == "find":
        length = _I32(data, value)[0]
        collection = data[value + 4 : value + 3 + length]
        return replies.find_one if collection == b"one" else replies.find_first
    if name == "getMore":
        cursor_id = _I64(data, value)[0]
        return replies.find_second if cursor_id == FIND_MANY_CURSOR else replies.stream_batch
    if name == "aggregate":
        return replies.stream_open
    if name == "insert":
        count = _documents_in_sequences(data)
        if count is None:
            document = decode(data[body + 1 : body + 1 + _I32(data, body + 1)[0]])
            count = len(document.get("documents", ()))
        return replies.insert_reply(count)
    return replies.ok


def _read_exactly(conn: socket.socket, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = conn.recv(min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def serve_connection(conn: socket.socket, replies: CannedReplies) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    response_id = 0
    with conn:
        while True:
            header = _read_exactly(conn, 16)
            if header is None:
                return
            length, request_id, _response_to, op_code = _HEADER.unpack(header)
            data = _read_exactly(conn, length - 16)
            if data is None:
                return
            reply_op, rest = answer(replies, op_code, data)
            response_id += 1
            conn.sendall(_HEADER.pack(16 + len(rest), response_id, request_id, reply_op) + rest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--batch", type=int, default=1000, help="documents per cursor batch")
    args = parser.parse_args()
    listener = socket.create_server((args.host, args.port))
    host, port = listener.getsockname()[:2]
    replies = CannedReplies(f"{host}:{port}", args.batch)

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=serve_connection, args=(conn, replies), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    print(f"mongodb://{host}:{port}/?replicaSet={REPLSET}", flush=True)
    sys.stdin.read()  # serve until the parent closes our stdin


if __name__ == "__main__":
    main()
