"""The blocking interpreter: runs the core's flows over blocking sockets.

:class:`Engine` owns one :class:`~mongo_sansio.client.ClientCore` and answers every request a
flow yields, deciding nothing itself:

* ``SelectServer`` -- runs the core's selection flow, answering its ``OpenConnection`` (open a
  socket, drive :func:`~mongo_sansio.connection.establish` with an
  :class:`~mongo_sansio.auth.Authenticator`) and ``CheckConnection`` (a hello on an idle
  connection) requests;
* ``RunCommand`` -- checks out a connection (or opens one), sends
  :meth:`Connection.send_command`'s bytes, reads until a reply is framed, checks the connection
  back in, and sends the reply document into the flow;
* ``MarkServerUnknown`` -- hands it to the core; ``Now`` -- :func:`time.monotonic`; ``Sleep`` --
  :func:`time.sleep`.

A library error met while answering (a network failure, a refused authentication, a server
selection timeout) is thrown into the flow, which decides what it means; a connection whose
I/O failed is closed first.  Anything else (KeyboardInterrupt, a bug) closes the flow and
propagates.

Thread safety: one re-entrant lock guards the core.  It is held while a flow of the core takes
a step and while the core is called, never during I/O, so threads share the client's
connections and topology while their operations run in parallel on separate connections.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mongo_sansio.auth import Authenticator, ScramCache
from mongo_sansio.bson import ObjectId
from mongo_sansio.client import (
    CheckConnection,
    CheckReply,
    ClientCore,
    ClientSettings,
    CommandFailedEvent,
    CommandListener,
    CommandSucceededEvent,
    OpenConnection,
    Opened,
)
from mongo_sansio.client.events import CommandMonitor
from mongo_sansio.connection import CLOSED, NEED_DATA, Connection, Reply, establish
from mongo_sansio.errors import (
    LocalProtocolError,
    MongoError,
    NetworkError,
    RemoteProtocolError,
)
from mongo_sansio.flow import (
    ConnectionCommand,
    Flow,
    MarkServerUnknown,
    Now,
    RunCommand,
    SelectServer,
    ServerInfo,
    Sleep,
)

if TYPE_CHECKING:
    from transports.blocking import BlockingStream, make_ssl_context, open_stream
else:
    from mongo_sansio.transports.blocking import BlockingStream, make_ssl_context, open_stream

__all__ = ["Engine", "PooledConnection"]

T = TypeVar("T")
_NONCE_BYTES = 24


class PooledConnection:
    """One socket and its connection machine; compared and hashed by identity."""

    __slots__ = ("stream", "machine", "address")

    def __init__(self, stream: BlockingStream, machine: Connection, address: tuple[str, int]):
        self.stream = stream
        self.machine = machine
        self.address = address

    def close(self) -> None:
        self.machine.close()
        self.stream.close()

    def __repr__(self) -> str:
        return f"<connection to {self.stream.where}>"


class Engine:
    """See the module docstring.  ``metadata`` is the handshake's ``client`` document."""

    def __init__(
        self,
        settings: ClientSettings,
        *,
        metadata: Mapping[str, Any],
        listeners: Sequence[CommandListener] = (),
    ) -> None:
        self.settings = settings
        self._metadata = dict(metadata)
        self._listeners = tuple(listeners)
        self._lock = threading.RLock()
        self._random = random.SystemRandom()
        self._ssl_context = make_ssl_context(settings.tls) if settings.tls.enabled else None
        self._scram_cache = ScramCache()
        if settings.credential is not None:
            # Refuse an unsupported mechanism now rather than at the first connection.
            Authenticator(settings.credential, nonce=os.urandom(_NONCE_BYTES))
        self.core: ClientCore[PooledConnection] = ClientCore(
            settings, topology_id=ObjectId(), draw=self._random.randrange
        )

    # -- running flows --------------------------------------------------------------------------

    def run(self, flow: Flow[T]) -> T:
        """Drive an operation flow to its result (see the module docstring)."""
        answer: Any = None
        error: MongoError | None = None
        while True:
            try:
                request = flow.send(answer) if error is None else flow.throw(error)
            except StopIteration as stop:
                result: T = stop.value
                return result
            answer, error = None, None
            try:
                answer = self._answer(request)
            except MongoError as exc:
                error = exc
            except BaseException:
                flow.close()
                raise

    def _answer(self, request: object) -> Any:
        if isinstance(request, RunCommand):
            return self._run_command(request)
        if isinstance(request, SelectServer):
            return self._select_server(request)
        if isinstance(request, MarkServerUnknown):
            with self._lock:
                self.core.mark_server_unknown(request, time.monotonic())
                to_close = self.core.take_to_close()
            _close_all(to_close)
            return None
        if isinstance(request, Now):
            return time.monotonic()
        if isinstance(request, Sleep):
            time.sleep(max(0.0, request.seconds))
            return None
        if isinstance(request, ConnectionCommand):
            raise LocalProtocolError("a ConnectionCommand outside a connection's establishment")
        raise LocalProtocolError(f"a flow yielded {request!r}, which is not a request")

    def _select_server(self, request: SelectServer) -> ServerInfo:
        with self._lock:
            flow = self.core.select_server_flow(request)
        answer: Any = None
        error: MongoError | None = None
        while True:
            to_close: list[PooledConnection] = []
            try:
                with self._lock:
                    try:
                        step = flow.send(answer) if error is None else flow.throw(error)
                    except StopIteration as stop:
                        server: ServerInfo = stop.value
                        return server
                    finally:
                        to_close = self.core.take_to_close()
            finally:
                _close_all(to_close)
            answer, error = None, None
            try:
                if isinstance(step, OpenConnection):
                    answer = self._open(step.address)
                elif isinstance(step, CheckConnection):
                    answer = self._check(step.connection, step.body)
                else:
                    answer = self._answer(step)
            except MongoError as exc:
                error = exc
            except BaseException:
                with self._lock:
                    flow.close()
                raise

    # -- commands ---------------------------------------------------------------------------------

    def _run_command(self, request: RunCommand) -> Mapping[str, Any]:
        address = request.server.address
        with self._lock:
            connection = self.core.check_out(address, time.monotonic())
            to_close = self.core.take_to_close()
        _close_all(to_close)
        if connection is None:
            opened = self._open(address)
            connection = opened.connection
            with self._lock:
                self.core.connection_opened(address, opened, time.monotonic(), idle=False)
                to_close = self.core.take_to_close()
            _close_all(to_close)
        with self._lock:
            body = self.core.command_body(request.server, request.body)
            timeout = self.core.command_timeout(request.timeout, body)
        try:
            reply = self._monitored_exchange(
                connection, request.db, body, sequences=request.sequences, timeout=timeout
            )
        except MongoError:
            self._check_in_unless_broken(connection)
            raise
        self._check_in_unless_broken(connection)
        return reply

    def _check_in_unless_broken(self, connection: PooledConnection) -> None:
        if connection.stream.closed:
            return  # closed (and forgotten) by the failed exchange
        with self._lock:
            keep = self.core.check_in(connection, time.monotonic())
        if not keep:
            connection.close()

    def _monitored_exchange(
        self,
        connection: PooledConnection,
        db: str,
        body: Mapping[str, Any],
        *,
        sequences: Mapping[str, Sequence[Any]] | None,
        timeout: float | None,
    ) -> Mapping[str, Any]:
        if not self._listeners:
            return self._exchange(connection, db, body, sequences=sequences, timeout=timeout)
        started = time.monotonic()

        def monitor() -> CommandMonitor:  # the request id is the connection's latest
            return CommandMonitor(
                db, body, sequences, connection.machine.last_request_id, connection.address
            )

        def publish_started() -> None:
            event = monitor().started()
            for listener in self._listeners:
                listener.started(event)

        try:
            reply = self._exchange(
                connection, db, body, sequences=sequences, timeout=timeout, on_sent=publish_started
            )
        except MongoError as exc:
            self._publish_finished(monitor().failed(exc, time.monotonic() - started))
            raise
        self._publish_finished(monitor().finished(reply, time.monotonic() - started))
        return reply

    def _publish_finished(self, event: CommandSucceededEvent | CommandFailedEvent) -> None:
        for listener in self._listeners:
            if isinstance(event, CommandSucceededEvent):
                listener.succeeded(event)
            else:
                listener.failed(event)

    def _exchange(
        self,
        connection: PooledConnection,
        db: str,
        body: Mapping[str, Any],
        *,
        sequences: Mapping[str, Sequence[Any]] | None = None,
        op_query: bool = False,
        timeout: float | None,
        on_sent: Callable[[], None] | None = None,
    ) -> Mapping[str, Any]:
        """Send one command on ``connection`` and read its reply.  A network or protocol
        failure closes the connection (and tells the core) before it is raised."""
        # An encoding error (a document too large) leaves the connection as it was.
        buffers = connection.machine.send_command(db, body, sequences=sequences, op_query=op_query)
        if on_sent is not None:
            on_sent()
        try:
            stream = connection.stream
            stream.set_timeout(timeout)
            stream.send_all(buffers)
            machine = connection.machine
            while True:
                reply = machine.next_reply()
                if reply is NEED_DATA:
                    data = stream.recv()
                    if data:
                        machine.receive_data(data)
                    else:
                        machine.receive_eof()
                    continue
                if isinstance(reply, Reply):
                    return reply.document
                assert reply is CLOSED
                raise NetworkError(f"{stream.where} closed the connection")
        except (NetworkError, RemoteProtocolError):
            self._discard(connection)
            raise
        except BaseException:
            self._discard(connection)  # interrupted mid-exchange: the stream is out of step
            raise

    def _discard(self, connection: PooledConnection) -> None:
        connection.close()
        with self._lock:
            self.core.forget(connection)

    # -- connections ------------------------------------------------------------------------------

    def _next_request_id(self) -> int:
        with self._lock:
            return self.core.next_request_id()

    def _open(self, address: tuple[str, int]) -> Opened[PooledConnection]:
        """Open a socket to ``address`` and establish it (handshake, authentication)."""
        settings = self.settings
        stream = open_stream(
            address,
            connect_timeout=settings.connect_timeout,
            socket_timeout=settings.socket_timeout,
            ssl_context=self._ssl_context,
        )
        machine = Connection(
            address,
            request_ids=self._next_request_id,
            server_api=settings.server_api,
            zlib_compression_level=settings.handshake.zlib_compression_level,
        )
        connection = PooledConnection(stream, machine, address)
        authenticator = None
        if settings.credential is not None:
            authenticator = Authenticator(
                settings.credential, nonce=os.urandom(_NONCE_BYTES), cache=self._scram_cache
            )
        flow = establish(
            address=address,
            options=settings.handshake,
            metadata=self._metadata,
            authenticator=authenticator,
        )
        round_trip_time: float | None = None
        answer: Any = None
        try:
            while True:
                try:
                    command = flow.send(answer)
                except StopIteration as stop:
                    description = stop.value
                    break
                started = time.monotonic()
                answer = self._exchange(
                    connection,
                    command.db,
                    command.body,
                    op_query=command.op_query,
                    timeout=settings.connect_timeout,
                )
                if round_trip_time is None:
                    round_trip_time = time.monotonic() - started
            machine.set_description(description)
        except BaseException:
            flow.close()
            connection.close()
            raise
        return Opened(connection, description, round_trip_time or 0.0)

    def _check(self, connection: PooledConnection, body: Mapping[str, Any]) -> CheckReply:
        """A server check on an idle connection: hello, timed."""
        started = time.monotonic()
        reply = self._exchange(connection, "admin", body, timeout=self.settings.connect_timeout)
        return CheckReply(reply, time.monotonic() - started)

    # -- closing ----------------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self.core.close()
            to_close = self.core.take_to_close()
        _close_all(to_close)


def _close_all(connections: list[PooledConnection]) -> None:
    for connection in connections:
        connection.close()
