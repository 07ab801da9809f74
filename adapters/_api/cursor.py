"""What the blocking and async cursors share: documents of a find, an aggregate or a command,
read through the core, written once as programs (:mod:`.program`).

* :class:`FindCursorBase` -- what ``Collection.find`` returns.  It opens lazily, on the first
  read, so that ``sort``, ``skip``, ``limit``, ``batch_size`` ... can be chained first, as in
  PyMongo; ``clone``, ``rewind``, ``explain`` and ``distinct`` work as PyMongo's.
* :class:`CommandCursorBase` -- the already open cursor of an aggregate, a listX command or
  ``Database.cursor_command`` (PyMongo's ``CommandCursor``), or the fixed list of a command
  that answers with an array (``listDatabases``).
* :class:`RawBatches` -- makes either of them hand out each batch as the concatenated BSON
  bytes of its documents (``find_raw_batches``, ``aggregate_raw_batches``).

Every cursor reads with the core's flows (:func:`~mongo_sansio.cursors.cursor_next`, one
getMore per exhausted batch), runs each of them with its explicit ``session`` (None: an
implicit one) and its collection's timeoutMS, hands out documents under its codec options
(:func:`~mongo_sansio.ops.decoding.apply_codec_options`), and kills its server cursor on
``close()`` or, when dropped unclosed, through the client's upkeep task.

Each flavour adds iteration (``__next__`` / ``__anext__`` over :meth:`CursorBase._next_item`,
which returns :data:`END` after the last document) and ``with`` / ``async with``; the blocking
find cursor also has PyMongo's ``cursor[i]`` and ``cursor[a:b]``, which the async one refuses
(as PyMongo's ``AsyncCursor`` does).  A cursor belongs to one thread or task at a time.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Generic, NoReturn, Self, TypeVar

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.bson.raw import RawDocument
from mongo_sansio.cursors import Cursor as CursorMachine
from mongo_sansio.cursors import cursor_close, cursor_next, cursor_next_batch, cursor_try_next
from mongo_sansio.errors import InvalidOperation
from mongo_sansio.flow import Flow
from mongo_sansio.ops.decoding import (
    apply_codec_options,
    decodes_as_replies,
    raw_batch,
    raw_batch_options,
)
from mongo_sansio.ops.explain import explain_find

from .program import Program, Run, operation
from .pymongo_objects import adopt, adopt_cursor_type
from .validators import check_collation, check_find_arguments, check_hint, check_sort

__all__ = [
    "END",
    "CommandCursorBase",
    "CursorBase",
    "FindCursorBase",
    "RawBatches",
    "check_integer",
]

CollectionT = TypeVar("CollectionT")

END: Any = object()
"""What :meth:`CursorBase._next_item` returns once the cursor has no more documents."""


def check_integer(
    value: Any, name: str, *, minimum: int | None = None, optional: bool = False
) -> Any:
    """PyMongo's checks of a cursor option: TypeError for a non-integer, ValueError below
    ``minimum``."""
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        kind = "an integer or None" if optional else "an integer"
        raise TypeError(f"{name} must be {kind}, not {type(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}")
    return value


def _pairs(spec: Any, name: str) -> dict[str, Any]:
    if not isinstance(spec, list | tuple):
        raise TypeError(f"{name} must be an instance of list or tuple, not {type(spec)}")
    return dict(spec)


class CursorBase(Generic[CollectionT]):
    """What every cursor shares: its programs' steps (the cursor's session, the collection's
    timeoutMS anew for each), reading, the state PyMongo exposes (``alive``, ``cursor_id``,
    ``address``, ``retrieved``, ``session``) and closing."""

    #: hand out whole batches as raw BSON bytes instead of documents
    _raw_batches = False

    def __init__(
        self,
        collection: Any,
        *,
        session: Any = None,
        codec_options: CodecOptions | None = None,
    ) -> None:
        self._collection: CollectionT = collection
        self._engine = collection.database.client.engine
        self._session = session
        self._codec_options = (
            collection.ops.codec_options if codec_options is None else codec_options
        )
        # whether a dict from a batch is handed out as it is (the usual options)
        self._plain_dicts = decodes_as_replies(self._codec_options)
        self._machine: CursorMachine | None = None
        self._buffer: list[Any] = []  # documents given at construction (no server cursor)
        self._killed = False
        self._retrieved = 0

    # -- reading -------------------------------------------------------------------------------

    def _step(self, flow: Flow[Any]) -> Run:
        # each step (open, a getMore, close) gets the collection's timeoutMS anew
        collection = self._collection
        codec_options = getattr(collection, "codec_options", None)
        if self._raw_batches:  # batches stay views over the replies' bytes, sliced as they are
            codec_options = raw_batch_options(codec_options)
        return Run(flow, self._session, getattr(collection, "timeout", None), codec_options)

    def _opening(self) -> Program[CursorMachine | None]:
        """The cursor machine, opening it if needed (None: only the given documents)."""
        yield from ()
        return self._machine

    def _count(self, machine: CursorMachine) -> None:
        self._retrieved = max(self._retrieved, machine.returned + machine.buffered)

    def _next_document(self) -> Program[Any | None]:
        if self._buffer:
            return self._buffer.pop(0)
        machine = yield from self._opening()
        if machine is None:
            return None
        document = yield self._step(cursor_next(machine))
        self._count(machine)
        return document

    def _next_raw_batch(self) -> Program[bytes | None]:
        if self._buffer:
            documents, self._buffer = self._buffer, []
            return raw_batch(documents)
        machine = yield from self._opening()
        if machine is None:
            return None
        batch = yield self._step(cursor_next_batch(machine))
        self._count(machine)
        return raw_batch(batch) if batch else None

    def _next_buffered(self) -> Any | None:
        """A document already in memory, when reading it sends nothing: handed out without
        running a program or a flow (None: run :meth:`_next_item`).  Most documents of a
        batch come this way."""
        machine = self._machine
        if machine is None or self._raw_batches or self._buffer or self._killed:
            return None
        document = machine.next_without_io()  # (cursor_next_buffered, one call less)
        if document is None:
            return None
        # (no _count: a buffered document leaves returned + buffered, the count, as it was)
        if self._plain_dicts and type(document) is dict:
            return document
        # a batch read as RawDocuments (apply_codec_options's case, inlined; the slot, not
        # the codec_options property: a property call is a tenth of a document's hand-out)
        if type(document) is RawDocument and document._opts is self._codec_options:
            return document
        return apply_codec_options(document, self._codec_options)

    def _next_item(self) -> Program[Any]:
        """The next document (a raw batch for raw-batch cursors), or :data:`END`."""
        if self._killed and not self._buffer:
            return END
        if self._raw_batches:
            batch = yield from self._next_raw_batch()
            item: Any = END if batch is None else batch
        else:
            document = yield from self._next_document()
            item = END if document is None else apply_codec_options(document, self._codec_options)
        machine = self._machine
        if item is END and (machine is None or machine.exhausted):
            # (a tailable cursor's empty getMore ends the iteration only: it stays alive)
            self._killed = True
        return item

    @operation
    def to_list(self, length: int | None = None) -> Program[list[Any]]:
        """The remaining documents (at most ``length``)."""
        if length is not None and check_integer(length, "length") < 1:
            raise ValueError("to_list() length must be greater than 0")
        out: list[Any] = []
        while length is None or len(out) < length:
            item = yield from self._next_item()
            if item is END:
                break
            out.append(item)
        return out

    # -- state ---------------------------------------------------------------------------------

    @property
    def collection(self) -> CollectionT:
        """The collection this cursor reads (``<db>.$cmd`` for database-level commands)."""
        return self._collection

    @property
    def session(self) -> Any:
        """The explicit session the cursor runs in, or None."""
        return self._session

    @property
    def alive(self) -> bool:
        """Whether more documents may come (documents are buffered, or the server still
        holds the cursor)."""
        if self._buffer:
            return True
        if self._killed:
            return False
        return self._machine is None or not self._machine.exhausted

    @property
    def cursor_id(self) -> int | None:
        """The server's id of the cursor (None before it is opened, 0 once exhausted)."""
        return None if self._machine is None else self._machine.cursor_id

    @property
    def address(self) -> tuple[str, int] | None:
        """The (host, port) of the server the cursor is on, or None."""
        return None if self._machine is None else self._machine.server.address

    @property
    def retrieved(self) -> int:
        """How many documents the server has sent so far."""
        return self._retrieved

    def _closing(self) -> Program[None]:
        self._killed = True
        self._buffer = []
        machine = self._machine
        if machine is not None and not machine.closed:
            yield self._step(cursor_close(machine))

    @operation
    def close(self) -> Program[None]:
        """Free the server cursor (best effort killCursors); iteration ends."""
        yield from self._closing()

    def __del__(self) -> None:
        # Dropped while the server still holds the cursor: queue its killCursors for the
        # client's upkeep task (a finalizer must not do I/O or take locks).
        machine = getattr(self, "_machine", None)
        if machine is None or machine.closed:
            return
        session = machine.command_session()
        command = machine.close()
        if command is not None:
            db, body = command
            self._engine.kill_cursor_later(machine.server.address, db, body, session)


