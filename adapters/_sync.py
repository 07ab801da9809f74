"""The synchronous interpreter of the core's flows, shared by the blocking and gevent clients.

:class:`SyncInterpreter` runs a flow of the runtime seam's primitives
(:mod:`mongo_sansio.client.runtime`) to its end, carrying each primitive out with a
:class:`SyncRuntime` -- the few lines that differ between threads and greenlets: open a stream,
send, receive, close, an event to wait on, a task, a lock, the clock.  It decides nothing: a
library error met while carrying a primitive out is thrown into the flow, which decides what it
means; anything else (KeyboardInterrupt, a greenlet killed, a bug) closes the flow, which puts
back what it held, and propagates.

The core is guarded by the runtime's lock: held while a flow takes a step (and while the core
is called), never during I/O or while waiting, so tasks share the client's state and their I/O
runs in parallel.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from mongo_sansio.auth.oidc_providers import CallOidcCallback
from mongo_sansio.client.runtime import OpenStream, Receive, Resolve, SendAll, StartTls, Task, Wait
from mongo_sansio.errors import LocalProtocolError, MongoError, NetworkTimeout
from mongo_sansio.flow import Now, Sleep

from ._oidc_io import OIDC_REQUESTS
from ._oidc_io import carry_out as carry_out_oidc

__all__ = ["SyncRuntime", "SyncEvent", "SyncInterpreter"]

T = TypeVar("T")
Buffer = bytes | bytearray | memoryview


class SyncEvent(Protocol):
    def set(self) -> None: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class SyncRuntime(Protocol):
    """What a synchronous runtime provides (threads, or gevent's greenlets)."""

    lock: Any  # a re-entrant lock (context manager)

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    def event(self) -> SyncEvent: ...

    def spawn(self, target: Callable[[], None], name: str) -> None: ...

    def open_stream(
        self, address: tuple[str, int], timeout: float | None, tls: bool = ...
    ) -> Any: ...

    def start_tls(
        self, stream: Any, address: tuple[str, int], timeout: float | None, https: bool
    ) -> Any: ...

    def send_all(self, stream: Any, buffers: Sequence[Buffer], timeout: float | None) -> None: ...

    def receive(self, stream: Any, timeout: float | None, size: int = ...) -> bytes: ...

    def close_stream(self, stream: Any, /) -> None: ...
    def resolve(self, question: Any) -> Any: ...
    def in_thread(self, function: Callable[[Any], Any], argument: Any) -> Any: ...


class SyncInterpreter:
    """Runs flows of primitives on a :class:`SyncRuntime` (see the module docstring)."""

    def __init__(self, runtime: SyncRuntime) -> None:
        self.runtime = runtime
        self.lock = runtime.lock

    def run(self, flow: Task) -> Any:
        """Drive ``flow`` to its result, here and now."""
        lock = self.lock
        answer: Any = None
        error: MongoError | None = None
        while True:
            with lock:
                try:
                    request = flow.send(answer) if error is None else flow.throw(error)
                except StopIteration as stop:
                    return stop.value
            answer, error = None, None
            try:
                answer = self._carry_out(request)
            except MongoError as exc:
                error = exc
            except BaseException:
                with lock:
                    flow.close()
                raise

    def spawn(self, task: Task, name: str) -> None:
        """Run ``task`` in the background; a task that fails is reported, never raised."""

        def target() -> None:
            try:
                self.run(task)
            except MongoError:
                pass  # a background task's last error has already been reported to the core
            except BaseException as exc:  # noqa: BLE001 - a bug in a background task must be seen
                if isinstance(exc, getattr(self.runtime, "task_stopped", ())):
                    return  # the runtime stopped it on purpose (gevent's GreenletExit)
                print(f"mongo-sansio: background task {name!r} failed:", file=sys.stderr)
                traceback.print_exc()

        self.runtime.spawn(target, name)

    def _remaining(self, deadline: float | None) -> float | None:
        if deadline is None:
            return None
        remaining = deadline - self.runtime.monotonic()
        if remaining <= 0:
            raise NetworkTimeout("the operation's time limit expired")
        return remaining

    def _carry_out(self, request: object) -> Any:
        runtime = self.runtime
        if type(request) is SendAll:  # (every command: tested first)
            runtime.send_all(request.stream, request.buffers, self._remaining(request.deadline))
            if request.receive:
                return runtime.receive(
                    request.stream, self._remaining(request.deadline), request.receive
                )
            return None
        if isinstance(request, Receive):
            return runtime.receive(request.stream, self._remaining(request.deadline), request.size)
        if isinstance(request, Now):
            return runtime.monotonic()
        if isinstance(request, Wait):
            signal = request.signal
            with self.lock:
                if signal.fired:
                    return True
                event = runtime.event()
                signal.attach(event.set)
            if request.deadline is None:
                return event.wait()
            return event.wait(max(0.0, request.deadline - runtime.monotonic()))
        if isinstance(request, OpenStream):
            if request.tls:
                return runtime.open_stream(request.address, self._remaining(request.deadline))
            return runtime.open_stream(
                request.address, self._remaining(request.deadline), False
            )
        if isinstance(request, StartTls):
            return runtime.start_tls(
                request.stream, request.address, self._remaining(request.deadline), request.https
            )
        if isinstance(request, Sleep):
            runtime.sleep(max(0.0, request.seconds))
            return None
        if isinstance(request, Resolve):
            return runtime.resolve(request.question)
        if isinstance(request, CallOidcCallback):
            return carry_out_oidc(request)  # user code runs where the connection is made
        if isinstance(request, OIDC_REQUESTS):
            return runtime.in_thread(carry_out_oidc, request)
        raise LocalProtocolError(f"a flow yielded {request!r}, which is not a primitive")
