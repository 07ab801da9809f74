"""The asyncio and trio stream transports against small blocking peers on loopback.

Both transports keep the blocking transport's promises: TCP and Unix sockets, TCP_NODELAY,
TLS with the same context builder (verification and host names as the settings say), every
failure a NetworkError naming the address and every timeout a NetworkTimeout; and their
synchronous close wakes a task blocked reading the stream at once.  trio looks host names up
without a thread (``localhost`` is loopback; other names go to dnspython, or a given lookup).
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from mongo_sansio.client.settings import TlsSettings
from mongo_sansio.errors import NetworkError, NetworkTimeout
from mongo_sansio.transports import asyncio_stream, trio_stream
from mongo_sansio.transports.blocking import make_ssl_context


class Peer:
    """A loopback server in a thread: ``echo`` sends back what it reads, ``silent`` reads
    and never answers; ``tls`` wraps each connection first."""

    def __init__(self, mode: str = "echo", tls: ssl.SSLContext | None = None, unix: str = ""):
        self.mode = mode
        self.tls = tls
        family = socket.AF_UNIX if unix else socket.AF_INET
        self.listener = socket.socket(family, socket.SOCK_STREAM)
        self.listener.bind(unix or ("127.0.0.1", 0))
        self.listener.listen(8)
        self.address: tuple[str, int] = (unix, 0) if unix else self.listener.getsockname()
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, name="peer accept", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="peer", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
                self.connections.append(conn)
            while data := conn.recv(65536):
                if self.mode == "echo":
                    conn.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def peers() -> Iterator[Callable[..., Peer]]:
    started: list[Peer] = []

    def start(*args: Any, **kwargs: Any) -> Peer:
        started.append(Peer(*args, **kwargs))
        return started[-1]

    yield start
    for peer in started:
        peer.close()


class AsyncioSide:
    name = "asyncio"

    def run(self, main: Callable[[], Awaitable[Any]]) -> Any:
        async def wrapped() -> Any:
            return await main()

        return asyncio.run(wrapped())

    async def open(self, address: tuple[str, int], timeout: float | None, tls: Any = None) -> Any:
        return await asyncio_stream.open_stream(address, timeout=timeout, ssl_context=tls)

    def close(self, stream: Any) -> None:
        stream.close()

    async def later(self, seconds: float, action: Callable[[], None]) -> None:
        asyncio.get_running_loop().call_later(seconds, action)

    def nodelay(self, stream: Any) -> int:
        sock = stream._writer.get_extra_info("socket")
        return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


class TrioSide:
    name = "trio"

    def run(self, main: Callable[[], Awaitable[Any]]) -> Any:
        return trio.run(main)

    async def open(self, address: tuple[str, int], timeout: float | None, tls: Any = None) -> Any:
        return await trio_stream.open_stream(address, timeout=timeout, ssl_context=tls)

    def close(self, stream: Any) -> None:
        stream.close()

    async def later(self, seconds: float, action: Callable[[], None]) -> None:
        async def act() -> None:
            await trio.sleep(seconds)
            action()

        trio.lowlevel.spawn_system_task(act)

    def nodelay(self, stream: Any) -> int:
        return int(stream._sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


@pytest.fixture(params=[AsyncioSide(), TrioSide()], ids=lambda side: side.name)
def side(request: pytest.FixtureRequest) -> Any:
    return request.param


def test_round_trip_of_gathered_buffers(side: Any, peers: Callable[..., Peer]) -> None:
    peer = peers()

    async def main() -> bytes:
        stream = await side.open(peer.address, 2.0)
        assert side.nodelay(stream) == 1
        await stream.send_all([b"he", bytearray(b"ll"), memoryview(b"o!")], 2.0)
        received = b""
        while len(received) < 6:
            received += await stream.receive(2.0)
        side.close(stream)
        return received

    assert side.run(main) == b"hello!"


def test_unix_socket(side: Any, peers: Callable[..., Peer]) -> None:
    if not hasattr(socket, "AF_UNIX"):
        pytest.skip("no Unix sockets on this platform")
    with tempfile.TemporaryDirectory() as directory:
        peer = peers(unix=os.path.join(directory, "peer.sock"))

        async def main() -> bytes:
            stream = await side.open(peer.address, 2.0)
            await stream.send_all([b"ping"], 2.0)
            data: bytes = await stream.receive(2.0)
            side.close(stream)
            return data

        assert side.run(main) == b"ping"


def test_refused_connection_names_the_address(side: Any) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now

    async def main() -> None:
        with pytest.raises(NetworkError, match=f"cannot connect to 127.0.0.1:{port}") as info:
            await side.open(("127.0.0.1", port), 2.0)
        assert not isinstance(info.value, NetworkTimeout)

    side.run(main)


def test_receive_timeout_is_a_network_timeout(side: Any, peers: Callable[..., Peer]) -> None:
    peer = peers("silent")

    async def main() -> float:
        stream = await side.open(peer.address, 2.0)
        start = time.monotonic()
        with pytest.raises(NetworkTimeout, match="reading from 127.0.0.1:.*timed out"):
            await stream.receive(0.1)
        side.close(stream)
        return time.monotonic() - start

    assert 0.09 < side.run(main) < 1.0


def test_close_wakes_a_blocked_read_at_once(side: Any, peers: Callable[..., Peer]) -> None:
    peer = peers("silent")

    async def main() -> tuple[object, float]:
        stream = await side.open(peer.address, 2.0)
        await side.later(0.1, lambda: side.close(stream))
        start = time.monotonic()
        try:
            outcome: object = await stream.receive(None)  # no limit: only close can end it
        except NetworkError as exc:
            outcome = exc
        took = time.monotonic() - start
        with pytest.raises(NetworkError, match="is closed"):
            await stream.send_all([b"x"], 1.0)
        return outcome, took

    outcome, took = side.run(main)
    assert outcome == b"" or isinstance(outcome, NetworkError)
    assert took < 1.0


def _tls(tmp_path: Path, **options: Any) -> ssl.SSLContext:
    return make_ssl_context(TlsSettings(enabled=True, **options))


def test_tls_verified_round_trip_and_failures(
    side: Any, peers: Callable[..., Peer], tmp_path: Path
) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    peer = peers(tls=server)
    trusted = _tls(tmp_path, ca_file=str(ca_file))
    unknown_ca = trustme.CA()
    other_file = tmp_path / "other.pem"
    unknown_ca.cert_pem.write_to_path(str(other_file))

    async def main() -> bytes:
        stream = await side.open(peer.address, 5.0, trusted)
        await stream.send_all([b"secret"], 2.0)
        data: bytes = await stream.receive(2.0)
        side.close(stream)
        with pytest.raises(NetworkError, match="TLS handshake with 127.0.0.1:.*certificate"):
            await side.open(peer.address, 5.0, _tls(tmp_path, ca_file=str(other_file)))
        lax = _tls(tmp_path, ca_file=str(other_file), allow_invalid_certificates=True)
        side.close(await side.open(peer.address, 5.0, lax))
        return data

    assert side.run(main) == b"secret"


def test_tls_handshake_timeout(side: Any, peers: Callable[..., Peer], tmp_path: Path) -> None:
    peer = peers("silent")  # accepts TCP, never speaks TLS

    async def main() -> None:
        lax = _tls(tmp_path, allow_invalid_certificates=True)
        with pytest.raises(NetworkTimeout, match="TLS handshake with 127.0.0.1:.*timed out"):
            await side.open(peer.address, 0.2, lax)

    side.run(main)


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets on this platform")
def test_tls_over_a_unix_socket_needs_invalid_hostnames_allowed(
    side: Any, peers: Callable[..., Peer], tmp_path: Path
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        peer = peers("silent", unix=os.path.join(directory, "tls.sock"))

        async def main() -> None:
            with pytest.raises(NetworkError, match="no host name to verify"):
                await side.open(peer.address, 1.0, _tls(tmp_path))

        side.run(main)


def test_trio_resolves_localhost_and_uses_the_given_lookup(
    peers: Callable[..., Peer], monkeypatch: pytest.MonkeyPatch
) -> None:
    peer = peers()
    started: list[str] = []
    original = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if not thread.name.startswith("peer"):
            started.append(thread.name)
        original(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    asked: list[str] = []

    async def lookup(host: str) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    async def refuse(host: str) -> list[str]:
        raise NetworkError(f"cannot resolve {host}: no such name")

    async def main() -> None:
        assert await trio_stream.lookup_host("localhost") == ["127.0.0.1", "::1"]
        port = peer.address[1]
        stream = await trio_stream.open_stream(("localhost", port), timeout=2.0, ssl_context=None)
        stream.close()
        stream = await trio_stream.open_stream(
            ("db.example", port), timeout=2.0, ssl_context=None, lookup=lookup
        )
        stream.close()
        with pytest.raises(NetworkError, match="cannot resolve nowhere.example"):
            await trio_stream.open_stream(
                ("nowhere.example", port), timeout=2.0, ssl_context=None, lookup=refuse
            )

    trio.run(main)
    assert asked == ["db.example"]
    assert started == []
