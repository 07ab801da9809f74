"""The blocking ``MongoClient``: PyMongo's entry point over the core.

``MongoClient(uri, **options)`` parses the connection string, resolves a ``mongodb+srv``
string, and builds the :class:`~._engine.Engine` (the synchronous interpreter on threads) that
runs every operation's flow.  Nothing connects until the first operation: server selection
then discovers the deployment.  Everything but the engine, ``close()`` and ``with`` is shared
with the async clients (:mod:`mongo_sansio.adapters._api.client`); on this class each
operation runs and returns its result, and ``address``, ``is_primary``... are properties.

Thread safety: a client may be shared by threads; one lock guards its topology and connection
sets, and each operation runs on a connection of its own.  Cursors and change streams belong to
one thread at a time.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mongo_sansio.client import ClientSettings

from .._api.client import ClientBase
from .._api.closing import ClosesOnExit
from .._api.program import Blocking
from ._engine import Engine
from .change_stream import ChangeStream
from .cursor import CommandCursor
from .database import Database
from .session import ClientSession

__all__ = ["MongoClient", "Database"]


class MongoClient(
    Blocking,
    ClosesOnExit,
    ClientBase[Database, CommandCursor, ChangeStream, ClientSession, Engine],
):
    """A client for one deployment (see the module docstring; the arguments are
    :class:`~mongo_sansio.adapters._api.client.ClientBase`'s, PyMongo's)."""

    #: the engine, and so the runtime, every operation runs on (the gevent client's differs)
    engine_class: ClassVar[type[Engine]] = Engine

    _database_class = Database
    _command_cursor_class = CommandCursor
    _change_stream_class = ChangeStream
    _session_class = ClientSession

    def _new_engine(self, settings: ClientSettings, resolver: Any, **common: Any) -> Engine:
        return self.engine_class(settings, resolver=resolver, **common)

    def close(self) -> None:
        """Close every idle connection; the client refuses operations afterwards."""
        self._engine.close()
