"""The simulator's socket server, driven with a small fake machine (no MongoDB protocol here):
bytes move both ways, deadlines fire, replies made ready by another connection are sent, a
bad client never stops the others, TLS and Unix sockets work, and close() joins everything."""

from __future__ import annotations

import faulthandler
import logging
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mongo_sansio.transports.sim_server import (
    LoopbackServer,
    bind_tcp_listeners,
    bind_unix_listener,
    tcp_address,
)

IO_TIMEOUT = 5.0
HARD_TIMEOUT = 30.0


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """A hang must not stall the suite: dump every thread's stack and exit."""
    faulthandler.dump_traceback_later(HARD_TIMEOUT, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


class FakeConnection:
    """Echoes lines upper-cased; ``close`` closes; ``boom`` raises; ``all:X`` sends X to every
    connection of the cluster; ``tick`` arms a deadline 50 ms away that answers ``tock``."""

    def __init__(self, cluster: FakeCluster, address: str) -> None:
        self.cluster = cluster
        self.address = address
        self.should_close = False
        self.close_reason: str | None = None
        self.out = bytearray()
        self.buffer = b""
        self.deadline: float | None = None
        self.eof = False

    def receive_data(self, data: bytes, now: float) -> None:
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line == b"close":
                self.should_close, self.close_reason = True, "asked to close"
            elif line == b"boom":
                raise RuntimeError("a machine bug")
            elif line.startswith(b"all:"):
                for connection in self.cluster.connections:
                    connection.out += line[4:] + b"\n"
            elif line == b"tick":
                self.deadline = now + 0.05
            else:
                self.out += line.upper() + b"\n"

    def receive_eof(self) -> None:
        self.eof = True
        self.should_close, self.close_reason = True, "eof"

    def data_to_send(self) -> bytes:
        out, self.out = bytes(self.out), bytearray()
        return out

    def next_deadline(self) -> float | None:
        return self.deadline

    def handle_timeout(self, now: float) -> None:
        if self.deadline is not None and now >= self.deadline:
            self.deadline = None
            self.out += b"tock\n"


class FakeCluster:
    def __init__(self) -> None:
        self.connections: list[FakeConnection] = []
        self.calls = 0

    def connect(self, address: str, now: float) -> FakeConnection:
        connection = FakeConnection(self, address)
        self.connections.append(connection)
        return connection


def read_line(sock: socket.socket) -> bytes:
    data = b""
    sock.settimeout(IO_TIMEOUT)
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            break
        data += chunk
    return data


def connect(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=IO_TIMEOUT)


@pytest.fixture
def served() -> Iterator[tuple[LoopbackServer, FakeCluster, list[str]]]:
    cluster = FakeCluster()
    listeners = bind_tcp_listeners("127.0.0.1", [0, 0])
    pairs = [(sock, tcp_address(sock)) for sock in listeners]
    server = LoopbackServer(cluster, pairs)
    server.start()
    try:
        yield server, cluster, [address for _sock, address in pairs]
    finally:
        server.close()


def test_bytes_in_any_chunking_reach_the_machine_and_replies_come_back(served) -> None:  # type: ignore[no-untyped-def]
    _server, cluster, addresses = served
    with connect(addresses[1]) as sock:
        for piece in (b"he", b"llo\nwor", b"ld\n"):
            sock.sendall(piece)
            time.sleep(0.01)
        assert read_line(sock) == b"HELLO\n"
        assert read_line(sock) == b"WORLD\n"
    assert cluster.connections[0].address == addresses[1]


def test_should_close_closes_the_socket_and_logs_the_reason(served, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.INFO, logger="mongo_sansio.sim")
    with connect(served[2][0]) as sock:
        sock.sendall(b"close\n")
        assert read_line(sock) == b""  # end of stream
    deadline = time.monotonic() + IO_TIMEOUT
    while "asked to close" not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "asked to close" in caplog.text


def test_a_deadline_fires_handle_timeout(served) -> None:  # type: ignore[no-untyped-def]
    with connect(served[2][0]) as sock:
        sock.sendall(b"tick\n")
        assert read_line(sock) == b"tock\n"


def test_a_reply_made_ready_by_another_connection_is_sent_without_input(served) -> None:  # type: ignore[no-untyped-def]
    server, _cluster, addresses = served
    with connect(addresses[0]) as idle, connect(addresses[1]) as talker:
        talker.sendall(b"ping\n")
        assert read_line(talker) == b"PING\n"  # both connections are accepted by now
        deadline = time.monotonic() + IO_TIMEOUT
        while server.connection_count < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        talker.sendall(b"all:news\n")
        assert read_line(idle) == b"news\n"
        assert read_line(talker) == b"news\n"


def test_call_from_outside_wakes_the_connections(served) -> None:  # type: ignore[no-untyped-def]
    server, cluster, addresses = served
    with connect(addresses[0]) as sock:
        sock.sendall(b"x\n")
        assert read_line(sock) == b"X\n"

        def announce(now: float) -> int:
            for connection in cluster.connections:
                connection.out += b"stepdown\n"
            return 7

        assert server.call(announce) == 7
        assert read_line(sock) == b"stepdown\n"


def test_a_machine_that_raises_only_loses_its_own_connection(served, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.ERROR, logger="mongo_sansio.sim")
    addresses = served[2]
    with connect(addresses[0]) as good, connect(addresses[0]) as bad:
        bad.sendall(b"boom\n")
        assert read_line(bad) == b""
        good.sendall(b"still here\n")
        assert read_line(good) == b"STILL HERE\n"
    assert "a machine bug" in caplog.text


def test_the_client_closing_reaches_the_machine_as_eof(served) -> None:  # type: ignore[no-untyped-def]
    _server, cluster, addresses = served
    with connect(addresses[0]) as sock:
        sock.sendall(b"a\n")
        assert read_line(sock) == b"A\n"
    deadline = time.monotonic() + IO_TIMEOUT
    while not cluster.connections[0].eof and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cluster.connections[0].eof


def test_close_joins_threads_with_idle_clients_and_stops_listening() -> None:
    # Only this server's threads count: a port number can come back in a long session, and
    # with it the name of an earlier server's thread.
    before = set(threading.enumerate())
    cluster = FakeCluster()
    listeners = bind_tcp_listeners("127.0.0.1", [0])
    address = tcp_address(listeners[0])
    server = LoopbackServer(cluster, [(listeners[0], address)])
    server.start()
    clients = [connect(address) for _ in range(3)]
    for sock in clients:
        sock.sendall(b"hi\n")
        assert read_line(sock) == b"HI\n"
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 2.0
    assert server.connection_count == 0
    assert not [
        t for t in set(threading.enumerate()) - before
        if t.name.startswith("sim-conn") and address in t.name
    ]  # fmt: skip
    for sock in clients:
        assert read_line(sock) == b""
        sock.close()
    with pytest.raises(OSError):
        connect(address).close()
    server.close()  # idempotent


def test_unix_socket_serves_the_same_member(tmp_path: Path) -> None:
    cluster = FakeCluster()
    path = str(tmp_path / "mongodb-1.sock")
    server = LoopbackServer(cluster, [(bind_unix_listener(path), "127.0.0.1:1")])
    with server:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(IO_TIMEOUT)
            sock.connect(path)
            sock.sendall(b"unix\n")
            assert read_line(sock) == b"UNIX\n"
        assert cluster.connections[0].address == "127.0.0.1:1"
    assert not Path(path).exists()


def tls_contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for 127.0.0.1 and a client context trusting it."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    return server_context, client_context


def test_tls_round_trip_and_a_plaintext_client_does_not_hurt_others() -> None:
    server_context, client_context = tls_contexts()

    cluster = FakeCluster()
    listeners = bind_tcp_listeners("127.0.0.1", [0])
    address = tcp_address(listeners[0])
    with LoopbackServer(cluster, [(listeners[0], address)], ssl_context=server_context):
        with connect(address) as plain:
            plain.sendall(b"not a TLS hello\n")
            try:
                assert read_line(plain) == b""
            except ConnectionResetError:
                pass  # the failed handshake may reset instead of closing
        with client_context.wrap_socket(connect(address), server_hostname="127.0.0.1") as tls:
            tls.sendall(b"secret\n")
            assert read_line(tls) == b"SECRET\n"


def test_allow_plain_serves_tls_and_plaintext_clients_on_one_port() -> None:
    server_context, client_context = tls_contexts()

    cluster = FakeCluster()
    listeners = bind_tcp_listeners("127.0.0.1", [0])
    address = tcp_address(listeners[0])
    with LoopbackServer(
        cluster, [(listeners[0], address)], ssl_context=server_context, allow_plain=True
    ):
        with connect(address) as plain:
            plain.sendall(b"in the clear\n")
            assert read_line(plain) == b"IN THE CLEAR\n"
        with client_context.wrap_socket(connect(address), server_hostname="127.0.0.1") as tls:
            tls.sendall(b"secret\n")
            assert read_line(tls) == b"SECRET\n"


def test_close_does_not_wait_for_a_client_that_never_starts_tls() -> None:
    trustme = pytest.importorskip("trustme")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert("127.0.0.1").configure_cert(context)
    listeners = bind_tcp_listeners("127.0.0.1", [0])
    address = tcp_address(listeners[0])
    server = LoopbackServer(FakeCluster(), [(listeners[0], address)], ssl_context=context)
    server.start()
    with connect(address):
        deadline = time.monotonic() + IO_TIMEOUT
        while server.connection_count < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 2.0
