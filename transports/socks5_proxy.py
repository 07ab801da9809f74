"""A small SOCKS5 proxy on loopback, for tests: RFC 1928 CONNECT with "no authentication" or
RFC 1929 username/password, one thread per client connection.

``with Socks5Proxy() as proxy:`` listens on ``127.0.0.1:proxy.port``.  Options:

* ``username`` and ``password`` -- demand RFC 1929 authentication with them (a client offering
  only "no authentication" gets "no acceptable methods", a wrong password status 1);
* ``refuse`` -- answer every CONNECT with this RFC 1928 reply code (e.g. 0x05, connection
  refused) instead of connecting;
* ``resolve`` -- how a DOMAINNAME is turned into addresses (default: the system's resolver);
  tests map made-up names to loopback with it, proving the client left DNS to the proxy.

What it saw is kept for the tests: ``requests`` (each CONNECT's ``(host, port, address type)``),
``methods`` (the methods each greeting offered) and ``active`` (connections open now).  Once
connected it relays bytes both ways until either side closes.  Written from the RFCs for this
project's tests; it is no production proxy.
"""

from __future__ import annotations

import contextlib
import ipaddress
import selectors
import socket
import threading
from collections.abc import Callable
from types import TracebackType

__all__ = ["Socks5Proxy"]

Resolver = Callable[[str, int], tuple[str, int]]


def _system_resolve(host: str, port: int) -> tuple[str, int]:
    info = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
    return str(info[0][4][0]), port


class Socks5Proxy:
    """A loopback SOCKS5 proxy (see the module docstring)."""

    def __init__(
        self,
        *,
        username: str | None = None,
        password: str | None = None,
        refuse: int | None = None,
        resolve: Resolver | None = None,
    ) -> None:
        self.username = username
        self.password = password
        self.refuse = refuse
        self._resolve = resolve or _system_resolve
        self.requests: list[tuple[str, int, int]] = []
        self.methods: list[bytes] = []
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._active = 0
        self._closed = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept, name="socks5 proxy", daemon=True)
        self._acceptor.start()

    @property
    def active(self) -> int:
        """Client connections open now."""
        with self._lock:
            return self._active

    def __enter__(self) -> Socks5Proxy:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening and close every connection."""
        with self._lock:
            self._closed = True
            sockets = list(self._sockets)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (Linux)
        with contextlib.suppress(OSError):
            self._listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self._acceptor.join(5)
        for thread in list(self._threads):
            thread.join(5)

    # --- serving ------------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    client.close()
                    return
                self._sockets.add(client)
                self._active += 1
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _forget(self, *socks: socket.socket | None) -> None:
        with self._lock:
            for sock in socks:
                if sock is not None:
                    self._sockets.discard(sock)
                    with contextlib.suppress(OSError):
                        sock.close()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            client.settimeout(10)
            upstream = self._handshake(client)
            if upstream is not None:
                client.settimeout(None)
                self._relay(client, upstream)
        except (OSError, ValueError):
            pass
        finally:
            self._forget(client, upstream)
            with self._lock:
                self._active -= 1

    def _handshake(self, client: socket.socket) -> socket.socket | None:
        version, count = _read(client, 2)
        if version != 5:
            return None
        methods = _read(client, count)
        self.methods.append(methods)
        wanted = 0x02 if self.username is not None else 0x00
        if wanted not in methods:
            client.sendall(b"\x05\xff")
            return None
        client.sendall(bytes([5, wanted]))
        if wanted == 0x02:
            auth_version, size = _read(client, 2)
            username = _read(client, size).decode("utf-8", "replace")
            password = _read(client, _read(client, 1)[0]).decode("utf-8", "replace")
            ok = auth_version == 1 and (username, password) == (self.username, self.password)
            client.sendall(b"\x01\x00" if ok else b"\x01\x01")
            if not ok:
                return None
        version, command, _reserved, kind = _read(client, 4)
        if kind == 0x01:
            host = str(ipaddress.IPv4Address(_read(client, 4)))
        elif kind == 0x04:
            host = str(ipaddress.IPv6Address(_read(client, 16)))
        elif kind == 0x03:
            host = _read(client, _read(client, 1)[0]).decode("idna")
        else:
            client.sendall(b"\x05\x08\x00\x01\x00\x00\x00\x00\x00\x00")
            return None
        port = int.from_bytes(_read(client, 2), "big")
        self.requests.append((host, port, kind))
        if version != 5 or command != 1:
            client.sendall(b"\x05\x07\x00\x01\x00\x00\x00\x00\x00\x00")
            return None
        if self.refuse is not None:
            client.sendall(bytes([5, self.refuse, 0, 1, 0, 0, 0, 0, 0, 0]))
            return None
        try:
            upstream = socket.create_connection(self._resolve(host, port), timeout=10)
        except OSError:
            client.sendall(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")
            return None
        upstream.settimeout(None)
        with self._lock:
            self._sockets.add(upstream)
        bound_host, bound_port = upstream.getsockname()[:2]
        bound = ipaddress.ip_address(bound_host)
        kind_out = 0x01 if bound.version == 4 else 0x04
        client.sendall(bytes([5, 0, 0, kind_out]) + bound.packed + bound_port.to_bytes(2, "big"))
        return upstream

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        peers = {client: upstream, upstream: client}
        with selectors.DefaultSelector() as selector:
            for sock in peers:
                selector.register(sock, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    source: socket.socket = key.fileobj  # type: ignore[assignment]
                    data = source.recv(65536)
                    if not data:
                        return
                    peers[source].sendall(data)


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ValueError("the client closed mid-handshake")
        data += chunk
    return data
