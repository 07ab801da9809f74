"""Our client on its other runtimes, behind the blocking API the runner speaks: asyncio, trio
and gevent.

The runner is synchronous and uses OS threads (``runOnThread``, listeners called from the
client's own tasks, waits on ``threading`` conditions, a SIGALRM time limit).  Each runtime's
client therefore lives on a thread of its own that runs its event loop all the time -- an
asyncio loop, a ``trio.run``, a gevent hub -- and a :class:`Portal` carries each call there and
its outcome back:

* :class:`AsyncioPortal` -- a loop thread; a call is a task created with
  ``call_soon_threadsafe``;
* :class:`TrioPortal` -- a thread running ``trio.run`` with a nursery; a call is a task started
  through the run's ``TrioToken``, in a cancel scope of its own;
* :class:`GeventPortal` -- a thread whose hub runs for ever; a call is a greenlet spawned
  through ``loop.run_callback_threadsafe``.  (The gevent client belongs to the thread whose hub
  runs it: used from the runner's threads directly, its monitors would stop whenever the main
  thread waits on a ``threading`` primitive, and its events would be shared across hubs.)

:class:`Facade` wraps what the client returns (database, collection, cursor, change stream,
session) so that the runner uses it as it uses the blocking objects: methods and properties
run on the portal (awaited when they give an awaitable), cursors iterate with ``next()``
(``StopAsyncIteration`` becomes ``StopIteration``), facades passed as arguments (a session)
are unwrapped.  The caller's context variables travel with each call, so the runner's
``timeout()`` block (a context variable) bounds the operation on the loop.
``with_transaction``'s callback -- runner code that calls the facade again -- runs on a worker
thread (the loop must stay free to serve those calls), awaited by the client's task.  A call
interrupted in the caller (the runner's SIGALRM time limit) is cancelled on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import importlib
import inspect
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["AsyncioPortal", "Facade", "GeventPortal", "Portal", "TrioPortal", "facade_client"]

#: how long a portal's thread may take to start its loop
START_TIMEOUT_SECONDS = 10.0


def _program_markers() -> tuple[type, ...]:
    program = importlib.import_module("mongo_sansio.adapters._api.program")
    return (program.Blocking, program.Asynchronous)


def _operation_type() -> type:
    return importlib.import_module("mongo_sansio.adapters._api.program").operation  # type: ignore[no-any-return]


def _apply_context(context: contextvars.Context) -> None:
    """Set the caller's context variables in the current task (each task has its own copy)."""
    for variable, value in context.items():
        variable.set(value)


class Portal:
    """A thread running one runtime's event loop, and calls carried onto it (see the module
    docstring).  :meth:`call` runs ``function(*args, **kwargs)`` there -- awaiting the result
    when it is awaitable -- and returns its outcome to the calling thread."""

    name = "portal"
    #: whether the client's operations give awaitables (asyncio, trio) or results (gevent)
    awaits = True

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=f"unified-{self.name}", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_SECONDS):
            raise RuntimeError(f"the {self.name} loop thread did not start")

    def _main(self) -> None:
        raise NotImplementedError

    def _submit(
        self, future: concurrent.futures.Future[Any], job: Callable[[], Any], context: contextvars.Context
    ) -> Callable[[], None]:
        """Start ``job`` on the loop; returns a function (called from any thread) that cancels
        it."""
        raise NotImplementedError

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.in_loop_thread():
            raise RuntimeError("a facade was called from its own loop thread (it would wait for ever)")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        cancel = self._submit(future, functools.partial(function, *args, **kwargs), contextvars.copy_context())
        try:
            return future.result()
        except BaseException:
            if not future.done():  # interrupted here (a time limit): stop the call there too
                cancel()
            raise

    def run_callback(self, callback: Callable[..., Any], *args: Any) -> Any:
        """Run runner code that calls facades (``with_transaction``'s callback) off the loop
        thread; an awaitable under the async runtimes, the result under gevent."""
        raise NotImplementedError


async def _settle(future: concurrent.futures.Future[Any], job: Callable[[], Any], context: contextvars.Context) -> None:
    """Run ``job`` (awaiting its result) in the caller's context and report to ``future``."""
    _apply_context(context)
    try:
        result = job()
        if inspect.isawaitable(result):
            result = await result
    except Exception as error:  # noqa: BLE001 -- handed to the caller
        future.set_exception(error)
    except BaseException as error:  # cancelled: the caller hears of it, the loop too
        if not future.done():
            future.set_exception(concurrent.futures.CancelledError(repr(error)))
        raise
    else:
        future.set_result(result)


