"""The library's exception hierarchy, typed by blame.

Every error the library raises derives from :class:`MongoError`.  Two branches say who is at
fault, in the manner of h11:

* :class:`LocalProtocolError` -- the caller misused a machine or passed a value the library
  cannot represent (our side's mistake).
* :class:`RemoteProtocolError` -- the peer (a server, a file, a network buffer) sent bytes that
  break the protocol.

Codec errors also derive from :class:`ValueError` or :class:`TypeError` so that code written
against other drivers, which catches those, keeps working.
"""

from __future__ import annotations

__all__ = [
    "MongoError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "ProtocolError",
    "ConfigurationError",
    "DocumentTooLarge",
]


class MongoError(Exception):
    """Base class of every error raised by mongo-sansio."""


class LocalProtocolError(MongoError):
    """The caller asked for something the protocol or the machine does not allow."""


class RemoteProtocolError(MongoError):
    """The peer sent data that violates the protocol."""


class ProtocolError(RemoteProtocolError):
    """Malformed wire-level data; a machine that raises it refuses further input."""


class ConfigurationError(LocalProtocolError, ValueError):
    """An option or setting is invalid; the message names the option."""


class DocumentTooLarge(LocalProtocolError, ValueError):
    """A document to be sent is over a size limit (maxBsonObjectSize, or too large for any
    message under maxMessageSizeBytes); ``index`` is its position in the caller's list (None
    for a command body), ``size`` and ``limit`` are in bytes."""

    def __init__(self, message: str, *, index: int | None = None, size: int = 0, limit: int = 0):
        super().__init__(message)
        self.index = index
        self.size = size
        self.limit = limit
