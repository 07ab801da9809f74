"""The blocking cursors: documents of a find, an aggregate or a command, read through the core.

* :class:`Cursor` -- what :meth:`Collection.find <.collection.Collection.find>` returns.  It
  opens lazily, on first iteration, so that ``sort``, ``skip``, ``limit``, ``batch_size`` ...
  can be chained first, as in PyMongo; ``cursor[i]`` runs a query for the ``i``-th document,
  ``cursor[a:b]`` sets skip and limit; :meth:`Cursor.clone`, :meth:`Cursor.rewind`,
  :meth:`Cursor.explain` and :meth:`Cursor.distinct` work as PyMongo's.
* :class:`CommandCursor` -- the already open cursor of an aggregate, a listX command or
  ``Database.cursor_command`` (PyMongo's ``CommandCursor``), or the fixed list of a command
  that answers with an array (``listDatabases``).
* :class:`RawBatchCursor`, :class:`RawBatchCommandCursor` -- the same, but each iteration gives
  one batch as the concatenated BSON bytes of its documents (``find_raw_batches``,
  ``aggregate_raw_batches``).

Every cursor reads with the core's flows (:func:`~mongo_sansio.cursors.cursor_next`, one
getMore per exhausted batch), runs each of them with its explicit ``session`` (None: an
implicit one), hands out documents under its collection's codec options
(:func:`~mongo_sansio.ops.decoding.apply_codec_options`), and kills its server cursor on
``close()`` or, when dropped unclosed, through the client's upkeep task.

A cursor belongs to one thread at a time.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.cursors import Cursor as CursorMachine
from mongo_sansio.cursors import cursor_close, cursor_next, cursor_next_batch, cursor_try_next
from mongo_sansio.errors import InvalidOperation
from mongo_sansio.flow import Flow
from mongo_sansio.ops.decoding import apply_codec_options, raw_batch
from mongo_sansio.ops.explain import explain_find

from ._closing import ClosesOnExit
from ._engine import Engine

if TYPE_CHECKING:
    from .collection import Collection

__all__ = ["Cursor", "CommandCursor", "RawBatchCursor", "RawBatchCommandCursor"]


def _integer(value: Any, name: str, *, minimum: int | None = None, optional: bool = False) -> Any:
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


class _CursorBase(ClosesOnExit):
    """What every cursor shares: running flows on the engine with the cursor's session,
    iteration, the state PyMongo exposes (``alive``, ``cursor_id``, ``address``,
    ``retrieved``, ``session``) and closing."""

    #: hand out whole batches as raw BSON bytes instead of documents
    _raw_batches = False

    def __init__(
        self,
        collection: Collection,
        *,
        session: Any = None,
        codec_options: CodecOptions | None = None,
    ) -> None:
        self._collection = collection
        self._engine: Engine = collection.database.client.engine
        self._session = session
        self._codec_options = (
            collection.ops.codec_options if codec_options is None else codec_options
        )
        self._machine: CursorMachine | None = None
        self._buffer: list[Any] = []  # documents given at construction (no server cursor)
        self._killed = False
        self._retrieved = 0

    # -- running -------------------------------------------------------------------------------

    def _run(self, flow: Flow[Any]) -> Any:
        # each call (open, a getMore, close) gets the collection's timeoutMS anew
        timeout = getattr(self._collection, "timeout", None)
        return self._engine.run(flow, session=self._session, timeout=timeout)

    def _open(self) -> CursorMachine | None:
        """The cursor machine, opening it if needed (None: only the given documents)."""
        return self._machine

    def _count(self, machine: CursorMachine) -> None:
        self._retrieved = max(self._retrieved, machine.returned + machine.buffered)

    def _next_document(self) -> Any | None:
        if self._buffer:
            return self._buffer.pop(0)
        machine = self._open()
        if machine is None:
            return None
        document = self._run(cursor_next(machine))
        self._count(machine)
        return document

    def _next_raw_batch(self) -> bytes | None:
        if self._buffer:
            documents, self._buffer = self._buffer, []
            return raw_batch(documents)
        machine = self._open()
        if machine is None:
            return None
        batch = self._run(cursor_next_batch(machine))
        self._count(machine)
        return raw_batch(batch) if batch else None

    def next(self) -> Any:
        """The next document (a raw batch for raw-batch cursors); StopIteration at the end."""
        if self._killed and not self._buffer:
            raise StopIteration
        item = self._next_raw_batch() if self._raw_batches else self._next_document()
        if item is None:
            self._killed = True
            raise StopIteration
        if self._raw_batches:
            return item
        return apply_codec_options(item, self._codec_options)

    def __next__(self) -> Any:
        return self.next()

    def __iter__(self) -> Iterator[Any]:
        return self

    def to_list(self, length: int | None = None) -> list[Any]:
        """The remaining documents (at most ``length``)."""
        if length is not None and _integer(length, "length") < 1:
            raise ValueError("to_list() length must be greater than 0")
        out: list[Any] = []
        for document in self:
            out.append(document)
            if length is not None and len(out) >= length:
                break
        return out

    # -- state ---------------------------------------------------------------------------------

    @property
    def collection(self) -> Collection:
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

    def close(self) -> None:
        """Free the server cursor (best effort killCursors); iteration ends."""
        self._killed = True
        self._buffer = []
        machine = self._machine
        if machine is not None and not machine.closed:
            self._run(cursor_close(machine))

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


class Cursor(_CursorBase):
    """The documents of a find (see the module docstring), built by ``Collection.find``.

    Options can be chained until the first document is read; afterwards they raise
    :class:`~mongo_sansio.errors.InvalidOperation`, as in PyMongo.
    """

    def __init__(
        self,
        collection: Collection,
        filter: Mapping[str, Any] | None = None,
        projection: Any = None,
        *,
        session: Any = None,
        **options: Any,
    ) -> None:
        super().__init__(collection, session=session)
        self._filter = filter
        self._projection = projection
        self._options: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
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
        return self._set("sort", key_or_list)

    def skip(self, skip: int) -> Self:
        return self._set("skip", _integer(skip, "skip", minimum=0))

    def limit(self, limit: int) -> Self:
        self._empty = False
        return self._set("limit", _integer(limit, "limit"))

    def batch_size(self, batch_size: int) -> Self:
        return self._set("batch_size", _integer(batch_size, "batch_size", minimum=0))

    def hint(self, index: Any) -> Self:
        return self._set("hint", index)

    def max_time_ms(self, max_time_ms: int | None) -> Self:
        return self._set("max_time_ms", _integer(max_time_ms, "max_time_ms", optional=True))

    def max_await_time_ms(self, max_await_time_ms: int | None) -> Self:
        checked = _integer(max_await_time_ms, "max_await_time_ms", optional=True)
        return self._set("max_await_time_ms", checked)

    def comment(self, comment: Any) -> Self:
        return self._set("comment", comment)

    def collation(self, collation: Mapping[str, Any] | None) -> Self:
        return self._set("collation", collation)

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

    def __getitem__(self, index: int | slice) -> Any:
        """``cursor[i]``: the ``i``-th document of the query (a new query, with this cursor's
        skip added; IndexError if there is none).  ``cursor[a:b]``: this cursor with skip
        ``a`` and limit ``b - a``."""
        self._check_okay_to_chain()
        self._empty = False
        if isinstance(index, slice):
            if index.step is not None:
                raise IndexError("Cursor instances do not support slice steps")
            skip = 0
            if index.start is not None:
                if index.start < 0:
                    raise IndexError("Cursor instances do not support negative indices")
                skip = index.start
            limit = 0
            if index.stop is not None:
                limit = index.stop - skip
                if limit < 0:
                    raise IndexError(
                        f"stop index must be greater than start index for slice {index!r}"
                    )
                self._empty = limit == 0
            self._options["skip"] = skip
            self._options["limit"] = limit
            return self
        if isinstance(index, int) and not isinstance(index, bool):
            if index < 0:
                raise IndexError("Cursor instances do not support negative indices")
            clone = self.clone()
            clone._options["skip"] = index + self._options.get("skip", 0)
            clone._options["limit"] = -1
            clone._options.pop("cursor_type", None)
            for document in clone:
                return document
            raise IndexError("no such item for Cursor instance")
        raise TypeError(f"index {index!r} cannot be applied to Cursor instances")

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

    def rewind(self) -> Self:
        """Back to the unevaluated state: the next read runs the query again."""
        self.close()
        self._machine = None
        self._killed = False
        self._retrieved = 0
        return self

    def explain(self) -> Any:
        """The server's explain output for this query (default verbosity)."""
        reply = self._run(
            explain_find(self._collection.ops, self._filter, self._projection, **self._options)
        )
        return apply_codec_options(reply, self._codec_options)

    def distinct(self, key: str) -> list[Any]:
        """The distinct values of ``key`` among the documents this query matches."""
        options = {
            name: self._options[name]
            for name in ("collation", "comment", "max_time_ms")
            if name in self._options
        }
        values: list[Any] = self._run(
            self._collection.ops.distinct(key, self._filter or None, **options)
        )
        return values

    # -- iteration -------------------------------------------------------------------------------

    def _open(self) -> CursorMachine | None:
        if self._machine is None and not self._killed:
            if self._empty:
                self._killed = True
                return None
            flow = self._collection.ops.find(self._filter, self._projection, **self._options)
            self._machine = self._run(flow)
            self._count(self._machine)
        return self._machine


