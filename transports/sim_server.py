"""A loopback server that binds the simulated replica set's pure machine to sockets.

The machine (:mod:`mongo_sansio.testing.server`) decides everything about the protocol; this
module only moves bytes and keeps time and threads:

* one listening socket per member (TCP, optionally also a Unix socket), bound *before* the
  cluster is built so that the members' real ``host:port`` addresses are known to hello;
* one thread per accepted connection that feeds received bytes to its connection machine,
  writes whatever ``data_to_send()`` returns, sleeps until ``next_deadline()`` (monotonic
  clock) and calls ``handle_timeout(now)``, and closes when ``should_close`` says so;
* ONE lock around every call into the shared cluster state (the machine is not thread-safe).

A call on one connection can make replies ready on others (a write wakes an awaitData getMore,
a stepdown answers every awaitable hello), so after each call into the cluster every
connection thread is woken through its own socketpair and drains its machine's output. Its
socket is watched with a selector together with that wake-up socket; the selector's timeout
comes from ``next_deadline()``.

A misbehaving client (bad bytes, a failed TLS handshake, a reset) only ends its own thread;
unexpected exceptions are logged with a traceback and the server keeps serving.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

__all__ = [
    "Clock",
    "ClusterLike",
    "ConnectionLike",
    "LoopbackServer",
    "bind_tcp_listeners",
    "bind_unix_listener",
]

logger = logging.getLogger("mongo_sansio.sim")

Clock = Callable[[], float]
T = TypeVar("T")

RECEIVE_SIZE = 65536
SEND_TIMEOUT_SECONDS = 30.0  # a client that stops reading for this long loses its connection
TLS_HANDSHAKE_TIMEOUT_SECONDS = 10.0
JOIN_TIMEOUT_SECONDS = 5.0
# A TLS connection opens with a handshake record: content type 22, protocol major version 3.
# A plain MongoDB message opens with its length (int32, little-endian), so only a first message
# of 790 + k * 65536 bytes would be taken for TLS: acceptable for a test peer.
TLS_RECORD_START = b"\x16\x03"


class ConnectionLike(Protocol):
    """What the server needs of one client connection's machine."""

    @property
    def should_close(self) -> bool: ...

    @property
    def close_reason(self) -> str | None: ...

    def receive_data(self, data: bytes, now: float) -> None: ...

    def receive_eof(self) -> None: ...

    def data_to_send(self) -> bytes: ...

    def next_deadline(self) -> float | None: ...

    def handle_timeout(self, now: float) -> None: ...


class ClusterLike(Protocol):
    """What the server needs of the shared cluster state."""

    def connect(self, address: str, now: float) -> ConnectionLike: ...


def bind_tcp_listeners(host: str, ports: Sequence[int]) -> list[socket.socket]:
    """Bind and listen on ``host`` at each port (0 picks a free one); all or nothing."""
    listeners: list[socket.socket] = []
    try:
        for port in ports:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            listener = socket.socket(family, socket.SOCK_STREAM)
            listeners.append(listener)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(64)
    except BaseException:
        for listener in listeners:
            listener.close()
        raise
    return listeners


def bind_unix_listener(path: str) -> socket.socket:
    """Bind and listen on a Unix socket at ``path`` (a stale socket file is replaced)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(64)
    except BaseException:
        listener.close()
        raise
    return listener


def tcp_address(listener: socket.socket) -> str:
    """The ``host:port`` a TCP listener answers at (IPv6 hosts in brackets, as in URIs)."""
    host, port = listener.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Waker:
    """A socketpair one thread waits on and any thread can poke."""

    def __init__(self) -> None:
        self.reader, self._writer = socket.socketpair()
        self.reader.setblocking(False)
        self._writer.setblocking(False)

    def wake(self) -> None:
        # A full buffer already means "woken"; a closed one means the thread is gone.
        with contextlib.suppress(BlockingIOError, OSError):
            self._writer.send(b"\0")

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while self.reader.recv(4096):
                pass

    def close(self) -> None:
        self.reader.close()
        self._writer.close()


class _Client:
    """One accepted connection: its socket, its machine and its thread's wake-up."""

    def __init__(self, sock: socket.socket, address: str, peer: str) -> None:
        self.sock = sock
        self.address = address  # the member's address, as the cluster knows it
        self.peer = peer
        self.waker = _Waker()
        self.machine: ConnectionLike | None = None


