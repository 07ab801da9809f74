"""mongod's storage limits on a document: 16 MiB of BSON and 180 levels of nesting.

Inputs: a document about to be stored, and how it came to be (inserted, updated or replaced,
upserted).  Outputs: nothing when it may be stored; a :class:`CommandError` with mongod's code
and message for that path when it may not:

=========== ================================================ ===============================
path         over 16 MiB                                      nested too deep (Overflow, 15)
=========== ================================================ ===============================
insert       BadValue (2) "object to insert too large. ..."   "cannot insert document because
                                                              it exceeds 180 levels of nesting"
update       BSONObjectTooLarge (10334) "Resulting document   "Document exceeds maximum
             after update is larger than 16777216"            nesting depth of 180"
upsert       17420 "Document to upsert is larger than ..."    as update
=========== ================================================ ===============================

The depth limit is mongod's ``maxBSONDepth`` (200) less the 20 levels it keeps for itself; a
top-level field is level 1, a field of an embedded document or array one more, and empty
documents and arrays add no level (mongod's jstests: with ``maxBSONDepth: 21``, ``{a: {}}`` is
stored and ``{a: {b: 1}}`` fails with Overflow).  The 100 levels of MongoDB's documentation is
the supported depth, not the enforced one.  A message may still carry a larger document (up to
maxMessageSizeBytes): it is the stored document that is refused, before anything changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mongo_sansio.bson import encode
from mongo_sansio.errors import MongoError
from mongo_sansio.testing.engine.errors import CommandError

__all__ = ["MAX_USER_DEPTH", "MAX_USER_SIZE", "check_storable", "nesting_depth"]

MAX_USER_SIZE = 16 * 1024 * 1024  # BSONObjMaxUserSize
MAX_USER_DEPTH = 180  # BSONDepth::getMaxDepthForUserStorage() with the default maxBSONDepth


def nesting_depth(document: Any, *, stop_above: int = MAX_USER_DEPTH) -> int:
    """The deepest level any field of ``document`` sits at (0 for an empty document); counting
    stops a level past ``stop_above``, so a hostile document costs no more than that."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
        if not children:
            continue
        level += 1
        if level > deepest:
            deepest = level
            if deepest > stop_above:
                return deepest
        stack.extend((child, level) for child in children if isinstance(child, Mapping | list))
    return deepest


def _size(document: Mapping[str, Any]) -> int:
    try:
        return len(encode(document))
    except (MongoError, ValueError, TypeError, OverflowError):
        return 0  # not BSON at all: the reply's own encoding reports it


def check_storable(document: Mapping[str, Any], path: str) -> None:
    """Refuse ``document`` as mongod would on ``path`` ("insert", "update" or "upsert")."""
    if path == "insert":
        size = _size(document)
        if size > MAX_USER_SIZE:
            raise CommandError(
                2, "BadValue", f"object to insert too large. size in bytes: {size}, max size: {MAX_USER_SIZE}"
            )
        if nesting_depth(document) > MAX_USER_DEPTH:
            raise CommandError(
                15, "Overflow", f"cannot insert document because it exceeds {MAX_USER_DEPTH} levels of nesting"
            )
        return
    if nesting_depth(document) > MAX_USER_DEPTH:
        raise CommandError(15, "Overflow", f"Document exceeds maximum nesting depth of {MAX_USER_DEPTH}")
    if _size(document) > MAX_USER_SIZE:
        if path == "upsert":
            raise CommandError(17420, "Location17420", f"Document to upsert is larger than {MAX_USER_SIZE}")
        raise CommandError(10334, "BSONObjectTooLarge", f"Resulting document after update is larger than {MAX_USER_SIZE}")