class RawBatchCursor(Cursor):
    """A find cursor that yields each batch as the BSON bytes of its documents, concatenated
    (PyMongo's ``RawBatchCursor``, from ``Collection.find_raw_batches``)."""

    _raw_batches = True

    def __getitem__(self, index: Any) -> Any:
        raise InvalidOperation("Cannot call __getitem__ on RawBatchCursor")


class CommandCursor(_CursorBase):
    """An open cursor of an aggregate, a listX command or ``cursor_command`` (PyMongo's
    ``CommandCursor``); or, for commands that answer with an array (``listDatabases``), the
    given ``documents``."""

    def __init__(
        self,
        collection: Collection,
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
        _integer(batch_size, "batch_size", minimum=0)
        if self._machine is not None:
            self._machine.batch_size = batch_size or None
        return self

    def try_next(self) -> Any | None:
        """The next document, or None when the server has none yet (at most one getMore);
        for tailable cursors and change streams."""
        if self._buffer:
            return apply_codec_options(self._buffer.pop(0), self._codec_options)
        machine = self._machine
        if machine is None or self._killed:
            return None
        document = self._run(cursor_try_next(machine))
        self._count(machine)
        if document is None:
            if machine.exhausted:
                self._killed = True
            return None
        return apply_codec_options(document, self._codec_options)


class RawBatchCommandCursor(CommandCursor):
    """A command cursor that yields each batch as the BSON bytes of its documents
    (PyMongo's ``RawBatchCommandCursor``, from ``Collection.aggregate_raw_batches``)."""

    _raw_batches = True

    def __getitem__(self, index: int) -> Any:
        raise InvalidOperation("Cannot call __getitem__ on RawBatchCommandCursor")
