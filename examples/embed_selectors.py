"""mongo-sansio's core driven by nothing but ``selectors``, in one thread.

The worked example of docs/embedding.md: a tiny event loop that carries out the runtime seam's
primitives (OpenStream, SendAll, Receive, Wait, Now, Sleep) for every flow of the client core:
its monitors, connection openers and upkeep as background tasks, each operation in the
foreground.  It discovers a replica set, authenticates (SCRAM, from the URI's credentials),
inserts, reads the documents back in batches of two (getMores), and takes an insert from a
change stream.  No mongo_sansio.adapters, no transports, no threads.

    python examples/embed_selectors.py 'mongodb://user:pw@host:port/?replicaSet=rs0'
    python examples/embed_selectors.py      # starts a simulated replica set with a user first
"""

from __future__ import annotations

import heapq
import itertools
import os
import platform
import random
import selectors
import socket
import sys
import time
from collections import deque
from collections.abc import Callable, Generator
from typing import Any, cast

from mongo_sansio.client import ClientCore, ClientSettings, drive
from mongo_sansio.client.execute import end_sessions
from mongo_sansio.client.runtime import OpenStream, Receive, SendAll, Wait
from mongo_sansio.cursors import (
    ChangeStream,
    ChangeStreamOptions,
    ChangeStreamTarget,
    change_stream_next,
    change_stream_open,
    cursor_next,
)
from mongo_sansio.errors import LocalProtocolError, NetworkError, NetworkTimeout
from mongo_sansio.flow import Now, Sleep
from mongo_sansio.ops.database import DatabaseOps
from mongo_sansio.selection import ReadPreference
from mongo_sansio.uri import parse_uri

Gen = Generator[Any, Any, Any]
Attempt = Callable[[], tuple[Any, BaseException | None]]  # (answer, error); answer ...: again


class Task:
    """A flow being run; ``turn`` counts its steps, so a stale wake-up is recognised."""

    def __init__(self, gen: Gen) -> None:
        self.gen, self.turn, self.done = gen, 0, False
        self.result: Any = None
        self.error: BaseException | None = None


