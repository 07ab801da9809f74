"""The errors of cursors and change streams (all derive from the library's blame-typed errors).

* :class:`ChangeStreamError` (a :class:`~mongo_sansio.errors.RemoteProtocolError`): the server's
  change events cannot be used as the change stream spec requires.  The stream is closed.

  * :class:`MissingResumeToken`: an event without ``_id`` (the user's pipeline projected it out
    on a server older than 4.2, which does not refuse that itself).
  * :class:`SplitEventError`: the fragments of a ``$changeStreamSplitLargeEvent`` event are
    missing, out of order, malformed or interleaved with other events.

* :class:`ChangeStreamClosed` (an :class:`~mongo_sansio.errors.InvalidOperation`): iterating a
  change stream that is closed -- by the user, after an invalidate event, after the server
  closed its cursor, or after an error.  Adapters turn it into the end of iteration.
"""

from __future__ import annotations

from mongo_sansio.errors import InvalidOperation, RemoteProtocolError

__all__ = ["ChangeStreamError", "MissingResumeToken", "SplitEventError", "ChangeStreamClosed"]


class ChangeStreamError(RemoteProtocolError):
    """The server's change events break the change stream protocol; the stream is closed."""


class MissingResumeToken(ChangeStreamError):
    """A change event has no ``_id``, so the stream could not resume after it."""


class SplitEventError(ChangeStreamError):
    """The fragments of a split change event do not form one event."""


class ChangeStreamClosed(InvalidOperation):
    """The change stream is closed; it returns no more events."""
