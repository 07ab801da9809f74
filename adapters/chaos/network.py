"""The in-memory network between the clients and the simulated members, on virtual time.

Each client connection is a :class:`Link`: the client's :class:`VirtualStream` at one end,
the pure server's :class:`~mongo_sansio.testing.server.ServerConnection` at the other.  Bytes
travel one way or the other with a seeded latency (in order per direction); an end of stream
travels like data.  Faults act on this network: a partition holds a member's traffic in one or
both directions until it heals (a connection attempt into it hangs until its deadline), a stall
delays everything to and from a member until a time, and a cut delivers only a prefix of the
next bytes in one direction and then ends the connection both ways (a reply lost after the
server ran the command, or a request cut short).  Failures reach the client as the real
transports raise them: :class:`~mongo_sansio.errors.NetworkTimeout` past a deadline,
:class:`~mongo_sansio.errors.NetworkError` for a refused or closed connection.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from mongo_sansio.errors import NetworkError, NetworkTimeout
from mongo_sansio.testing.server import STOPPED, ReplicaSet, ServerConnection

from .loop import Loop, Trap, Waiter

__all__ = ["Network", "VirtualStream", "TO_SERVER", "TO_CLIENT"]

TO_SERVER = "to_server"
TO_CLIENT = "to_client"
_EOF = None  # what an end of stream travels as


class Link:
    """One connection: its two directions and both ends' state."""

    def __init__(self, network: Network, member: str, conn: ServerConnection, number: int) -> None:
        self.network = network
        self.member = member
        self.conn = conn
        self.number = number
        self.stream = VirtualStream(self)
        self.last_arrival = {TO_SERVER: 0.0, TO_CLIENT: 0.0}
        self.eof_sent = {TO_SERVER: False, TO_CLIENT: False}
        self.cut: dict[str, bool] = {TO_SERVER: False, TO_CLIENT: False}
        self.server_timer: list[bool] | None = None
        self.server_deadline: float | None = None
        self.server_done = False

    @property
    def alive(self) -> bool:
        return not self.server_done and not self.stream.closed and not self.stream.eof


