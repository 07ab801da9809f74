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

Everything but iteration, ``with`` and indexing is shared with the async cursors
(:mod:`mongo_sansio.adapters._api.cursor`).  A cursor belongs to one thread at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._api.closing import ClosesOnExit
from .._api.cursor import END, CommandCursorBase, CursorBase, FindCursorBase, RawBatches
from .._api.program import Blocking, run_blocking

if TYPE_CHECKING:
    from .collection import Collection  # noqa: F401 - named in a base class (a cycle)

__all__ = ["Cursor", "CommandCursor", "RawBatchCursor", "RawBatchCommandCursor"]


class _Iterating(Blocking, ClosesOnExit, CursorBase["Collection"]):
    """Blocking iteration and ``with`` (closes the cursor on the way out)."""

    def next(self) -> Any:
        """The next document (a raw batch for raw-batch cursors); StopIteration at the end."""
        item = self._next_buffered()
        if item is not None:
            return item
        item = run_blocking(self._engine, self._next_item())
        if item is END:
            raise StopIteration
        return item

    __next__ = next  # (an alias, not a call: one call less per document)

    def __iter__(self) -> Iterator[Any]:
        return self


class Cursor(_Iterating, FindCursorBase["Collection"]):
    """The documents of a find (see the module docstring), built by ``Collection.find``.

    Options can be chained until the first document is read; afterwards they raise
    :class:`~mongo_sansio.errors.InvalidOperation`, as in PyMongo.
    """

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


class RawBatchCursor(RawBatches, Cursor):
    """A find cursor that yields each batch as the BSON bytes of its documents, concatenated
    (PyMongo's ``RawBatchCursor``, from ``Collection.find_raw_batches``)."""


class CommandCursor(_Iterating, CommandCursorBase["Collection"]):
    """An open cursor of an aggregate, a listX command or ``cursor_command`` (PyMongo's
    ``CommandCursor``); or, for commands that answer with an array (``listDatabases``), the
    given ``documents``."""


class RawBatchCommandCursor(RawBatches, CommandCursor):
    """A command cursor that yields each batch as the BSON bytes of its documents
    (PyMongo's ``RawBatchCommandCursor``, from ``Collection.aggregate_raw_batches``)."""
