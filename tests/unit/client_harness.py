"""A scripted runtime for the client core's flows: fake servers, a fake clock, no sockets, no
sleeps.

:class:`Loop` plays a runtime (the role of ``adapters/_sync.py``) for flows made of the runtime
seam's primitives (:mod:`mongo_sansio.client.runtime`), single-threaded and in simulated time:

* every task (the foreground flow given to :meth:`Loop.run`, and whatever the core spawns
  through :meth:`Loop.spawn`) is a generator stepped by hand; a task blocked on a primitive
  waits until what it waits for happens (data arrived, a signal fired, its deadline passed);
* when no task can move, the clock jumps to the earliest moment something can happen (a
  deadline, the end of a sleep, a delayed reply): nothing ever sleeps for real;
* ``OpenStream`` connects to a :class:`FakeServer` (refused when the address has none or it is
  ``down``; never answered when it ``hangs``), ``SendAll`` hands the bytes to the server's
  :class:`FakeStream`, ``Receive`` returns what the server wrote (at most
  :attr:`FakeServer.chunk` bytes at a time), ``b""`` at its end;
* a deadline that has passed raises :class:`~mongo_sansio.errors.NetworkTimeout` into the flow,
  a stream the client closed raises :class:`~mongo_sansio.errors.NetworkError`, as the real
  runtimes do.

A :class:`FakeServer` decodes each request with :class:`~mongo_sansio.wire.MessageReader` and
answers with replies built by the wire encoders: its hello (a standalone's, or a replica set
member's from :func:`member_hello`), awaitable hellos held until :meth:`FakeServer.bump` or
``maxAwaitTimeMS`` (with ``moreToCome`` when the client allowed exhaust), and for other
commands a reply document or a scripted :class:`Behaviour` (:class:`Hang`, :class:`Drop`,
:class:`Cut`, :class:`Later`).

``Loop(order_seed=n)`` shuffles the order in which the tasks that can move take their steps,
round by round, and lets each take a step only with its own chance (a random speed), so that
some run ahead of others: other interleavings of the same events.  :meth:`Loop.run` can also cut its
flow: ``cut_after=k`` closes the generator (or throws
``throw`` into it) when it yields its k-th primitive, as a runtime cancelling a task does.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Generator, Mapping
from typing import Any

import attrs

from mongo_sansio.bson import Int64, ObjectId
from mongo_sansio.client import ClientCore, ClientSettings
from mongo_sansio.client.runtime import OpenStream, Receive, Resolve, SendAll, Signal, Wait
from mongo_sansio.client.srv_polling import SrvSource
from mongo_sansio.errors import NetworkError, NetworkTimeout
from mongo_sansio.flow import Now, Sleep
from mongo_sansio.uri import parse_uri
from mongo_sansio.wire import (
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    MessageReader,
    OpMsg,
    OpQuery,
    encode_op_msg,
    encode_op_reply,
)

__all__ = [
    "Behaviour",
    "Cut",
    "Drop",
    "FakeServer",
    "FakeStream",
    "Hang",
    "Later",
    "Loop",
    "Trickle",
    "NOT_FINISHED",
    "Seen",
    "make_core",
    "member_hello",
    "standalone_hello",
]

Address = tuple[str, int]
Task = Generator[Any, Any, Any]

METADATA: Mapping[str, Any] = {
    "driver": {"name": "mongo-sansio-tests", "version": "0"},
    "os": {"type": "Linux"},
    "platform": "CPython",
}


def name_of(address: Address) -> str:
    return f"{address[0]}:{address[1]}"


def standalone_hello() -> dict[str, Any]:
    return {
        "ok": 1.0,
        "helloOk": True,
        "isWritablePrimary": True,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000,
        "logicalSessionTimeoutMinutes": 30,
    }


def member_hello(
    address: Address, hosts: tuple[Address, ...], primary: Address | None, set_name: str = "rs0"
) -> dict[str, Any]:
    """A replica set member's hello (without topologyVersion, which the server adds)."""
    hello = standalone_hello()
    hello.update(
        isWritablePrimary=address == primary,
        secondary=address != primary,
        setName=set_name,
        hosts=[name_of(h) for h in hosts],
        me=name_of(address),
        setVersion=1,
    )
    if primary is not None:
        hello["primary"] = name_of(primary)
        hello["electionId"] = ObjectId(b"\x7f\xff\xff\xff" + bytes(8))
    return hello


