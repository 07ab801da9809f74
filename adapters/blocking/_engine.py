"""The blocking engine: one client core, run by the synchronous interpreter on threads.

:class:`Engine` builds the :class:`~mongo_sansio.client.ClientCore` with what only a runtime can
give (the clock, randomness for nonces and selection, background threads, closing sockets,
delivering events) and runs operation flows with
:func:`~mongo_sansio.client.execute.drive` under the operation's deadline.  Every decision is
the core's; this module only wires it to :class:`~._runtime.ThreadRuntime`.  The gevent client
reuses it with a greenlet runtime.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from mongo_sansio.bson import ObjectId
from mongo_sansio.client import ClientSettings
from mongo_sansio.client.core import ClientCore, KillCursor
from mongo_sansio.client.execute import drive, end_sessions, kill_cursors, operation_deadline
from mongo_sansio.client.srv_polling import SrvSource
from mongo_sansio.flow import Flow
from mongo_sansio.sessions import Session

from .._sync import SyncInterpreter, SyncRuntime
from .._timeout import current_deadline
from ._runtime import ThreadRuntime

if TYPE_CHECKING:
    from transports.blocking import make_ssl_context
else:
    from mongo_sansio.transports.blocking import make_ssl_context

__all__ = ["Engine"]

T = TypeVar("T")
_NONCE_BYTES = 24
_CLOSE_JOIN_SECONDS = 5.0


class Engine:
    """See the module docstring.  ``metadata`` is the handshake's ``client`` document;
    ``publish`` delivers monitoring events (None when nobody listens)."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        metadata: Mapping[str, Any],
        publish: Callable[[object], None] | None = None,
        runtime: SyncRuntime | None = None,
        faas: bool = False,
        topology_id: object = None,
        srv: SrvSource | None = None,
        resolver: Any = None,
    ) -> None:
        self.settings = settings
        ssl_context = make_ssl_context(settings.tls) if settings.tls.enabled else None
        if runtime is None:
            runtime = ThreadRuntime(ssl_context, resolver)
        self.runtime = runtime
        self.interpreter = SyncInterpreter(self.runtime)
        self._random = random.SystemRandom()
        self.core = ClientCore(
            settings,
            topology_id=ObjectId() if topology_id is None else topology_id,
            draw=self._random.randrange,
            nonce=lambda: os.urandom(_NONCE_BYTES),
            metadata=metadata,
            spawn=self.interpreter.spawn,
            close_stream=self.runtime.close_stream,
            publish=publish,
            faas=faas,
            srv=srv,
        )
        with self.runtime.lock:
            self.core.open(self.runtime.monotonic())

    def run(self, flow: Flow[T], *, timeout: float | None = None, session: Any = None) -> T:
        """Run an operation flow of the core to its result.  ``timeout`` (seconds) is the
        collection's or database's timeoutMS, when one was set there; ``session`` the
        caller's explicit session (a blocking ``ClientSession``), None for an implicit one."""
        now = self.runtime.monotonic()
        deadline = operation_deadline(
            now, context=current_deadline(), own=timeout, client=self.settings.timeout
        )
        with self.runtime.lock:
            self.core.require_open()
        core_session = None if session is None else session.core_session(self)
        result: T = self.interpreter.run(
            drive(self.core, flow, deadline=deadline, session=core_session)
        )
        return result

    def new_session(self, **options: Any) -> Session:
        """A new explicit session of this client (the core's half of ``ClientSession``)."""
        with self.runtime.lock:
            self.core.require_open()
            return Session(self.core, implicit=False, **options)

    def end_session(self, session: Session) -> None:
        with self.runtime.lock:
            self.core.sessions.end(session, self.runtime.monotonic())

    def bind_session(self, session: Session) -> None:
        """Give ``session`` its server session now (``session_id`` was asked for)."""
        with self.runtime.lock:
            if session.server_session is None and not session.ended:
                self.core.sessions.bind(session, self.runtime.monotonic())

    def kill_cursor_later(
        self, address: tuple[str, int], db: str, body: Mapping[str, Any], session: Any = None
    ) -> None:
        """A dropped cursor's killCursors, sent by the client's upkeep task (no I/O and no
        lock here: safe in a finalizer); ``session`` is the cursor's."""
        self.core.kill_cursor_later(KillCursor(address, db, body, session))

    def close(self) -> None:
        """Stop the monitors and pools, close every connection, end the background threads."""
        with self.runtime.lock:
            if self.core.closed:
                return
            cursors = self.core.take_cursors_to_kill()
        if cursors:
            try:
                self.interpreter.run(kill_cursors(self.core, cursors))
            except Exception:  # noqa: BLE001 - best effort, the client is going away
                pass
        try:
            self.interpreter.run(end_sessions(self.core))
        except Exception:  # noqa: BLE001 - best effort, the client is going away
            pass
        with self.runtime.lock:
            self.core.close(self.runtime.monotonic())
        join = getattr(self.runtime, "join", None)
        if join is not None:
            join(_CLOSE_JOIN_SECONDS)
