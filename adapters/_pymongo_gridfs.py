"""PyMongo's ``gridfs`` module given one of our databases: our GridFS, with PyMongo's API.

Code moved over from PyMongo keeps ``import gridfs`` and calls ``gridfs.GridFS(db)`` or
``gridfs.GridFSBucket(db)`` (``AsyncGridFS`` / ``AsyncGridFSBucket`` on the async clients).
PyMongo's classes check that ``db`` is PyMongo's ``Database`` and then use PyMongo's
internals, so they cannot serve ours.  Once PyMongo's ``gridfs`` is loaded, the first of our
clients or databases made after replaces those four names in that module by subclasses of
PyMongo's classes whose constructor hands one of our databases to our GridFS of the same name
(:mod:`mongo_sansio.adapters.blocking.gridfs`, :mod:`mongo_sansio.adapters._async_api.gridfs`)
and anything else to PyMongo's own class, unchanged.  ``gridfs.errors``' classes are already
the bases of ours (:mod:`._pymongo_errors`), so ``except gridfs.errors.NoFile`` works too.

The objects built for our databases are our classes (not instances of PyMongo's); nothing else
of PyMongo's module changes.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["bridge_pymongo_gridfs"]

_MARK = "_mongo_sansio_bridged"
_NAMES = ("GridFS", "GridFSBucket", "AsyncGridFS", "AsyncGridFSBucket")


def bridge_pymongo_gridfs() -> None:
    """Install the bridge in PyMongo's ``gridfs`` when it is loaded (idempotent; cheap)."""
    module = sys.modules.get("gridfs")
    if module is None or getattr(module, _MARK, False):
        return
    if not hasattr(module, "GridFSBucket") or not hasattr(module, "errors"):
        return  # not PyMongo's gridfs
    for name in _NAMES:
        theirs = getattr(module, name, None)
        if isinstance(theirs, type):
            setattr(module, name, _bridged(theirs, name))
    setattr(module, _MARK, True)


def _ours(name: str, database: Any) -> Any:
    """Our GridFS class called ``name`` for ``database``, or None when it is not ours."""
    if name.startswith("Async"):
        from ._async_api import gridfs as async_gridfs
        from ._async_api.database import AsyncDatabase

        return getattr(async_gridfs, name) if isinstance(database, AsyncDatabase) else None
    from .blocking import gridfs as blocking_gridfs
    from .blocking.database import Database

    return getattr(blocking_gridfs, name) if isinstance(database, Database) else None


def _bridged(theirs: type, name: str) -> type:
    def __new__(cls: type, database: Any = None, *args: Any, **kwargs: Any) -> Any:
        ours = _ours(name, database)
        if ours is not None:
            return ours(database, *args, **kwargs)  # not a ``cls``: its __init__ is not run
        return object.__new__(cls)  # PyMongo's classes keep object's __new__; __init__ runs

    return type(
        name,
        (theirs,),
        {
            "__new__": __new__,
            "__module__": theirs.__module__,
            "__qualname__": theirs.__qualname__,
            "__doc__": theirs.__doc__,
        },
    )