# -- what a server does with a command -----------------------------------------------------------


class Behaviour:
    """Base of the scripted ways to answer (or not) a command."""


@attrs.frozen
class Hang(Behaviour):
    """Never answer."""


@attrs.frozen
class Drop(Behaviour):
    """Close the connection without answering."""


@attrs.frozen
class Cut(Behaviour):
    """Write the first ``size`` bytes of ``reply``, then close the connection."""

    size: int
    reply: Mapping[str, Any] = attrs.field(factory=lambda: {"ok": 1.0})


@attrs.frozen
class Later(Behaviour):
    """Answer ``reply`` after ``seconds`` of the fake clock."""

    seconds: float
    reply: Mapping[str, Any] = attrs.field(factory=lambda: {"ok": 1.0})


@attrs.frozen
class Trickle(Behaviour):
    """Write ``reply`` one byte every ``interval`` seconds of the fake clock."""

    interval: float
    reply: Mapping[str, Any] = attrs.field(factory=lambda: {"ok": 1.0})


@attrs.frozen
class Seen:
    """A request a server received."""

    stream: int
    db: str
    name: str
    body: Mapping[str, Any]
    flags: int


_EOF = object()


class FakeStream:
    """One connection between the client and a :class:`FakeServer`."""

    def __init__(self, loop: Loop, server: FakeServer, stream_id: int) -> None:
        self.loop = loop
        self.server = server
        self.id = stream_id
        self.reader = MessageReader()
        self.inbox: deque[tuple[float, Any]] = deque()  # (when, bytes or _EOF), in time order
        self.closed = False  # closed by the client
        self.server_closed = False
        self.awaiting: tuple[int, float, bool] | None = None  # request id, due, exhaust
        self.max_await = 0.0

    def __repr__(self) -> str:
        return f"<FakeStream {self.id} to {name_of(self.server.address)}>"

    # client -> server
    def from_client(self, data: bytes) -> None:
        if self.server_closed:
            return
        self.reader.receive_data(data)
        while True:
            message = self.reader.next_message()
            if not isinstance(message, OpMsg | OpQuery):
                return
            self.server.handle(self, message)

    # server -> client
    def write(self, data: bytes, at: float | None = None) -> None:
        when = self.loop.now if at is None else at
        self.inbox.append((when, data))
        self.loop.wake()

    def write_eof(self, at: float | None = None) -> None:
        self.server_closed = True
        self.awaiting = None
        when = self.loop.now if at is None else at
        self.inbox.append((when, _EOF))
        self.loop.wake()

    def poll(self, now: float) -> None:
        if self.awaiting is not None and now >= self.awaiting[1]:
            self.server.answer_awaiting(self)

    def take(self, now: float, chunk: int | None) -> bytes | None:
        """Bytes that arrived by ``now`` (``b""`` at the end), or None."""
        self.poll(now)
        if not self.inbox or self.inbox[0][0] > now:
            return None
        when, data = self.inbox[0]
        if data is _EOF:
            return b""
        if chunk is not None and len(data) > chunk:
            self.inbox[0] = (when, data[chunk:])
            return bytes(data[:chunk])
        self.inbox.popleft()
        return bytes(data)

    def next_due(self) -> float | None:
        dues = []
        if self.inbox:
            dues.append(self.inbox[0][0])
        if self.awaiting is not None:
            dues.append(self.awaiting[1])
        return min(dues) if dues else None


