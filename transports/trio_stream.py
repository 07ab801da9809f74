"""Byte streams for trio: TCP over IPv4/IPv6, Unix sockets, TLS; with timeouts; no threads.

:func:`open_stream` connects to an address -- ``(host, port)``, or a Unix socket given as
``(path, 0)`` or any host holding ``/`` -- within a timeout that also bounds the TLS handshake,
and returns a :class:`TrioStream`: ``await send_all(buffers, timeout)``, ``await
receive(timeout)`` and :meth:`~TrioStream.close`, which is synchronous: it closes the socket
through trio (``notify_closing``), so a task blocked reading or writing the stream wakes at once
with an error instead of waiting on a number the kernel may give to a new socket.

The same promises as :mod:`mongo_sansio.transports.blocking`, whose helpers it shares: every
address of the host is tried in order, TCP_NODELAY and keepalive are set, TLS uses
:func:`~mongo_sansio.transports.blocking.make_ssl_context`'s context with the host name checked
as the settings say, and every failure is a :class:`~mongo_sansio.errors.NetworkError` (a
timeout a :class:`~mongo_sansio.errors.NetworkTimeout`) naming the address.

Names without a thread: trio's own ``getaddrinfo`` runs the system's resolver in a worker
thread, so it is only asked about IP literals (which it answers without one).  A host name is
looked up with dnspython's resolver on trio's sockets (A records, then AAAA, with the system's
search domains); ``localhost`` is the loopback addresses (RFC 6761).  Other names from
``/etc/hosts`` are not seen: use an IP address or DNS for them.
"""

from __future__ import annotations

import ipaddress
import math
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence

import trio

from mongo_sansio.errors import (
    ConfigurationError,
    ConnectionSetupError,
    NetworkError,
    NetworkTimeout,
)

from .blocking import _is_unix, _network_error, _set_keepalive, describe_address
from .dns import HAVE_DNSPYTHON

if HAVE_DNSPYTHON:
    import dns.asyncbackend
    import dns.asyncresolver
    import dns.exception

__all__ = ["TrioStream", "open_stream", "start_tls", "lookup_host", "HostLookup"]

Buffer = bytes | bytearray | memoryview
#: Resolves a host name to the IP addresses to try, in order (NetworkError if it cannot).
HostLookup = Callable[[str], Awaitable[list[str]]]

_RECEIVE_SIZE = 65536
_LOOPBACK = ["127.0.0.1", "::1"]


async def open_stream(
    address: tuple[str, int],
    *,
    timeout: float | None,
    ssl_context: ssl.SSLContext | None,
    lookup: HostLookup | None = None,
) -> TrioStream:
    """Connect to ``address`` within ``timeout`` seconds (None: no limit); TLS when
    ``ssl_context`` is given; ``lookup`` resolves host names (default: :func:`lookup_host`)."""
    where = describe_address(address)
    phase = f"cannot connect to {where}"
    stream: trio.SocketStream | trio.SSLStream[trio.SocketStream] | None = None
    with trio.move_on_after(math.inf if timeout is None else timeout) as limit:
        if _is_unix(address):
            plain = await _connect_unix(address[0], where)
        else:
            plain = await _connect_tcp(address, where, lookup or lookup_host)
        stream, sock = plain, plain.socket
        if ssl_context is not None:
            phase = f"TLS handshake with {where} failed"
            try:
                stream = await _start_tls(plain, ssl_context, address, where)
            except BaseException:
                sock.close()
                raise
    if stream is None or limit.cancelled_caught:  # the socket was closed where it was cut
        raise NetworkTimeout(f"{phase}: timed out")
    return TrioStream(stream, sock, where)


async def start_tls(
    stream: TrioStream,
    ssl_context: ssl.SSLContext,
    address: tuple[str, int],
    *,
    timeout: float | None,
) -> TrioStream:
    """TLS on top of the connected ``stream`` (a tunnel through a SOCKS5 proxy) for the
    server at ``address``; the new stream replaces ``stream``, which is closed if the
    handshake fails."""
    where = describe_address(address)
    stream._check_open()
    plain = stream._stream
    if not isinstance(plain, trio.SocketStream):
        stream.close()
        raise NetworkError(f"TLS handshake with {where} failed: the stream already has TLS")
    tls: trio.SSLStream[trio.SocketStream] | None = None
    with trio.move_on_after(math.inf if timeout is None else timeout):
        try:
            tls = await _start_tls(plain, ssl_context, address, where)
        except BaseException:
            stream.close()
            raise
    if tls is None:
        stream.close()
        raise NetworkTimeout(f"TLS handshake with {where} failed: timed out")
    stream._closed = True  # the socket now belongs to the new stream
    return TrioStream(tls, stream._sock, stream.where)


async def lookup_host(host: str) -> list[str]:
    """The addresses of ``host`` from DNS (see the module docstring)."""
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return list(_LOOPBACK)
    if not HAVE_DNSPYTHON:
        raise ConfigurationError(
            "trio resolves host names with dnspython: install mongo-sansio[trio]"
        )
    resolver = dns.asyncresolver.Resolver()
    backend = dns.asyncbackend.get_backend("trio")
    found: list[str] = []
    failure: Exception | None = None
    for rdtype in ("A", "AAAA"):
        try:
            answer = await resolver.resolve(host, rdtype, search=True, backend=backend)
        except (dns.exception.DNSException, OSError) as exc:
            failure = failure or exc
            continue
        found.extend(record.to_text() for record in answer)
    if not found:
        reason = failure or "the name has no addresses"
        raise ConnectionSetupError(f"cannot resolve {host}: {reason}")
    return found


