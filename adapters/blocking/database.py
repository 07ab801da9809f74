"""The blocking ``Database``: one database of a :class:`~.client.MongoClient`, as PyMongo's.

Every method is shared with the async database (:mod:`mongo_sansio.adapters._api.database`,
written once as programs); on this class each one runs its flow and returns the result.
``db.name`` / ``db["name"]`` / :meth:`Database.get_collection` give a
:class:`~.collection.Collection`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._api.database import DatabaseBase
from .._api.program import Blocking
from .change_stream import ChangeStream
from .collection import Collection
from .cursor import CommandCursor

if TYPE_CHECKING:
    from .client import MongoClient  # noqa: F401 - named in a base class (a cycle)

__all__ = ["Database"]


class Database(Blocking, DatabaseBase["MongoClient", Collection, CommandCursor, ChangeStream]):
    """One database of a client (see the module docstring and
    :class:`~mongo_sansio.adapters._api.database.DatabaseBase`).  Settings not given are the
    client's."""

    _collection_class = Collection
    _command_cursor_class = CommandCursor
    _change_stream_class = ChangeStream
