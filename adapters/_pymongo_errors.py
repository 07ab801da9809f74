"""Our errors become PyMongo's errors once PyMongo is loaded in the process.

Code moved over from PyMongo keeps ``from pymongo.errors import DuplicateKeyError`` and
``except DuplicateKeyError:``.  Python's ``except`` (and ``isinstance``) walk the raised
object's real MRO, so our classes must really derive from PyMongo's: once ``pymongo`` is in
``sys.modules``, :func:`adopt_pymongo_errors` gives each of our error classes PyMongo's class
of the same name (``pymongo.errors``, ``bson.errors``, ``gridfs.errors``) as one more base, by
assigning ``__bases__``.  The core (:mod:`mongo_sansio.errors`) never imports PyMongo; this
module only imports PyMongo's error modules when ``pymongo`` (or, for the codec's errors,
PyMongo's ``bson``) is already loaded, so PyMongo stays optional.

Why rebasing rather than raising PyMongo's objects: an error raised by our client keeps
everything ours carries (``code_name``, ``errmsg``, ``partial_result``, our branches
``LocalProtocolError`` / ``NetworkError``) and ``except mongo_sansio.errors.X`` keeps working,
with no translation at every raise site (the core's machines raise most of them).

Where PyMongo's class goes among the bases (:func:`_rebase`): after our own bases and before
Python's builtin ones (``ValueError``), so that our ``__init__``, properties and attributes
(``code``, ``details``, ``timeout``, ``error_labels``...) come before PyMongo's in the MRO; or
first, when that alone makes PyMongo's class the first of PyMongo's in the MRO (as it is for
PyMongo's own object: our ``InvalidName`` is not read as a ``ConfigurationError``) and it
shadows nothing of ours.  The arrangement chosen is checked: every attribute resolves where it
did before.

PyMongo's ``__init__``s are never run on our objects: our ``MongoError.__init__`` calls
``Exception.__init__`` itself, because cooperative ``super()`` calls across two trees whose
signatures differ break (PyMongo's ``OperationFailure.__init__`` would call
``NotPrimaryError.__init__`` with keywords it does not take).  What those ``__init__``s would
have set is given by our classes (``code``, ``details``, ``errors``, ``_message``,
``document``).

Triggered when the client modules are imported, at each client's construction and when an
operation fails (a flag check once done), so that PyMongo imported after our client still
counts.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import mongo_sansio.bson.errors as bson_errors
import mongo_sansio.cmap.errors as cmap_errors
import mongo_sansio.errors as errors
import mongo_sansio.gridfs.errors as gridfs_errors
import mongo_sansio.selection.errors as selection_errors

__all__ = ["adopt_pymongo_errors", "pymongo_twins"]

#: (our class, PyMongo's module, PyMongo's class name), parents before children
_BSON_TWINS: tuple[tuple[type[BaseException], str, str], ...] = (
    (errors.BSONError, "bson.errors", "BSONError"),
    (errors.InvalidDocument, "bson.errors", "InvalidDocument"),
    (bson_errors.InvalidBSON, "bson.errors", "InvalidBSON"),
    (bson_errors.InvalidId, "bson.errors", "InvalidId"),
)
_PYMONGO_TWINS: tuple[tuple[type[BaseException], str, str], ...] = (
    (errors.MongoError, "pymongo.errors", "PyMongoError"),
    (errors.ProtocolError, "pymongo.errors", "ProtocolError"),
    (errors.ConfigurationError, "pymongo.errors", "ConfigurationError"),
    (errors.InvalidURI, "pymongo.errors", "InvalidURI"),
    (errors.InvalidName, "pymongo.errors", "InvalidName"),
    (errors.InvalidOperation, "pymongo.errors", "InvalidOperation"),
    (errors.CollectionInvalid, "pymongo.errors", "CollectionInvalid"),
    (errors.DocumentTooLarge, "pymongo.errors", "DocumentTooLarge"),
    (errors.OperationFailure, "pymongo.errors", "OperationFailure"),
    (errors.WriteError, "pymongo.errors", "WriteError"),
    (errors.DuplicateKeyError, "pymongo.errors", "DuplicateKeyError"),
    (errors.WriteConcernError, "pymongo.errors", "WriteConcernError"),
    (errors.WTimeoutError, "pymongo.errors", "WTimeoutError"),
    (errors.BulkWriteError, "pymongo.errors", "BulkWriteError"),
    (errors.ClientBulkWriteException, "pymongo.errors", "ClientBulkWriteException"),
    (errors.ExecutionTimeout, "pymongo.errors", "ExecutionTimeout"),
    (errors.CursorNotFound, "pymongo.errors", "CursorNotFound"),
    (errors.ConnectionFailure, "pymongo.errors", "ConnectionFailure"),
    (errors.AutoReconnect, "pymongo.errors", "AutoReconnect"),
    (errors.NotPrimaryError, "pymongo.errors", "NotPrimaryError"),
    (errors.NetworkTimeout, "pymongo.errors", "NetworkTimeout"),
    (selection_errors.ServerSelectionTimeoutError, "pymongo.errors", "ServerSelectionTimeoutError"),
    (cmap_errors.WaitQueueTimeoutError, "pymongo.errors", "WaitQueueTimeoutError"),
    # ours without a twin of the same name, as PyMongo raises them: a refused authentication
    # is an OperationFailure (code 18) there, an incompatible server a ConfigurationError
    (errors.AuthenticationError, "pymongo.errors", "OperationFailure"),
    (errors.IncompatibleServerError, "pymongo.errors", "ConfigurationError"),
    (gridfs_errors.GridFSError, "gridfs.errors", "GridFSError"),
    (gridfs_errors.CorruptGridFile, "gridfs.errors", "CorruptGridFile"),
    (gridfs_errors.NoFile, "gridfs.errors", "NoFile"),
    (gridfs_errors.FileExists, "gridfs.errors", "FileExists"),
)

#: what every class's namespace holds besides its behaviour
_METADATA = frozenset(
    {
        "__module__",
        "__doc__",
        "__qualname__",
        "__annotations__",
        "__dict__",
        "__weakref__",
        "__firstlineno__",
        "__static_attributes__",
    }
)

_state = {"bson": False, "pymongo": False}


def adopt_pymongo_errors() -> None:
    """Make our error classes subclasses of PyMongo's when PyMongo is loaded (idempotent;
    a dictionary look-up once done)."""
    if _state["pymongo"]:
        return
    modules = sys.modules
    if "pymongo" in modules:
        _adopt(_BSON_TWINS, "bson")
        _adopt(_PYMONGO_TWINS, "pymongo")
    elif not _state["bson"] and _is_pymongos_bson(modules.get("bson")):
        _adopt(_BSON_TWINS, "bson")


def _is_pymongos_bson(module: object) -> bool:
    # another distribution also installs a top-level ``bson``; PyMongo's has its codec options
    return module is not None and hasattr(module, "CodecOptions") and hasattr(module, "ObjectId")


def pymongo_twins() -> list[tuple[type[BaseException], type[BaseException]]]:
    """Each of our classes with PyMongo's class it derives from once adopted (for tests and
    docs; imports PyMongo's modules)."""
    return [(ours, _theirs(module, name)) for ours, module, name in _BSON_TWINS + _PYMONGO_TWINS]