async def _connect_unix(path: str, where: str) -> trio.SocketStream:
    if not hasattr(socket, "AF_UNIX"):
        raise NetworkError(f"cannot connect to {where}: Unix sockets are not available here")
    try:
        return await trio.open_unix_socket(path)  # closes its socket when it fails
    except OSError as exc:
        raise _network_error(exc, f"cannot connect to {where}") from exc
    except ValueError as exc:  # a path with a NUL
        raise NetworkError(f"cannot connect to {where}: {exc}") from exc


async def _connect_tcp(
    address: tuple[str, int], where: str, lookup: HostLookup
) -> trio.SocketStream:
    host, port = address
    last: OSError | None = None
    # trio answers IP literals itself; its resolver thread is never asked about a name
    for literal in [host] if _is_ip_literal(host) else await lookup(host):
        try:
            stream = await trio.open_tcp_stream(literal, port)  # TCP_NODELAY set
        except OSError as exc:
            last = _last_attempt(exc)
            continue
        try:
            _set_keepalive(stream.socket)  # type: ignore[arg-type]  # the same methods
        except OSError:
            pass  # a socket that refuses options still carries bytes
        return stream
    if last is None:
        raise ConnectionSetupError(f"cannot connect to {where}: the name has no addresses")
    raise _network_error(last, f"cannot connect to {where}") from last


def _last_attempt(exc: OSError) -> OSError:
    """The failure of the last address tried ("connection refused"), rather than trio's
    summary of all of them."""
    attempts = getattr(exc.__cause__, "exceptions", ())
    failures = [attempt for attempt in attempts if isinstance(attempt, OSError)]
    return failures[-1] if failures else exc


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _start_tls(
    stream: trio.SocketStream, context: ssl.SSLContext, address: tuple[str, int], where: str
) -> trio.SSLStream[trio.SocketStream]:
    unix = _is_unix(address)
    if unix and context.check_hostname:
        raise ConnectionSetupError(
            f"TLS to {where}: a Unix socket has no host name to verify; "
            "set tlsAllowInvalidHostnames=true"
        )
    try:
        # https_compatible: a peer that closes without TLS's goodbye is an end of stream,
        # as with the blocking transport's sockets
        tls = trio.SSLStream(
            stream, context, server_hostname=None if unix else address[0], https_compatible=True
        )
        await tls.do_handshake()
    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        raise _stream_error(exc, f"TLS handshake with {where} failed") from exc
    except (ValueError, UnicodeError) as exc:  # a host name ssl cannot use as SNI
        raise ConnectionSetupError(f"TLS handshake with {where} failed: {exc}") from exc
    return tls


def _stream_error(exc: Exception, context: str) -> NetworkError:
    """Our error for trio's stream errors, from the socket or TLS failure behind them."""
    cause = exc.__cause__
    if isinstance(cause, OSError):  # ssl.SSLError included
        return _network_error(cause, context)
    if isinstance(exc, trio.ClosedResourceError):
        return NetworkError(f"{context}: the connection was closed")
    return NetworkError(f"{context}: {cause or exc or type(exc).__name__}")


class TrioStream:
    """A connected trio stream (maybe TLS) whose every failure is a NetworkError naming
    ``where``; ``sock`` is the socket under it, which :meth:`close` closes."""

    def __init__(self, stream: trio.abc.Stream, sock: trio.socket.SocketType, where: str) -> None:
        self._stream = stream
        self._sock = sock
        self.where = where
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    async def send_all(self, buffers: Sequence[Buffer], timeout: float | None) -> None:
        """Write every buffer, in order, within ``timeout`` seconds."""
        self._check_open()
        data = buffers[0] if len(buffers) == 1 else b"".join(buffers)
        with trio.move_on_after(math.inf if timeout is None else timeout) as limit:
            try:
                await self._stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise _stream_error(exc, f"sending to {self.where} failed") from exc
        if limit.cancelled_caught:
            raise NetworkTimeout(f"sending to {self.where} failed: timed out")

    async def receive(self, timeout: float | None, max_bytes: int = _RECEIVE_SIZE) -> bytes:
        """What arrives next (at most ``max_bytes``); ``b""`` at the end of the stream."""
        self._check_open()
        data: bytes | bytearray = b""
        with trio.move_on_after(math.inf if timeout is None else timeout) as limit:
            try:
                data = await self._stream.receive_some(max_bytes)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise _stream_error(exc, f"reading from {self.where} failed") from exc
        if limit.cancelled_caught:
            raise NetworkTimeout(f"reading from {self.where} failed: timed out")
        return bytes(data) if isinstance(data, bytearray) else data

    def close(self) -> None:
        """Close the socket now (idempotent): a task blocked on it wakes with NetworkError."""
        if self._closed:
            return
        self._closed = True
        self._sock.close()

    def _check_open(self) -> None:
        if self._closed:
            raise NetworkError(f"the connection to {self.where} is closed")
