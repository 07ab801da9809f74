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

Fork safety (:mod:`._fork`): the core remembers the process it was built in; the first use of
the engine in a forked child closes the inherited core as the child's view only (streams
forgotten, nothing sent or published) and builds a new one on the runtime that
:meth:`~EngineBase.renewed_runtime` gives.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from mongo_sansio.bson import ObjectId
from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.client import ClientSettings
from mongo_sansio.client.core import ClientCore, KillCursor
from mongo_sansio.client.execute import drive, end_sessions, kill_cursors, operation_deadline
from mongo_sansio.client.runtime import Task
from mongo_sansio.client.srv_polling import SrvSource
from mongo_sansio.flow import Flow
from mongo_sansio.sessions import Session

from . import _fork
from ._api.validators import check_session
from ._aws_env import aws_environment
from ._timeout import current_deadline

__all__ = ["EngineBase", "Primitives"]

_NONCE_BYTES = 24


class Primitives(NamedTuple):
    """What a core needs from its runtime when it is built."""

    spawn: Callable[[Task, str], None]
    close_stream: Callable[[Any], None]
    monotonic: Callable[[], float]
    lock: Any = None


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
        self._random = self._randomness()
        self._metadata = metadata
        self._publish = publish
        self._faas = faas
        self._topology_id = ObjectId() if topology_id is None else topology_id
        self._srv = srv
        self._primitives = Primitives(spawn, close_stream, monotonic, lock)
        self._start_core(self._primitives)

    def _start_core(self, primitives: Primitives) -> None:
        """Build the core on ``primitives`` in this process, and open it."""
        pid = os.getpid()
        self.lock = contextlib.nullcontext() if primitives.lock is None else primitives.lock
        self._monotonic = primitives.monotonic
        publish = self._publish
        self.core = ClientCore(
            self.settings,
            topology_id=self._topology_id,
            draw=self._random.randrange,
            nonce=self._nonce,
            metadata=self._metadata,
            spawn=_fork.in_process(pid, primitives.spawn, _fork.never_start),
            close_stream=_fork.in_process(pid, primitives.close_stream, _fork.forget_stream),
            publish=None if publish is None else _fork.in_process(pid, publish, _fork.ignore),
            faas=self._faas,
            srv=self._srv,
            aws_environment=aws_environment,
        )
        self._pid = pid
        with self.lock:
            self.core.open(self._monotonic())

    def _randomness(self) -> random.Random:
        """Where selection's draws come from (the virtual runtime gives a seeded one)."""
        return random.SystemRandom()

    def _nonce(self) -> bytes:
        """Random bytes for nonces and lsids (the virtual runtime draws them from its seed)."""
        return os.urandom(_NONCE_BYTES)

    def now(self) -> float:
        """The runtime's monotonic clock: the one every deadline of this engine is on."""
        return self._monotonic()

    def renewed_runtime(self) -> Primitives:
        """The primitives of a new runtime for the core a forked child builds (see
        :mod:`._fork`).  A runtime whose locks or tasks a fork leaves behind (threads,
        greenlets) overrides this; the default reuses the first ones."""
        return self._primitives

    def own_core(self) -> None:
        """Make sure the core was built in this process; in a forked child, replace the
        inherited one (see the module docstring).  Every entry point calls this first."""
        if self._pid == os.getpid():
            return
        with _fork.renewal_lock():
            if self._pid == os.getpid():
                return
            # not under self.lock: a thread of the parent may have held it at the fork
            self.core.close(self._monotonic())
            self._start_core(self.renewed_runtime())

    def operation(
        self,
        flow: Flow[Any],
        timeout: float | None,
        session: Any,
        codec_options: CodecOptions | None = None,
    ) -> Task:
        """The flow of primitives that runs ``flow`` as one operation.  ``timeout`` (seconds)
        is the collection's or database's timeoutMS, when set there; ``session`` the caller's
        explicit session (a runtime's ``ClientSession``), None for an implicit one;
        ``codec_options`` encode the operation's commands (None: the defaults)."""
        self.own_core()
        now = self._monotonic()
        deadline = operation_deadline(
            now, context=current_deadline(), own=timeout, client=self.settings.timeout
        )
        with self.lock:
            self.core.require_open()
        core_session = None if session is None else check_session(session).core_session(self)
        return drive(
            self.core,
            flow,
            deadline=deadline,
            session=core_session,
            codec_options=codec_options,
            now=now,
        )

    def new_session(self, **options: Any) -> Session:
        """A new explicit session of this client (the core's half of ``ClientSession``)."""
        self.own_core()
        with self.lock:
            self.core.require_open()
            return Session(self.core, implicit=False, **options)

    def end_session(self, session: Session) -> None:
        self.own_core()
        if session.owner is not self.core:  # made before a fork: its server session is the parent's
            session.ended = True
            return
        with self.lock:
            self.core.sessions.end(session, self._monotonic())

    def bind_session(self, session: Session) -> None:
        """Give ``session`` its server session now (``session_id`` was asked for)."""
        self.own_core()
        with self.lock:
            if session.server_session is None and not session.ended and session.owner is self.core:
                self.core.sessions.bind(session, self._monotonic())

    def kill_cursor_later(
        self, address: tuple[str, int], db: str, body: Mapping[str, Any], session: Any = None
    ) -> None:
        """A dropped cursor's killCursors, sent by the client's upkeep task (no I/O and no
        lock here: safe in a finalizer); ``session`` is the cursor's.  A cursor of the parent
        dropped in a forked child is not killed: the parent may still read it."""
        if self._pid != os.getpid() or (session is not None and session.owner is not self.core):
            return
        self.core.kill_cursor_later(KillCursor(address, db, body, session))

    def closing_flows(self) -> list[Task]:
        """What to run before the core closes: the dropped cursors' killCursors and
        ``endSessions`` (best effort, each bounded by the core).  Empty once closed."""
        self.own_core()
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