class LoopbackServer:
    """Serve a cluster machine on already-bound listeners, one thread per connection.

    ``listeners`` maps each listening socket to the member address its clients reach (the
    ``host:port`` the cluster was built with; a member's Unix socket maps to the same address).
    ``clock`` is the monotonic clock handed to the machine as ``now``.  ``ssl_context``, when
    given, wraps every accepted socket as the server side of TLS; with ``allow_plain`` too, a
    connection whose first bytes do not open a TLS record is served unencrypted instead
    (mongod's ``--tlsMode preferTLS``).
    """

    def __init__(
        self,
        cluster: ClusterLike,
        listeners: Sequence[tuple[socket.socket, str]],
        *,
        clock: Clock = time.monotonic,
        ssl_context: ssl.SSLContext | None = None,
        allow_plain: bool = False,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.ssl_context = ssl_context
        self.allow_plain = allow_plain
        self._listeners = list(listeners)
        self._lock = threading.Lock()  # guards every call into the cluster's machines
        self._clients_lock = threading.Lock()  # guards the sets below
        self._clients: set[_Client] = set()
        self._threads: set[threading.Thread] = set()
        self._stopping = threading.Event()
        self._accept_waker = _Waker()
        self._acceptor: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._acceptor is not None:
            raise RuntimeError("the server is already started")
        self._acceptor = threading.Thread(target=self._accept_loop, name="sim-accept", daemon=True)
        self._acceptor.start()

    def close(self) -> None:
        """Stop accepting, close every connection, join every thread (idempotent)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._accept_waker.wake()
        if self._acceptor is not None:
            self._acceptor.join(JOIN_TIMEOUT_SECONDS)
        with self._clients_lock:
            clients = list(self._clients)
            threads = list(self._threads)
        for client in clients:
            client.waker.wake()
            with contextlib.suppress(OSError):
                client.sock.shutdown(socket.SHUT_RDWR)  # unblocks a thread stuck in send
        for thread in threads:
            thread.join(JOIN_TIMEOUT_SECONDS)
            if thread.is_alive():
                logger.warning("connection thread %s did not stop in time", thread.name)
        for listener, _address in self._listeners:
            with contextlib.suppress(OSError):
                if listener.family == socket.AF_UNIX:
                    path = listener.getsockname()
                    if isinstance(path, str) and path:
                        os.unlink(path)
            listener.close()
        self._accept_waker.close()

    def __enter__(self) -> LoopbackServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- calls into the cluster from outside (fault controls, clock changes) ----------------

    def call(self, operation: Callable[[float], T]) -> T:
        """Run ``operation(now)`` under the cluster lock, then let every connection drain the
        replies it may have made ready (a stepdown answers awaitable hellos, for example)."""
        with self._lock:
            result = operation(self.clock())
        self.wake_all()
        return result

    def wake_all(self, *, except_for: _Client | None = None) -> None:
        with self._clients_lock:
            clients = list(self._clients)
        for client in clients:
            if client is not except_for:
                client.waker.wake()

    @property
    def connection_count(self) -> int:
        with self._clients_lock:
            return len(self._clients)

    # --- accepting -------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            for listener, address in self._listeners:
                listener.setblocking(False)
                selector.register(listener, selectors.EVENT_READ, address)
            selector.register(self._accept_waker.reader, selectors.EVENT_READ, None)
            while not self._stopping.is_set():
                for key, _events in selector.select():
                    if key.data is None or self._stopping.is_set():
                        continue
                    ready = key.fileobj
                    if not isinstance(ready, socket.socket):
                        continue
                    try:
                        sock, peer = ready.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError as exc:  # e.g. out of file descriptors: keep serving
                        logger.warning("accept on %s failed: %s", key.data, exc)
                        continue
                    self._spawn(sock, key.data, str(peer) or "unix socket")

    def _spawn(self, sock: socket.socket, address: str, peer: str) -> None:
        sock.setblocking(True)
        if sock.family != socket.AF_UNIX:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = _Client(sock, address, peer)
        thread = threading.Thread(
            target=self._serve, args=(client,), name=f"sim-conn {address} <- {peer}", daemon=True
        )
        with self._clients_lock:
            self._clients.add(client)
            self._threads = {t for t in self._threads if t.is_alive()}
            self._threads.add(thread)
        thread.start()

    # --- one connection --------------------------------------------------------------------

    def _serve(self, client: _Client) -> None:
        try:
            self._serve_until_closed(client)
        except Exception:  # one bad client never stops the others
            logger.exception("connection to %s from %s failed", client.address, client.peer)
        finally:
            if client.machine is not None and not client.machine.should_close:
                with contextlib.suppress(Exception), self._lock:
                    client.machine.receive_eof()
                self.wake_all(except_for=client)
            with self._clients_lock:
                self._clients.discard(client)
            with contextlib.suppress(OSError):
                client.sock.close()
            client.waker.close()
            # (the thread stays in self._threads: close() joins every thread it finds there,
            # so one still finishing here cannot outlive close(); _spawn prunes ended ones)

    def _serve_until_closed(self, client: _Client) -> None:
        if self.ssl_context is not None:
            if self.allow_plain:
                first = self._peek_start(client)
                if not first:
                    return
                use_tls = TLS_RECORD_START.startswith(first)
            else:
                use_tls = True
            wrapped = self._tls_handshake(client) if use_tls else client.sock
            if wrapped is None:
                return
            client.sock = wrapped
        with self._lock:
            machine = self.cluster.connect(client.address, self.clock())
        client.machine = machine
        client.sock.settimeout(SEND_TIMEOUT_SECONDS)
        with selectors.DefaultSelector() as selector:
            selector.register(client.sock, selectors.EVENT_READ)
            selector.register(client.waker.reader, selectors.EVENT_READ)
            while not self._stopping.is_set():
                with self._lock:
                    outgoing = machine.data_to_send()
                    closing = machine.should_close
                    deadline = machine.next_deadline()
                if outgoing:
                    client.sock.sendall(outgoing)
                if closing:
                    logger.info(
                        "closing connection to %s from %s: %s",
                        client.address, client.peer, machine.close_reason or "no reason given",
                    )
                    return
                timeout = None if deadline is None else max(0.0, deadline - self.clock())
                readable = self._pending_tls_bytes(client.sock)
                if not readable:
                    for key, _events in selector.select(timeout):
                        if key.fileobj is client.waker.reader:
                            client.waker.drain()
                        else:
                            readable = True
                if readable and not self._receive(client, machine):
                    return
                if deadline is not None and self.clock() >= deadline:
                    with self._lock:
                        machine.handle_timeout(self.clock())
                    self.wake_all(except_for=client)

    def _receive(self, client: _Client, machine: ConnectionLike) -> bool:
        """Read once and feed the machine; False when the client is gone."""
        try:
            data = client.sock.recv(RECEIVE_SIZE)
        except (TimeoutError, BlockingIOError, ssl.SSLWantReadError):
            return True  # a partial TLS record: wait for the rest
        except OSError as exc:
            logger.info("connection to %s from %s lost: %s", client.address, client.peer, exc)
            data = b""
        with self._lock:
            if data:
                machine.receive_data(data, self.clock())
            else:
                machine.receive_eof()
        self.wake_all(except_for=client)
        if data:
            return True
        # The client closed its side: send what the machine still has, then stop.
        with self._lock:
            outgoing = machine.data_to_send()
        if outgoing:
            with contextlib.suppress(OSError):
                client.sock.sendall(outgoing)
        return False

    @staticmethod
    def _pending_tls_bytes(sock: socket.socket) -> bool:
        # Decrypted bytes already buffered inside the SSL object never wake a selector.
        return isinstance(sock, ssl.SSLSocket) and sock.pending() > 0

    @staticmethod
    def _peek_start(client: _Client) -> bytes:
        """The connection's first bytes (up to two), left unread; b"" when the client left
        (or said nothing for the TLS handshake's time) first."""
        client.sock.settimeout(TLS_HANDSHAKE_TIMEOUT_SECONDS)
        try:
            return client.sock.recv(len(TLS_RECORD_START), socket.MSG_PEEK)
        except OSError as exc:
            logger.info("no first bytes from %s on %s: %s", client.peer, client.address, exc)
            return b""

    def _tls_handshake(self, client: _Client) -> ssl.SSLSocket | None:
        assert self.ssl_context is not None
        client.sock.settimeout(TLS_HANDSHAKE_TIMEOUT_SECONDS)
        try:
            wrapped = self.ssl_context.wrap_socket(
                client.sock, server_side=True, do_handshake_on_connect=False
            )
            client.sock = wrapped  # before the handshake, so that close() can interrupt it
            wrapped.do_handshake()
        except (OSError, ssl.SSLError) as exc:
            logger.info("TLS handshake with %s on %s failed: %s", client.peer, client.address, exc)
            return None
        return wrapped