class VirtualStream:
    """The client's end: ``send_all``, ``receive``, ``close`` as the real transports' streams."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.inbox = bytearray()
        self.eof = False
        self.closed = False
        self.reader: Waiter | None = None
        self.where = link.member

    async def send_all(self, buffers: Sequence[bytes | bytearray | memoryview], timeout: float | None) -> None:
        if self.closed:
            raise NetworkError(f"the connection to {self.where} is closed")
        if self.eof:
            raise NetworkError(f"sending to {self.where} failed: connection reset by peer")
        self.link.network.transmit(self.link, b"".join(bytes(b) for b in buffers), TO_SERVER)

    async def receive(self, timeout: float | None, max_bytes: int = 65536) -> bytes:
        if self.closed:
            raise NetworkError(f"the connection to {self.where} is closed")
        if not self.inbox and not self.eof:
            loop = self.link.network.loop

            def arm(waiter: Waiter) -> None:
                self.reader = waiter
                flag = None
                if timeout is not None:
                    flag = loop.call_at(
                        loop.now + timeout,
                        lambda: waiter.fail(NetworkTimeout(f"reading from {self.where}: timed out")),
                    )

                def disarm() -> None:
                    self.reader = None
                    if flag is not None:
                        flag[0] = True

                waiter.on_done = disarm

            await Trap(arm)
        if self.inbox:
            data = bytes(self.inbox[:max_bytes])
            del self.inbox[:max_bytes]
            return data
        return b""

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.reader is not None:
            self.reader.fail(NetworkError(f"the connection to {self.where} is closed"))
        link = self.link
        if not link.eof_sent[TO_SERVER]:
            link.network.transmit(link, _EOF, TO_SERVER)

    def _arrive(self, data: bytes | None) -> None:
        if self.closed:
            return
        if data is _EOF:
            self.eof = True
        else:
            self.inbox += data
        if self.reader is not None:
            self.reader.wake()


class Network:
    """See the module docstring.  ``rng`` draws latencies and cut points."""

    def __init__(self, loop: Loop, cluster: ReplicaSet, latency: tuple[float, float] = (0.0002, 0.002)) -> None:
        self.loop = loop
        self.cluster = cluster
        self.rng = loop.rng
        self.latency = latency
        self.links: list[Link] = []
        #: (member, direction) -> traffic held there until the partition heals
        self.blocked: dict[tuple[str, str], deque[tuple[Link, bytes | None]]] = {}
        self.stalled_until: dict[str, float] = {}
        self.connections_opened = 0
        self.trace: list[str] = []

    # -- connecting ------------------------------------------------------------------------------

    def connect(self, address: tuple[str, int], timeout: float | None) -> Trap:
        member = f"{address[0]}:{address[1]}"
        loop = self.loop

        def arm(waiter: Waiter) -> None:
            flag = None
            if timeout is not None:
                flag = loop.call_at(
                    loop.now + timeout,
                    lambda: waiter.fail(NetworkTimeout(f"connecting to {member}: timed out")),
                )
            waiter.on_done = None if flag is None else (lambda: flag.__setitem__(0, True))

            def attempt() -> None:
                if waiter.done:
                    return
                if (member, TO_SERVER) in self.blocked or (member, TO_CLIENT) in self.blocked:
                    self.loop.call_at(self.loop.now + 0.05, attempt)  # SYN lost: try again later
                    return
                if member not in self.cluster.members:
                    waiter.fail(NetworkError(f"cannot connect to {member}: no such host"))
                    return
                if self.cluster.members[member].state == STOPPED:
                    waiter.fail(NetworkError(f"cannot connect to {member}: connection refused"))
                    return
                waiter.wake(self._open(member))

            loop.call_at(self._arrival_time(member, None, TO_SERVER), attempt)

        return Trap(arm)

    def _open(self, member: str) -> VirtualStream:
        conn = self.cluster.connect(member, self.loop.now)
        self.connections_opened += 1
        link = Link(self, member, conn, self.connections_opened)
        conn.on_ready = lambda: self.loop.call_soon(lambda: self.flush(link))
        self.links.append(link)
        self.flush(link)
        return link.stream

    # -- carrying bytes --------------------------------------------------------------------------

    def _arrival_time(self, member: str, link: Link | None, direction: str) -> float:
        low, high = self.latency
        when = self.loop.now + self.rng.uniform(low, high)
        when = max(when, self.stalled_until.get(member, 0.0))
        if link is not None:
            when = max(when, link.last_arrival[direction])
            link.last_arrival[direction] = when
        return when

    def transmit(self, link: Link, data: bytes | None, direction: str) -> None:
        if link.eof_sent[direction]:
            return
        if data is not None and link.cut[direction]:
            link.cut[direction] = False
            data = data[: self.rng.randrange(len(data) + 1)] if data else data
            self.trace.append(f"cut {link.number} {direction} at {len(data)}")
            self._send(link, data, direction)
            self._send(link, _EOF, direction)
            back = TO_CLIENT if direction == TO_SERVER else TO_SERVER
            self._send(link, _EOF, back)
            return
        self._send(link, data, direction)

    def _send(self, link: Link, data: bytes | None, direction: str) -> None:
        if link.eof_sent[direction]:
            return
        if data is _EOF:
            link.eof_sent[direction] = True
        when = self._arrival_time(link.member, link, direction)
        self.loop.call_at(when, lambda: self._arrive(link, data, direction))

    def _arrive(self, link: Link, data: bytes | None, direction: str) -> None:
        held = self.blocked.get((link.member, direction))
        if held is not None:
            held.append((link, data))
            return
        self._deliver(link, data, direction)

    def _deliver(self, link: Link, data: bytes | None, direction: str) -> None:
        if direction == TO_CLIENT:
            link.stream._arrive(data)
            return
        conn = link.conn
        if data is _EOF:
            conn.receive_eof()
        elif data:
            conn.receive_data(data, self.loop.now)
        self.flush(link)

    def flush(self, link: Link) -> None:
        """Send what the server's end has ready; follow its timer and its closing."""
        if link.server_done:
            return
        conn = link.conn
        out = conn.data_to_send()
        if out:
            self.transmit(link, out, TO_CLIENT)
        if conn.should_close:
            link.server_done = True
            self.transmit(link, _EOF, TO_CLIENT)
            if link.server_timer is not None:
                link.server_timer[0] = True
            return
        deadline = conn.next_deadline()
        if deadline != link.server_deadline:
            if link.server_timer is not None:
                link.server_timer[0] = True
            link.server_timer = None
            link.server_deadline = deadline
            if deadline is not None:
                link.server_timer = self.loop.call_at(deadline, lambda: self._server_timeout(link))

    def _server_timeout(self, link: Link) -> None:
        link.server_timer = None
        link.server_deadline = None
        if not link.server_done:
            link.conn.handle_timeout(self.loop.now)
            self.flush(link)

    def flush_all(self) -> None:
        for link in list(self.links):
            self.flush(link)
        self.links = [link for link in self.links if not (link.server_done and link.stream.closed)]

    # -- faults ----------------------------------------------------------------------------------

    def partition(self, member: str, directions: Sequence[str]) -> None:
        for direction in directions:
            self.blocked.setdefault((member, direction), deque())

    def heal(self, member: str) -> None:
        for direction in (TO_SERVER, TO_CLIENT):
            held = self.blocked.pop((member, direction), None)
            for link, data in held or ():
                self._deliver(link, data, direction)

    def stall(self, member: str, until: float) -> None:
        self.stalled_until[member] = max(self.stalled_until.get(member, 0.0), until)

    def cut_one(self, direction: str) -> bool:
        """Arrange for the next bytes on one live connection (drawn) to be cut short."""
        live = [link for link in self.links if link.alive]
        if not live:
            return False
        link = live[self.rng.randrange(len(live))]
        link.cut[direction] = True
        return True

    def open_links(self) -> list[Any]:
        return [link for link in self.links if not link.stream.closed]
