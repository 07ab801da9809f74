"""The asynchronous interpreter of the core's flows, shared by the asyncio and trio clients.

:class:`AsyncInterpreter` runs a flow of the runtime seam's primitives
(:mod:`mongo_sansio.client.runtime`) to its end, awaiting each primitive with an
:class:`AsyncRuntime` -- the few lines that differ between asyncio and trio: open a stream
(TLS included), send, receive, close, an event to wait on with a deadline, a background task,
the clock, DNS.  It decides nothing: a library error met while carrying a primitive out is
thrown into the flow, which decides what it means; anything else (the task cancelled, a trio
cancel scope, KeyboardInterrupt, a bug) closes the flow, which puts back what it held, and
propagates.

No lock: the core is only ever touched from the event loop's one thread, and a flow's steps
between two awaits run without interruption, so tasks share the client's state safely.  A
:class:`~mongo_sansio.client.runtime.Signal` is fired by core code running on that same thread,
so waking an event is a plain ``set()``.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from mongo_sansio.auth.oidc_providers import CallbackOutcome, CallOidcCallback
from mongo_sansio.client.runtime import OpenStream, Receive, Resolve, SendAll, StartTls, Task, Wait
from mongo_sansio.errors import LocalProtocolError, MongoError, NetworkTimeout
from mongo_sansio.flow import Now, Sleep

from ._oidc_io import OIDC_REQUESTS
from ._oidc_io import carry_out as carry_out_oidc

__all__ = ["AsyncRuntime", "AsyncEvent", "AsyncInterpreter"]

Buffer = bytes | bytearray | memoryview


class AsyncEvent(Protocol):
    def set(self) -> None: ...
    async def wait(self, timeout: float | None) -> bool:
        """True when set, False when ``timeout`` seconds passed first (None: no limit)."""
        ...


class AsyncRuntime(Protocol):
    """What an asynchronous runtime provides (asyncio, trio)."""

    def monotonic(self) -> float: ...
    async def sleep(self, seconds: float) -> None: ...
    def event(self) -> AsyncEvent: ...
    def spawn(self, target: Callable[[], Awaitable[None]], name: str) -> None: ...
    async def open_stream(
        self, address: tuple[str, int], timeout: float | None, tls: bool = ...
    ) -> Any: ...
    async def start_tls(
        self, stream: Any, address: tuple[str, int], timeout: float | None, https: bool
    ) -> Any: ...
    async def send_all(
        self, stream: Any, buffers: Sequence[Buffer], timeout: float | None
    ) -> None: ...
    async def receive(self, stream: Any, timeout: float | None, size: int = ...) -> bytes: ...
    def close_stream(self, stream: Any, /) -> None: ...
    async def resolve(self, question: Any) -> Any: ...
    async def in_thread(
        self, function: Callable[[Any], Any], argument: Any, timeout: float | None = None
    ) -> Any:
        """``function(argument)`` in a worker thread; TimeoutError after ``timeout``."""
        ...


class AsyncInterpreter:
    """Runs flows of primitives on an :class:`AsyncRuntime` (see the module docstring)."""

    def __init__(self, runtime: AsyncRuntime) -> None:
        self.runtime = runtime

    async def run(self, flow: Task) -> Any:
        """Drive ``flow`` to its result."""
        answer: Any = None
        error: MongoError | None = None
        while True:
            try:
                request = flow.send(answer) if error is None else flow.throw(error)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            try:
                answer = await self._carry_out(request)
            except MongoError as exc:
                error = exc
            except BaseException:
                flow.close()
                raise

    def spawn(self, task: Task, name: str) -> None:
        """Run ``task`` in the background; a task that fails is reported, never raised."""

        async def target() -> None:
            try:
                await self.run(task)
            except MongoError:
                pass  # a background task's last error has already been reported to the core
            except Exception:  # noqa: BLE001 - a bug in a background task must be seen
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

    async def _carry_out(self, request: object) -> Any:
        runtime = self.runtime
        if type(request) is SendAll:  # (every command: tested first)
            await runtime.send_all(
                request.stream, request.buffers, self._remaining(request.deadline)
            )
            if request.receive:
                return await runtime.receive(
                    request.stream, self._remaining(request.deadline), request.receive
                )
            return None
        if isinstance(request, Receive):
            return await runtime.receive(
                request.stream, self._remaining(request.deadline), request.size
            )
        if isinstance(request, Now):
            return runtime.monotonic()
        if isinstance(request, Wait):
            signal = request.signal
            if signal.fired:
                return True
            event = runtime.event()
            signal.attach(event.set)
            if request.deadline is None:
                return await event.wait(None)
            return await event.wait(max(0.0, request.deadline - runtime.monotonic()))
        if isinstance(request, OpenStream):
            if request.tls:
                return await runtime.open_stream(request.address, self._remaining(request.deadline))
            return await runtime.open_stream(
                request.address, self._remaining(request.deadline), False
            )
        if isinstance(request, StartTls):
            return await runtime.start_tls(
                request.stream, request.address, self._remaining(request.deadline), request.https
            )
        if isinstance(request, Sleep):
            await runtime.sleep(max(0.0, request.seconds))
            return None
        if isinstance(request, Resolve):
            return await runtime.resolve(request.question)
        if isinstance(request, OIDC_REQUESTS):
            # user code and blocking I/O: in a worker thread, never on the loop; a callback
            # is waited for no longer than the time it was given
            timeout = request.timeout if isinstance(request, CallOidcCallback) else None
            try:
                return await runtime.in_thread(carry_out_oidc, request, timeout)
            except TimeoutError:
                return CallbackOutcome(
                    error=TimeoutError(f"it did not return within its {timeout:g} s")
                )
        raise LocalProtocolError(f"a flow yielded {request!r}, which is not a primitive")
