"""The blocking ``Cursor``: documents of a find or an aggregate, read through the core's flows.

:meth:`Collection.find <.collection.Collection.find>` returns a :class:`Cursor` that opens
lazily, on first iteration, so that ``sort``, ``skip``, ``limit``, ``batch_size`` ... can be
chained first, as in PyMongo; it reads with :func:`~mongo_sansio.cursors.cursor_next` (one
getMore per exhausted batch) and kills its server cursor on :meth:`Cursor.close`.
``aggregate`` returns an already open :class:`Cursor`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mongo_sansio.cursors import Cursor as CursorMachine
from mongo_sansio.cursors import cursor_close, cursor_next
from mongo_sansio.errors import InvalidOperation
from mongo_sansio.ops.collection import CollectionOps

from ._closing import ClosesOnExit
from ._engine import Engine

__all__ = ["Cursor"]


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
