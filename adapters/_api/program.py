"""Programs: each PyMongo method written once, run by the blocking and the async clients.

A method that talks to the server (``insert_one``, ``cursor.to_list``, ``session.commit_...``)
is written in the shared bases of :mod:`mongo_sansio.adapters._api` as a *program*: a generator
that yields the steps it needs and receives their results --

* :class:`Run` -- run this operation flow of the core on the client's engine, in this session
  (None: an implicit one), under this timeout (seconds; None: the client's);
* :class:`Call` -- call the user's function (``with_transaction``'s callback) and give back
  what it returns.

Programs compose with ``yield from`` (``server_info`` is ``command("buildinfo")``;
``to_list`` is repeated ``next``), just as the core's flows do one level down.  They never
wait themselves: :func:`run_blocking` carries each step out by calling the engine (or the
callback), :func:`run_async` by awaiting it.  The steps are few and coarse (one per operation),
so the cost over a plain method is one generator per call.

The decorators turn a program into the method each flavour's users expect:

* :class:`operation` -- on a :class:`Blocking` class a plain method that returns the result; on
  an :class:`Asynchronous` class an ``async def`` whose awaited value is the result;
* :class:`driven_property` -- a property on a blocking class, an awaitable attribute
  (``await client.address``) on an async one, as PyMongo's ``AsyncMongoClient`` has.

Typing.  Python's types cannot say "the result, or an awaitable of it, depending on the class"
of an ordinary method (that needs higher-kinded types), so the choice is made where it can be
stated: ``__get__`` is overloaded on the instance's flavour, and ``ParamSpec`` carries the
method's own parameters.  ``coll.insert_one`` is typed ``(document, ...) -> InsertOneResult`` on
a blocking collection and ``(document, ...) -> Coroutine[..., InsertOneResult]`` on an async one,
both checked by mypy against the one definition.  What cannot be shared stays in each flavour:
iteration, ``with``/``async with``, and ``with_transaction``'s callback type.

The loop that feeds a program its results has two spellings, which differ only where a step
is carried out: :func:`_feed` awaits it, :func:`run_blocking` calls it (a step's result is
sent into the program, its error thrown in; the program decides).  The blocking loop once ran
``_feed`` too, as a coroutine completed by one ``send``: the coroutine, its awaited perform
function and the helper calls cost about 2% of a find_one's instructions, so that loop is
written out with nothing called but the program and the engine.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import MethodType
from typing import (
    Any,
    ClassVar,
    Concatenate,
    Generic,
    ParamSpec,
    Self,
    TypeAlias,
    TypeVar,
    overload,
)

import attrs

from mongo_sansio.flow import Flow

from .._pymongo_errors import adopt_pymongo_errors

__all__ = [
    "Asynchronous",
    "Blocking",
    "Call",
    "Program",
    "Run",
    "driven_property",
    "operation",
    "run_async",
    "run_blocking",
]

P = ParamSpec("P")
T = TypeVar("T")


class Run:
    """Run ``flow`` as one operation on the engine (see the module docstring); the
    ``codec_options`` encode its commands' values (its collection's; None: the defaults).

    A plain slotted class, not an attrs one: one is made per operation, and a frozen attrs
    class pays a call per field to be built."""

    __slots__ = ("flow", "session", "timeout", "codec_options")

    def __init__(
        self,
        flow: Flow[Any],
        session: Any = None,
        timeout: float | None = None,
        codec_options: Any = None,
    ) -> None:
        self.flow = flow
        self.session = session
        self.timeout = timeout
        self.codec_options = codec_options

    def __repr__(self) -> str:
        return f"Run({self.flow!r}, session={self.session!r}, timeout={self.timeout!r})"


@attrs.frozen
class Call:
    """Call ``function(*args)``; an async client awaits what it returns."""

    function: Callable[..., Any]
    args: tuple[Any, ...] = ()


Step: TypeAlias = Run | Call
Program: TypeAlias = Generator[Step, Any, T]


class _Done:
    """A program's result (a plain slotted class: one is made per operation)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _advance(program: Program[Any], value: Any, error: BaseException | None) -> Step | _Done:
    """Give ``program`` the last step's result (or throw its error in): its next step, or
    :class:`_Done` with its result."""
    try:
        return program.send(value) if error is None else program.throw(error)
    except StopIteration as stop:
        return _Done(stop.value)


