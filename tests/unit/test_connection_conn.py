"""The per-connection machine against the simulated server's pure side, and against scripted
bytes for what a well-behaved server never sends."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_wire_client import PRIMARY, make_cluster

from mongo_sansio.connection import (
    CLOSED,
    NEED_DATA,
    TRANSITIONS,
    Connection,
    ConnectionDescription,
    ConnectionState,
    HandshakeOptions,
    Reply,
    ServerApi,
    build_hello,
)
from mongo_sansio.errors import (
    DocumentTooLarge,
    LocalProtocolError,
    MongoError,
    NetworkError,
    ProtocolError,
)
from mongo_sansio.sdam.description import parse_address
from mongo_sansio.testing.server import ReplicaSet, ServerConnection
from mongo_sansio.wire import (
    MORE_TO_COME,
    OP_COMPRESSED,
    OP_MSG,
    OP_QUERY,
    MessageReader,
    RequestIds,
    encode_op_msg,
    encode_op_reply,
)

IDLE, AWAITING, CLOSED_STATE = ConnectionState
METADATA = {"driver": {"name": "mongo-sansio", "version": "1.0"}, "os": {"type": "Linux"}}
ADDRESS = parse_address(PRIMARY)


def op_code(buffers: list[Any]) -> int:
    data = b"".join(bytes(part) for part in buffers)
    return int(struct.unpack_from("<i", data, 12)[0])


def sent_message(buffers: list[Any]) -> Any:
    reader = MessageReader()
    reader.receive_data(b"".join(bytes(part) for part in buffers))
    return reader.next_message()


class Pair:
    """A client Connection joined to one simulated server connection."""

    def __init__(self, cluster: ReplicaSet | None = None, **kwargs: Any) -> None:
        self.cluster = cluster or make_cluster()
        self.now = 100.0
        self.server: ServerConnection = self.cluster.connect(PRIMARY, self.now)
        self.conn = Connection(ADDRESS, request_ids=RequestIds(), **kwargs)

    def send(self, db: str, body: dict[str, Any], **kwargs: Any) -> list[Any]:
        buffers = self.conn.send_command(db, body, **kwargs)
        self.server.receive_data(b"".join(bytes(part) for part in buffers), self.now)
        return buffers

    def pending(self) -> bytes:
        return self.server.data_to_send()

    def reply(self) -> Reply:
        self.conn.receive_data(self.pending())
        reply = self.conn.next_reply()
        assert isinstance(reply, Reply), reply
        return reply

    def command(self, db: str, body: dict[str, Any], **kwargs: Any) -> Reply:
        self.send(db, body, **kwargs)
        return self.reply()

    def handshake(self, options: HandshakeOptions | None = None) -> ConnectionDescription:
        options = options or HandshakeOptions()
        body, op_query = build_hello(options, METADATA)
        reply = self.command("admin", body, op_query=op_query)
        description = ConnectionDescription.from_hello(
            ADDRESS, reply.document, compressors=options.compressors
        )
        self.conn.set_description(description)
        return description


# -- against the simulated server ---------------------------------------------------------------


def test_legacy_hello_then_op_msg_commands() -> None:
    pair = Pair()
    assert pair.conn.state is IDLE
    body, op_query = build_hello(HandshakeOptions(), METADATA)
    buffers = pair.send("admin", body, op_query=op_query)
    assert op_code(buffers) == OP_QUERY
    query = sent_message(buffers)
    assert query.full_collection_name == "admin.$cmd" and "$db" not in query.query
    assert pair.conn.state is AWAITING
    assert pair.conn.awaiting_response_to == pair.conn.last_request_id
    reply = pair.reply()
    assert pair.conn.state is IDLE and pair.conn.awaiting_response_to is None
    assert reply.document["ismaster"] is True and reply.document["helloOk"] is True
    assert reply.response_to == pair.conn.last_request_id and not reply.more_to_come
    pair.conn.set_description(ConnectionDescription.from_hello(ADDRESS, reply.document))

    buffers = pair.send("shop", {"insert": "orders", "documents": [{"_id": 1}]})
    assert op_code(buffers) == OP_MSG
    assert sent_message(buffers).body["$db"] == "shop"
    inserted = pair.reply().document
    assert inserted["n"] == 1 and inserted["ok"] == 1.0
    found = pair.command("shop", {"find": "orders", "filter": {}})
    assert found.document["cursor"]["firstBatch"] == [{"_id": 1}]


def test_document_sequences_pass_through() -> None:
    pair = Pair()
    pair.handshake()
    documents = [{"_id": i} for i in range(3)]
    reply = pair.command("shop", {"insert": "orders"}, sequences={"documents": documents})
    assert reply.document["n"] == 3


@pytest.mark.parametrize("name", ["zlib", "snappy", "zstd"])
def test_compression_after_negotiation(name: str) -> None:
    pair = Pair(zlib_compression_level=6)
    assert pair.conn.compressor is None
    description = pair.handshake(HandshakeOptions(compressors=("noop", name)))
    assert description.compressor == name and pair.conn.compressor == name

    buffers = pair.send("shop", {"insert": "orders", "documents": [{"x": "y" * 500}] * 20})
    assert op_code(buffers) == OP_COMPRESSED
    assert sent_message(buffers).compressor_id == {"snappy": 1, "zlib": 2, "zstd": 3}[name]
    raw = pair.pending()
    assert struct.unpack_from("<i", raw, 12)[0] == OP_COMPRESSED  # the server answers in kind
    pair.conn.receive_data(raw)
    reply = pair.conn.next_reply()
    assert isinstance(reply, Reply) and reply.document["n"] == 20

    # hello and the SASL commands never travel compressed
    assert op_code(pair.send("admin", {"hello": 1})) == OP_MSG
    pair.reply()
    assert op_code(pair.conn.send_command("admin", {"saslStart": 1})) == OP_MSG


def test_replies_read_one_byte_at_a_time() -> None:
    pair = Pair()
    pair.handshake()
    pair.send("admin", {"ping": 1})
    raw = pair.pending()
    for index in range(len(raw) - 1):
        pair.conn.receive_data(raw[index : index + 1])
        assert pair.conn.next_reply() is NEED_DATA
        assert pair.conn.state is AWAITING
    pair.conn.receive_data(raw[-1:])
    reply = pair.conn.next_reply()
    assert isinstance(reply, Reply) and reply.document["ok"] == 1.0
    assert pair.conn.next_reply() is NEED_DATA


def test_exhaust_awaitable_hello_streams_replies() -> None:
    pair = Pair()
    description = pair.handshake()
    assert description.topology_version is not None
    awaitable = {
        "hello": 1,
        "topologyVersion": description.topology_version.to_document(),
        "maxAwaitTimeMS": 1000,
    }
    pair.send("admin", awaitable, exhaust_allowed=True)
    request_id = pair.conn.last_request_id
    pair.conn.receive_data(pair.pending())
    assert pair.conn.next_reply() is NEED_DATA  # the server waits for a change or the timeout

    pair.now += 1.0
    pair.server.handle_timeout(pair.now)
    first = pair.reply()
    assert first.more_to_come and first.response_to == request_id
    assert pair.conn.state is AWAITING
    assert pair.conn.awaiting_response_to == first.request_id
    with pytest.raises(LocalProtocolError, match="awaited"):
        pair.conn.send_command("admin", {"ping": 1})

    pair.cluster.step_down(pair.now)  # a topology change answers the streamed hello at once
    second = pair.reply()
    assert second.more_to_come and second.response_to == first.request_id
    assert second.document["isWritablePrimary"] is False

    # a reply without moreToCome ends the stream (scripted: the simulator streams forever)
    pair.conn.receive_data(encode_op_msg({"ok": 1}, request_id=900, response_to=second.request_id))
    last = pair.conn.next_reply()
    assert isinstance(last, Reply) and not last.more_to_come
    assert pair.conn.state is IDLE


def test_more_to_come_request_expects_no_reply() -> None:
    pair = Pair()
    pair.handshake()
    pair.send("shop", {"insert": "orders", "documents": [{"_id": 7}]}, more_to_come=True)
    assert pair.conn.state is IDLE
    assert pair.pending() == b""
    found = pair.command("shop", {"find": "orders", "filter": {}})
    assert found.document["cursor"]["firstBatch"] == [{"_id": 7}]


def test_stable_api_fields_go_on_every_command() -> None:
    pair = Pair(server_api=ServerApi("1", strict=True))
    buffers = pair.conn.send_command("shop", {"getMore": 5, "collection": "orders"})
    body = sent_message(buffers).body
    assert body["apiVersion"] == "1" and body["apiStrict"] is True and body["$db"] == "shop"
    assert list(body)[0] == "getMore"
    pair.conn.close()

    pair = Pair(server_api=ServerApi("1"))
    with pytest.raises(LocalProtocolError, match="OP_MSG"):
        pair.conn.send_command("admin", {"isMaster": 1}, op_query=True)
    assert pair.conn.state is IDLE
    reply = pair.command("admin", {"hello": 1, "helloOk": True})  # the simulator accepts it
    assert reply.document["ok"] == 1.0


# -- what a well-behaved server never sends -------------------------------------------------------


def awaiting(**kwargs: Any) -> Connection:
    conn = Connection(ADDRESS, request_ids=RequestIds(7))
    conn.send_command("admin", {"ping": 1}, **kwargs)
    return conn


def assert_sticky(conn: Connection, error: BaseException) -> None:
    assert conn.state is CLOSED_STATE
    for action in (
        conn.next_reply,
        lambda: conn.receive_data(b"\x00"),
        conn.receive_eof,
        lambda: conn.send_command("admin", {"ping": 1}),
        lambda: conn.set_description(ConnectionDescription.from_hello(ADDRESS, {"ok": 1})),
    ):
        with pytest.raises(type(error)) as again:
            action()
        assert again.value is error


def test_response_to_mismatch() -> None:
    conn = awaiting()
    conn.receive_data(encode_op_msg({"ok": 1}, request_id=1, response_to=8))
    with pytest.raises(ProtocolError, match="request 8.*request 7") as caught:
        conn.next_reply()
    assert_sticky(conn, caught.value)


def test_unsolicited_message() -> None:
    conn = Connection(ADDRESS, request_ids=RequestIds())
    conn.receive_data(encode_op_msg({"ok": 1}, request_id=1, response_to=0))
    with pytest.raises(ProtocolError, match="no request was outstanding") as caught:
        conn.next_reply()
    assert_sticky(conn, caught.value)


def test_more_to_come_without_exhaust() -> None:
    conn = awaiting()
    conn.receive_data(encode_op_msg({"ok": 1}, request_id=1, response_to=7, flags=MORE_TO_COME))
    with pytest.raises(ProtocolError, match="did not allow exhaust"):
        conn.next_reply()


def test_op_reply_to_op_msg_and_op_msg_to_op_query() -> None:
    conn = awaiting()
    conn.receive_data(encode_op_reply([{"ok": 1}], request_id=1, response_to=7))
    with pytest.raises(ProtocolError, match="answered an OP_MSG"):
        conn.next_reply()
    conn = awaiting(op_query=True)
    conn.receive_data(encode_op_msg({"ok": 1}, request_id=1, response_to=7))
    with pytest.raises(ProtocolError, match="answered an OP_QUERY"):
        conn.next_reply()


def test_legacy_reply_forms() -> None:
    conn = awaiting(op_query=True)
    conn.receive_data(
        encode_op_reply([{"$err": "bad query", "code": 2}], request_id=1, response_to=7, flags=2)
    )
    reply = conn.next_reply()
    assert isinstance(reply, Reply)
    assert reply.document == {"$err": "bad query", "code": 2, "ok": 0, "errmsg": "bad query"}
    conn = awaiting(op_query=True)
    conn.receive_data(encode_op_reply([{"ok": 1}, {"ok": 1}], request_id=1, response_to=7))
    with pytest.raises(ProtocolError, match="2 documents"):
        conn.next_reply()


def test_garbage_bytes() -> None:
    conn = awaiting()
    conn.receive_data(b"\xff" * 32)
    with pytest.raises(ProtocolError) as caught:
        conn.next_reply()
    assert_sticky(conn, caught.value)


def test_eof_mid_reply_is_a_network_error() -> None:
    conn = awaiting()
    data = encode_op_msg({"ok": 1}, request_id=1, response_to=7)
    conn.receive_data(data[:-3])
    assert conn.next_reply() is NEED_DATA
    conn.receive_eof()
    with pytest.raises(NetworkError, match="middle of a reply") as caught:
        conn.next_reply()
    assert_sticky(conn, caught.value)


def test_eof_while_awaiting_is_a_network_error() -> None:
    conn = awaiting()
    conn.receive_eof()
    with pytest.raises(NetworkError, match="before the reply to request 7") as caught:
        conn.next_reply()
    assert_sticky(conn, caught.value)


def test_reply_then_eof_delivers_the_reply_then_closed() -> None:
    conn = awaiting()
    conn.receive_data(encode_op_msg({"ok": 1}, request_id=1, response_to=7))
    conn.receive_eof()
    assert isinstance(conn.next_reply(), Reply)
    with pytest.raises(LocalProtocolError, match="closed the connection"):
        conn.send_command("admin", {"ping": 1})
    assert conn.next_reply() is CLOSED
    assert conn.state is CLOSED_STATE
    assert conn.next_reply() is CLOSED
    with pytest.raises(LocalProtocolError):
        conn.receive_data(b"x")


def test_eof_while_idle_is_a_clean_close() -> None:
    conn = Connection(ADDRESS, request_ids=RequestIds())
    conn.receive_eof()
    assert conn.next_reply() is CLOSED
    assert conn.state is CLOSED_STATE


def test_size_limits_come_from_the_description() -> None:
    conn = Connection(ADDRESS, request_ids=RequestIds(7))
    conn.set_description(
        ConnectionDescription.from_hello(ADDRESS, {"ok": 1, "maxMessageSizeBytes": 200})
    )
    with pytest.raises(DocumentTooLarge):
        conn.send_command("admin", {"insert": "c", "documents": [{"x": "y" * 300}]})
    assert conn.state is IDLE and conn.last_request_id is None
    conn.send_command("admin", {"ping": 1})
    conn.receive_data(encode_op_msg({"ok": 1, "pad": "z" * 300}, request_id=1, response_to=7))
    with pytest.raises(ProtocolError, match="maximum message size"):
        conn.next_reply()


def test_local_misuse_changes_nothing() -> None:
    conn = awaiting()
    with pytest.raises(LocalProtocolError, match="awaited"):
        conn.send_command("admin", {"ping": 1})
    assert conn.state is AWAITING and conn.awaiting_response_to == 7
    conn = Connection(ADDRESS, request_ids=RequestIds())
    misuses: list[Callable[[], object]] = [
        lambda: conn.send_command("admin", {"find": "c"}, exhaust_allowed=True),
        lambda: conn.send_command("admin", {"hello": 1}, exhaust_allowed=True, more_to_come=True),
        lambda: conn.send_command("admin", {}),
        lambda: conn.send_command("", {"ping": 1}),
        lambda: conn.send_command("admin", {"ping": 1}, op_query=True, exhaust_allowed=True),
    ]
    for bad in misuses:
        with pytest.raises(LocalProtocolError):
            bad()
        assert conn.state is IDLE
    conn.close()
    conn.close()
    assert conn.state is CLOSED_STATE
    with pytest.raises(LocalProtocolError, match="closed"):
        conn.send_command("admin", {"ping": 1})
    with pytest.raises(LocalProtocolError, match="closed"):
        conn.next_reply()


def test_close_with_a_reason_gives_it_to_every_later_input() -> None:
    # the pool interrupted the connection while a reply was awaited: the reader that wakes up
    # learns why, not that it misused a closed connection
    from mongo_sansio.cmap.errors import PoolClearedError

    conn = awaiting()
    reason = PoolClearedError("a:27017", interrupted=True)
    conn.close(reason)
    assert_sticky(conn, reason)
    conn.close(NetworkError("later"))  # idempotent: the first reason stays
    assert_sticky(conn, reason)


# -- every (state, input) pair, against a model built from the table -----------------------------

_ACTIONS = ["send", "send_exhaust", "send_no_reply", "reply", "streamed", "wrong", "eof", "close"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ACTIONS), max_size=12))
def test_random_inputs_follow_the_transition_table(actions: list[str]) -> None:
    conn = Connection(ADDRESS, request_ids=RequestIds())
    error: BaseException | None = None
    for action in actions:
        before = conn.state
        try:
            if action.startswith("send"):
                body = {"hello": 1} if action == "send_exhaust" else {"ping": 1}
                conn.send_command(
                    "admin",
                    body,
                    exhaust_allowed=action == "send_exhaust",
                    more_to_come=action == "send_no_reply",
                )
            elif action in ("reply", "streamed", "wrong"):
                expected = conn.awaiting_response_to or 0
                conn.receive_data(
                    encode_op_msg(
                        {"ok": 1},
                        request_id=1000 + len(actions),
                        response_to=expected + (action == "wrong"),
                        flags=MORE_TO_COME if action == "streamed" else 0,
                    )
                )
                conn.next_reply()
            elif action == "eof":
                conn.receive_eof()
                conn.next_reply()
            else:
                conn.close()
        except (ProtocolError, NetworkError) as exc:
            assert conn.state is CLOSED_STATE
            error = error or exc
        except LocalProtocolError:
            assert conn.state is before or conn.state is CLOSED_STATE
        except MongoError as exc:  # pragma: no cover - the assertion's message
            raise AssertionError(f"unexpected {exc!r}") from exc
        after = conn.state
        allowed = {before} | {
            target for (state, _), target in TRANSITIONS.items() if state is before
        }
        assert after in allowed, (before, action, after)
    if error is not None:  # sticky
        with pytest.raises(type(error)):
            conn.next_reply()
