"""The client side of a SOCKS5 handshake (RFC 1928, with RFC 1929 username/password), bytes in
and bytes out, as the MongoDB SOCKS5 specification (source/socks5-support) asks.

Inputs: the destination ``(host, port)`` (a host name goes to the proxy as it is, as a
DOMAINNAME: DNS happens at the proxy, never here), the optional proxy username and password,
then the proxy's bytes in any chunking (:meth:`Socks5Client.receive_data`) and the end of its
stream (:meth:`Socks5Client.receive_eof`).  Outputs: the bytes to send (the greeting from
:meth:`Socks5Client.greeting`, then whatever :meth:`~Socks5Client.receive_data` returns), and
:attr:`Socks5Client.done` once the proxy connected us: from then on the stream carries the
destination's bytes (TLS, then MongoDB's wire protocol).

The greeting offers "no authentication" only, or, with a username and password, both it and
"username/password" (the spec's rule).  Errors, by blame, all :class:`ProxyError` (a
:class:`~mongo_sansio.errors.ConnectionSetupError`: like a refused connection, and never a sign
of server overload, so no backpressure labels):

* :class:`ProxyAuthenticationError` -- the proxy accepts none of our methods, or refused the
  username and password;
* :class:`ProxyConnectError` -- the proxy could not or would not connect us; ``reply_code`` is
  RFC 1928's REP field, named in the message;
* :class:`ProxyProtocolError` -- the proxy's bytes are not SOCKS5 (or it closed mid-reply).

Bad settings (a username longer than 255 bytes, a host name the protocol cannot carry) are a
:class:`~mongo_sansio.errors.ConfigurationError` at construction.  No message or repr holds the
password.  After an error the machine refuses further input.
"""

from __future__ import annotations

import enum
import ipaddress
from typing import Final

from mongo_sansio.errors import ConfigurationError, ConnectionSetupError, LocalProtocolError

__all__ = [
    "Socks5Client",
    "ProxyError",
    "ProxyAuthenticationError",
    "ProxyConnectError",
    "ProxyProtocolError",
    "REPLY_MEANINGS",
]

_VERSION: Final = 5
_AUTH_VERSION: Final = 1  # RFC 1929's subnegotiation version
_NO_AUTH: Final = 0x00
_USER_PASS: Final = 0x02
_NO_ACCEPTABLE: Final = 0xFF
_CONNECT: Final = 0x01
_IPV4: Final = 0x01
_DOMAIN: Final = 0x03
_IPV6: Final = 0x04

#: RFC 1928's reply codes (the REP field) and what they mean.
REPLY_MEANINGS: Final = {
    0x01: "general SOCKS server failure",
    0x02: "connection not allowed by ruleset",
    0x03: "network unreachable",
    0x04: "host unreachable",
    0x05: "connection refused",
    0x06: "TTL expired",
    0x07: "command not supported",
    0x08: "address type not supported",
}


class ProxyError(ConnectionSetupError):
    """The SOCKS5 proxy did not connect us to the server (see the module docstring)."""


class ProxyAuthenticationError(ProxyError):
    """The proxy wants an authentication we cannot do, or refused our username/password."""


class ProxyConnectError(ProxyError):
    """The proxy answered the CONNECT request with a failure; ``reply_code`` is its REP."""

    def __init__(self, message: str, *, reply_code: int) -> None:
        super().__init__(message)
        self.reply_code = reply_code


class ProxyProtocolError(ProxyError):
    """The proxy's bytes are not a SOCKS5 conversation (or it closed the stream mid-way)."""


class _State(enum.Enum):
    GREETING = "awaiting the method selection"
    AUTHENTICATING = "awaiting the username/password verdict"
    CONNECTING = "awaiting the CONNECT reply"
    DONE = "connected"
    FAILED = "failed"