async def _feed(
    program: Program[T], perform: Callable[[Any, Step], Awaitable[Any]], engine: Any
) -> T:
    """Carry out ``program``'s steps with ``perform(engine, step)`` until it returns.  Whatever
    a step raises (a server error, the callback's exception, a cancellation) is thrown into the
    program, which decides; a program that does not catch it ends with it."""
    step = _advance(program, None, None)
    while not isinstance(step, _Done):
        try:
            value = await perform(engine, step)
        except BaseException as error:
            adopt_pymongo_errors()  # (PyMongo imported since: `except pymongo.errors.X` works)
            step = _advance(program, None, error)
        else:
            step = _advance(program, value, None)
    result: T = step.value
    return result


async def _perform_async(engine: Any, step: Step) -> Any:
    if isinstance(step, Run):
        return await engine.run(
            step.flow,
            session=step.session,
            timeout=step.timeout,
            codec_options=step.codec_options,
        )
    return await step.function(*step.args)


def run_blocking(engine: Any, program: Program[T]) -> T:
    """Run ``program`` on a synchronous engine (blocking threads or gevent): :func:`_feed`'s
    loop, each step carried out by a call where ``_feed`` awaits (the only difference)."""
    # (written out, :func:`_advance` and the perform function inlined: each call here costs
    # about half a percent of a find_one)
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = program.send(value) if error is None else program.throw(error)
        except StopIteration as stop:
            result: T = stop.value
            return result
        try:
            if type(step) is Run:
                value = engine.run(
                    step.flow,
                    session=step.session,
                    timeout=step.timeout,
                    codec_options=step.codec_options,
                )
            else:
                value = step.function(*step.args)  # type: ignore[union-attr]
            error = None
        except BaseException as exc:  # noqa: BLE001 - the program decides, as in _feed
            adopt_pymongo_errors()  # as in _feed
            value, error = None, exc


async def run_async(engine: Any, program: Program[T]) -> T:
    """Run ``program`` on an :class:`~.._async_engine.AsyncEngine` (asyncio or trio)."""
    return await _feed(program, _perform_async, engine)


def _bind_operations(cls: type, awaits: bool) -> None:
    """Give ``cls`` each :class:`operation` it inherits as the plain function of its flavour,
    so that a call is an ordinary method call (through the descriptor, every access would call
    ``__get__`` and make a bound method in Python)."""
    for name in dir(cls):
        value = inspect.getattr_static(cls, name, None)
        if isinstance(value, operation):
            setattr(cls, name, value._methods[awaits])


class Blocking:
    """Marks a class whose :class:`operation` methods return their results."""

    _awaits: ClassVar[bool] = False
    _engine: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _bind_operations(cls, False)


class Asynchronous:
    """Marks a class whose :class:`operation` methods are coroutines."""

    _awaits: ClassVar[bool] = True
    _engine: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _bind_operations(cls, True)


class operation(Generic[P, T]):  # noqa: N801 - used as a decorator, like property
    """A program method made a blocking method or a coroutine method by the class's flavour
    (see the module docstring).  The instance's ``_engine`` runs its steps."""

    def __init__(self, build: Callable[Concatenate[Any, P], Program[T]]) -> None:
        self._build = build
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__
        self.__wrapped__ = build

        @functools.wraps(build)
        def blocking(api: Any, /, *args: Any, **kwargs: Any) -> Any:
            return run_blocking(api._engine, build(api, *args, **kwargs))

        @functools.wraps(build)
        async def asynchronous(api: Any, /, *args: Any, **kwargs: Any) -> Any:
            return await run_async(api._engine, build(api, *args, **kwargs))

        self._methods = (blocking, asynchronous)
        for method in self._methods:  # (``type(x).name.program``, once a class holds these)
            method.program = self.program  # type: ignore[union-attr]

    def program(self, instance: Any, /, *args: P.args, **kwargs: P.kwargs) -> Program[T]:
        """The program itself, for another program to ``yield from``."""
        return self._build(instance, *args, **kwargs)

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, instance: Blocking, owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(
        self, instance: Asynchronous, owner: type[Any]
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, instance: Any, owner: type[Any]) -> Any:
        if instance is None:
            return self
        return MethodType(self._methods[instance._awaits], instance)


class driven_property(Generic[T]):  # noqa: N801 - used as a decorator, like property
    """A program property: the value on a blocking class, an awaitable of it on an async one
    (PyMongo's ``await client.address``)."""

    def __init__(self, build: Callable[[Any], Program[T]]) -> None:
        self._build = build
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__

    def program(self, instance: Any) -> Program[T]:
        return self._build(instance)

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, instance: Blocking, owner: type[Any]) -> T: ...

    @overload
    def __get__(self, instance: Asynchronous, owner: type[Any]) -> Coroutine[Any, Any, T]: ...

    def __get__(self, instance: Any, owner: type[Any]) -> Any:
        if instance is None:
            return self
        if instance._awaits:
            return run_async(instance._engine, self._build(instance))
        return run_blocking(instance._engine, self._build(instance))
