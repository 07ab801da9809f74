"""The async client (PyMongo's ``AsyncMongoClient``), written once for asyncio and trio.

Everything but the engine, closing and ``async with`` is the blocking client's code
(:mod:`mongo_sansio.adapters._api.client`).  :class:`AsyncMongoClientBase` runs it on an
:class:`~.._async_engine.AsyncEngine` whose runtime each runtime's ``AsyncMongoClient`` names
(:attr:`AsyncMongoClientBase.runtime_class`): ``mongo_sansio.adapters.asyncio`` and
``mongo_sansio.adapters.trio``.

Life cycle.  The client may be built anywhere (even outside an event loop); its monitors start
at ``async with client`` (on trio in a nursery of the entering task: the client's tasks live
in that block), at ``await client.aconnect()``, or at the first operation (a trio system task,
the running asyncio loop).  ``await client.close()`` -- or leaving ``async with`` -- sends the
dropped cursors' killCursors and ``endSessions``, closes every connection and waits for the
background tasks.  Every operation is awaited; ``address``, ``primary``, ``is_primary`` ...
are awaited too (``await client.address``), as in PyMongo; ``start_session()``,
``get_database()`` and ``client["db"]`` are not.

Cancellation: a task cancelled at any await (an asyncio ``cancel()``, a trio cancel scope)
closes its operation's flow where it waits; the core puts back the pool slot and closes a
connection cut mid-message, so the client goes on serving.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, Self

from mongo_sansio.client import ClientSettings, TlsSettings

from .._api.client import ClientBase
from .._api.program import Asynchronous
from .._async_engine import AsyncEngine, BackgroundRuntime
from .change_stream import AsyncChangeStream
from .cursor import AsyncCommandCursor
from .database import AsyncDatabase
from .session import AsyncClientSession

__all__ = ["AsyncMongoClientBase", "RuntimeFactory"]


class RuntimeFactory(Protocol):
    def for_tls(self, tls: TlsSettings, resolver: Any = None) -> BackgroundRuntime: ...


class AsyncMongoClientBase(
    Asynchronous,
    ClientBase[
        AsyncDatabase, AsyncCommandCursor, AsyncChangeStream, AsyncClientSession, AsyncEngine
    ],
):
    """An async client for one deployment (see the module docstring; the arguments are
    PyMongo's, as :class:`~mongo_sansio.adapters._api.client.ClientBase` lists them)."""

    #: the runtime class (``AsyncioRuntime``, ``TrioRuntime``) the engine runs on
    runtime_class: ClassVar[RuntimeFactory]

    _database_class = AsyncDatabase
    _command_cursor_class = AsyncCommandCursor
    _change_stream_class = AsyncChangeStream
    _session_class = AsyncClientSession

    def _new_engine(self, settings: ClientSettings, resolver: Any, **common: Any) -> AsyncEngine:
        # ``resolver`` (dns_resolver) answered the seedlist's questions when the client was
        # built; the runtime's own asynchronous resolver polls SRV records afterwards
        return AsyncEngine(settings, runtime=self.runtime_class.for_tls(settings.tls), **common)

    async def aconnect(self) -> None:
        """Start monitoring now rather than at the first operation (PyMongo's ``aconnect``)."""
        await self._engine.start()

    async def close(self) -> None:
        """Close every connection and stop the background tasks; the client refuses
        operations afterwards."""
        await self._engine.aclose()

    async def __aenter__(self) -> Self:
        await self._engine.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._engine.__aexit__(*exc_info)