class AsyncioPortal(Portal):
    """An asyncio loop on a thread (see the module docstring)."""

    name = "asyncio"

    def _main(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.call_soon(self._ready.set)
        self._loop.run_forever()

    def _submit(
        self, future: concurrent.futures.Future[Any], job: Callable[[], Any], context: contextvars.Context
    ) -> Callable[[], None]:
        tasks: list[asyncio.Task[None]] = []

        def start() -> None:
            tasks.append(self._loop.create_task(_settle(future, job, context)))

        def cancel() -> None:
            self._loop.call_soon_threadsafe(lambda: [t.cancel() for t in tasks])

        self._loop.call_soon_threadsafe(start)
        return cancel

    async def _in_thread(self, callback: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(callback, *args)

    def run_callback(self, callback: Callable[..., Any], *args: Any) -> Any:
        return self._in_thread(callback, *args)


class TrioPortal(Portal):
    """``trio.run`` on a thread, with a nursery for the calls (see the module docstring)."""

    name = "trio"

    def _main(self) -> None:
        trio = importlib.import_module("trio")

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._token = trio.lowlevel.current_trio_token()
                self._ready.set()
                await trio.sleep_forever()

        trio.run(main)

    def _submit(
        self, future: concurrent.futures.Future[Any], job: Callable[[], Any], context: contextvars.Context
    ) -> Callable[[], None]:
        trio = importlib.import_module("trio")
        scope = trio.CancelScope()

        async def task() -> None:
            with scope:
                await _settle(future, job, context)

        self._token.run_sync_soon(self._nursery.start_soon, task)
        return lambda: self._token.run_sync_soon(scope.cancel)

    async def _in_thread(self, callback: Callable[..., Any], *args: Any) -> Any:
        trio = importlib.import_module("trio")
        context = contextvars.copy_context()
        return await trio.to_thread.run_sync(functools.partial(context.run, callback, *args))

    def run_callback(self, callback: Callable[..., Any], *args: Any) -> Any:
        return self._in_thread(callback, *args)


class GeventPortal(Portal):
    """A gevent hub running for ever on a thread (see the module docstring)."""

    name = "gevent"
    awaits = False

    def _main(self) -> None:
        gevent = importlib.import_module("gevent")
        self._hub = gevent.get_hub()
        gevent.spawn(self._ready.set)
        while True:  # a pending timer keeps the hub's loop running (a bare wait would exit)
            gevent.sleep(3600)

    def _submit(
        self, future: concurrent.futures.Future[Any], job: Callable[[], Any], context: contextvars.Context
    ) -> Callable[[], None]:
        gevent = importlib.import_module("gevent")
        greenlets: list[Any] = []

        def run() -> None:
            _apply_context(context)
            try:
                result = job()
            except Exception as error:  # noqa: BLE001 -- handed to the caller
                future.set_exception(error)
            except BaseException as error:  # killed: the caller hears of it
                if not future.done():
                    future.set_exception(concurrent.futures.CancelledError(repr(error)))
                raise
            else:
                future.set_result(result)

        self._hub.loop.run_callback_threadsafe(lambda: greenlets.append(gevent.spawn(run)))
        return lambda: self._hub.loop.run_callback_threadsafe(
            lambda: [g.kill(block=False) for g in greenlets]
        )

    def run_callback(self, callback: Callable[..., Any], *args: Any) -> Any:
        gevent = importlib.import_module("gevent")
        context = contextvars.copy_context()
        return gevent.get_hub().threadpool.apply(context.run, (callback, *args))


# -- the facade ---------------------------------------------------------------------------------


def _unwrap(value: Any) -> Any:
    return value._target if isinstance(value, Facade) else value


class Facade:
    """One object of the client's API (database, collection, cursor, change stream, session or
    the client itself) used synchronously through its portal (see the module docstring).
    Build with :func:`wrap`: the class is made per wrapped class, with every public name of it
    on the class (the runner tells entities apart by their class's attributes)."""

    _target: Any
    _portal: Portal

    def __init__(self, target: Any, portal: Portal) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_portal", portal)

    def _run(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        args = tuple(_unwrap(a) for a in args)
        kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
        return wrap(self._portal.call(function, *args, **kwargs), self._portal)

    def __getattr__(self, name: str) -> Any:
        # names the class does not have (instance attributes, PyMongo's client.<db name>)
        return self._run(getattr, self._target, name)

    def __getitem__(self, key: Any) -> Any:
        return self._run(self._target.__getitem__, key)

    def __repr__(self) -> str:
        return f"Facade({self._target!r} on {self._portal.name})"


class _Iterating(Facade):
    """A cursor or change stream: ``next()`` on the portal."""

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if not self._portal.awaits:
            return self._run(next, self._target)
        try:
            return self._run(self._target.__anext__)
        except StopAsyncIteration:
            raise StopIteration from None


class _Method:
    """A method of the wrapped class: called on the portal, its result wrapped.  The bound
    function keeps the wrapped method's signature (the runner matches options to it)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: Facade | None, owner: type) -> Any:
        if instance is None:
            return self
        bound = getattr(instance._target, self.name)

        @functools.wraps(bound)
        def call(*args: Any, **kwargs: Any) -> Any:
            return instance._run(bound, *args, **kwargs)

        return call


class _WithTransaction(_Method):
    """``with_transaction(callback)``: the runner's callback calls facades, so it runs on a
    worker thread (:meth:`Portal.run_callback`), given the session's facade."""

    def __get__(self, instance: Facade | None, owner: type) -> Any:
        if instance is None:
            return self
        bound = getattr(instance._target, self.name)
        portal = instance._portal

        @functools.wraps(bound)
        def call(callback: Callable[[Any], Any], *args: Any, **kwargs: Any) -> Any:
            def on_loop(session: Any) -> Any:
                return portal.run_callback(callback, wrap(session, portal))

            return instance._run(bound, on_loop, *args, **kwargs)

        return call


class _Attribute:
    """A property of the wrapped class (awaited when it gives an awaitable: ``await
    client.address``), read on the portal."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: Facade | None, owner: type) -> Any:
        if instance is None:
            return self
        return instance._run(getattr, instance._target, self.name)


def _is_method(attribute: Any) -> bool:
    return isinstance(
        attribute, types.FunctionType | staticmethod | classmethod | _operation_type()
    ) or (callable(attribute) and not hasattr(attribute, "__get__"))


_facade_classes: dict[type, type[Facade]] = {}


def facade_class(cls: type) -> type[Facade]:
    """The facade class of the API class ``cls`` (see :class:`Facade`), made once."""
    if cls not in _facade_classes:
        _facade_classes[cls] = _make_facade_class(cls)
    return _facade_classes[cls]


def _make_facade_class(cls: type) -> type[Facade]:
    iterating = hasattr(cls, "__anext__") or (hasattr(cls, "__iter__") and hasattr(cls, "__next__"))
    base: type[Facade] = _Iterating if iterating else Facade
    namespace: dict[str, Any] = {"__doc__": f"{cls.__name__} used synchronously (see Facade)."}
    for name in dir(cls):
        if name.startswith("__") or hasattr(Facade, name):
            continue
        attribute = inspect.getattr_static(cls, name)
        if name == "with_transaction":
            namespace[name] = _WithTransaction(name)
        elif _is_method(attribute):
            namespace[name] = _Method(name)
        elif not name.startswith("_"):
            namespace[name] = _Attribute(name)
    return type(f"Sync{cls.__name__}", (base,), namespace)


def wrap(value: Any, portal: Portal) -> Any:
    """``value`` behind a facade when it is an object of the client's API, else as it is."""
    if isinstance(value, _program_markers()) and not isinstance(value, Facade):
        return facade_class(type(value))(value, portal)
    return value


def facade_client(client_class: type, portal: Callable[[], Portal]) -> Callable[..., Any]:
    """A stand-in for the runner's ``MongoClient(uri, **options)``: the client is built on the
    loop of ``portal()`` (the portal starts on the first client) and returned behind its
    facade."""

    async def connected(*args: Any, **kwargs: Any) -> Any:
        # an async client monitors from aconnect() (else from its first operation): the format's
        # client is connected once created (SDAM tests wait for its events without operations)
        client = client_class(*args, **kwargs)
        await client.aconnect()
        return client

    def make(*args: Any, **kwargs: Any) -> Any:
        loop = portal()
        build = connected if hasattr(client_class, "aconnect") else client_class
        return wrap(loop.call(build, *args, **kwargs), loop)

    make.__name__ = f"Sync{client_class.__name__}"
    return make
