"""One established connection (a :class:`Link`) and the flows that use it.

Theory of operation
-------------------
A :class:`Link` pairs the runtime's opaque stream handle with the
:class:`~mongo_sansio.connection.Connection` machine that frames its bytes.  Three flows, over
the runtime seam's primitives only (:mod:`mongo_sansio.client.runtime`), are all the I/O the
client does:

* :func:`open_link` -- open a stream (:func:`~mongo_sansio.client.dial.dial`: directly or
  through the client's SOCKS5 proxy), then drive :func:`~mongo_sansio.connection.establish`
  (hello, then authentication when an authenticator is given), each command through
  :func:`exchange`; everything before ``deadline``.
* :func:`exchange` -- send one command and read until its reply is framed.
* :func:`read_more` -- read the next reply of an exhaust stream (``moreToCome``).

A failure of any kind while bytes are in flight -- a network error, bad bytes, a deadline, the
flow being closed by its caller (a cancelled task, a killed greenlet) -- leaves the link
*broken*: its stream is out of step and must never carry another command.  The link is closed
at once through the ``close_stream`` callable the runtime gave the client (closing a stream is
synchronous on every runtime), so nothing leaks whoever abandons the flow.

Inputs: replies' bytes and failures thrown in by the runtime.  Outputs: primitives, and the
reply (:class:`~mongo_sansio.connection.Reply`) or the link.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.auth.http11 import HttpRequest
from mongo_sansio.backpressure import label_establishment_error
from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.client.dial import ProxySettings, dial, http_exchange
from mongo_sansio.client.runtime import RECEIVE_SIZE, Receive, SendAll
from mongo_sansio.connection import (
    CLOSED,
    NEED_DATA,
    Connection,
    ConnectionDescription,
    HandshakeOptions,
    Reply,
    ServerApi,
    establish,
)
from mongo_sansio.connection.establish import AuthenticatorLike
from mongo_sansio.errors import LocalProtocolError, MongoError, NetworkError
from mongo_sansio.flow import ConnectionCommand, Now

__all__ = ["Link", "LinkOptions", "open_link", "exchange", "read_more", "reauthenticate",
           "needs_reauthentication"]

LinkFlow = Generator[Any, Any, Any]

#: the server's error code asking a connection to authenticate again (auth spec)
REAUTHENTICATION_REQUIRED = 391


@attrs.frozen(kw_only=True)
class LinkOptions:
    """What every link of a client shares: its handshake options and metadata, how to number
    requests, and how to close a stream."""

    handshake: HandshakeOptions
    metadata: Mapping[str, Any]
    request_ids: Callable[[], int]
    close_stream: Callable[[Any], None]
    server_api: ServerApi | None = None
    zlib_compression_level: int = -1
    #: the SOCKS5 proxy every connection goes through (None: connect directly)
    proxy: ProxySettings | None = None


class Link:
    """A stream and its connection machine; compared and hashed by identity."""

    __slots__ = (
        "id",
        "address",
        "stream",
        "machine",
        "description",
        "broken",
        "pooled",
        "round_trip_time",
        "checked_out_at",
        "authenticator",
        "hello_service_id",
        "_close_stream",
    )

    def __init__(
        self,
        link_id: int,
        address: tuple[str, int],
        stream: object,
        machine: Connection,
        close_stream: Callable[[Any], None],
    ) -> None:
        self.id = link_id
        self.address = address
        self.stream = stream
        self.machine = machine
        self.description: ConnectionDescription | None = None
        #: the first hello's serviceId (load-balanced), known before authentication ends
        self.hello_service_id: Any = None
        self.broken = False
        self.pooled: Any = None  # the CMAP pool's handle while checked out
        self.round_trip_time = 0.0
        # the clock reading of a check-out that did not wait (None after a wait): the command
        # that follows at once uses it instead of reading the clock again
        self.checked_out_at: float | None = None
        #: what authenticated the link (MONGODB-OIDC re-authenticates with it after a 391)
        self.authenticator: Any = None
        self._close_stream = close_stream

    @property
    def server_connection_id(self) -> int | None:
        return None if self.description is None else self.description.server_connection_id

    def close(self, error: Exception | None = None) -> None:
        """Close the stream (idempotent); the link is broken from now on.  ``error``: why,
        raised to the flow that was using it (see :meth:`Connection.close`)."""
        if self.broken and self.stream is None:
            return
        self.broken = True
        self.machine.close(error)
        stream, self.stream = self.stream, None
        if stream is not None:
            try:
                self._close_stream(stream)
            except Exception:  # noqa: BLE001 - a failing close has nothing left to tell
                pass

    def __repr__(self) -> str:
        return f"<link {self.id} to {self.address[0]}:{self.address[1]}>"


def open_link(
    link_id: int,
    address: tuple[str, int],
    options: LinkOptions,
    *,
    deadline: float | None,
    authenticator: AuthenticatorLike | None = None,
    on_stream: Callable[[Link], None] | None = None,
    backpressure: bool = False,
) -> LinkFlow:
    """Open and establish a link to ``address`` before ``deadline``; returns the link (its
    ``description`` set, ``round_trip_time`` the first hello's).  ``on_stream`` gets the link
    as soon as its stream is open, before the handshake: its owner can then close it (closing
    the client or cancelling a check) and so cut a handshake that is still running.
    ``backpressure`` (a pooled connection): a network error before the hello's reply gets the
    overload labels (:func:`~mongo_sansio.backpressure.label_establishment_error`)."""
    try:
        stream = yield from dial(
            address, deadline, proxy=options.proxy, close_stream=options.close_stream
        )
    except MongoError as error:
        # a failure to reach or use the proxy says nothing of the server's load (SOCKS5 spec)
        if backpressure and options.proxy is None:
            label_establishment_error(error, authenticating=False)
        raise
    machine = Connection(
        address,
        request_ids=options.request_ids,
        server_api=options.server_api,
        zlib_compression_level=options.zlib_compression_level,
    )
    link = Link(link_id, address, stream, machine, options.close_stream)
    if on_stream is not None:
        try:
            on_stream(link)
        except BaseException:
            link.close()
            raise
    flow = establish(
        address=address,
        options=options.handshake,
        metadata=options.metadata,
        authenticator=authenticator,
    )
    first_round_trip: float | None = None
    answer: Any = None
    thrown: MongoError | None = None
    try:
        while True:
            try:
                command = flow.send(answer) if thrown is None else flow.throw(thrown)
            except StopIteration as stop:
                description: ConnectionDescription = stop.value
                break
            answer, thrown = None, None
            if isinstance(command, HttpRequest):  # an authenticator asks a credentials service
                answer = yield from http_exchange(
                    command, deadline, close_stream=options.close_stream
                )
                continue
            if type(command) is not ConnectionCommand:
                # a primitive the authenticator needs (an OIDC token source, a wait): passed
                # on to the runtime; the time it takes does not count against the deadline
                answer, thrown, deadline = yield from _pass_on(command, deadline)
                continue
            started = yield Now()
            reply = yield from exchange(
                link, command.db, command.body, op_query=command.op_query, deadline=deadline
            )
            answer = reply.document
            if first_round_trip is None:
                first_round_trip = (yield Now()) - started
                link.hello_service_id = answer.get("serviceId")
        machine.set_description(description)
    except BaseException as error:
        flow.close()
        link.close()
        if backpressure and isinstance(error, MongoError):
            label_establishment_error(error, authenticating=first_round_trip is not None)
        raise
    link.description = description
    link.round_trip_time = first_round_trip or 0.0
    link.authenticator = authenticator
    return link


def _pass_on(request: Any, deadline: float | None) -> LinkFlow:
    """Carry ``request`` out through the runtime: (answer, error thrown, the deadline moved
    on by the time it took)."""
    started = yield Now()
    answer: Any = None
    thrown: MongoError | None = None
    try:
        answer = yield request
    except MongoError as error:
        thrown = error
    if deadline is not None:
        deadline += (yield Now()) - started
    return answer, thrown, deadline


def needs_reauthentication(link: Link, reply: Mapping[str, Any]) -> bool:
    """Whether ``reply`` is a ReauthenticationRequired error (391) that the link's
    authenticator can answer by authenticating again."""
    return (
        reply.get("code") == REAUTHENTICATION_REQUIRED
        and not reply.get("ok")
        and hasattr(link.authenticator, "reauthenticate")
    )


def reauthenticate(link: Link, *, deadline: float | None) -> LinkFlow:
    """Run the link's authenticator again on it, without hello (a ReauthenticationRequired
    error, code 391); the authenticator must offer ``reauthenticate()``.  A failure breaks
    the link."""
    authenticator = link.authenticator
    if link.broken or authenticator is None or not hasattr(authenticator, "reauthenticate"):
        raise NetworkError(f"connection {link.id} cannot re-authenticate")
    flow = authenticator.reauthenticate()
    answer: Any = None
    thrown: MongoError | None = None
    try:
        while True:
            try:
                command = flow.send(answer) if thrown is None else flow.throw(thrown)
            except StopIteration:
                return None
            answer, thrown = None, None
            if type(command) is not ConnectionCommand:
                answer, thrown, deadline = yield from _pass_on(command, deadline)
                continue
            reply = yield from exchange(link, command.db, command.body, deadline=deadline)
            answer = reply.document
    except BaseException:
        flow.close()
        link.close()
        raise


def exchange(
    link: Link,
    db: str,
    body: Mapping[str, Any],
    *,
    sequences: Mapping[str, Sequence[Any]] | None = None,
    op_query: bool = False,
    exhaust_allowed: bool = False,
    deadline: float | None,
    before_send: Callable[[], None] | None = None,
    codec_options: CodecOptions | None = None,
    more_to_come: bool = False,
) -> LinkFlow:
    """Send ``body`` on ``link`` and return the :class:`Reply`.  An encoding error (a document
    too large, a bad value) leaves the link as it was; anything after the first byte was
    written breaks it.  ``before_send`` runs once the bytes are ready (command monitoring's
    started event); ``codec_options`` encode the body (the operation's collection's).
    ``more_to_come`` (an unacknowledged write) asks for no reply: once the bytes are written,
    ``{ok: 1}`` is returned, as the command monitoring spec says such a write succeeded."""
    if link.broken:
        raise NetworkError(f"connection {link.id} to {link.address[0]}:{link.address[1]} is closed")
    buffers = link.machine.send_command(
        db,
        body,
        sequences=sequences,
        op_query=op_query,
        exhaust_allowed=exhaust_allowed,
        codec_options=codec_options,
        more_to_come=more_to_come,
    )
    try:
        # the machine now awaits this request's reply: whatever fails from here on, even
        # before a byte was written (a publish hook that raises), leaves the link out of step
        if before_send is not None:
            before_send()
        if more_to_come:
            yield SendAll(link.stream, buffers, deadline)
            return Reply(
                document={"ok": 1}, request_id=0, response_to=link.machine.last_request_id or 0
            )
        # the first read of the reply goes with the command (a reply's start is never known
        # to be large, so it is read as any reply's first bytes are)
        data = yield SendAll(link.stream, buffers, deadline, RECEIVE_SIZE)
        machine = link.machine
        if data:
            machine.receive_data(data)
        else:
            machine.receive_eof()
        return (yield from _read_reply(link, deadline))
    except BaseException:
        link.close()
        raise


def read_more(link: Link, *, deadline: float | None) -> LinkFlow:
    """The next reply of an exhaust stream (the last one had ``more_to_come``)."""
    if link.broken:
        raise NetworkError(f"connection {link.id} is closed")
    try:
        return (yield from _read_reply(link, deadline))
    except BaseException:
        link.close()
        raise


def _read_reply(link: Link, deadline: float | None) -> LinkFlow:
    machine = link.machine
    while True:
        reply = machine.next_reply()
        if reply is NEED_DATA:
            wanted = machine.wanted
            data = yield Receive(link.stream, deadline, wanted if wanted > RECEIVE_SIZE else RECEIVE_SIZE)
            if data:
                machine.receive_data(data)
            else:
                machine.receive_eof()
            continue
        if isinstance(reply, Reply):
            return reply
        if reply is CLOSED:
            raise NetworkError(f"{link.address[0]}:{link.address[1]} closed the connection")
        raise LocalProtocolError(f"unexpected connection output {reply!r}")
