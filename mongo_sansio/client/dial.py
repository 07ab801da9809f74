"""Opening a stream to a server, directly or through a SOCKS5 proxy: one flow for every runtime.

Inputs: the server's address, a deadline, the client's :class:`ProxySettings` (None: connect
directly) and the runtime's ``close_stream``.  Outputs: runtime primitives
(:mod:`mongo_sansio.client.runtime`); returns the stream handle, ready for the server's
protocol (TLS set up when the client's settings ask for it).

Directly, it is one :class:`~mongo_sansio.client.runtime.OpenStream`.  Through a proxy
(``proxyHost``, the SOCKS5 spec): a plain stream to the proxy, the
:class:`~mongo_sansio.connection.socks5.Socks5Client` handshake over it (the server's host
name goes to the proxy unresolved), then TLS on top with
:class:`~mongo_sansio.client.runtime.StartTls`.  Every connection of a client -- pooled ones,
monitors, RTT probes -- is opened here, so none bypasses the proxy.  A Unix socket path is
local: it is never proxied.  Whatever fails, the stream opened so far is closed before the
error propagates; the deadline bounds the whole of it.

:func:`http_exchange` is the tiny HTTP/1.1 client of the credentials services (MONGODB-AWS):
a direct stream (plain, or TLS verified against the system's CAs for ``https``), one request,
the response parsed by :class:`~mongo_sansio.auth.http11.HttpResponseParser`; every failure
is answered as an :class:`~mongo_sansio.auth.http11.HttpFailure` value, and the stream is
always closed.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any

import attrs

from mongo_sansio.auth.http11 import (
    HttpFailure,
    HttpParseError,
    HttpRequest,
    HttpResponse,
    HttpResponseParser,
)
from mongo_sansio.client.runtime import OpenStream, Receive, SendAll, StartTls
from mongo_sansio.connection.socks5 import Socks5Client
from mongo_sansio.errors import ConfigurationError, MongoError
from mongo_sansio.flow import Now

__all__ = ["ProxySettings", "dial", "http_exchange", "DEFAULT_PROXY_PORT"]

#: ``proxyPort``'s default (the SOCKS5 spec).
DEFAULT_PROXY_PORT = 1080


@attrs.frozen(kw_only=True)
class ProxySettings:
    """A SOCKS5 proxy (``proxyHost``, ``proxyPort``, ``proxyUsername``, ``proxyPassword``)."""

    host: str
    port: int = DEFAULT_PROXY_PORT
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ProxySettings | None:
        """The proxy the validated URI options name, or None.  (The URI layer has already
        refused incomplete settings; an empty username or password is ignored, as the SOCKS5
        spec says.)"""
        host = options.get("proxyHost")
        if not host:
            return None
        username = options.get("proxyUsername") or None
        password = options.get("proxyPassword") or None
        if username is None or password is None:
            username = password = None
        port = options.get("proxyPort")
        return cls(
            host=host,
            port=DEFAULT_PROXY_PORT if port is None else port,
            username=username,
            password=password,
        )

    @property
    def address(self) -> tuple[str, int]:
        host = self.host
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return (host, self.port)


def _is_unix(address: tuple[str, int]) -> bool:
    host, port = address
    return port == 0 or "/" in host


def dial(
    address: tuple[str, int],
    deadline: float | None,
    *,
    proxy: ProxySettings | None,
    close_stream: Callable[[Any], None],
) -> Generator[Any, Any, Any]:
    """Open a stream to ``address`` (see the module docstring); returns the stream."""
    if proxy is None or _is_unix(address):
        return (yield OpenStream(address, deadline))
    host, port = address
    proxy_address = proxy.address
    machine = Socks5Client(
        host,
        port,
        username=proxy.username,
        password=proxy.password,
        proxy=f"the SOCKS5 proxy {proxy_address[0]}:{proxy_address[1]}",
    )
    stream = yield OpenStream(proxy_address, deadline, tls=False)
    try:
        yield SendAll(stream, [machine.greeting()], deadline)
        while not machine.done:
            data = yield Receive(stream, deadline, 512)
            if not data:
                machine.receive_eof()
                continue
            reply = machine.receive_data(data)
            if reply:
                yield SendAll(stream, [reply], deadline)
        stream = yield StartTls(stream, address, deadline)
    except BaseException:
        try:
            close_stream(stream)
        except Exception:  # noqa: BLE001 - the error that brought us here is the one to tell
            pass
        raise
    return stream


def http_exchange(
    request: HttpRequest,
    deadline: float | None,
    *,
    close_stream: Callable[[Any], None],
) -> Generator[Any, Any, HttpResponse | HttpFailure]:
    """Make ``request`` before ``deadline`` (and within its own ``timeout``); returns the
    response, or an HttpFailure saying what went wrong."""
    try:
        https, host, port, _path = request.target
        payload = request.to_bytes()
    except ConfigurationError as error:
        return HttpFailure(str(error))
    now = yield Now()
    limit = now + request.timeout
    deadline = limit if deadline is None else min(deadline, limit)
    stream: Any = None
    try:
        stream = yield OpenStream((host, port), deadline, tls=False)
        if https:
            stream = yield StartTls(stream, (host, port), deadline, https=True)
        yield SendAll(stream, [payload], deadline)
        parser = HttpResponseParser()
        while True:
            data = yield Receive(stream, deadline)
            response = parser.receive_data(data)
            if response is not None:
                return response
    except MongoError as error:
        return HttpFailure(f"{request.method} {request.url}: {error}")
    except HttpParseError as error:
        return HttpFailure(f"{request.method} {request.url}: {error}")
    finally:
        if stream is not None:
            try:
                close_stream(stream)
            except Exception:  # noqa: BLE001 - nothing left to tell
                pass
