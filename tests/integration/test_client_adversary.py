"""The adversary's defects: peers and inputs that used to hold or leak the blocking client.

* A server that trickles its replies one byte every 0.3 s (so that no single read ever waits
  long) must not hold the client past the limit that governs the exchange: connectTimeoutMS
  (the handshake), socketTimeoutMS (a command's reply), serverSelectionTimeoutMS, timeoutMS.
  Each bounds the *whole* exchange, not each read.
* Values that raise while a filter is encoded, and a command listener that raises, leave no
  connection checked out, and nothing open once the client is closed.
* Server selection against an address nobody listens on waits its full timeout (not 0 s) and
  says how long it waited.
* 32 threads selecting while the deployment is being discovered do not make connections to
  the members they do not use.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import trio
from client_tap import Tap, mongo_sansio_threads

import mongo_sansio.adapters.asyncio as asyncio_client
import mongo_sansio.adapters.trio as trio_client
from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.blocking import timeout as blocking_timeout
from mongo_sansio.adapters.sim import SimulatedReplicaSet
from mongo_sansio.bson import Int64
from mongo_sansio.cmap.events import ConnectionClosed, ConnectionCreated
from mongo_sansio.errors import MongoError, NetworkTimeout
from mongo_sansio.monitoring import CommandListener
from mongo_sansio.sdam.events import ServerHeartbeatFailedEvent
from mongo_sansio.selection import ServerSelectionTimeoutError
from mongo_sansio.wire import MessageReader, OpQuery, encode_op_msg, encode_op_reply

MARGIN = 1.5
DRIBBLE_INTERVAL = 0.3

HELLO: Mapping[str, Any] = {
    "ok": 1.0,
    "helloOk": True,
    "isWritablePrimary": True,
    "minWireVersion": 0,
    "maxWireVersion": 21,
    "maxBsonObjectSize": 16 * 1024 * 1024,
    "maxMessageSizeBytes": 48_000_000,
    "maxWriteBatchSize": 100_000,
    "connectionId": Int64(1),
}


class Dribbler:
    """A loopback server that answers slowly, one byte every 0.3 s.

    ``honest_connections``: how many connections (in accept order) get their replies at once
    before the dribbling starts; ``honest_hellos``: hellos are always answered at once (only
    other commands dribble); ``header_only``: a command gets a header announcing a megabyte,
    then nothing.  No topologyVersion in the hello: monitors poll, with one
    connection each."""

    def __init__(
        self, *, honest_connections: int = 0, honest_hellos: bool = False, header_only: bool = False
    ) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)  # accept() wakes up to see ``stop``
        self.address = self.listener.getsockname()[:2]
        self.honest_connections = honest_connections
        self.honest_hellos = honest_hellos
        self.header_only = header_only
        self.stop = threading.Event()
        self.sockets: list[socket.socket] = []
        self.accepted = 0
        self.thread = threading.Thread(target=self._accept, name="dribbler", daemon=True)
        self.thread.start()

    @property
    def uri(self) -> str:
        return f"mongodb://{self.address[0]}:{self.address[1]}/?directConnection=true"

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        for sock in self.sockets:
            try:
                sock.close()
            except OSError:
                pass
        self.thread.join(2)

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(None)
            self.accepted += 1
            self.sockets.append(sock)
            honest = self.accepted <= self.honest_connections
            threading.Thread(target=self._serve, args=(sock, honest), daemon=True).start()

    def _serve(self, sock: socket.socket, honest: bool) -> None:
        reader = MessageReader()
        try:
            while not self.stop.is_set():
                data = sock.recv(65536)
                if not data:
                    return
                reader.receive_data(data)
                while True:
                    message = reader.next_message()
                    if not hasattr(message, "request_id"):
                        break
                    name = next(iter(message.body), "").lower()
                    is_hello = name in ("hello", "ismaster")
                    body = dict(HELLO) if is_hello else {"ok": 1.0}
                    if isinstance(message, OpQuery):
                        reply = encode_op_reply(
                            [body], request_id=1, response_to=message.request_id
                        )
                    else:
                        reply = encode_op_msg(body, request_id=1, response_to=message.request_id)
                    if honest or (is_hello and self.honest_hellos):
                        sock.sendall(reply)
                        continue
                    if self.header_only:
                        sock.sendall(struct.pack("<iiii", 1_000_000, 2, message.request_id, 2013))
                        self.stop.wait()
                        return
                    for i in range(len(reply)):
                        if self.stop.wait(DRIBBLE_INTERVAL):
                            return
                        sock.sendall(reply[i : i + 1])
        except OSError:
            return


@pytest.fixture
def dribbler_factory() -> Iterator[Any]:
    made: list[Dribbler] = []

    def make(**options: Any) -> Dribbler:
        server = Dribbler(**options)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def timed(call: Any) -> tuple[BaseException, float]:
    start = time.monotonic()
    try:
        call()
    except MongoError as exc:
        return exc, time.monotonic() - start
    raise AssertionError("the call succeeded against a dribbling server")


class TestTricklingServer:
    def test_connect_timeout_bounds_the_monitors_handshake(self, dribbler_factory: Any) -> None:
        server = dribbler_factory()
        start = time.monotonic()
        client = MongoClient(server.uri, connectTimeoutMS=1000, serverSelectionTimeoutMS=5000)
        try:
            tap = Tap(client)
            deadline = start + 1.0 + MARGIN
            while not tap.of(ServerHeartbeatFailedEvent) and time.monotonic() < deadline:
                time.sleep(0.02)
            failed = tap.of(ServerHeartbeatFailedEvent)
            assert failed, "the monitor's handshake was not cut at connectTimeoutMS"
            assert isinstance(failed[0].failure, NetworkTimeout)
        finally:
            client.close()

    def test_connect_timeout_bounds_a_pooled_connections_handshake(
        self, dribbler_factory: Any
    ) -> None:
        # the monitor's connection is answered; every later one dribbles its handshake
        # (maxAdaptiveRetries=0: a timeout while connecting is labelled a possible overload,
        # which the client retries otherwise -- the next test)
        server = dribbler_factory(honest_connections=1)
        client = MongoClient(
            server.uri, connectTimeoutMS=1000, serverSelectionTimeoutMS=8000, maxAdaptiveRetries=0
        )
        try:
            client.topology_description  # noqa: B018 - the monitor connects first
            deadline = time.monotonic() + 5
            while server.accepted < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)
            error, elapsed = timed(lambda: client.admin.command("ping"))
            assert elapsed < 1.0 + MARGIN, elapsed
            assert error.timeout is True, repr(error)
        finally:
            client.close()

    def test_a_handshake_timeout_is_retried_as_an_overload(self, dribbler_factory: Any) -> None:
        # client backpressure: the pool labels the timeout SystemOverloadedError and
        # RetryableError, and the command is tried twice more (MAX_RETRIES 2), each attempt's
        # handshake bounded by connectTimeoutMS, after backoffs of at most 0.2 s and 0.4 s
        server = dribbler_factory(honest_connections=1)
        client = MongoClient(server.uri, connectTimeoutMS=1000, serverSelectionTimeoutMS=8000)
        try:
            client.topology_description  # noqa: B018 - the monitor connects first
            deadline = time.monotonic() + 5
            while server.accepted < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)
            before = server.accepted
            error, elapsed = timed(lambda: client.admin.command("ping"))
            assert 3.0 <= elapsed < 3.0 + 0.6 + MARGIN, elapsed
            assert error.timeout is True, repr(error)
            assert error.has_error_label("SystemOverloadedError"), repr(error)
            assert server.accepted - before == 3
        finally:
            client.close()

    def test_close_cuts_the_handshakes_in_progress(self, dribbler_factory: Any) -> None:
        # the monitor's handshake dribbles (connectTimeoutMS 20 s by default), and so does a
        # pooled connection's: close() must not wait for either, nor leave their threads
        server = dribbler_factory(honest_connections=0)
        client = MongoClient(server.uri, serverSelectionTimeoutMS=800)
        error, _ = timed(lambda: client.admin.command("ping"))
        assert isinstance(error, ServerSelectionTimeoutError)
        start = time.monotonic()
        client.close()
        assert time.monotonic() - start < 1.0
        assert mongo_sansio_threads() == []

        server = dribbler_factory(honest_connections=1)
        client = MongoClient(server.uri)
        client.topology_description  # noqa: B018
        runner = threading.Thread(target=lambda: timed(lambda: client.admin.command("ping")))
        runner.start()
        deadline = time.monotonic() + 5
        while server.accepted < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.accepted == 2  # the pool's connection is in its handshake
        start = time.monotonic()
        client.close()
        assert time.monotonic() - start < 1.0
        runner.join(2)
        assert not runner.is_alive()
        assert mongo_sansio_threads() == []

    def test_server_selection_timeout_bounds_discovery(self, dribbler_factory: Any) -> None:
        server = dribbler_factory()
        client = MongoClient(server.uri, serverSelectionTimeoutMS=1000)
        try:
            error, elapsed = timed(lambda: client.admin.command("ping"))
            assert isinstance(error, ServerSelectionTimeoutError), repr(error)
            assert 0.9 < elapsed < 1.0 + MARGIN, elapsed
        finally:
            client.close()

    def test_socket_timeout_bounds_the_whole_reply(self, dribbler_factory: Any) -> None:
        server = dribbler_factory(honest_hellos=True)
        client = MongoClient(server.uri, socketTimeoutMS=1000)
        try:
            error, elapsed = timed(lambda: client.admin.command("ping"))
            assert isinstance(error, NetworkTimeout), repr(error)
            assert elapsed < 1.0 + MARGIN, elapsed
        finally:
            client.close()

    def test_timeout_ms_bounds_the_whole_operation(self, dribbler_factory: Any) -> None:
        server = dribbler_factory(honest_hellos=True)
        client = MongoClient(server.uri, timeoutMS=1000)
        try:
            error, elapsed = timed(lambda: client.admin.command("ping"))
            assert error.timeout is True, repr(error)
            assert elapsed < 1.0 + MARGIN, elapsed
        finally:
            client.close()


def _wait_for_the_monitor(client: Any, server: Dribbler) -> None:
    client.topology_description  # noqa: B018 - the monitor connects first
    deadline = time.monotonic() + 5
    while server.accepted < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)


class TestTimeoutBoundsANewConnection:
    """timeoutMS (or a ``timeout()`` block) bounds the opening of the connection an operation
    needs, not only connectTimeoutMS: against a server that answers the monitor but trickles
    every new connection's hello, the operation fails at its deadline with a timeout error
    (PyMongo gives up there too), and the connection goes on opening for the pool."""

    def test_the_clients_timeout_ms(self, dribbler_factory: Any) -> None:
        server = dribbler_factory(honest_connections=1)
        client = MongoClient(server.uri, timeoutMS=1500, connectTimeoutMS=20_000)
        try:
            _wait_for_the_monitor(client, server)
            error, elapsed = timed(lambda: client.admin.command("ping"))
            assert 1.4 < elapsed < 1.5 + MARGIN, elapsed
            assert error.timeout is True, repr(error)
            assert "established" in str(error)
            assert server.accepted == 2  # one attempt: no retry after the deadline
        finally:
            client.close()

    def test_a_timeout_block(self, dribbler_factory: Any) -> None:
        server = dribbler_factory(honest_connections=1)
        client = MongoClient(server.uri, connectTimeoutMS=20_000, maxAdaptiveRetries=0)
        try:
            _wait_for_the_monitor(client, server)
            with blocking_timeout(1.0):
                error, elapsed = timed(lambda: client.admin.command("ping"))
            assert elapsed < 1.0 + MARGIN, elapsed
            assert error.timeout is True, repr(error)
        finally:
            client.close()

    @pytest.mark.parametrize("runtime", ["asyncio", "trio"])
    def test_async_clients(self, dribbler_factory: Any, runtime: str) -> None:
        server = dribbler_factory(honest_connections=1)
        module: Any = asyncio_client if runtime == "asyncio" else trio_client

        async def main() -> tuple[BaseException, float]:
            client = module.AsyncMongoClient(server.uri, timeoutMS=1500, connectTimeoutMS=20_000)
            try:
                await client.aconnect()
                sleep = asyncio.sleep if runtime == "asyncio" else trio.sleep
                for _ in range(500):  # the monitor's connection first
                    if server.accepted >= 1:
                        break
                    await sleep(0.01)
                await sleep(0.1)
                start = time.monotonic()
                with pytest.raises(MongoError) as raised:
                    await client.admin.command("ping")
                return raised.value, time.monotonic() - start
            finally:
                await client.close()

        error, elapsed = asyncio.run(main()) if runtime == "asyncio" else trio.run(main)
        assert elapsed < 1.5 + MARGIN, elapsed
        assert error.timeout is True, repr(error)


class _BadZone(datetime.tzinfo):
    def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
        raise RuntimeError("utcoffset raised")

    def dst(self, dt: datetime.datetime | None) -> None:
        return None


class _BadMapping(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("__iter__ raised")


class _RaisingListener(CommandListener):
    def __init__(self) -> None:
        self.calls = 0

    def started(self, event: Any) -> None:
        self.calls += 1
        raise RuntimeError("started raised")

    def succeeded(self, event: Any) -> None:
        raise RuntimeError("succeeded raised")

    def failed(self, event: Any) -> None:
        raise RuntimeError("failed raised")


def test_raising_values_and_listeners_leak_nothing() -> None:
    listener = _RaisingListener()
    with SimulatedReplicaSet(members=1, standalone=True) as rs:
        client = MongoClient(rs.uri, event_listeners=[listener])
        tap = Tap(client)
        core = client._engine.core
        collection = client.test.raising
        collection.insert_one({"_id": 1})
        bad_filters = [{"at": datetime.datetime(2020, 1, 1, tzinfo=_BadZone())}, _BadMapping()]
        for _ in range(10):
            for bad in bad_filters:
                with pytest.raises(RuntimeError):
                    collection.find_one(bad)
                assert all(n == 0 for n in core.in_use_counts().values())
            # the listener raises on every event, the operation still works
            assert collection.find_one({"_id": 1}) == {"_id": 1}
            assert all(n == 0 for n in core.in_use_counts().values())
        assert listener.calls >= 10
        client.close()
        created, closed = tap.of(ConnectionCreated), tap.of(ConnectionClosed)
        assert created and len(closed) == len(created)
        assert mongo_sansio_threads() == []


def test_server_selection_against_nobody_waits_its_timeout() -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nobody listens there now: connections are refused at once
    client = MongoClient(f"mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=500")
    try:
        start = time.monotonic()
        with pytest.raises(ServerSelectionTimeoutError) as info:
            client.admin.command("ping")
        elapsed = time.monotonic() - start
        assert 0.45 <= elapsed < 0.5 + MARGIN, elapsed
        assert "timed out after 0.5" in str(info.value), str(info.value)
        assert info.value.timeout is True
    finally:
        client.close()


def test_threads_selecting_during_discovery_leave_secondaries_alone() -> None:
    with SimulatedReplicaSet(members=3) as rs:
        client = MongoClient(rs.uri, maxConnecting=2)
        try:
            tap = Tap(client)  # before discovery is over: the monitors run already
            barrier = threading.Barrier(32)
            errors: list[BaseException] = []

            def select() -> None:
                try:
                    barrier.wait(5)
                    client.test.discovery.find_one({})
                except BaseException as exc:  # noqa: BLE001 - reported below
                    errors.append(exc)

            threads = [threading.Thread(target=select) for _ in range(32)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10)
            assert errors == []
            primary = rs.primary
            assert primary is not None
            for member in rs.members:
                made = tap.max_connections.get(member, 0)
                if member == primary:
                    assert 1 <= made <= 32
                else:
                    assert made == 0, f"{member}: {made} connections for reads on the primary"
            for server in client._engine.core._servers.values():
                pool = server.pool
                assert pool.in_use_connection_count == 0
                assert pool.total_connection_count <= 32
        finally:
            client.close()


def test_a_reply_header_then_silence_is_cut_by_socket_timeout(dribbler_factory: Any) -> None:
    """A reply header announcing a megabyte, then nothing: socketTimeoutMS ends the wait."""
    server = dribbler_factory(honest_hellos=True, header_only=True)
    client = MongoClient(server.uri, socketTimeoutMS=800)
    try:
        error, elapsed = timed(lambda: client.admin.command("ping"))
        assert isinstance(error, NetworkTimeout), repr(error)
        assert elapsed < 0.8 + MARGIN, elapsed
    finally:
        client.close()


class TestClosingABusyStream:
    """ThreadRuntime.close_stream while another thread reads the stream: the reader wakes, and
    the socket's file descriptor is released only once it left (a descriptor closed under a
    reader can be reused by a new socket, which the reader would then wait on or read)."""

    def make(self) -> tuple[Any, Any, socket.socket, socket.socket]:
        from mongo_sansio.adapters.blocking._runtime import ThreadRuntime
        from mongo_sansio.transports.blocking import BlockingStream

        ours, peer = socket.socketpair()
        return ThreadRuntime(None), BlockingStream(ours, "peer", None), ours, peer

    def test_a_reader_keeps_the_descriptor_until_it_leaves(self) -> None:
        runtime, stream, ours, peer = self.make()
        entered, release = threading.Event(), threading.Event()
        real_recv = stream.recv

        def recv(*args: Any) -> bytes:
            entered.set()
            release.wait(5)
            return bytes(real_recv(*args))

        stream.recv = recv
        outcome: list[object] = []

        def reader() -> None:
            try:
                outcome.append(runtime.receive(stream, 5.0))
            except MongoError as exc:
                outcome.append(exc)

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            assert entered.wait(5)
            runtime.close_stream(stream)
            assert ours.fileno() != -1, "the descriptor was released under the reader"
        finally:
            release.set()
            thread.join(5)
            peer.close()
        assert not thread.is_alive()
        assert outcome == [b""] or isinstance(outcome[0], MongoError), outcome
        assert stream.closed and ours.fileno() == -1

    def test_a_blocked_reader_wakes_at_once(self) -> None:
        runtime, stream, ours, peer = self.make()
        outcome: list[object] = []

        def reader() -> None:
            try:
                outcome.append(runtime.receive(stream, 10.0))
            except MongoError as exc:
                outcome.append(exc)

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            deadline = time.monotonic() + 5
            while stream not in runtime._busy and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(0.05)  # in recv by now
            start = time.monotonic()
            runtime.close_stream(stream)
            thread.join(5)
            assert time.monotonic() - start < 1.0
        finally:
            peer.close()
        assert outcome == [b""] or isinstance(outcome[0], MongoError), outcome
        assert stream.closed and ours.fileno() == -1

    def test_an_idle_stream_closes_at_once(self) -> None:
        runtime, stream, ours, peer = self.make()
        runtime.close_stream(stream)
        assert stream.closed and ours.fileno() == -1
        peer.close()
