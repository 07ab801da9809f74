"""The virtual event loop: coroutines on a virtual clock, scheduled by a seeded draw.

One thread, no sockets, no sleeps.  A task is a coroutine; it runs until it awaits a
:class:`Trap` (the only awaitable the virtual runtime hands out), which parks it until a
callback wakes it with a value or an error.  Time moves only when no task can run: the clock
jumps to the earliest timer.  When several tasks are ready, the seeded ``random.Random``
picks which runs next, so a seed fixes one interleaving and another seed explores another.

Cancelling a task throws :class:`Cancelled` (a BaseException, like asyncio's
``CancelledError``) into it where it waits; the interpreter closes the flow, whose
``finally`` blocks put back what it held.
"""

from __future__ import annotations

import contextvars
import heapq
import random
from collections.abc import Callable, Coroutine, Generator
from typing import Any

__all__ = ["Cancelled", "Loop", "Trap", "VirtualTask", "Waiter"]


class Cancelled(BaseException):
    """Thrown into a cancelled task where it waits."""


class Waiter:
    """One parked task's wake-up: the first of :meth:`wake` / :meth:`fail` wins."""

    __slots__ = ("loop", "task", "done", "on_done")

    def __init__(self, loop: Loop, task: VirtualTask) -> None:
        self.loop = loop
        self.task = task
        self.done = False
        self.on_done: Callable[[], None] | None = None  # disarm (a timer, a registration)

    def wake(self, value: Any = None) -> None:
        self._finish(value, None)

    def fail(self, error: BaseException) -> None:
        self._finish(None, error)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        if self.done:
            return
        self.done = True
        if self.on_done is not None:
            self.on_done()
        self.task.waiter = None
        self.loop.ready.append((self.task, value, error))


class Trap:
    """An awaitable that parks the awaiting task; ``arm(waiter)`` arranges its wake-up."""

    __slots__ = ("arm",)

    def __init__(self, arm: Callable[[Waiter], None]) -> None:
        self.arm = arm

    def __await__(self) -> Generator[Trap, Any, Any]:
        return (yield self)


class VirtualTask:
    __slots__ = ("coro", "name", "context", "waiter", "done", "result", "error", "on_exit")

    def __init__(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        self.coro = coro
        self.name = name
        self.context = contextvars.copy_context()
        self.waiter: Waiter | None = None
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.on_exit: list[Callable[[VirtualTask], None]] = []


class Loop:
    """See the module docstring.  ``rng`` draws the interleavings; ``start`` is virtual now."""

    def __init__(self, rng: random.Random, start: float = 1000.0) -> None:
        self.rng = rng
        self.now = start
        self.ready: list[tuple[VirtualTask, Any, BaseException | None]] = []
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        self.current: VirtualTask | None = None
        self.steps = 0
        self.tasks: list[VirtualTask] = []

    # -- timers and callbacks ------------------------------------------------------------------

    def call_at(self, when: float, callback: Callable[[], None]) -> list[bool]:
        """Run ``callback`` at virtual ``when``; the returned flag list cancels it ([True])."""
        cancelled = [False]
        self._seq += 1

        def fire() -> None:
            if not cancelled[0]:
                callback()

        heapq.heappush(self._timers, (max(when, self.now), self._seq, fire))
        return cancelled

    def call_soon(self, callback: Callable[[], None]) -> None:
        self.call_at(self.now, callback)

    # -- tasks ---------------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> VirtualTask:
        task = VirtualTask(coro, name)
        self.tasks.append(task)
        self.ready.append((task, None, None))
        return task

    def cancel(self, task: VirtualTask) -> None:
        if task.done:
            return
        waiter = task.waiter
        if waiter is not None:
            waiter.fail(Cancelled())
        # a task that is ready to run gets the cancellation at its next await

    def sleep(self, seconds: float) -> Trap:
        def arm(waiter: Waiter) -> None:
            flag = self.call_at(self.now + max(0.0, seconds), waiter.wake)
            waiter.on_done = lambda: flag.__setitem__(0, True)

        return Trap(arm)

    def park(
        self,
        hook: Callable[[Waiter], Callable[[], None] | None],
        timeout: float | None,
        timed_out: Callable[[], Any],
    ) -> Trap:
        """Park the awaiting task: ``hook(waiter)`` puts the waiter where it will be woken and
        returns what takes it out again (None: it woke it already); after ``timeout`` seconds
        it is woken with ``timed_out()`` instead."""

        def arm(waiter: Waiter) -> None:
            unhook = hook(waiter)
            if unhook is None:
                return
            flag = None
            if timeout is not None:
                flag = self.call_at(self.now + timeout, lambda: waiter.wake(timed_out()))

            def disarm() -> None:
                unhook()
                if flag is not None:
                    flag[0] = True

            waiter.on_done = disarm

        return Trap(arm)

    def join(self, task: VirtualTask, timeout: float | None = None) -> Trap:
        """Wait for ``task`` to end (answer True), or ``timeout`` seconds (answer False)."""

        def hook(waiter: Waiter) -> Callable[[], None] | None:
            if task.done:
                waiter.wake(True)
                return None
            on_exit = lambda _task: waiter.wake(True)  # noqa: E731
            task.on_exit.append(on_exit)

            def unhook() -> None:
                if on_exit in task.on_exit:
                    task.on_exit.remove(on_exit)

            return unhook

        return self.park(hook, timeout, lambda: False)

    # -- running -------------------------------------------------------------------------------

    def _step(self, task: VirtualTask, value: Any, error: BaseException | None) -> None:
        if task.done:
            return
        self.steps += 1
        self.current = task
        try:
            if error is None:
                trap = task.context.run(task.coro.send, value)
            else:
                trap = task.context.run(task.coro.throw, error)
        except StopIteration as stop:
            self._exit(task, stop.value, None)
            return
        except BaseException as exc:  # noqa: BLE001 - the task's own end, recorded
            self._exit(task, None, exc)
            return
        finally:
            self.current = None
        if not isinstance(trap, Trap):
            self.ready.append((task, None, RuntimeError(f"awaited {trap!r}, not a virtual trap")))
            return
        waiter = Waiter(self, task)
        task.waiter = waiter
        trap.arm(waiter)

    def _exit(self, task: VirtualTask, result: Any, error: BaseException | None) -> None:
        task.done = True
        task.result = result
        task.error = error
        hooks, task.on_exit = task.on_exit, []
        for hook in hooks:
            hook(task)

    def run_until(self, done: Callable[[], bool], limit: float) -> bool:
        """Run until ``done()`` or virtual time passes ``limit`` (False) or nothing is left."""
        while not done():
            if self.ready:
                index = self.rng.randrange(len(self.ready)) if len(self.ready) > 1 else 0
                task, value, error = self.ready.pop(index)
                self._step(task, value, error)
                continue
            if not self._timers:
                return done()
            when = self._timers[0][0]
            if when > limit:
                self.now = max(self.now, limit)
                return done()
            self.now = max(self.now, when)
            while self._timers and self._timers[0][0] <= self.now:
                heapq.heappop(self._timers)[2]()
        return True
