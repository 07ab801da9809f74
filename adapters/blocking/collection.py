"""The blocking ``Collection``: PyMongo's Collection API over the core's flows.

Every method is shared with the async collection (:mod:`mongo_sansio.adapters._api.collection`,
written once as programs); on this class each one runs its flow and returns the result.
:meth:`Collection.find` returns a lazily opened :class:`~.cursor.Cursor`; ``aggregate`` and
``list_indexes`` a :class:`~.cursor.CommandCursor`; ``watch`` an open
:class:`~.change_stream.ChangeStream`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._api.collection import CollectionBase
from .._api.program import Blocking
from .change_stream import ChangeStream
from .cursor import CommandCursor, Cursor, RawBatchCommandCursor, RawBatchCursor

if TYPE_CHECKING:
    from .database import Database  # noqa: F401 - named in a base class (a cycle)

__all__ = ["Collection"]


class Collection(
    Blocking,
    CollectionBase[
        "Database", Cursor, RawBatchCursor, CommandCursor, RawBatchCommandCursor, ChangeStream
    ],
):
    """One collection; methods as in PyMongo (see the module docstring and
    :class:`~mongo_sansio.adapters._api.collection.CollectionBase`)."""

    _cursor_class = Cursor
    _raw_cursor_class = RawBatchCursor
    _command_cursor_class = CommandCursor
    _raw_command_cursor_class = RawBatchCommandCursor
    _change_stream_class = ChangeStream