class FakeServer:
    """A scripted mongod at ``address`` (see the module docstring).

    ``hello`` is its hello reply (a standalone's by default); :meth:`bump` changes it and
    moves its topologyVersion, answering held awaitable hellos.  ``handlers`` map a command name
    to a function of the body returning a reply or a :class:`Behaviour`; ``script`` queues
    behaviours per command name, used first.  ``down`` refuses connections; ``hangs`` never
    completes them; ``chunk`` bounds the bytes of one ``Receive``; ``hello_behaviour`` answers
    the handshake's hello instead of the hello document (e.g. :class:`Hang`), ``hello_script``
    the handshakes of the next connections in turn (None: the hello document); ``hello_delay``
    delays every hello that is not awaitable (a round trip time the monitors measure).
    """

    def __init__(self, address: Address, hello: Mapping[str, Any] | None = None) -> None:
        self.address = address
        self.hello: dict[str, Any] = dict(hello or standalone_hello())
        self.process_id = ObjectId(bytes(11) + bytes([address[1] % 256]))
        self.counter = 0
        self.handlers: dict[str, Callable[[Mapping[str, Any]], Any]] = {}
        self.script: dict[str, deque[Any]] = {}
        self.down = False
        self.hangs = False
        self.chunk: int | None = None
        self.hello_behaviour: Behaviour | None = None
        self.hello_script: deque[Behaviour | None] = deque()
        self.hello_delay = 0.0
        self.streams: list[FakeStream] = []
        self.requests: list[Seen] = []
        self._request_ids = 10_000
        self._connection_ids = 0

    # -- control --------------------------------------------------------------------------------

    def bump(self, **changes: Any) -> None:
        """Change the hello (``key=None`` removes a key) and move the topologyVersion."""
        for key, value in changes.items():
            if value is None:
                self.hello.pop(key, None)
            else:
                self.hello[key] = value
        self.counter += 1
        for stream in self.streams:
            if stream.awaiting is not None:
                self.answer_awaiting(stream)

    def queue(self, name: str, *behaviours: Any) -> None:
        self.script.setdefault(name, deque()).extend(behaviours)

    def commands(self, name: str | None = None) -> list[Seen]:
        """The requests received, hellos excluded (or only those named ``name``)."""
        hellos = {"hello", "ismaster"}
        return [
            r
            for r in self.requests
            if (r.name == name if name is not None else r.name.lower() not in hellos)
        ]

    def hello_document(self) -> dict[str, Any]:
        return {
            **self.hello,
            "topologyVersion": {"processId": self.process_id, "counter": Int64(self.counter)},
        }

    # -- the protocol -----------------------------------------------------------------------------

    def _next_id(self) -> int:
        self._request_ids += 1
        return self._request_ids

    def handle(self, stream: FakeStream, message: OpMsg | OpQuery) -> None:
        body = dict(message.body)
        name = next(iter(body), "")
        if isinstance(message, OpQuery):
            db = message.full_collection_name.split(".")[0]
        else:
            db = str(body.get("$db", ""))
        self.requests.append(Seen(stream.id, db, name, body, message.flags))
        legacy = isinstance(message, OpQuery)
        if name.lower() in ("hello", "ismaster"):
            if len([r for r in self.requests if r.stream == stream.id]) == 1:
                behaviour = (
                    self.hello_script.popleft() if self.hello_script else self.hello_behaviour
                )
                if behaviour is not None:
                    self._act(stream, message.request_id, behaviour, legacy)
                    return
                self._connection_ids += 1
                reply = {**self.hello_document(), "connectionId": self._connection_ids}
                if self.hello_delay:
                    self._act(stream, message.request_id, Later(self.hello_delay, reply), legacy)
                    return
                self._send(stream, message.request_id, reply, legacy)
                return
            version = body.get("topologyVersion")
            if version is not None and "maxAwaitTimeMS" in body:
                exhaust = bool(message.flags & EXHAUST_ALLOWED)
                stream.max_await = float(body["maxAwaitTimeMS"]) / 1000
                stream.awaiting = (message.request_id, stream.loop.now + stream.max_await, exhaust)
                if version.get("counter") != self.counter:
                    self.answer_awaiting(stream)
                return
            if self.hello_delay:
                self._act(
                    stream,
                    message.request_id,
                    Later(self.hello_delay, self.hello_document()),
                    legacy,
                )
                return
            self._send(stream, message.request_id, self.hello_document(), legacy)
            return
        queued = self.script.get(name)
        if queued:
            outcome = queued.popleft()
        else:
            handler = self.handlers.get(name)
            outcome = {"ok": 1.0} if handler is None else handler(body)
        self._act(stream, message.request_id, outcome, legacy)

    def _act(self, stream: FakeStream, request_id: int, outcome: Any, legacy: bool) -> None:
        if isinstance(outcome, Hang):
            return
        if isinstance(outcome, Drop):
            stream.write_eof()
            return
        if isinstance(outcome, Cut):
            data = self._encode(request_id, outcome.reply, legacy)
            stream.write(data[: outcome.size])
            stream.write_eof()
            return
        if isinstance(outcome, Trickle):
            data = self._encode(request_id, outcome.reply, legacy)
            for i in range(len(data)):
                stream.write(data[i : i + 1], at=stream.loop.now + (i + 1) * outcome.interval)
            return
        if isinstance(outcome, Later):
            data = self._encode(request_id, outcome.reply, legacy)
            stream.write(data, at=stream.loop.now + outcome.seconds)
            return
        self._send(stream, request_id, outcome, legacy)

    def _encode(
        self, response_to: int, reply: Mapping[str, Any], legacy: bool, flags: int = 0
    ) -> bytes:
        if legacy:
            return encode_op_reply([reply], request_id=self._next_id(), response_to=response_to)
        return encode_op_msg(
            dict(reply), request_id=self._next_id(), response_to=response_to, flags=flags
        )

    def _send(
        self, stream: FakeStream, response_to: int, reply: Mapping[str, Any], legacy: bool
    ) -> None:
        stream.write(self._encode(response_to, reply, legacy))

    def answer_awaiting(self, stream: FakeStream) -> None:
        assert stream.awaiting is not None
        response_to, _, exhaust = stream.awaiting
        stream.awaiting = None
        request_id = self._next_id()
        data = encode_op_msg(
            self.hello_document(),
            request_id=request_id,
            response_to=response_to,
            flags=MORE_TO_COME if exhaust else 0,
        )
        stream.write(data)
        if exhaust:
            stream.awaiting = (request_id, stream.loop.now + stream.max_await, True)


