"""What a find cursor can ask besides its documents: the server's plan for its query.

:func:`explain_find` builds the find command a cursor would send and runs it wrapped in
``{explain: <find>}`` (the server's default verbosity, ``allPlansExecution``), as PyMongo's
``Cursor.explain`` does: a limit becomes a hard limit (one batch), a tailable-await wait is
dropped (an explain returns at once).

Inputs: a :class:`~mongo_sansio.ops.collection.CollectionOps`, the cursor's filter, projection
and find options.  Output: a ``Flow`` returning the explain reply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.flow import Flow
from mongo_sansio.ops import crud
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.crud_commands import find_command

__all__ = ["explain_find"]

#: find options that only shape the getMores of a cursor, not the command
_CURSOR_ONLY_OPTIONS = frozenset({"max_await_time_ms", "read_preference"})


def explain_find(
    collection: CollectionOps,
    filter: Mapping[str, Any] | None = None,
    projection: Any = None,
    **options: Any,
) -> Flow[Mapping[str, Any]]:
    """The explain reply for ``collection.find(filter, projection, **options)``; options as
    :meth:`CollectionOps.find <mongo_sansio.ops.collection.CollectionOps.find>` takes them."""
    read_preference = collection._read_preference(options.get("read_preference"))
    find_options = {k: v for k, v in options.items() if k not in _CURSOR_ONLY_OPTIONS}
    limit = find_options.get("limit")
    if limit:
        find_options["limit"] = -abs(limit)
    body = find_command(
        collection.name,
        filter,
        projection,
        read_concern=collection.read_concern,
        **find_options,
    )
    return crud.read_command(
        collection.database, {"explain": body}, read_preference=read_preference
    )