class FindCursorBase(CursorBase[CollectionT]):
    """The documents of a find (see the module docstring), built by ``Collection.find``.

    Options can be chained until the first document is read; afterwards they raise
    :class:`~mongo_sansio.errors.InvalidOperation`, as in PyMongo.
    """

    def __init__(
        self,
        collection: Any,
        filter: Mapping[str, Any] | None = None,
        projection: Any = None,
        *,
        session: Any = None,
        **options: Any,
    ) -> None:
        check_find_arguments(projection, options)  # at find(), as PyMongo checks them
        super().__init__(collection, session=session)
        self._filter = filter
        self._projection = projection
        self._options: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
        if "cursor_type" in self._options:  # PyMongo's CursorType values are plain ints
            self._options["cursor_type"] = adopt_cursor_type(self._options["cursor_type"])
        self._empty = False  # a [n:n] slice: no query at all

    # -- options, before the first document ----------------------------------------------------

    def _check_okay_to_chain(self) -> None:
        if self._machine is not None or self._killed:
            raise InvalidOperation("cannot set options after executing query")

    def _set(self, name: str, value: Any) -> Self:
        self._check_okay_to_chain()
        if value is None:
            self._options.pop(name, None)
        else:
            self._options[name] = value
        return self

    def sort(self, key_or_list: Any, direction: Any = None) -> Self:
        """``sort("i")``, ``sort("i", -1)``, ``sort([("a", 1), ("b", -1)])`` or a mapping."""
        if isinstance(key_or_list, str):
            key_or_list = [(key_or_list, 1 if direction is None else direction)]
        return self._set("sort", check_sort(key_or_list))

    def skip(self, skip: int) -> Self:
        return self._set("skip", check_integer(skip, "skip", minimum=0))

    def limit(self, limit: int) -> Self:
        self._empty = False
        return self._set("limit", check_integer(limit, "limit"))

    def batch_size(self, batch_size: int) -> Self:
        return self._set("batch_size", check_integer(batch_size, "batch_size", minimum=0))

    def hint(self, index: Any) -> Self:
        return self._set("hint", check_hint(index))

    def max_time_ms(self, max_time_ms: int | None) -> Self:
        return self._set("max_time_ms", check_integer(max_time_ms, "max_time_ms", optional=True))

    def max_await_time_ms(self, max_await_time_ms: int | None) -> Self:
        checked = check_integer(max_await_time_ms, "max_await_time_ms", optional=True)
        return self._set("max_await_time_ms", checked)

    def comment(self, comment: Any) -> Self:
        return self._set("comment", comment)

    def collation(self, collation: Mapping[str, Any] | None) -> Self:
        return self._set("collation", check_collation(adopt(collation)))

    def allow_disk_use(self, allow_disk_use: bool) -> Self:
        if not isinstance(allow_disk_use, bool):
            raise TypeError(f"allow_disk_use must be a bool, not {type(allow_disk_use)}")
        return self._set("allow_disk_use", allow_disk_use)

    def min(self, spec: Sequence[tuple[str, Any]]) -> Self:
        """The inclusive lower bound of an index range (``[("field", value), ...]``); needs a
        :meth:`hint`."""
        return self._set("min", _pairs(spec, "spec"))

    def max(self, spec: Sequence[tuple[str, Any]]) -> Self:
        """The exclusive upper bound of an index range; needs a :meth:`hint`."""
        return self._set("max", _pairs(spec, "spec"))

    # -- PyMongo's cursor verbs ----------------------------------------------------------------

    def clone(self) -> Self:
        """A new, unevaluated cursor with this one's query and options."""
        twin = type(self)(
            self._collection,
            copy.deepcopy(self._filter),
            copy.deepcopy(self._projection),
            session=self._session,
            **copy.deepcopy(self._options),
        )
        twin._empty = self._empty
        return twin

    @operation
    def rewind(self) -> Program[Any]:
        """Back to the unevaluated state: the next read runs the query again.  Returns this
        cursor."""
        yield from self._closing()
        self._machine = None
        self._killed = False
        self._retrieved = 0
        return self

    @operation
    def explain(self) -> Program[Any]:
        """The server's explain output for this query (default verbosity)."""
        collection: Any = self._collection
        flow = explain_find(collection.ops, self._filter, self._projection, **self._options)
        reply = yield self._step(flow)
        return apply_codec_options(reply, self._codec_options)

    @operation
    def distinct(self, key: str) -> Program[list[Any]]:
        """The distinct values of ``key`` among the documents this query matches."""
        options = {
            name: self._options[name]
            for name in ("collation", "comment", "max_time_ms")
            if name in self._options
        }
        collection: Any = self._collection
        values: list[Any] = yield self._step(
            collection.ops.distinct(key, self._filter or None, **options)
        )
        return values

    # -- reading -------------------------------------------------------------------------------

    def _opening(self) -> Program[CursorMachine | None]:
        if self._machine is None and not self._killed:
            if self._empty:
                self._killed = True
                return None
            collection: Any = self._collection
            flow = collection.ops.find(self._filter, self._projection, **self._options)
            self._machine = yield self._step(flow)
            self._count(self._machine)
        return self._machine


