"""A tiny test client for the simulated server: commands in, decoded replies out (no tests here).

It drives :class:`~mongo_sansio.testing.server.ServerConnection` with bytes made by the core's
wire encoders and reads the replies back with :class:`~mongo_sansio.wire.MessageReader`.
"""

from __future__ import annotations

from typing import Any

from mongo_sansio.testing.server import ReplicaSet, ServerConnection
from mongo_sansio.wire import NEED_DATA, MessageReader, encode_op_msg, encode_op_query

MEMBERS = ["127.0.0.1:27017", "127.0.0.1:27018", "127.0.0.1:27019"]
PRIMARY, SECONDARY, THIRD = MEMBERS


def make_cluster(**kwargs: Any) -> ReplicaSet:
    kwargs.setdefault("now", 100.0)
    return ReplicaSet(MEMBERS, **kwargs)


class Client:
    """One connection with a clock the test moves by hand."""

    def __init__(self, cluster: ReplicaSet, address: str = PRIMARY, now: float = 100.0) -> None:
        self.cluster = cluster
        self.now = now
        self.conn: ServerConnection = cluster.connect(address, now)
        self.reader = MessageReader()
        self.request_id = 0

    def send_raw(self, data: bytes) -> None:
        self.conn.receive_data(data, self.now)

    def send(self, body: dict[str, Any], db: str = "test", **kwargs: Any) -> int:
        self.request_id += 1
        self.send_raw(encode_op_msg({**body, "$db": db}, request_id=self.request_id, **kwargs))
        return self.request_id

    def messages(self) -> list[Any]:
        data = self.conn.data_to_send()
        if data:
            self.reader.receive_data(data)
        out: list[Any] = []
        while True:
            message = self.reader.next_message()
            if message is NEED_DATA:
                return out
            out.append(message)

    def command(self, body: dict[str, Any], db: str = "test", **kwargs: Any) -> dict[str, Any]:
        request_id = self.send(body, db, **kwargs)
        replies = self.messages()
        assert len(replies) == 1, replies
        assert replies[0].response_to == request_id
        reply: dict[str, Any] = replies[0].body
        return reply

    def legacy_hello(self, **fields: Any) -> Any:
        self.request_id += 1
        self.send_raw(encode_op_query({"isMaster": 1, **fields}, request_id=self.request_id))
        (reply,) = self.messages()
        return reply

    def advance(self, seconds: float) -> None:
        self.now += seconds
        deadline = self.conn.next_deadline()
        if deadline is not None and deadline <= self.now:
            self.conn.handle_timeout(self.now)
