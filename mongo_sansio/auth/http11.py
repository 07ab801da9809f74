"""A tiny HTTP/1.1 client's pure half: requests described, responses parsed (bytes in).

The credential services MONGODB-AWS asks (STS, the ECS container endpoint, EC2's instance
metadata) are plain HTTP/1.1 exchanges.  A flow that needs one yields an :class:`HttpRequest`
(method, URL, headers, body, a time limit); the client's flow
(:func:`mongo_sansio.client.dial.http_exchange`) opens a stream over the runtime's
primitives, sends :meth:`HttpRequest.to_bytes`, feeds what arrives to an
:class:`HttpResponseParser` and answers with an :class:`HttpResponse`, or an
:class:`HttpFailure` value when the service could not be reached or answered garbage (never
raised into the flow: a credentials service that is down is an authentication failure, not a
network error of the MongoDB server).

One request per connection (``Connection: close``); a response body is delimited by
``Content-Length``, ``Transfer-Encoding: chunked`` or the end of the stream.  Responses are
limited to :data:`MAX_RESPONSE_BYTES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from mongo_sansio.errors import ConfigurationError

__all__ = [
    "HttpRequest",
    "HttpResponse",
    "HttpFailure",
    "HttpResponseParser",
    "HttpParseError",
    "split_url",
    "form_encode",
    "MAX_RESPONSE_BYTES",
]

MAX_RESPONSE_BYTES: Final = 1 << 20
_UNRESERVED: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class HttpParseError(Exception):
    """The response is not HTTP/1.1 we understand (internal: becomes an HttpFailure)."""


def split_url(url: str) -> tuple[bool, str, int, str]:
    """``(https, host, port, path-and-query)`` of an ``http://`` or ``https://`` URL."""
    scheme, separator, rest = url.partition("://")
    scheme = scheme.lower()
    if not separator or scheme not in ("http", "https"):
        raise ConfigurationError(f"not an http:// or https:// URL: {url!r}")
    authority, slash, path = rest.partition("/")
    path = "/" + path if slash else "/"
    authority = authority.rpartition("@")[2]
    https = scheme == "https"
    port = 443 if https else 80
    if authority.startswith("["):
        host, _, after = authority[1:].partition("]")
        if after.startswith(":"):
            port = _port(after[1:], url)
    elif ":" in authority:
        host, _, port_text = authority.rpartition(":")
        port = _port(port_text, url)
    else:
        host = authority
    if not host:
        raise ConfigurationError(f"the URL {url!r} has no host")
    return https, host, port, path


def _port(text: str, url: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ConfigurationError(f"the URL {url!r} has an invalid port")
    return int(text)


def form_encode(fields: Mapping[str, str]) -> bytes:
    """``application/x-www-form-urlencoded`` (RFC 3986 percent-encoding, as AWS signs it)."""

    def quote(text: str) -> str:
        return "".join(
            chr(byte) if byte in _UNRESERVED else f"%{byte:02X}" for byte in text.encode("utf-8")
        )

    return "&".join(f"{quote(k)}={quote(v)}" for k, v in fields.items()).encode("ascii")


@attrs.frozen(repr=False)
class HttpRequest:
    """One HTTP request to make; ``timeout`` bounds the whole exchange (seconds)."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    timeout: float = 10.0

    def __repr__(self) -> str:  # headers and body may hold tokens
        return f"HttpRequest({self.method} {self.url})"

    @property
    def target(self) -> tuple[bool, str, int, str]:
        return split_url(self.url)

    def to_bytes(self) -> bytes:
        _https, host, port, path = self.target
        host_header = f"[{host}]" if ":" in host else host
        if port not in (80, 443):
            host_header += f":{port}"
        lines = [f"{self.method} {path} HTTP/1.1", f"Host: {host_header}"]
        names = {name.lower() for name, _ in self.headers}
        for name, value in self.headers:
            if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                raise ConfigurationError(f"HTTP header {name!r} holds a line break")
            lines.append(f"{name}: {value}")
        if self.body or self.method in ("POST", "PUT"):
            if "content-length" not in names:
                lines.append(f"Content-Length: {len(self.body)}")
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + self.body


@attrs.frozen(repr=False)
class HttpResponse:
    """A response: status, headers (lower-case names; the last of repeated ones), body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def __repr__(self) -> str:
        return f"HttpResponse(status={self.status}, {len(self.body)} bytes)"


@attrs.frozen
class HttpFailure:
    """The exchange failed: the service is unreachable, timed out, or answered garbage."""

    reason: str


class HttpResponseParser:
    """Feed :meth:`receive_data` (``b""`` for the end of the stream) until it returns the
    :class:`HttpResponse`; raises :class:`HttpParseError` for what is not HTTP/1.x."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._head: tuple[int, dict[str, str]] | None = None

    def receive_data(self, data: bytes) -> HttpResponse | None:
        end = not data
        self._buffer += data
        if len(self._buffer) > MAX_RESPONSE_BYTES:
            raise HttpParseError(f"the response is larger than {MAX_RESPONSE_BYTES} bytes")
        if self._head is None:
            cut = self._buffer.find(b"\r\n\r\n")
            if cut < 0:
                if end:
                    raise HttpParseError("the stream ended inside the response's head")
                return None
            self._head = _parse_head(bytes(self._buffer[:cut]))
            del self._buffer[: cut + 4]
        status, headers = self._head
        body = self._body(headers, end)
        if body is None:
            return None
        return HttpResponse(status=status, headers=headers, body=body)

    def _body(self, headers: Mapping[str, str], end: bool) -> bytes | None:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return self._chunked(end)
        length_text = headers.get("content-length")
        if length_text is not None:
            if not length_text.strip().isdigit():
                raise HttpParseError("the response's Content-Length is not a number")
            length = int(length_text)
            if len(self._buffer) >= length:
                return bytes(self._buffer[:length])
            if end:
                raise HttpParseError("the stream ended inside the response's body")
            return None
        return bytes(self._buffer) if end else None

    def _chunked(self, end: bool) -> bytes | None:
        body = bytearray()
        position = 0
        buffer = self._buffer
        while True:
            line_end = buffer.find(b"\r\n", position)
            if line_end < 0:
                break
            size_text = bytes(buffer[position:line_end]).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HttpParseError("a chunk size is not hexadecimal") from None
            start = line_end + 2
            if size == 0:
                return bytes(body)
            if len(buffer) < start + size + 2:
                break
            body += buffer[start : start + size]
            position = start + size + 2
        if end:
            raise HttpParseError("the stream ended inside a chunked body")
        return None


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise HttpParseError("the response's head is not text") from None
    status_line, *header_lines = text.split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HttpParseError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, colon, value = line.partition(":")
        if not colon:
            raise HttpParseError(f"a malformed header line: {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers
