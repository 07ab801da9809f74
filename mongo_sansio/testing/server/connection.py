"""One accepted client connection: bytes and ``now`` in, bytes out (the server's h11).

Inputs: ``receive_data(data, now)`` with whatever bytes arrived, ``receive_eof()``,
``handle_timeout(now)`` at or after ``next_deadline()``; from the cluster, ``poke(now)`` (the
topology changed or something was written: a waiting answer may be ready), ``interrupt(now)``
(a stepdown: a blocked command fails) and ``close(reason)`` (the member stopped).
Outputs: ``data_to_send()`` (the bytes to write now), ``should_close`` / ``close_reason``, and
the optional ``on_ready()`` callback, called whenever output is queued or the connection closes.

States:

========== ================================= ============
state       input                             next
========== ================================= ============
READY       a request answered at once        READY
READY       a request that waits              WAITING
WAITING     poke / timeout gives the answer   READY (or WAITING: an exhaust hello streams on)
WAITING     interrupt (blocked command)       READY (error 11602 answered)
any         bad bytes, failpoint, stop, EOF   CLOSED
========== ================================= ============

Requests that arrive while one waits are kept in order and run when it is answered (mongod
runs one operation per connection at a time).  Replies are compressed with the compressor of
the request when it was negotiated and the command may be compressed; an awaitable hello sent
with exhaustAllowed is answered with moreToCome and streams a reply each time the topology
changes or maxAwaitTimeMS passes, each one ``responseTo`` the previous reply.  Nothing here
raises out of ``receive_data``: bad input closes the connection with a reason.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mongo_sansio.errors import MongoError
from mongo_sansio.testing.engine import CommandError
from mongo_sansio.testing.server.context import (
    NO_REPLY,
    Close,
    ConnectionState,
    Context,
    Outcome,
    Request,
    Waiting,
)
from mongo_sansio.testing.server.dispatch import change_stream_labels, error_reply, execute, finish
from mongo_sansio.testing.server.handshake import MAX_MESSAGE_SIZE_BYTES
from mongo_sansio.testing.server.load_balancer import balanced_execute, follow_primary
from mongo_sansio.wire import (
    CLOSED,
    MORE_TO_COME,
    NEED_DATA,
    MessageReader,
    OpMsg,
    OpQuery,
    compress_message,
    encode_op_msg,
    encode_op_reply,
    may_compress,
)
from mongo_sansio.wire.compression import compressor_for

if TYPE_CHECKING:
    from mongo_sansio.testing.server.replset import Member, ReplicaSet

__all__ = ["ServerConnection"]

_SECONDARY_OK_FLAG = 4  # OP_QUERY's SecondaryOk bit
_HELLO_NAMES = ("hello", "isMaster", "ismaster")


class ServerConnection:
    """See the module documentation."""

    def __init__(self, cluster: ReplicaSet, member: Member, connection_id: int, now: float) -> None:
        self.cluster = cluster
        self.member = member
        self.state = ConnectionState(connection_id)
        self.should_close = False
        self.close_reason: str | None = None
        self._reader = MessageReader(MAX_MESSAGE_SIZE_BYTES)
        self._out = bytearray()
        self._queue: deque[Any] = deque()
        self._waiting: Waiting | None = None
        self._waiting_ctx: Context | None = None
        self._next_request_id = 0
        self._now = now
        # Called after output is queued or the connection closes, so a transport whose thread
        # is waiting on the socket learns of replies caused by another connection.
        self.on_ready: Callable[[], None] | None = None

    # --- the transport's side ------------------------------------------------------------

    def receive_data(self, data: bytes, now: float) -> None:
        if self.should_close:
            return
        self._now = now
        try:
            self._reader.receive_data(data)
        except MongoError as error:
            self.close(f"bad input: {error}")
            return
        self.cluster.tick(now)
        self._pump(now)

    def receive_eof(self) -> None:
        if self.should_close:
            return
        try:
            self._reader.receive_eof()
        except MongoError:
            pass
        self._pump(self._now)
        self.close("the client closed the connection")

    def data_to_send(self) -> bytes:
        out = bytes(self._out)
        self._out.clear()
        return out

    def next_deadline(self) -> float | None:
        if self._waiting is None or self.should_close:
            return None
        return self._waiting.deadline

    def handle_timeout(self, now: float) -> None:
        self._now = now
        self.cluster.tick(now)
        waiting = self._waiting
        if waiting is None or self.should_close:
            return
        if waiting.deadline is not None and now >= waiting.deadline:
            self._resolve(waiting.poll, now, True)
        self._pump(now)

    # --- the cluster's side --------------------------------------------------------------

    def poke(self, now: float) -> None:
        waiting = self._waiting
        if waiting is None or self.should_close:
            return
        self._resolve(waiting.poll, now, False)
        self._pump(now)

    def interrupt(self, now: float) -> None:
        waiting = self._waiting
        if waiting is None or not waiting.interruptible or self._waiting_ctx is None:
            return
        ctx = self._waiting_ctx
        ctx.now = now
        error = CommandError(11602, "InterruptedDueToReplStateChange", "operation was interrupted")
        reply = error_reply(error)
        if ctx.request.txn_number is not None:
            reply["errorLabels"] = ["RetryableWriteError"]
        reply = change_stream_labels(ctx, reply, 11602)
        self._waiting = None
        self._deliver(ctx, finish(ctx, reply))

    def close(self, reason: str) -> None:
        if self.should_close:
            return
        self.should_close = True
        self.close_reason = reason
        self._waiting = None
        self._waiting_ctx = None
        self._queue.clear()
        self.cluster.forget(self)
        self._notify()

    def _notify(self) -> None:
        if self.on_ready is not None:
            self.on_ready()

    # --- requests ------------------------------------------------------------------------

    def _pump(self, now: float) -> None:
        while not self.should_close and self._waiting is None:
            if self._queue:
                message = self._queue.popleft()
            else:
                try:
                    message = self._reader.next_message()
                except MongoError as error:
                    self.close(f"bad input: {error}")
                    return
                if message is NEED_DATA or message is CLOSED:
                    return
            self._handle(message, now)

    def _handle(self, message: Any, now: float) -> None:
        request = self._request(message)
        if request is None:
            return
        if self.state.via_load_balancer:
            follow_primary(self)
        ctx = Context(self.cluster, self.member, self.state, request, now)
        self._deliver(ctx, balanced_execute(ctx) if self.state.via_load_balancer else execute(ctx))

    def _request(self, message: Any) -> Request | None:
        if isinstance(message, OpMsg):
            body = message.body
            if not isinstance(body, Mapping) or not body:
                self.close("OP_MSG without a command document")
                return None
            name = next(iter(body))
            db = body.get("$db")
            if not isinstance(db, str) or not db:
                self._reply_error_now(message, name, CommandError(40571, "Location40571", "OP_MSG requests require a $db argument"))
                return None
            read_preference = body.get("$readPreference")
            mode = read_preference.get("mode") if isinstance(read_preference, Mapping) else None
            return Request(
                name, db, body, message.sequences, message.request_id,
                secondary_ok=mode is not None and mode != "primary",
                exhaust_allowed=message.exhaust_allowed, more_to_come=message.more_to_come,
                compressor_id=message.compressor_id,
            )
        if isinstance(message, OpQuery):
            return self._legacy_request(message)
        self.close(f"unexpected message from a client: {type(message).__name__}")
        return None

    def _legacy_request(self, message: OpQuery) -> Request | None:
        namespace = message.full_collection_name
        query = message.query
        if isinstance(query, Mapping) and isinstance(query.get("$query"), Mapping):
            query = query["$query"]
        if not namespace.endswith(".$cmd") or not isinstance(query, Mapping) or not query:
            self.close(f"legacy OP_QUERY on {namespace!r} is not supported")
            return None
        name = next(iter(query))
        request = Request(
            name, namespace[: -len(".$cmd")], query, {}, message.request_id, legacy=True,
            secondary_ok=bool(message.flags & _SECONDARY_OK_FLAG), compressor_id=message.compressor_id,
        )
        if name not in _HELLO_NAMES:
            ctx = Context(self.cluster, self.member, self.state, request, self._now)
            error = CommandError(
                352, "UnsupportedOpQueryCommand",
                f"Unsupported OP_QUERY command: {name}. The client driver may require an upgrade.",
            )
            self._deliver(ctx, finish(ctx, error_reply(error)))
            return None
        return request

    def _reply_error_now(self, message: OpMsg, name: str, error: CommandError) -> None:
        request = Request(name, "admin", message.body, {}, message.request_id)
        ctx = Context(self.cluster, self.member, self.state, request, self._now)
        self._deliver(ctx, finish(ctx, error_reply(error)))

    def _resolve(self, poll: Any, now: float, timed_out: bool) -> None:
        ctx = self._waiting_ctx
        try:
            outcome = poll(now, timed_out)
        except CommandError as error:
            outcome = error_reply(error) if ctx is None else finish(ctx, error_reply(error))
        if outcome is None or ctx is None:
            return
        self._waiting = None
        ctx.now = now
        if isinstance(outcome, dict) and "$clusterTime" not in outcome:
            outcome = finish(ctx, outcome)
        self._deliver(ctx, outcome)

    def _deliver(self, ctx: Context, outcome: Outcome) -> None:
        if isinstance(outcome, Waiting):
            self._waiting = outcome
            self._waiting_ctx = ctx
            return
        if isinstance(outcome, Close):
            self.close(outcome.reason)
            return
        if outcome is NO_REPLY or not isinstance(outcome, dict):
            return
        request = ctx.request
        stream = (
            request.exhaust_allowed and request.name in _HELLO_NAMES and outcome.get("ok") == 1.0
            and "topologyVersion" in request.body and "maxAwaitTimeMS" in request.body
        )
        reply_id = self._send(request, outcome, MORE_TO_COME if stream else 0)
        if self.state.close_after_reply is not None:
            self.close(self.state.close_after_reply)
            return
        if stream and not self.should_close:
            # The next streamed hello: awaits a change from the version just sent.
            body = dict(request.body)
            body["topologyVersion"] = outcome["topologyVersion"]
            follow = Request(
                request.name, request.db, body, {}, reply_id, exhaust_allowed=True,
                compressor_id=request.compressor_id,
            )
            follow_ctx = Context(self.cluster, self.member, self.state, follow, ctx.now)
            self._deliver(follow_ctx, execute(follow_ctx))

    def _send(self, request: Request, reply: dict[str, Any], flags: int) -> int:
        self._next_request_id += 1
        request_id = self._next_request_id
        try:
            if request.legacy:
                data = encode_op_reply([reply], request_id=request_id, response_to=request.request_id)
            else:
                data = encode_op_msg(reply, request_id=request_id, response_to=request.request_id, flags=flags)
        except (MongoError, ValueError) as error:
            self.close(f"could not encode the reply to {request.name}: {error}")
            return request_id
        compressor_id = request.compressor_id
        if compressor_id is not None and compressor_id != 0 and may_compress(request.name):
            name = {1: "snappy", 2: "zlib", 3: "zstd"}.get(compressor_id)
            if name is not None and name in self.state.compression:
                try:
                    data = compress_message(data, compressor_for(name))
                except (MongoError, ValueError) as error:
                    self.close(f"could not compress the reply: {error}")
                    return request_id
        self._out += data
        self._notify()
        return request_id
