"""Errors raised by server selection.

* :class:`ServerSelectionTimeoutError` -- no suitable server appeared before the deadline; the
  message describes the read preference and the topology as it was last seen.
* :class:`IncompatibleTopologyError` -- the topology holds a server whose wire-version range does
  not overlap the client's; the message is SDAM's compatibility error text.

Invalid read preferences raise :class:`mongo_sansio.errors.ConfigurationError` naming the option.
"""

from __future__ import annotations

from mongo_sansio.errors import AutoReconnect, MongoError

__all__ = ["ServerSelectionError", "ServerSelectionTimeoutError", "IncompatibleTopologyError"]


class ServerSelectionError(MongoError):
    """Base class of the errors server selection raises about the deployment."""


class ServerSelectionTimeoutError(ServerSelectionError, AutoReconnect):
    """No suitable server was found before serverSelectionTimeoutMS elapsed (an AutoReconnect,
    as in PyMongo)."""

    timeout = True


class IncompatibleTopologyError(ServerSelectionError):
    """A server's wire-version range does not overlap the client's (SDAM compatibility)."""
