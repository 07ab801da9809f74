"""Running operation flows on the client core: the one place every operation passes through.

Theory of operation
-------------------
Operation flows (CRUD, cursors, change streams, commands) speak :mod:`mongo_sansio.flow`'s
vocabulary: select a server, run a command, mark a server unknown.  :func:`drive` wraps such a
flow into a flow made only of the runtime seam's primitives (:mod:`mongo_sansio.client.runtime`)
by answering those requests with the core's own flows:

* ``SelectServer`` -- :meth:`ClientCore.select_server` (waits for the topology to change);
* ``RunCommand`` -- :func:`run_command`: check a connection out of the server's pool, send the
  command and read its reply, check the connection back in (always, whatever happens: a
  failure while bytes were in flight closes it instead), publishing the command events;
* ``MarkServerUnknown`` -- :meth:`ClientCore.mark_server_unknown`, with the pool generation of
  the connection the error came from (so a stale error changes nothing).

Timeouts (client-side operations timeout): :func:`drive` takes the operation's ``deadline``
(absolute, from ``timeoutMS`` or a ``timeout()`` block; None for the legacy behaviour).  That
one deadline bounds server selection, the wait for a connection, and every byte of the
exchange; each command gets ``maxTimeMS`` from what remains minus the server's minimum round
trip time (not getMore, whose server-side wait the cursor decides).  Without a deadline,
serverSelectionTimeoutMS, waitQueueTimeoutMS and socketTimeoutMS (extended by a command's own
``maxTimeMS``) bound each step as before.  An error caused by an expired deadline has
``timeout`` True.

:func:`upkeep_task` is the client's housekeeping task (pool deadlines, cursors dropped by the
application, which get a best-effort ``killCursors``).

Inputs: the operation flow and the answers to the primitives.  Output: the flow's result.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.client.events import CommandMonitor
from mongo_sansio.client.link import (
    REAUTHENTICATION_REQUIRED,
    exchange,
    needs_reauthentication,
    reauthenticate,
)
from mongo_sansio.client.pinning import SKIP_KILL_CURSORS, pinned_link, settle
from mongo_sansio.client.runtime import Signal, Wait
from mongo_sansio.client.selecting import select_known
from mongo_sansio.client.sessions import TRANSIENT_TRANSACTION_ERROR
from mongo_sansio.command import run_command_quietly
from mongo_sansio.errors import (
    AutoReconnect,
    InvalidOperation,
    LocalProtocolError,
    MongoError,
    NetworkError,
    NetworkTimeout,
    NotPrimaryError,
    check_reply,
)
from mongo_sansio.flow import (
    GetContext,
    MarkServerUnknown,
    Now,
    OperationContext,
    Random,
    RunCommand,
    SelectServer,
    ServerInfo,
    Sleep,
)
from mongo_sansio.ops.transactions import CUT_ABORT_TIMEOUT, take_cut_abort
from mongo_sansio.selection.read_preference import Mode, ReadPreference
from mongo_sansio.sessions import Session
from mongo_sansio.sessions.commands import is_unacknowledged

if TYPE_CHECKING:
    from mongo_sansio.client.core import ClientCore, KillCursor

__all__ = [
    "drive",
    "run_command",
    "upkeep_task",
    "kill_cursors",
    "end_sessions",
    "operation_deadline",
    "UPKEEP_INTERVAL",
    "KILL_CURSORS_TIMEOUT",
]

Flow = Generator[Any, Any, Any]

UPKEEP_INTERVAL: Final = 1.0
"""Seconds between two runs of the upkeep task when nothing is due sooner (dropped cursors)."""

KILL_CURSORS_TIMEOUT: Final = 5.0
"""Seconds that one round of best-effort killCursors (:func:`kill_cursors`) may take."""

# Commands that never get a maxTimeMS from the operation's deadline: a getMore's server-side
# wait belongs to its cursor; killCursors and endSessions are clean-up that must not fail.
_NO_MAX_TIME: Final = frozenset({"getMore", "killCursors", "endSessions", "hello", "isMaster"})


class _Operation:
    """What :func:`drive` remembers while one operation runs."""

    __slots__ = (
        "core",
        "deadline",
        "generations",
        "services",
        "held",
        "operation_id",
        "explicit",
        "sessions",
        "context",
        "codec_options",
        "unlimited",
        "clock",
    )

    def __init__(
        self,
        core: ClientCore,
        deadline: float | None,
        operation_id: int | None,
        explicit: Session | None,
        clock: float | None = None,
    ) -> None:
        self.core = core
        #: the time the operation started, until something may have waited since (a
        #: selection that waits, a sleep): the first check-out reads no clock then
        self.clock = clock
        #: timeoutMS=0 / timeout(0): CSOT rules (retry while failing, no legacy socket
        #: timeout) but no limit; ``deadline`` is then None for every wait and exchange
        self.unlimited = deadline == math.inf
        self.deadline = None if self.unlimited else deadline
        self.generations: dict[tuple[str, int], int] = {}
        #: load-balanced: the serviceId of the connection last used at each address
        self.services: dict[tuple[str, int], Any] = {}
        #: load-balanced: a connection checked out at selection for the next command
        self.held: Any = None
        self.operation_id = operation_id
        self.explicit = explicit
        self.sessions: list[Session] = []  # every session a command of the operation used
        self.context: OperationContext | None = None
        self.codec_options: CodecOptions | None = None

    def session(self) -> Session:
        """The operation's session: the caller's, else an implicit one made on first use."""
        if self.explicit is not None:
            return self.explicit
        context = self.get_context()
        session: Session = context.session
        return session

    def get_context(self) -> OperationContext:
        if self.context is None:
            session = self.explicit or Session(self.core, implicit=True)
            settings = self.core.settings
            self.context = OperationContext(
                session=session,
                retry_reads=settings.retry_reads,
                retry_writes=settings.retry_writes,
                deadline=math.inf if self.unlimited else self.deadline,
                max_adaptive_retries=settings.max_adaptive_retries,
                overload_retargeting=settings.overload_retargeting,
            )
        return self.context

    def used(self, session: Session) -> None:
        for seen in self.sessions:  # (a loop: any() over a generator costs a frame per call)
            if seen is session:
                return
        self.sessions.append(session)

    def finish(self) -> None:
        """The operation ended: the caller's session is free again; implicit sessions nothing
        holds go back to the pool."""
        core = self.core
        if self.held is not None:
            held, self.held = self.held, None
            core.check_in(held)
        if self.explicit is not None:
            self.explicit.in_use = False
        context = self.context
        if context is not None:
            self.used(context.session)
        for session in self.sessions:
            core.sessions.finish(session, core.last_now)


def drive(
    core: ClientCore,
    flow: Flow,
    *,
    deadline: float | None = None,
    session: Session | None = None,
    codec_options: CodecOptions | None = None,
    now: float | None = None,
) -> Flow:
    """Run the operation ``flow`` on ``core``; returns its result (see the module docstring).
    ``session`` is the caller's explicit session (None: an implicit one when needed);
    ``codec_options`` encode its commands (its collection's: a ``uuid.UUID`` in a filter needs
    the collection's uuidRepresentation).

    Whatever stops this flow (an error, the runtime closing it), ``flow`` is closed too and
    no connection stays checked out."""
    if session is not None:
        session.require_usable(core)
        if session.in_use:
            flow.close()
            raise InvalidOperation(
                "this session is in use by another operation (a session must not be used by "
                "two threads or tasks at once)"
            )
        session.in_use = True
    operation = _Operation(
        core, deadline, core.next_request_id() if core.publish is not None else None, session, now
    )
    operation.codec_options = codec_options
    answer: Any = None
    error: MongoError | None = None
    try:
        while True:
            try:
                request = flow.send(answer) if error is None else flow.throw(error)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            try:
                kind = type(request)
                if kind is RunCommand:
                    answer = yield from run_command(core, request, operation)
                elif kind is SelectServer:
                    try:
                        request = _in_transaction(operation, request)
                        answer = _pinned(core, operation, request)
                        if answer is None:
                            answer = select_known(core, request)
                        if answer is None:
                            operation.clock = None  # (this selection may wait)
                            answer = yield from core.select_server(
                                request, operation.deadline, operation_id=operation.operation_id
                            )
                        if answer.load_balanced and not core.handshake_seen(answer.address):
                            answer = yield from _first_connection(core, answer, operation)
                    except MongoError as failure:
                        context = operation.context
                        if context is not None and context.in_transaction:
                            failure._add_error_label(TRANSIENT_TRANSACTION_ERROR)
                        raise
                elif kind is GetContext:
                    answer = operation.get_context()
                elif kind is MarkServerUnknown:
                    now = yield Now()
                    generation = operation.generations.get(request.address)
                    core.mark_server_unknown(
                        request,
                        now,
                        generation=generation,
                        service_id=operation.services.get(request.address),
                    )
                elif kind is Now:
                    answer = yield request
                elif kind is Sleep:
                    operation.clock = None
                    answer = yield request
                elif kind is Random:
                    answer = core.jitter()
                else:
                    raise LocalProtocolError(f"a flow yielded {request!r}, which is not a request")
            except MongoError as exc:
                error = exc
    finally:
        flow.close()
        operation.finish()
        if session is not None and session.cut_abort_due:
            _abort_cut_later(core, session)


def _abort_cut_later(core: ClientCore, session: Session) -> None:
    """The session's commit or abort was cut (the transactions module's docstring): abort the
    transaction in the background, within CUT_ABORT_TIMEOUT, with a stand-in session."""
    cut = take_cut_abort(session)
    if cut is None:
        return
    stand_in, abort = cut

    def task() -> Flow:
        now = yield Now()
        try:
            yield from drive(core, abort, deadline=now + CUT_ABORT_TIMEOUT, session=stand_in)
        except MongoError:
            pass  # (abort_cut_transaction swallows the rest: the client closed meanwhile)

    core.spawn(task(), "abort a transaction whose end was cut")


_TRANSACTION_ENDS = ("commitTransaction", "abortTransaction")


def _pinned(core: ClientCore, operation: _Operation, request: SelectServer) -> ServerInfo | None:
    """The mongos a sharded transaction is pinned to, for its commands and its commit or
    abort (Transactions spec, "Mongos Pinning"); an operation outside a transaction unpins
    the session.  None: select as usual (not pinned; or a commit or abort whose mongos is not
    known as one now: another mongos answers it from the recovery token).

    A statement of the transaction never goes to another mongos, which does not know the
    transaction: while its mongos is not known as one (marked Unknown after a network error),
    the statement fails with a transient error (AutoReconnect, as PyMongo's "no longer
    available"), the session unpins, and the transaction can be retried from the start."""
    session = operation.explicit
    if session is None or session.pinned_address is None:
        return None
    if not session.in_transaction and request.operation not in _TRANSACTION_ENDS:
        session.unpin()
        return None
    try:
        info: ServerInfo | None = core.server_info(core.sdam_address(session.pinned_address))
    except LocalProtocolError:
        info = None
    if info is not None and info.is_mongos:
        return info
    if request.operation in _TRANSACTION_ENDS:
        return None
    host, port = session.pinned_address
    session.unpin()
    raise AutoReconnect(f"the mongos {host}:{port} this transaction is pinned to is not available")


def _pin(session: Session, server: ServerInfo, body: Mapping[str, Any], reply: Mapping[str, Any]) -> None:
    """A command of a transaction answered by a mongos pins the session there, and the
    reply's ``recoveryToken`` is kept for the commit or abort -- also from a mongos behind a
    load balancer, where the transaction is pinned to the connection instead."""
    if session.implicit:
        return
    if session.in_transaction or next(iter(body), "") in _TRANSACTION_ENDS:
        if server.is_mongos:
            session.pinned_address = server.address
        token = reply.get("recoveryToken")
        if isinstance(token, Mapping):
            session.recovery_token = token


def _first_connection(core: ClientCore, server: ServerInfo, operation: _Operation) -> Flow:
    """Load-balanced, before any connection's handshake: no monitor tells the services'
    version, so the first connection is checked out now, held for the operation's next
    command, and the server described by its handshake (the flow builds its commands for
    that version)."""
    link = yield from core.check_out(server.address, operation.deadline, operation.generations)
    operation.held = link
    return core.server_info(core.sdam_address(server.address))


def _in_transaction(operation: _Operation, request: SelectServer) -> SelectServer:
    """Inside a transaction every command goes to the primary: the transaction's read
    preference must be primary (a read asking for another is refused)."""
    session = operation.explicit
    if session is None or not session.in_transaction:
        return request
    options = session.transaction_options
    preference = None if options is None else options.read_preference
    mode = getattr(preference, "mode", None)
    if mode is not None and mode is not Mode.PRIMARY and not request.for_writes:
        raise InvalidOperation("read preference in a transaction must be primary")
    if request.read_preference.mode is Mode.PRIMARY:
        return request
    return SelectServer(
        ReadPreference(mode=Mode.PRIMARY),
        request.for_writes,
        request.deprioritized,
        request.operation,
    )


def run_command(core: ClientCore, request: RunCommand, operation: _Operation) -> Flow:
    """Check out, exchange, check in; returns the reply document (``ok: 0`` included)."""
    server = request.server
    deadline = operation.deadline
    session: Session | None = request.session
    if session is None:
        session = operation.session()
    operation.used(session)
    clock, operation.clock = operation.clock, None
    body: Mapping[str, Any] = request.body
    link = None
    pinned: Any = None
    load_balanced = server.load_balanced
    if load_balanced:
        pinned = pinned_link(core, session, body)
        if pinned is SKIP_KILL_CURSORS:
            return {"ok": 1.0}  # (the cursor's connection broke: nothing to kill it on)
        if pinned is not None:
            link, clock = pinned, None
    held = operation.held
    if link is None and held is not None and held.address == server.address:
        link, clock, operation.held = held, None, None
    if link is None:
        link = None if clock is None else core.check_out_now(server.address, clock)
    if link is None:
        link = yield from core.check_out(server.address, deadline, operation.generations, now=clock)
    document: Mapping[str, Any] | None = None
    failed: BaseException | None = None
    try:
        pooled = link.pooled
        if pooled is not None:
            operation.generations[server.address] = pooled.generation
        if load_balanced and link.description is not None:
            operation.services[server.address] = link.description.service_id
        now = None if link is pinned or link is held else link.checked_out_at
        if now is None:  # (a check-out that waited, or a pinned link: read the clock anew)
            now = yield Now()
        core.last_now = now
        body = core.sessions.prepare(request, session, core.command_body(server, body), now)
        exchange_deadline = deadline
        if deadline is not None:
            body = _with_max_time(core, server.address, body, deadline, now)
        elif operation.unlimited:
            exchange_deadline = None
        else:
            timeout = command_timeout(core, request.timeout, body)
            exchange_deadline = None if timeout is None else now + timeout
        for attempt in (1, 2):
            publish = core.publish
            if publish is None:
                reply = yield from exchange(
                    link,
                    request.db,
                    body,
                    sequences=request.sequences,
                    deadline=exchange_deadline,
                    codec_options=operation.codec_options,
                    more_to_come=is_unacknowledged(body),
                )
                document = reply.document
            else:
                document = yield from _monitored(
                    core, link, request.db, body, request.sequences, exchange_deadline, operation
                )
            if (
                attempt == 1
                and document.get("code") == REAUTHENTICATION_REQUIRED
                and needs_reauthentication(link, document)
            ):
                # auth spec, "Reauthentication": authenticate the connection again (no hello)
                # and send the command once more, retryable or not
                yield from reauthenticate(link, deadline=exchange_deadline)
                continue
            break
        assert document is not None
        core.sessions.absorb(session, document)
        if load_balanced and document.get("ok") != 1:
            _state_change_before_check_in(core, server.address, document, operation)
        if session is not None and (server.is_mongos or load_balanced):
            _pin(session, server, body, document)
        return document
    except MongoError as failure:
        failed = failure
        core.sessions.failed(session, body, failure)
        if isinstance(failure, NetworkError):
            # SDAM hears of it (and clears the pool) before the connection is checked in,
            # as the spec orders it; the flow's own MarkServerUnknown then finds the error
            # stale (same generation) and changes nothing more
            core.mark_server_unknown(
                MarkServerUnknown(server.address, failure),
                core.last_now,
                generation=operation.generations.get(server.address),
                service_id=operation.services.get(server.address),
            )
        raise
    except BaseException as cut:
        failed = cut
        raise
    finally:
        if link.broken and session is not None and session.server_session is not None:
            # cut mid-exchange (cancelled, a network error): the server may still hold state
            # for this session, so it is never handed out again
            session.server_session.dirty = True
        if not load_balanced or not settle(core, session, body, link, document, failed):
            core.check_in(link)


def _state_change_before_check_in(
    core: ClientCore, address: tuple[str, int], reply: Mapping[str, Any], operation: _Operation
) -> None:
    """Load-balanced: a state-change error clears its service's connections before the
    connection that met it is checked in (load-balancers.md, "Post-Handshake Errors"; the
    flow's own MarkServerUnknown then finds it stale), as run_command does for network
    errors."""
    try:
        check_reply(reply)
    except NotPrimaryError as error:
        core.mark_server_unknown(
            MarkServerUnknown(address, error),
            core.last_now,
            generation=operation.generations.get(address),
            service_id=operation.services.get(address),
        )
    except MongoError:
        pass


def _monitored(
    core: ClientCore,
    link: Any,
    db: str,
    body: Mapping[str, Any],
    sequences: Mapping[str, Sequence[Any]] | None,
    deadline: float | None,
    operation: _Operation,
) -> Flow:
    publish = core.publish
    assert publish is not None
    started = yield Now()
    monitor: CommandMonitor | None = None

    def make_monitor() -> CommandMonitor:
        api_fields = link.machine.api_fields
        return CommandMonitor(
            db,
            {**body, **api_fields} if api_fields else body,
            sequences,
            link.machine.last_request_id,
            link.address,
            operation_id=operation.operation_id or link.machine.last_request_id,
            driver_connection_id=link.id,
            server_connection_id=link.server_connection_id,
            service_id=link.description.service_id if link.description is not None else None,
        )

    def on_sent() -> None:
        nonlocal monitor
        monitor = make_monitor()
        publish(monitor.started())

    try:
        reply = yield from exchange(
            link,
            db,
            body,
            sequences=sequences,
            deadline=deadline,
            before_send=on_sent,
            codec_options=operation.codec_options,
            more_to_come=is_unacknowledged(body),
        )
    except MongoError as exc:
        if monitor is not None:
            now = yield Now()
            publish(monitor.failed(exc, now - started))
        raise
    now = yield Now()
    if monitor is None:
        monitor = make_monitor()
    publish(monitor.finished(reply.document, now - started))
    return reply.document


def _with_max_time(
    core: ClientCore,
    address: tuple[str, int],
    body: Mapping[str, Any],
    deadline: float,
    now: float,
) -> Mapping[str, Any]:
    """``body`` with the ``maxTimeMS`` the operation's ``deadline`` leaves (minus the server's
    minimum round trip); NetworkTimeout when nothing is left."""
    remaining = deadline - now
    name = next(iter(body), "")
    # a tailable non-awaitData find gets no maxTimeMS either (CSOT): timeoutMS bounds it here
    if name in _NO_MAX_TIME or (body.get("tailable") and not body.get("awaitData")):
        if remaining <= 0:
            raise NetworkTimeout("the operation's timeout expired before the command was sent")
        return body
    max_time = remaining - core.min_round_trip_time(address)
    if max_time <= 0:
        raise NetworkTimeout(
            "the operation's timeout expired before the command was sent "
            f"({remaining * 1000:.0f} ms left, less than the server's round trip)"
        )
    out = {**body, "maxTimeMS": max(1, int(max_time * 1000))}
    concern = body.get("writeConcern")
    if isinstance(concern, Mapping) and "wtimeout" in concern:
        # CSOT ignores wTimeoutMS: the deadline bounds the wait for the write concern too
        kept = {key: value for key, value in concern.items() if key != "wtimeout"}
        if kept:
            out["writeConcern"] = kept
        else:
            del out["writeConcern"]
    return out


def command_timeout(
    core: ClientCore, request_timeout: float | None, body: Mapping[str, Any]
) -> float | None:
    """How long a reply may take without an operation deadline: the flow's own timeout when it
    set one, else socketTimeoutMS extended by the command's ``maxTimeMS`` (an awaitData
    getMore waits that long before answering); None waits for ever."""
    if request_timeout is not None:
        return request_timeout
    timeout = core.settings.socket_timeout
    max_time_ms = body.get("maxTimeMS")
    if (
        timeout is not None
        and isinstance(max_time_ms, int | float)
        and not isinstance(max_time_ms, bool)
        and max_time_ms > 0
    ):
        return timeout + max_time_ms / 1000.0
    return timeout


# -- housekeeping ---------------------------------------------------------------------------------


def kill_cursors(core: ClientCore, cursors: list[KillCursor]) -> Flow:
    """Best-effort killCursors for dropped cursors (errors swallowed, servers gone skipped),
    all within :data:`KILL_CURSORS_TIMEOUT`: a server that does not answer must not hold the
    upkeep task (pool deadlines wait behind it) or ``close()``."""
    now = yield Now()
    deadline = now + KILL_CURSORS_TIMEOUT
    for cursor in cursors:
        if core.closed:
            return
        address = core.sdam_address(cursor.address)
        if address not in core.description.servers:
            continue
        server = core.server_info(address)
        try:
            yield from drive(
                core,
                run_command_quietly(server, cursor.db, cursor.body, session=cursor.session),
                deadline=deadline,
            )
        except MongoError:
            pass


def end_sessions(core: ClientCore) -> Flow:
    """``endSessions`` for every pooled server session, on a primary or any server that will
    take it, best effort within :data:`KILL_CURSORS_TIMEOUT` (the client is closing)."""
    batches = core.sessions.drain()
    if not batches or not core.sessions.supported:
        return
    now = yield Now()
    deadline = now + KILL_CURSORS_TIMEOUT
    preference = ReadPreference(mode=Mode.PRIMARY_PREFERRED)
    for ids in batches:
        if core.closed:
            return
        try:
            server = yield from drive(core, _select_any(preference), deadline=deadline)
            yield from drive(
                core,
                run_command_quietly(server, "admin", {"endSessions": ids}),
                deadline=deadline,
            )
        except MongoError:
            return


def _select_any(preference: ReadPreference) -> Flow:
    server = yield SelectServer(preference)
    return server


def upkeep_task(core: ClientCore) -> Flow:
    """Pool deadlines (idle connections, minPoolSize back-off) and dropped cursors."""
    while not core.closed:
        now = yield Now()
        core.last_now = now
        core.pool_timeouts(now)
        cursors = core.take_cursors_to_kill()
        if cursors:
            yield from kill_cursors(core, cursors)
            continue
        deadline = now + UPKEEP_INTERVAL
        due = core.next_pool_deadline()
        if due is not None and due < deadline:
            deadline = due
        signal = Signal("upkeep")
        core.upkeep_signal = signal
        yield Wait(signal, deadline)
        core.upkeep_signal = None


def operation_deadline(
    now: float, *, context: float | None, own: float | None, client: float | None
) -> float | None:
    """The deadline of one operation (client-side operations timeout): a ``timeout()`` block's
    ``context`` deadline wins; else the operation's or collection's ``own`` timeoutMS, else the
    client's (seconds).  ``math.inf``: timeoutMS=0 or ``timeout(0)``, no limit -- but the
    operation is under CSOT rules (retried while it fails, legacy timeouts ignored).  None: no
    timeoutMS anywhere (legacy timeouts, one retry)."""
    if context is not None:
        return context  # math.inf for a timeout(0) block
    seconds = own if own is not None else client
    if seconds is None:
        return None
    if seconds == 0:
        return math.inf
    return now + seconds
