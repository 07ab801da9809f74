"""Blocking byte streams: TCP over IPv4/IPv6, Unix sockets, TLS; with timeouts.

:func:`open_stream` connects to an address -- ``(host, port)``, or a Unix socket given as
``(path, 0)`` or any host holding ``/`` -- within the connect timeout, which also bounds the
TLS handshake, and returns a :class:`BlockingStream`: :meth:`~BlockingStream.send_all` of a
list of buffers, :meth:`~BlockingStream.recv` / :meth:`~BlockingStream.recv_into`, and
:meth:`~BlockingStream.close`.  Reads and writes wait at most the socket timeout (None: no
limit), which :meth:`~BlockingStream.set_timeout` replaces for one exchange (a getMore that
waits maxAwaitTimeMS).

TCP: every address ``getaddrinfo`` gives (IPv4 and IPv6) is tried in order until one
connects; TCP_NODELAY and keepalive (probing after at most 120 s idle) are set.  TLS
(:func:`make_ssl_context` from :class:`~mongo_sansio.client.TlsSettings`): certificates and
host names are verified unless the settings allow invalid ones; the host name is sent as SNI
(Python's ssl leaves an IP literal out of SNI and matches it against the certificate's IP
addresses).

Every failure -- refused, reset, unreachable, a name that does not resolve, a TLS failure --
is raised as :class:`~mongo_sansio.errors.NetworkError`, and every timeout as
:class:`~mongo_sansio.errors.NetworkTimeout`, naming the address; an unreadable CA or
certificate file is a :class:`~mongo_sansio.errors.ConfigurationError`.  The module decides
nothing about the protocol.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from mongo_sansio.errors import (
    ConfigurationError,
    ConnectionSetupError,
    NetworkError,
    NetworkTimeout,
)

if TYPE_CHECKING:
    from mongo_sansio.client import TlsSettings

__all__ = [
    "BlockingStream",
    "open_stream",
    "start_tls",
    "make_ssl_context",
    "make_https_context",
    "describe_address",
]

Buffer = bytes | bytearray | memoryview

# Keepalive: probe an idle connection after at most this many seconds (some firewalls drop
# idle connections after a few minutes; the operating systems' default is two hours).
_KEEPALIVE_IDLE = 120
_KEEPALIVE_INTERVAL = 10
_KEEPALIVE_COUNT = 9
_RECEIVE_SIZE = 65536
# Messages up to this size are joined and sent with sendall: the copy costs less than
# building the iovecs of a sendmsg (each a memoryview).
_JOIN_BELOW = 16384


def describe_address(address: tuple[str, int]) -> str:
    """``host:port``, ``[v6]:port``, or the Unix socket path."""
    host, port = address
    if _is_unix(address):
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_unix(address: tuple[str, int]) -> bool:
    host, port = address
    return port == 0 or "/" in host


def make_ssl_context(
    settings: TlsSettings, context_class: type[ssl.SSLContext] = ssl.SSLContext
) -> ssl.SSLContext:
    """The client-side context for ``settings`` (one per client; it caches sessions);
    ``context_class`` may be a subclass whose sockets cooperate with an event loop (gevent's)."""
    context = context_class(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        if settings.ca_file is not None:
            context.load_verify_locations(cafile=settings.ca_file)
        elif not settings.allow_invalid_certificates:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if settings.certificate_key_file is not None:
            context.load_cert_chain(
                settings.certificate_key_file,
                password=settings.certificate_key_file_password,
            )
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(f"TLS: cannot load a certificate or key file: {exc}") from exc
    if settings.allow_invalid_certificates:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif settings.allow_invalid_hostnames:
        context.check_hostname = False
    return context


def make_https_context(context_class: type[ssl.SSLContext] = ssl.SSLContext) -> ssl.SSLContext:
    """A context verifying a web endpoint (an HTTPS credentials service) against the system's
    certificate authorities, whatever the client's TLS settings."""
    context = context_class(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    return context


def start_tls(
    stream: BlockingStream,
    ssl_context: ssl.SSLContext,
    address: tuple[str, int],
    *,
    timeout: float | None,
) -> BlockingStream:
    """TLS on top of the connected ``stream`` (a tunnel through a SOCKS5 proxy) for the
    server at ``address`` (its host name checked); the new stream replaces ``stream``, which
    is closed if the handshake fails."""
    where = describe_address(address)
    stream._check_open()
    sock = _wrap_tls(stream._sock, ssl_context, address, timeout, where)
    tls = BlockingStream(sock, stream.where, stream.default_timeout)
    tls.set_timeout(stream.default_timeout)
    stream._closed = True  # the socket now belongs to ``tls``
    return tls


def open_stream(
    address: tuple[str, int],
    *,
    connect_timeout: float | None,
    socket_timeout: float | None,
    ssl_context: ssl.SSLContext | None = None,
    sockets: ModuleType = socket,
) -> BlockingStream:
    """Connect to ``address`` (see the module docstring); TLS when ``ssl_context`` is given.
    ``sockets`` is the module whose ``socket`` and ``getaddrinfo`` connect: the standard
    library's, or one with the same interface whose sockets wait cooperatively (gevent's)."""
    where = describe_address(address)
    if _is_unix(address):
        sock = _connect_unix(address[0], connect_timeout, where, sockets)
    else:
        sock = _connect_tcp(address, connect_timeout, where, sockets)
    if ssl_context is not None:
        sock = _wrap_tls(sock, ssl_context, address, connect_timeout, where)
    stream = BlockingStream(sock, where, socket_timeout)
    stream.set_timeout(socket_timeout)
    return stream


def _connect_unix(
    path: str, timeout: float | None, where: str, sockets: ModuleType
) -> socket.socket:
    if not hasattr(socket, "AF_UNIX"):
        raise NetworkError(f"cannot connect to {where}: Unix sockets are not available here")
    try:
        sock: socket.socket = sockets.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as exc:  # out of file descriptors, or the like
        raise _network_error(exc, f"cannot connect to {where}") from exc
    try:
        sock.settimeout(timeout)
        sock.connect(path)
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL
        sock.close()
        if isinstance(exc, ValueError):
            raise NetworkError(f"cannot connect to {where}: {exc}") from exc
        raise _network_error(exc, f"cannot connect to {where}") from exc
    except BaseException:
        sock.close()
        raise
    return sock


def _connect_tcp(
    address: tuple[str, int], timeout: float | None, where: str, sockets: ModuleType
) -> socket.socket:
    host, port = address
    try:
        infos = sockets.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:  # socket.gaierror; a name IDNA cannot encode
        raise ConnectionSetupError(f"cannot resolve {where}: {exc}") from exc
    last: OSError | None = None
    for family, kind, proto, _name, sockaddr in infos:
        try:
            sock: socket.socket = sockets.socket(family, kind, proto)
        except OSError as exc:
            last = exc
            continue
        try:
            sock.settimeout(timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _set_keepalive(sock)
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    if last is None:
        raise ConnectionSetupError(f"cannot connect to {where}: the name has no addresses")
    raise _network_error(last, f"cannot connect to {where}") from last


def _set_keepalive(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, wanted in (
        ("TCP_KEEPIDLE", _KEEPALIVE_IDLE),
        ("TCP_KEEPINTVL", _KEEPALIVE_INTERVAL),
        ("TCP_KEEPCNT", _KEEPALIVE_COUNT),
    ):
        option = getattr(socket, name, None)
        if option is None:
            continue
        try:
            current = sock.getsockopt(socket.IPPROTO_TCP, option)
            if current > wanted:  # only ever shorten what the system chose
                sock.setsockopt(socket.IPPROTO_TCP, option, wanted)
        except OSError:
            pass  # some platforms refuse: keepalive stays at the system's settings


def _wrap_tls(
    sock: socket.socket,
    context: ssl.SSLContext,
    address: tuple[str, int],
    timeout: float | None,
    where: str,
) -> ssl.SSLSocket:
    host = address[0]
    # Python sends no SNI for an IP literal given as server_hostname, but still matches it
    # against the certificate's IP addresses; a Unix socket has no host name to check.
    server_hostname = None if _is_unix(address) else host
    if server_hostname is None and context.check_hostname:
        raise ConnectionSetupError(
            f"TLS to {where}: a Unix socket has no host name to verify; "
            "set tlsAllowInvalidHostnames=true"
        )
    try:
        sock.settimeout(timeout)
        return context.wrap_socket(sock, server_hostname=server_hostname)
    except OSError as exc:  # ssl.SSLError and socket.timeout are OSErrors
        sock.close()
        raise _network_error(exc, f"TLS handshake with {where} failed") from exc
    except (ValueError, UnicodeError) as exc:  # a host name ssl cannot use as SNI
        sock.close()
        raise ConnectionSetupError(f"TLS handshake with {where} failed: {exc}") from exc
    except BaseException:
        sock.close()
        raise


def _network_error(exc: OSError, context: str) -> NetworkError:
    """Our error for a socket failure (socket.timeout is TimeoutError since Python 3.10)."""
    if isinstance(exc, TimeoutError):
        return NetworkTimeout(f"{context}: timed out")
    if isinstance(exc, ssl.SSLCertVerificationError):
        # no overload ever causes it: it gets no backpressure labels (CMAP spec)
        reason = exc.verify_message or str(exc)
        return ConnectionSetupError(f"{context}: {reason or type(exc).__name__}")
    reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
    return NetworkError(f"{context}: {reason or type(exc).__name__}")


class BlockingStream:
    """A connected socket (maybe TLS) whose every failure is a NetworkError naming ``where``."""

    def __init__(self, sock: socket.socket, where: str, socket_timeout: float | None) -> None:
        self._sock = sock
        self.where = where
        self.default_timeout = socket_timeout
        self._timeout: float | None = sock.gettimeout()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def set_timeout(self, seconds: float | None) -> None:
        """The limit on each following read and write (None: wait as long as it takes)."""
        if seconds == self._timeout:
            return
        try:
            self._sock.settimeout(seconds)
        except OSError as exc:
            raise _network_error(exc, f"connection to {self.where}") from exc
        self._timeout = seconds

    def send_all(self, buffers: Sequence[Buffer]) -> None:
        """Write every buffer, in order."""
        self._check_open()
        try:
            if len(buffers) == 1:
                self._sock.sendall(buffers[0])
            elif sum(map(len, buffers)) <= _JOIN_BELOW or hasattr(self._sock, "cipher") or (
                not hasattr(self._sock, "sendmsg")
            ):
                # small messages: a copy costs less than gathering; a TLS socket (ssl's, or
                # gevent's, which is no ssl.SSLSocket) cannot gather
                self._sock.sendall(b"".join(buffers))
            else:
                self._send_gathered(buffers)
        except OSError as exc:
            raise _network_error(exc, f"sending to {self.where} failed") from exc

    def _send_gathered(self, buffers: Sequence[Buffer]) -> None:
        """sendmsg the buffers without joining them (encoded documents pass uncopied); only
        a buffer cut by a short send becomes a view (of its unsent rest)."""
        pending: list[Buffer] = [
            b if type(b) is not memoryview or b.format == "B" else b.cast("B") for b in buffers
        ]
        while pending:
            chunk = pending[:512]  # IOV_MAX is at least 1024 on Linux
            sent = self._sock.sendmsg(chunk)
            done = 0
            for buffer in chunk:
                size = len(buffer)
                if sent < size:
                    break
                sent -= size
                done += 1
            del pending[:done]
            if sent:
                pending[0] = memoryview(pending[0])[sent:]

    def recv(self, max_bytes: int = _RECEIVE_SIZE) -> bytes:
        """Up to ``max_bytes`` bytes; ``b""`` when the peer closed its side."""
        self._check_open()
        try:
            return self._sock.recv(max_bytes)
        except OSError as exc:
            raise _network_error(exc, f"reading from {self.where} failed") from exc

    def recv_into(self, buffer: bytearray | memoryview) -> int:
        """Read into ``buffer``; 0 when the peer closed its side."""
        self._check_open()
        try:
            return self._sock.recv_into(buffer)
        except OSError as exc:
            raise _network_error(exc, f"reading from {self.where} failed") from exc

    def close(self) -> None:
        """Close the socket (idempotent; errors while closing are of no interest).  A read
        blocked on it in another thread fails with NetworkError."""
        if self._closed:
            return
        self._closed = True
        try:
            # shutdown first: it wakes a thread blocked reading this socket, close alone may not
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass

    def forget(self) -> None:
        """Close the file descriptor without a word to the peer: no shutdown, no TLS goodbye.
        For a process forked from the one that opened the stream, whose parent still uses the
        connection (a shutdown would end it for both)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.close()
        except OSError:
            pass

    def _check_open(self) -> None:
        if self._closed:
            raise NetworkError(f"the connection to {self.where} is closed")