class Socks5Client:
    """One SOCKS5 CONNECT handshake (see the module docstring)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        username: str | None = None,
        password: str | None = None,
        proxy: str = "the SOCKS5 proxy",
    ) -> None:
        if not isinstance(port, int) or not 0 <= port <= 0xFFFF:
            raise ConfigurationError(f"SOCKS5: port {port!r} is out of range")
        if (username is None) != (password is None):
            raise ConfigurationError("SOCKS5: proxyUsername and proxyPassword go together")
        self._proxy = proxy
        self._target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._request = _connect_request(host, port)
        self._credentials: bytes | None = None
        if username is not None and password is not None:
            self._credentials = _credentials_request(username, password)
        self._buffer = bytearray()
        self._state = _State.GREETING

    def __repr__(self) -> str:
        return f"<Socks5Client to {self._target} via {self._proxy}: {self._state.value}>"

    @property
    def done(self) -> bool:
        """True once the proxy connected us to the destination."""
        return self._state is _State.DONE

    def greeting(self) -> bytes:
        """The first bytes to send: the methods we can do."""
        methods = bytes([_NO_AUTH, _USER_PASS]) if self._credentials is not None else bytes([_NO_AUTH])
        return bytes([_VERSION, len(methods)]) + methods

    def receive_data(self, data: bytes | bytearray | memoryview) -> bytes:
        """Take the proxy's next bytes; returns the bytes to send now (maybe none)."""
        if self._state is _State.FAILED:
            raise LocalProtocolError("the SOCKS5 handshake already failed")
        if self._state is _State.DONE:
            if data:
                raise self._fail(ProxyProtocolError, "sent bytes after its CONNECT reply")
            return b""
        self._buffer += data
        try:
            return self._advance()
        except ProxyError:
            self._state = _State.FAILED
            raise

    def receive_eof(self) -> None:
        """The proxy closed the stream: an error unless the handshake is over."""
        if self._state in (_State.DONE, _State.FAILED):
            return
        raise self._fail(
            ProxyProtocolError, f"closed the connection while {self._state.value}"
        )

    # --- the steps ----------------------------------------------------------------------------

    def _advance(self) -> bytes:
        out = b""
        while True:
            state = self._state
            if state is _State.GREETING:
                step = self._method_selected()
            elif state is _State.AUTHENTICATING:
                step = self._authenticated()
            elif state is _State.CONNECTING:
                step = self._connected()
            else:
                step = None
            if step is None:
                return out
            out += step

    def _take(self, size: int) -> bytes | None:
        if len(self._buffer) < size:
            return None
        taken = bytes(self._buffer[:size])
        del self._buffer[:size]
        return taken

    def _method_selected(self) -> bytes | None:
        reply = self._take(2)
        if reply is None:
            return None
        version, method = reply
        if version != _VERSION:
            raise self._fail(ProxyProtocolError, f"answered with SOCKS version {version}, not 5")
        if method == _NO_AUTH:
            self._state = _State.CONNECTING
            return self._request
        if method == _USER_PASS and self._credentials is not None:
            self._state = _State.AUTHENTICATING
            return self._credentials
        if method == _NO_ACCEPTABLE or method == _USER_PASS:
            wanted = "a username and password" if method == _USER_PASS else "an authentication"
            raise self._fail(
                ProxyAuthenticationError,
                f"requires {wanted} we were not given or cannot do "
                "(set proxyUsername and proxyPassword)",
            )
        raise self._fail(ProxyProtocolError, f"chose method {method:#04x}, which we did not offer")

    def _authenticated(self) -> bytes | None:
        reply = self._take(2)
        if reply is None:
            return None
        version, status = reply
        if version != _AUTH_VERSION:
            raise self._fail(
                ProxyProtocolError, f"answered the username/password step with version {version}"
            )
        if status != 0:
            raise self._fail(
                ProxyAuthenticationError, f"refused the username and password (status {status})"
            )
        self._state = _State.CONNECTING
        return self._request

    def _connected(self) -> bytes | None:
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        version, code = buffer[0], buffer[1]
        if version != _VERSION:
            raise self._fail(ProxyProtocolError, f"answered CONNECT with SOCKS version {version}")
        if code != 0:
            meaning = REPLY_MEANINGS.get(code, "an unassigned reply code")
            error = ProxyConnectError(
                f"{self._proxy} could not connect to {self._target}: {meaning} (SOCKS5 reply {code:#04x})",
                reply_code=code,
            )
            self._state = _State.FAILED
            raise error
        if len(buffer) < 5:
            return None
        if buffer[2] != 0:
            raise self._fail(ProxyProtocolError, "sent a CONNECT reply with a non-zero reserved byte")
        kind = buffer[3]
        if kind == _IPV4:
            size = 4 + 4 + 2
        elif kind == _IPV6:
            size = 4 + 16 + 2
        elif kind == _DOMAIN:
            size = 4 + 1 + buffer[4] + 2
        else:
            raise self._fail(ProxyProtocolError, f"sent a bound address of unknown type {kind:#04x}")
        if self._take(size) is None:
            return None
        self._state = _State.DONE
        if buffer:
            raise self._fail(ProxyProtocolError, "sent bytes after its CONNECT reply")
        return None

    def _fail(self, kind: type[ProxyError], what: str) -> ProxyError:
        self._state = _State.FAILED
        return kind(f"{self._proxy} {what} (connecting to {self._target})")


def _connect_request(host: str, port: int) -> bytes:
    """CONNECT to ``host``: an IP literal as an address, any other name as a DOMAINNAME."""
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(literal)
    except ValueError:
        address = None
    if isinstance(address, ipaddress.IPv4Address):
        destination = bytes([_IPV4]) + address.packed
    elif isinstance(address, ipaddress.IPv6Address):
        destination = bytes([_IPV6]) + address.packed
    else:
        try:
            name = host.encode("idna")
        except UnicodeError as exc:
            raise ConfigurationError(f"SOCKS5: host name {host!r} cannot be sent: {exc}") from None
        if not 0 < len(name) <= 255:
            raise ConfigurationError("SOCKS5: a host name must be 1 to 255 bytes long")
        destination = bytes([_DOMAIN, len(name)]) + name
    return bytes([_VERSION, _CONNECT, 0]) + destination + port.to_bytes(2, "big")


def _credentials_request(username: str, password: str) -> bytes:
    fields = []
    for what, value in (("proxyUsername", username), ("proxyPassword", password)):
        try:
            encoded = value.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigurationError(f"SOCKS5: {what} must be valid Unicode text") from None
        if not 0 < len(encoded) <= 255:
            raise ConfigurationError(f"SOCKS5: {what} must be 1 to 255 bytes long (UTF-8)")
        fields.append(bytes([len(encoded)]) + encoded)
    return bytes([_AUTH_VERSION]) + fields[0] + fields[1]