class CommandCursorBase(CursorBase[CollectionT]):
    """An open cursor of an aggregate, a listX command or ``cursor_command`` (PyMongo's
    ``CommandCursor``); or, for commands that answer with an array (``listDatabases``), the
    given ``documents``."""

    def __init__(
        self,
        collection: Any,
        opened: CursorMachine | None = None,
        *,
        documents: Iterable[Any] = (),
        session: Any = None,
        codec_options: CodecOptions | None = None,
    ) -> None:
        super().__init__(collection, session=session, codec_options=codec_options)
        self._machine = opened
        self._buffer = list(documents)
        if opened is not None:
            self._count(opened)
        else:
            self._retrieved = len(self._buffer)
            self._killed = True  # no server cursor: only the given documents

    @property
    def cursor_id(self) -> int | None:
        """The server's id of the cursor (0 once exhausted, or for a fixed list)."""
        return 0 if self._machine is None else self._machine.cursor_id

    def batch_size(self, batch_size: int) -> Self:
        """How many documents each later getMore asks for (0: the server's default)."""
        check_integer(batch_size, "batch_size", minimum=0)
        if self._machine is not None:
            self._machine.batch_size = batch_size or None
        return self

    @operation
    def try_next(self) -> Program[Any | None]:
        """The next document, or None when the server has none yet (at most one getMore);
        for tailable cursors and change streams."""
        if self._buffer:
            return apply_codec_options(self._buffer.pop(0), self._codec_options)
        machine = self._machine
        if machine is None or self._killed:
            return None
        document = yield self._step(cursor_try_next(machine))
        self._count(machine)
        if document is None:
            if machine.exhausted:
                self._killed = True
            return None
        return apply_codec_options(document, self._codec_options)


class RawBatches:
    """Mixin (first among the bases): each read gives one batch as the BSON bytes of its
    documents, concatenated (PyMongo's ``RawBatchCursor`` and ``RawBatchCommandCursor``)."""

    _raw_batches = True

    def __getitem__(self, index: Any) -> NoReturn:
        raise InvalidOperation(f"Cannot call __getitem__ on {type(self).__name__}")
