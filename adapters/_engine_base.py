"""What every runtime's engine shares: building the client core, and the parts of running an
operation that involve no waiting.

An engine owns one :class:`~mongo_sansio.client.ClientCore`.  :class:`EngineBase` builds it with
what only a runtime can give (the clock, randomness for nonces and selection, background tasks,
closing streams, delivering events) and prepares each operation:
:meth:`~EngineBase.operation` turns an operation flow into the flow of primitives that
:func:`~mongo_sansio.client.execute.drive` makes of it, under the operation's deadline
(``timeout()`` block, the collection's or database's timeoutMS, the client's) and with the
caller's session.  The blocking and gevent engines run that with the synchronous interpreter,
the asyncio and trio ones with the asynchronous one; closing sends the dropped cursors'
killCursors and ``endSessions`` first (:meth:`~EngineBase.closing_flows`).

``lock`` guards the core where threads share it (a re-entrant lock for the thread runtime;
a no-op context for event loops and greenlets, whose steps never interleave).
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Mapping
from typing import Any

from mongo_sansio.bson import ObjectId
from mongo_sansio.client import ClientSettings
from mongo_sansio.client.core import ClientCore, KillCursor
from mongo_sansio.client.execute import drive, end_sessions, kill_cursors, operation_deadline
from mongo_sansio.client.runtime import Task
from mongo_sansio.client.srv_polling import SrvSource
from mongo_sansio.flow import Flow
from mongo_sansio.sessions import Session

from ._timeout import current_deadline

__all__ = ["EngineBase"]

_NONCE_BYTES = 24


class EngineBase:
    """See the module docstring."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        metadata: Mapping[str, Any],
        spawn: Callable[[Task, str], None],
        close_stream: Callable[[Any], None],
        monotonic: Callable[[], float],
        lock: Any = None,
        publish: Callable[[object], None] | None = None,
        faas: bool = False,
        topology_id: object = None,
        srv: SrvSource | None = None,
    ) -> None:
        self.settings = settings
        self.lock = contextlib.nullcontext() if lock is None else lock
        self._monotonic = monotonic
        self._random = random.SystemRandom()
        self.core = ClientCore(
            settings,
            topology_id=ObjectId() if topology_id is None else topology_id,
            draw=self._random.randrange,
            nonce=lambda: os.urandom(_NONCE_BYTES),
            metadata=metadata,
            spawn=spawn,
            close_stream=close_stream,
            publish=publish,
            faas=faas,
            srv=srv,
        )
        with self.lock:
            self.core.open(monotonic())

    def operation(self, flow: Flow[Any], timeout: float | None, session: Any) -> Task:
        """The flow of primitives that runs ``flow`` as one operation.  ``timeout`` (seconds)
        is the collection's or database's timeoutMS, when set there; ``session`` the caller's
        explicit session (a runtime's ``ClientSession``), None for an implicit one."""
        deadline = operation_deadline(
            self._monotonic(), context=current_deadline(), own=timeout, client=self.settings.timeout
        )
        with self.lock:
            self.core.require_open()
        core_session = None if session is None else session.core_session(self)
        return drive(self.core, flow, deadline=deadline, session=core_session)

    def new_session(self, **options: Any) -> Session:
        """A new explicit session of this client (the core's half of ``ClientSession``)."""
        with self.lock:
            self.core.require_open()
            return Session(self.core, implicit=False, **options)

    def end_session(self, session: Session) -> None:
        with self.lock:
            self.core.sessions.end(session, self._monotonic())

    def bind_session(self, session: Session) -> None:
        """Give ``session`` its server session now (``session_id`` was asked for)."""
        with self.lock:
            if session.server_session is None and not session.ended:
                self.core.sessions.bind(session, self._monotonic())

    def kill_cursor_later(
        self, address: tuple[str, int], db: str, body: Mapping[str, Any], session: Any = None
    ) -> None:
        """A dropped cursor's killCursors, sent by the client's upkeep task (no I/O and no
        lock here: safe in a finalizer); ``session`` is the cursor's."""
        self.core.kill_cursor_later(KillCursor(address, db, body, session))

    def closing_flows(self) -> list[Task]:
        """What to run before the core closes: the dropped cursors' killCursors and
        ``endSessions`` (best effort, each bounded by the core).  Empty once closed."""
        with self.lock:
            if self.core.closed:
                return []
            cursors = self.core.take_cursors_to_kill()
        flows: list[Task] = [kill_cursors(self.core, cursors)] if cursors else []
        flows.append(end_sessions(self.core))
        return flows

    def close_core(self) -> None:
        with self.lock:
            self.core.close(self._monotonic())