# -- the loop ------------------------------------------------------------------------------------


class _NotFinished:
    def __repr__(self) -> str:
        return "NOT_FINISHED"


#: What :meth:`Loop.run` returns for a flow it cut.
NOT_FINISHED: Any = _NotFinished()


class _Task:
    __slots__ = (
        "gen",
        "name",
        "pending",
        "answer",
        "error",
        "done",
        "result",
        "failure",
        "primitives",
        "until",
        "token",
        "primitive_log",
        "watched",
        "speed",
    )

    def __init__(self, gen: Task, name: str) -> None:
        self.gen = gen
        self.name = name
        self.pending: Any = None
        self.answer: Any = None
        self.error: BaseException | None = None
        self.done = False
        self.result: Any = None
        self.failure: BaseException | None = None
        self.primitives = 0
        self.until: float | None = None  # a sleep's end
        self.token: list[bool] | None = None  # a wait's wake-up flag
        self.primitive_log: list[str] = []
        self.watched = False
        self.speed = 1.0  # with a shuffling Loop: the chance to take a step in a round

    def __repr__(self) -> str:
        return f"<task {self.name} pending={self.pending!r}>"


class Loop:
    """The scripted runtime (see the module docstring).  ``servers`` are keyed by address."""

    def __init__(
        self, *servers: FakeServer, start: float = 1000.0, order_seed: int | None = None
    ) -> None:
        self.now = start
        # with a seed, the tasks that can move take their steps in a shuffled order each
        # round, and some of them only in a later round: other interleavings of the same
        # events (the runtime lets go of the core at every primitive)
        self._order = None if order_seed is None else random.Random(order_seed)
        self.servers: dict[Address, FakeServer] = {s.address: s for s in servers}
        self.tasks: list[_Task] = []
        self.streams: list[FakeStream] = []
        self.background_failures: list[tuple[str, BaseException]] = []
        self._stream_ids = 0
        self._woken = False
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        #: answers the core's DNS questions (SRV polling); None: no DNS here
        self.dns: Callable[[Any], Any] | None = None

    # -- what the core is given ---------------------------------------------------------------

    def spawn(self, task: Task, name: str) -> None:
        self._add(_Task(task, name))

    def _add(self, task: _Task) -> _Task:
        if self._order is not None:
            task.speed = self._order.choice([0.05, 0.2, 0.5, 1.0])
        self.tasks.append(task)
        return task

    def close_stream(self, stream: Any) -> None:
        assert isinstance(stream, FakeStream)
        stream.closed = True
        self.wake()

    def wake(self) -> None:
        self._woken = True

    def at(self, when: float, action: Callable[[], None]) -> None:
        """Call ``action`` when the fake clock reaches ``when``."""
        self._timers.append((when, len(self._timers), action))
        self._timers.sort(key=lambda t: (t[0], t[1]))

    # -- running ------------------------------------------------------------------------------

    def start(self, flow: Task, name: str) -> _Task:
        """Start ``flow`` as a task whose outcome the test reads (``done``, ``result``,
        ``failure``) after running the loop."""
        task = _Task(flow, name)
        task.watched = True
        return self._add(task)

    def run_until(self, predicate: Callable[[], bool], limit: float = 120.0) -> None:
        """Run until ``predicate()`` holds (AssertionError after ``limit`` fake seconds)."""
        horizon = self.now + limit
        while not predicate():
            if not self._advance(horizon):
                raise AssertionError(f"not reached by {self.now}; tasks: {self.tasks}")

    def run(
        self,
        flow: Task,
        *,
        cut_after: int | None = None,
        throw: BaseException | None = None,
        limit: float = 120.0,
    ) -> Any:
        """Run ``flow`` (and the background tasks) until it ends; return its result or raise
        its error.  ``cut_after``: close the flow (or throw ``throw`` into it) when it yields
        its ``cut_after``-th primitive, and return :data:`NOT_FINISHED` (the thrown exception
        propagates if the flow lets it through; it must be ``throw`` itself).  ``limit``: fake
        seconds after which the flow counts as hung (an AssertionError)."""
        main = self._add(_Task(flow, "main"))
        horizon = self.now + limit
        try:
            while not main.done:
                if (
                    cut_after is not None
                    and main.pending is not None
                    and main.primitives >= cut_after
                ):
                    self.tasks.remove(main)
                    if throw is None:
                        flow.close()
                    else:
                        try:
                            flow.throw(throw)
                        except BaseException as exc:  # noqa: BLE001 - checked below
                            assert exc is throw, f"{exc!r} escaped instead of {throw!r}"
                        else:
                            raise AssertionError("the flow swallowed a BaseException")
                    return NOT_FINISHED
                if not self._advance(horizon):
                    raise AssertionError(
                        f"the flow hung at {main.pending!r} (now {self.now}); tasks: {self.tasks}"
                    )
        finally:
            if main in self.tasks:
                self.tasks.remove(main)
        if main.failure is not None:
            raise main.failure
        return main.result

    def run_for(self, seconds: float) -> None:
        """Let the background tasks run for ``seconds`` of fake time."""
        horizon = self.now + seconds
        while self._advance(horizon):
            pass
        self.now = max(self.now, horizon)

    def settle(self) -> None:
        """Run every task that can move now, without moving the clock."""
        while self._round():
            pass

    def _advance(self, horizon: float) -> bool:
        """One round of steps, or a clock jump; False when nothing can happen before
        ``horizon``."""
        if self._round():
            return True
        if self._timers and self._timers[0][0] <= self.now:
            _, _, action = self._timers.pop(0)
            action()
            return True
        due = self._next_due()
        if due is None or due > horizon:
            return False
        self.now = max(self.now, due)
        return True

    def _round(self) -> bool:
        moved = False
        tasks = list(self.tasks)
        if self._order is not None:
            self._order.shuffle(tasks)
        order = self._order
        for task in tasks:
            if task.done:
                continue
            pending = task.pending
            if pending is None or self._resolve(task):
                if order is not None and moved and order.random() >= task.speed:
                    continue  # this one steps in a later round (its answer is kept)
                self._step(task)
                moved = True
            elif task.pending is not pending:  # a SendAll sent, its read still to come
                moved = True
        self.tasks = [t for t in self.tasks if not t.done or t.name == "main" or t.watched]
        return moved

    def _step(self, task: _Task) -> None:
        answer, error = task.answer, task.error
        task.answer = task.error = None
        try:
            request = task.gen.throw(error) if error is not None else task.gen.send(answer)
        except StopIteration as stop:
            task.done, task.result = True, stop.value
            return
        except BaseException as exc:  # noqa: BLE001 - the task's outcome
            task.done, task.failure = True, exc
            if task.name != "main" and not task.watched:
                self.background_failures.append((task.name, exc))
            return
        task.pending = request
        task.primitives += 1
        task.primitive_log.append(type(request).__name__)
        task.until = None
        task.token = None

    def _resolve(self, task: _Task) -> bool:
        """Whether ``task``'s pending primitive completed (its answer or error set)."""
        request = task.pending
        now = self.now
        kind = type(request)
        done = True
        if kind is Now:
            task.answer = now
        elif kind is Sleep:
            if task.until is None:
                task.until = now + max(0.0, request.seconds)
            done = now >= task.until
        elif kind is Wait:
            signal: Signal = request.signal
            if task.token is None:
                if signal.fired:
                    task.answer = True
                    task.pending = None
                    return True
                token = [False]
                task.token = token

                def waker(token: list[bool] = token) -> None:
                    token[0] = True
                    self.wake()

                signal.attach(waker)
            if task.token[0]:
                task.answer = True
            elif request.deadline is not None and now >= request.deadline:
                task.answer = False
            else:
                done = False
        elif kind is OpenStream:
            server = self.servers.get(request.address)
            if request.deadline is not None and now >= request.deadline:
                task.error = NetworkTimeout(f"connect to {name_of(request.address)} timed out")
            elif server is None or server.down:
                task.error = NetworkError(f"{name_of(request.address)}: connection refused")
            elif server.hangs:
                done = False
            else:
                self._stream_ids += 1
                stream = FakeStream(self, server, self._stream_ids)
                server.streams.append(stream)
                self.streams.append(stream)
                task.answer = stream
        elif kind is SendAll:
            stream = request.stream
            if request.deadline is not None and now >= request.deadline:
                task.error = NetworkTimeout("send timed out")
            elif stream.closed:
                task.error = NetworkError("the stream is closed")
            else:
                stream.from_client(b"".join(bytes(b) for b in request.buffers))
                if request.receive:
                    # then reads as a Receive would, from the next round: a cut (a cancelled
                    # task) may land between the send and the read, as on a real runtime, so
                    # the read counts as a primitive of its own
                    task.pending = Receive(stream, request.deadline, request.receive)
                    task.primitives += 1
                    task.primitive_log.append("Receive")
                    return False
        elif kind is Receive:
            stream = request.stream
            if stream.closed:
                task.error = NetworkError("the stream is closed")
            else:
                data = stream.take(now, stream.server.chunk)
                if data is not None:
                    task.answer = data
                elif request.deadline is not None and now >= request.deadline:
                    task.error = NetworkTimeout("receive timed out")
                else:
                    done = False
        elif kind is Resolve and self.dns is not None:
            task.answer = self.dns(request.question)
        else:
            task.error = AssertionError(f"not a primitive: {request!r}")
        if done:
            task.pending = None
        return done

    def _next_due(self) -> float | None:
        dues: list[float] = []
        for task in self.tasks:
            request = task.pending
            if task.done or request is None:
                continue
            if task.until is not None:
                dues.append(task.until)
            deadline = getattr(request, "deadline", None)
            if deadline is not None:
                dues.append(deadline)
            if isinstance(request, Receive) and isinstance(request.stream, FakeStream):
                due = request.stream.next_due()
                if due is not None:
                    dues.append(due)
        dues.extend(t[0] for t in self._timers)
        later = [d for d in dues if d > self.now]
        return min(later) if later else None

    # -- inspection ---------------------------------------------------------------------------

    def task_names(self) -> list[str]:
        return [t.name for t in self.tasks if not t.done]

    def open_streams(self) -> list[FakeStream]:
        return [s for s in self.streams if not s.closed]


def make_core(
    loop: Loop,
    uri: str,
    *,
    publish: Callable[[object], None] | None = None,
    srv: SrvSource | None = None,
) -> ClientCore:
    """A core for ``uri`` on ``loop`` (opened at the loop's time)."""
    settings = ClientSettings.from_connection_string(parse_uri(uri))
    core = ClientCore(
        settings,
        topology_id=ObjectId(bytes(12)),
        draw=lambda n: 0,
        nonce=lambda: bytes(24),
        metadata=METADATA,
        spawn=loop.spawn,
        close_stream=loop.close_stream,
        publish=publish,
        srv=srv,
    )
    core.open(loop.now)
    return core