def _theirs(module: str, name: str) -> type[BaseException]:
    found = getattr(importlib.import_module(module), name)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        raise TypeError(f"{module}.{name} is not an exception class")
    return found


def _adopt(twins: tuple[tuple[type[BaseException], str, str], ...], stage: str) -> None:
    if _state[stage]:
        return
    _state[stage] = True  # first: a failure below is warned about once, not at every call
    for ours, module, name in twins:
        try:
            theirs = _theirs(module, name)
            if not issubclass(ours, theirs):
                _rebase(ours, theirs)
        except (ImportError, AttributeError, TypeError) as exc:
            warnings.warn(
                f"{ours.__module__}.{ours.__name__} cannot be made a subclass of PyMongo's "
                f"{module}.{name} ({exc}); `except {name}` will not catch it",
                RuntimeWarning,
                stacklevel=3,
            )


def _rebase(ours: type, theirs: type) -> None:
    """Give ``ours`` the first arrangement of bases (see the module docstring) that keeps
    every attribute ours resolves where it resolved before and, if one does, that makes
    ``theirs`` the first of PyMongo's classes in the MRO."""
    kept = [
        base
        for base in ours.__bases__
        # _Root stands in for Exception until PyMongo's class takes its place
        if base is not errors._Root and not issubclass(theirs, base)
    ]
    builtin = next((i for i, base in enumerate(kept) if base.__module__ == "builtins"), len(kept))
    candidates = [(*kept[:builtin], theirs, *kept[builtin:]), (theirs, *kept)]
    before = _owners(ours.__mro__)
    usable = []
    for bases in candidates:
        try:
            # the MRO these bases would give (a throwaway subclass of them computes it)
            mro = (ours, *type(ours.__name__, bases, {}).__mro__[1:])
        except TypeError:
            continue
        after = _owners(mro)
        if all(after[name] is owner for name, owner in before.items()):
            usable.append((bases, _first_foreign(mro) is theirs))
    for bases, _ in sorted(usable, key=lambda found: not found[1]):
        try:
            ours.__bases__ = bases
        except TypeError:  # an instance layout Python refuses to swap
            continue
        return
    raise TypeError("no arrangement of bases keeps our attributes first")


def _owners(mro: tuple[type, ...]) -> dict[str, type]:
    """For each attribute name along ``mro``, the class it is found in."""
    owners: dict[str, type] = {}
    for cls in mro:
        for name in vars(cls):
            if name not in _METADATA:
                owners.setdefault(name, cls)
    return owners


def _first_foreign(mro: tuple[type, ...]) -> type | None:
    """The first class of ``mro`` that is not ours (PyMongo's or Python's; ``_Root`` stands
    for ``Exception`` until PyMongo's base class replaces it)."""
    return next(
        (
            cls
            for cls in mro
            if cls is errors._Root or not cls.__module__.startswith("mongo_sansio")
        ),
        None,
    )


adopt_pymongo_errors()
