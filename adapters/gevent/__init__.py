"""The gevent client: ``from mongo_sansio.adapters.gevent import MongoClient``.

The blocking client's API (the same wrappers: :class:`Database`, :class:`Collection`,
cursors, change streams, sessions) run on greenlets: every wait is gevent's (its sockets,
events and sleep), so one greenlet's operation never stops the others, with or without
``gevent.monkey.patch_all()``.  Killing a greenlet or a ``gevent.Timeout`` in the middle of
an operation is safe: the connection it held returns to its pool, or is discarded when the
exchange was cut mid-message.  The module exports the same names as
:mod:`mongo_sansio.adapters.blocking`.
"""

from ..blocking import *  # noqa: F403 - the same names as the blocking client
from ..blocking import MongoClient as _BlockingMongoClient
from ..blocking import __all__ as _blocking_names
from ._engine import GeventEngine
from ._runtime import GeventRuntime

__all__ = [*_blocking_names, "GeventEngine", "GeventRuntime"]


class MongoClient(_BlockingMongoClient):  # type: ignore[no-redef]
    """The blocking :class:`~mongo_sansio.adapters.blocking.MongoClient` on greenlets (see
    the module docstring): same arguments, same API."""

    engine_class = GeventEngine


Engine = GeventEngine  # type: ignore[misc]
