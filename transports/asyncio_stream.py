"""Byte streams for asyncio (and uvloop): TCP over IPv4/IPv6, Unix sockets, TLS; with timeouts.

:func:`open_stream` connects to an address -- ``(host, port)``, or a Unix socket given as
``(path, 0)`` or any host holding ``/`` -- within a timeout that also bounds the TLS handshake,
and returns an :class:`AsyncioStream`: ``await send_all(buffers, timeout)``, ``await
receive(timeout)`` and :meth:`~AsyncioStream.close`, which is synchronous and wakes a task
blocked reading the stream (its read returns ``b""``, the end of the stream).

The same promises as :mod:`mongo_sansio.transports.blocking`, whose helpers it shares (address
descriptions, keepalive, the mapping of socket failures): TCP_NODELAY and keepalive are set, TLS
comes from :func:`~mongo_sansio.transports.blocking.make_ssl_context`'s context, host names are
verified as the settings say, and every failure is a :class:`~mongo_sansio.errors.NetworkError`
(a timeout a :class:`~mongo_sansio.errors.NetworkTimeout`) naming the address.

No thread for a numeric host: asyncio recognises an IP literal itself and only hands real names
to ``getaddrinfo`` (which asyncio runs in its default executor).  A write waits until every byte
was handed to the kernel (the write buffer's high-water mark is zero), so the caller's buffers
are never referenced after :meth:`~AsyncioStream.send_all` returns and its timeout bounds the
whole message.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Sequence
from typing import Any

from mongo_sansio.errors import ConnectionSetupError, NetworkError, NetworkTimeout

from .blocking import _is_unix, _network_error, _set_keepalive, describe_address

__all__ = ["AsyncioStream", "open_stream", "start_tls"]

Buffer = bytes | bytearray | memoryview

_RECEIVE_SIZE = 65536


async def open_stream(
    address: tuple[str, int], *, timeout: float | None, ssl_context: ssl.SSLContext | None
) -> AsyncioStream:
    """Connect to ``address`` within ``timeout`` seconds (None: no limit); TLS when
    ``ssl_context`` is given."""
    where = describe_address(address)
    phase = f"cannot connect to {where}"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await _connect(address, where)
            phase = f"TLS handshake with {where} failed"
            try:
                if ssl_context is not None:
                    await _start_tls(writer, ssl_context, address, where)
            except BaseException:
                writer.transport.abort()
                raise
    except TimeoutError as exc:  # our limit; the system's timeouts are NetworkTimeouts already
        raise NetworkTimeout(f"{phase}: timed out") from exc
    return AsyncioStream(reader, writer, where)


async def start_tls(
    stream: AsyncioStream,
    ssl_context: ssl.SSLContext,
    address: tuple[str, int],
    *,
    timeout: float | None,
) -> AsyncioStream:
    """TLS on top of the connected ``stream`` (a tunnel through a SOCKS5 proxy) for the
    server at ``address``; the new stream replaces ``stream``, which is closed if the
    handshake fails."""
    where = describe_address(address)
    stream._check_open()
    writer = stream._writer
    try:
        async with asyncio.timeout(timeout):
            await _start_tls(writer, ssl_context, address, where)
    except TimeoutError as exc:
        stream.close()
        raise NetworkTimeout(f"TLS handshake with {where} failed: timed out") from exc
    except BaseException:
        stream.close()
        raise
    stream._closed = True  # the reader and writer now belong to the new stream
    return AsyncioStream(stream._reader, writer, stream.where)


async def _connect(
    address: tuple[str, int], where: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = address
    try:
        if _is_unix(address):
            return await asyncio.open_unix_connection(host, limit=_RECEIVE_SIZE)
        reader, writer = await asyncio.open_connection(host, port, limit=_RECEIVE_SIZE)
    except socket.gaierror as exc:
        raise ConnectionSetupError(f"cannot resolve {where}: {exc}") from exc
    except UnicodeError as exc:  # a name IDNA cannot encode
        raise ConnectionSetupError(f"cannot resolve {where}: {exc}") from exc
    except ValueError as exc:  # a Unix socket path with a NUL
        raise NetworkError(f"cannot connect to {where}: {exc}") from exc
    except OSError as exc:
        raise _network_error(exc, f"cannot connect to {where}") from exc
    sock = writer.get_extra_info("socket")
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _set_keepalive(sock)
    except OSError:
        pass  # a socket that refuses options still carries bytes
    return reader, writer


async def _start_tls(
    writer: asyncio.StreamWriter,
    context: ssl.SSLContext,
    address: tuple[str, int],
    where: str,
) -> None:
    unix = _is_unix(address)
    if unix and context.check_hostname:
        raise ConnectionSetupError(
            f"TLS to {where}: a Unix socket has no host name to verify; "
            "set tlsAllowInvalidHostnames=true"
        )
    # An IP literal goes without SNI and is matched against the certificate's IP addresses
    # (Python's ssl); an empty name tells asyncio there is no host name at all.
    server_hostname = "" if unix else address[0]
    try:
        await writer.start_tls(context, server_hostname=server_hostname)
    except OSError as exc:  # ssl.SSLError is an OSError
        raise _network_error(exc, f"TLS handshake with {where} failed") from exc
    except (ValueError, UnicodeError) as exc:  # a host name ssl cannot use as SNI
        raise ConnectionSetupError(f"TLS handshake with {where} failed: {exc}") from exc


class AsyncioStream:
    """A connected asyncio stream (maybe TLS) whose every failure is a NetworkError naming
    ``where``."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, where: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.where = where
        self._closed = False
        writer.transport.set_write_buffer_limits(high=0)

    @property
    def closed(self) -> bool:
        return self._closed

    async def send_all(self, buffers: Sequence[Buffer], timeout: float | None) -> None:
        """Write every buffer, in order, within ``timeout`` seconds."""
        self._check_open()
        try:
            async with asyncio.timeout(timeout):
                self._writer.writelines(buffers)
                await self._writer.drain()
        except OSError as exc:  # TimeoutError included
            raise _network_error(exc, f"sending to {self.where} failed") from exc
        except RuntimeError as exc:  # asyncio's "unable to perform operation on a closed ..."
            raise NetworkError(f"sending to {self.where} failed: {exc}") from exc

    async def receive(self, timeout: float | None, max_bytes: int = _RECEIVE_SIZE) -> bytes:
        """What arrives next (at most ``max_bytes``); ``b""`` at the end of the stream."""
        self._check_open()
        try:
            if timeout is None:
                return await self._reader.read(max_bytes)
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except OSError as exc:  # TimeoutError included
            raise _network_error(exc, f"reading from {self.where} failed") from exc

    def close(self) -> None:
        """Close at once (idempotent; the transport is aborted, unsent bytes dropped): a task
        reading the stream gets its end (``b""``) as soon as the loop runs."""
        if self._closed:
            return
        self._closed = True
        transport: Any = self._writer.transport
        transport.abort()

    def _check_open(self) -> None:
        if self._closed:
            raise NetworkError(f"the connection to {self.where} is closed")
