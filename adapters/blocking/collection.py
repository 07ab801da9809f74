"""The blocking ``Collection`` and ``Cursor``: one-line wrappers over the core's flows.

Each :class:`Collection` method builds a flow with
:class:`~mongo_sansio.ops.collection.CollectionOps` (which checks the arguments at once) and
runs it on the client's engine.  :meth:`Collection.find` returns a :class:`Cursor` that opens
lazily, on first iteration, so that ``sort``, ``skip``, ``limit``, ``batch_size`` ... can be
chained first, as in PyMongo; it reads with :func:`~mongo_sansio.cursors.cursor_next` (one
getMore per exhausted batch) and kills its server cursor on :meth:`Cursor.close`.
``aggregate`` returns an already open :class:`Cursor`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mongo_sansio.cursors import ChangeStreamTarget, cursor_close, cursor_next
from mongo_sansio.cursors import Cursor as CursorMachine
from mongo_sansio.errors import InvalidOperation
from mongo_sansio.flow import Flow
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.results import (
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)
from mongo_sansio.selection import ReadPreference

from ._closing import ClosesOnExit
from ._engine import Engine
from .change_stream import ChangeStream, watch_options

if TYPE_CHECKING:
    from .client import Database

__all__ = ["Collection", "Cursor"]


class Cursor(ClosesOnExit):
    """The documents of a find or an aggregate (see the module docstring).

    A find cursor takes options until it is first iterated; afterwards they raise
    :class:`~mongo_sansio.errors.InvalidOperation`.  Iteration ends (StopIteration) when the
    server has nothing more; ``close()`` (or leaving a ``with`` block) frees the server cursor.
    """

    def __init__(
        self,
        engine: Engine,
        opener: CollectionOps | None = None,
        filter: Mapping[str, Any] | None = None,
        projection: Any = None,
        *,
        opened: CursorMachine | None = None,
        **options: Any,
    ) -> None:
        self._engine = engine
        self._ops = opener
        self._filter = filter
        self._projection = projection
        self._options: dict[str, Any] = options
        self._cursor = opened
        self._closed = False

    # -- options, before the first document ----------------------------------------------------

    def _set(self, **options: Any) -> Cursor:
        if self._cursor is not None or self._closed:
            raise InvalidOperation("cannot set cursor options after the cursor was iterated")
        self._options.update(options)
        return self

    def sort(
        self, key_or_list: str | Sequence[Any] | Mapping[str, Any], direction: Any = None
    ) -> Cursor:
        """``sort("i")``, ``sort("i", -1)``, ``sort([("a", 1), ("b", -1)])`` or a mapping."""
        if isinstance(key_or_list, str):
            key_or_list = [(key_or_list, 1 if direction is None else direction)]
        return self._set(sort=key_or_list)

    def skip(self, skip: int) -> Cursor:
        return self._set(skip=skip)

    def limit(self, limit: int) -> Cursor:
        return self._set(limit=limit)

    def batch_size(self, batch_size: int) -> Cursor:
        return self._set(batch_size=batch_size)

    def projection(self, projection: Any) -> Cursor:
        if self._cursor is not None or self._closed:
            raise InvalidOperation("cannot set cursor options after the cursor was iterated")
        self._projection = projection
        return self

    def hint(self, index: Any) -> Cursor:
        return self._set(hint=index)

    def max_time_ms(self, max_time_ms: int) -> Cursor:
        return self._set(max_time_ms=max_time_ms)

    def max_await_time_ms(self, max_await_time_ms: int) -> Cursor:
        return self._set(max_await_time_ms=max_await_time_ms)

    def comment(self, comment: Any) -> Cursor:
        return self._set(comment=comment)

    def collation(self, collation: Mapping[str, Any]) -> Cursor:
        return self._set(collation=collation)

    def allow_disk_use(self, allow_disk_use: bool) -> Cursor:
        return self._set(allow_disk_use=allow_disk_use)

    # -- iteration -------------------------------------------------------------------------------

    def _opened(self) -> CursorMachine:
        if self._cursor is None:
            if self._ops is None:
                raise InvalidOperation("the cursor has no query")
            self._cursor = self._engine.run(
                self._ops.find(self._filter, self._projection, **self._options)
            )
        return self._cursor

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        document = self._engine.run(cursor_next(self._opened()))
        if document is None:
            self._closed = True
            raise StopIteration
        return document

    next = __next__

    def to_list(self, length: int | None = None) -> list[Any]:
        """The remaining documents (at most ``length``)."""
        out: list[Any] = []
        for document in self:
            out.append(document)
            if length is not None and len(out) >= length:
                break
        return out

    @property
    def alive(self) -> bool:
        """Whether more documents may come."""
        if self._closed:
            return False
        return self._cursor is None or not self._cursor.exhausted

    @property
    def address(self) -> tuple[str, int] | None:
        """The server the cursor is on (None before it is opened)."""
        return None if self._cursor is None else self._cursor.server.address

    def close(self) -> None:
        """Free the server cursor (best effort); iteration ends."""
        if self._closed:
            return
        self._closed = True
        if self._cursor is not None:
            self._engine.run(cursor_close(self._cursor))

    def __del__(self) -> None:
        # Dropped while the server still holds the cursor: queue its killCursors for the
        # client's upkeep task (a finalizer must not do I/O or take locks).
        cursor = getattr(self, "_cursor", None)
        if cursor is None or self._closed or cursor.closed:
            return
        self._closed = True
        command = cursor.close()
        if command is not None:
            db, body = command
            self._engine.kill_cursor_later(cursor.server.address, db, body)


class Collection:
    """One collection; methods as in PyMongo (see the module docstring)."""

    def __init__(
        self, database: Database, name: str, *, read_preference: ReadPreference | None = None
    ) -> None:
        self.database = database
        self.name = name
        changes = {} if read_preference is None else {"read_preference": read_preference}
        self._ops: CollectionOps = database.ops.get_collection(name, **changes)
        self._engine: Engine = database.client.engine

    @property
    def full_name(self) -> str:
        return self._ops.full_name

    def __getitem__(self, name: str) -> Collection:
        """The sub-collection ``<this name>.<name>``."""
        return self.database.get_collection(f"{self.name}.{name}")

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    @property
    def ops(self) -> CollectionOps:
        """The runtime-independent collection whose flows this one runs."""
        return self._ops

    @property
    def read_preference(self) -> ReadPreference:
        return self._ops.read_preference

    def _run(self, flow: Flow[Any]) -> Any:
        return self._engine.run(flow)

    # -- writes ----------------------------------------------------------------------------------

    def insert_one(self, document: Mapping[str, Any], **options: Any) -> InsertOneResult:
        result: InsertOneResult = self._run(self._ops.insert_one(document, **options))
        return result

    def insert_many(
        self, documents: Iterable[Mapping[str, Any]], ordered: bool = True, **options: Any
    ) -> InsertManyResult:
        result: InsertManyResult = self._run(self._ops.insert_many(documents, ordered, **options))
        return result

    def update_one(
        self, filter: Mapping[str, Any], update: Any, upsert: bool = False, **options: Any
    ) -> UpdateResult:
        result: UpdateResult = self._run(self._ops.update_one(filter, update, upsert, **options))
        return result

    def update_many(
        self, filter: Mapping[str, Any], update: Any, upsert: bool = False, **options: Any
    ) -> UpdateResult:
        result: UpdateResult = self._run(self._ops.update_many(filter, update, upsert, **options))
        return result

    def replace_one(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        upsert: bool = False,
        **options: Any,
    ) -> UpdateResult:
        result: UpdateResult = self._run(
            self._ops.replace_one(filter, replacement, upsert, **options)
        )
        return result

    def delete_one(self, filter: Mapping[str, Any], **options: Any) -> DeleteResult:
        result: DeleteResult = self._run(self._ops.delete_one(filter, **options))
        return result

    def delete_many(self, filter: Mapping[str, Any], **options: Any) -> DeleteResult:
        result: DeleteResult = self._run(self._ops.delete_many(filter, **options))
        return result

    def drop(self, **options: Any) -> None:
        self._run(self._ops.drop(**options))

    # -- reads -----------------------------------------------------------------------------------

    def find(
        self, filter: Mapping[str, Any] | None = None, projection: Any = None, **options: Any
    ) -> Cursor:
        """A lazily opened cursor; ``options`` are find's (sort, skip, limit, batch_size ...)."""
        return Cursor(self._engine, self._ops, filter, projection, **options)

    def find_one(self, filter: Any = None, projection: Any = None, **options: Any) -> Any:
        return self._run(self._ops.find_one(filter, projection, **options))

    def aggregate(self, pipeline: list[Mapping[str, Any]], **options: Any) -> Cursor:
        opened = self._run(self._ops.aggregate(pipeline, **options))
        return Cursor(self._engine, opened=opened)

    def count_documents(self, filter: Mapping[str, Any], **options: Any) -> int:
        count: int = self._run(self._ops.count_documents(filter, **options))
        return count

    def estimated_document_count(self, **options: Any) -> int:
        count: int = self._run(self._ops.estimated_document_count(**options))
        return count

    def distinct(
        self, key: str, filter: Mapping[str, Any] | None = None, **options: Any
    ) -> list[Any]:
        values: list[Any] = self._run(self._ops.distinct(key, filter, **options))
        return values

    # -- change streams --------------------------------------------------------------------------

    def watch(
        self, pipeline: Sequence[Mapping[str, Any]] | None = None, **options: Any
    ) -> ChangeStream:
        """A change stream over this collection; ``options`` are PyMongo's (full_document,
        resume_after, start_after, max_await_time_ms, ...)."""
        return ChangeStream(
            self._engine,
            ChangeStreamTarget.collection(self._ops.database, self.name),
            pipeline,
            watch_options(**options),
            self.read_preference,
            self._ops.read_concern.to_document() or None,
        )

    def __repr__(self) -> str:
        return f"Collection({self.full_name!r})"