class Loop:
    """The runtime: a ready queue, a timer heap, one selector."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.ready: deque[tuple[Task, Any, BaseException | None]] = deque()
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.order = itertools.count()

    def spawn(self, gen: Gen, name: str) -> None:  # given to the core
        self.ready.append((Task(gen), None, None))

    def close_stream(self, sock: socket.socket) -> None:  # given to the core
        if sock.fileno() != -1 and sock in self.selector.get_map():
            task, turn, _ = self.selector.unregister(sock).data  # a read blocked on it ends
            self.resume(task, turn, None, NetworkError("the stream was closed"))
        sock.close()

    def resume(self, task: Task, turn: int, answer: Any, error: BaseException | None = None) -> None:
        if task.turn == turn:  # still waiting for this primitive: the first answer wins
            task.turn += 1
            self.ready.append((task, answer, error))

    def later(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self.timers, (when, next(self.order), action))

    def park(self, task: Task, sock: socket.socket, events: int, attempt: Attempt,
             deadline: float | None) -> None:
        turn = task.turn
        self.selector.register(sock, events, (task, turn, attempt))
        if deadline is not None:
            def expire() -> None:
                if task.turn == turn:
                    self.selector.unregister(sock)
                    self.resume(task, turn, None, NetworkTimeout("the deadline passed"))
            self.later(deadline, expire)

    def carry_out(self, task: Task, request: Any) -> None:
        """One primitive: answered now, or the task parked until it can be."""
        turn, now = task.turn, time.monotonic()
        deadline = getattr(request, "deadline", None)
        if isinstance(request, Now):
            self.resume(task, turn, now)
        elif isinstance(request, Sleep):
            self.later(now + request.seconds, lambda: self.resume(task, turn, None))
        elif isinstance(request, Wait):  # one thread: nothing fires between check and attach
            if request.signal.fired:
                return self.resume(task, turn, True)
            request.signal.attach(lambda: self.resume(task, turn, True))
            if deadline is not None:
                self.later(deadline, lambda: self.resume(task, turn, False))
        elif deadline is not None and deadline <= now:
            self.resume(task, turn, None, NetworkTimeout("the deadline passed"))
        elif isinstance(request, OpenStream):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.connect_ex((socket.gethostbyname(request.address[0]), request.address[1]))

            def connected() -> tuple[Any, BaseException | None]:
                if failed := sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    sock.close()
                    return None, NetworkError(os.strerror(failed))
                return sock, None
            self.park(task, sock, selectors.EVENT_WRITE, connected, deadline)
        elif isinstance(request, SendAll):
            stream = cast(socket.socket, request.stream)
            data = memoryview(b"".join(request.buffers))

            def send() -> tuple[Any, BaseException | None]:
                nonlocal data
                data = data[stream.send(data):]
                if not data and request.receive:  # then the reply's first bytes, as Receive
                    reply = (task, turn, lambda: (stream.recv(request.receive), None))
                    self.selector.modify(stream, selectors.EVENT_READ, reply)
                    return ..., None
                return (... if data else None), None
            self.park(task, stream, selectors.EVENT_WRITE, send, deadline)
        elif isinstance(request, Receive):
            reader = cast(socket.socket, request.stream)
            self.park(task, reader, selectors.EVENT_READ, lambda: (reader.recv(65536), None),
                      deadline)
        else:  # Resolve: only mongodb+srv:// clients ask DNS questions
            self.resume(task, turn, None, LocalProtocolError(f"not supported here: {request!r}"))

    def run(self, flow: Gen) -> Any:
        """Run ``flow`` to its result; the background tasks run meanwhile."""
        main = Task(flow)
        self.ready.append((main, None, None))
        while not main.done:
            while self.ready:
                task, answer, error = self.ready.popleft()
                try:
                    request = task.gen.send(answer) if error is None else task.gen.throw(error)
                except StopIteration as stop:
                    task.done, task.result = True, stop.value
                except Exception as exc:  # an operation's error; a background one is a bug
                    task.done, task.error = True, exc
                    if task is not main:
                        print(f"background task failed: {exc!r}", file=sys.stderr)
                else:
                    self.carry_out(task, request)
            if main.done:
                break
            timeout = max(0.0, self.timers[0][0] - time.monotonic()) if self.timers else None
            for key, _ in self.selector.select(timeout):
                task, turn, attempt = key.data
                try:
                    answer, error = attempt()
                except OSError as exc:
                    answer, error = None, NetworkError(str(exc))
                if answer is not ...:
                    self.selector.unregister(key.fileobj)
                    self.resume(task, turn, answer, error)
            while self.timers and self.timers[0][0] <= time.monotonic():
                heapq.heappop(self.timers)[2]()
        if main.error is not None:
            raise main.error
        return main.result


def main(uri: str) -> None:
    loop = Loop()
    metadata = {"driver": {"name": "embed-selectors", "version": "0"},
                "os": {"type": platform.system()}, "platform": platform.python_implementation()}
    core = ClientCore(ClientSettings.from_connection_string(parse_uri(uri)),
                      topology_id=os.urandom(12).hex(), draw=random.randrange,
                      nonce=lambda: os.urandom(24), metadata=metadata,
                      spawn=loop.spawn, close_stream=loop.close_stream)
    core.open(time.monotonic())

    def run(flow: Gen) -> Any:  # one operation, at most 10 s (client-side operations timeout)
        return loop.run(drive(core, flow, deadline=time.monotonic() + 10))

    things = DatabaseOps("embed").get_collection("things")
    stream = ChangeStream(ChangeStreamTarget.collection("embed", "things"), [],
                          ChangeStreamOptions(max_await_time_ms=200), ReadPreference())
    run(change_stream_open(stream))
    run(things.delete_many({}))
    run(things.insert_many([{"n": n} for n in range(5)]))
    cursor = run(things.find({}, sort=[("n", 1)], batch_size=2))
    found = []
    while (document := run(cursor_next(cursor))) is not None:
        found.append(document["n"])
    print("found", found)
    primary = core.description.primary  # discovered by the monitors, background tasks here
    print("topology", core.description.type.name, "primary", primary and primary.address)
    run(things.insert_one({"n": 99}))
    while (change := run(change_stream_next(stream)))["operationType"] != "insert" or \
            change["fullDocument"]["n"] != 99:
        pass  # the delete and the first inserts come first
    print("change", change["operationType"], change["fullDocument"]["n"])
    loop.run(end_sessions(core))  # as a client's close() does, best effort
    core.close(time.monotonic())


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:  # the adapters are imported only to start the simulator
        from mongo_sansio.adapters.sim import (  # type: ignore[import-not-found, unused-ignore]
            SimulatedReplicaSet,
        )

        with SimulatedReplicaSet(members=3, auth={"ada": "lovelace"}) as rs:
            main(rs.uri_with_credentials())
