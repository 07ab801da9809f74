"""Index management: ``IndexModel``, ``create_index(es)``, ``list_indexes``,
``index_information``, ``drop_index(es)`` (index-management.md, PyMongo's names and semantics).

* A key specification is one field name (ascending), a list of ``(field, direction)`` pairs
  or of field names, or a mapping; a direction is ``1``/``-1``, an index type (``"text"``,
  ``"2dsphere"``, ``"hashed"``...) or a document.  The index's default name joins the pairs
  as PyMongo and the shell do: ``[("a", 1), ("b", -1)]`` is ``"a_1_b_-1"``.
* ``createIndexes`` and ``dropIndexes`` run on a writable server with the collection's write
  concern; keyword options beyond the index's own are command fields (``commitQuorum``,
  ``maxTimeMS``), as in PyMongo.  Dropping an index of a collection that does not exist is not
  an error (PyMongo ignores "ns not found").
* ``listIndexes`` runs on the primary; a collection that does not exist has no indexes (an
  empty cursor, not an error).

Inputs: the caller's arguments and the collection's settings.  Outputs: index documents and
``Flow`` values (names, cursors, the ``index_information`` dictionary).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mongo_sansio.cursors.cursor import Cursor, Namespace, cursor_next_batch
from mongo_sansio.cursors.timeout_mode import checked_timeout_mode
from mongo_sansio.errors import ConfigurationError, ServerError
from mongo_sansio.flow import Flow, ServerInfo
from mongo_sansio.ops import crud
from mongo_sansio.ops.crud_commands import ArgumentTypeError, check_mapping, put_raw_data
from mongo_sansio.ops.write_concern import WriteConcern

__all__ = [
    "IndexModel",
    "index_key_pairs",
    "index_name",
    "create_indexes",
    "list_indexes",
    "index_information",
    "drop_index",
    "IndexOps",
]

#: createIndexes/createIndex keyword options that are command fields, not index options
_COMMAND_OPTIONS = ("maxTimeMS", "commitQuorum", "rawData")
#: the placeholder server of the empty cursor of a collection that does not exist
_NO_SERVER = ServerInfo(("", 0), 0)


def index_key_pairs(keys: Any) -> list[tuple[str, Any]]:
    """The ``(field, direction)`` pairs of a key specification (TypeError / ValueError as
    PyMongo for a malformed one)."""
    if isinstance(keys, str):
        pairs: list[Any] = [(keys, 1)]
    elif isinstance(keys, Mapping):
        pairs = list(keys.items())
    elif isinstance(keys, list | tuple):
        pairs = [(item, 1) if isinstance(item, str) else item for item in keys]
    else:
        raise ArgumentTypeError(
            "if no direction is specified, key_or_list must be an instance of list, "
            f"not {type(keys).__name__}"
        )
    if not pairs:
        raise ConfigurationError("key_or_list must not be empty")
    checked: list[tuple[str, Any]] = []
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise ArgumentTypeError(f"each key must be a (key, direction) pair, not {pair!r}")
        field, direction = pair
        if not isinstance(field, str):
            raise ArgumentTypeError(
                f"first item in each key pair must be an instance of str, not {type(field).__name__}"
            )
        if not isinstance(direction, str | int | Mapping):
            raise ArgumentTypeError(
                "second item in each key pair must be 1, -1, '2d', or another valid MongoDB "
                f"index specifier., not {type(direction).__name__}"
            )
        checked.append((field, direction))
    return checked


def index_name(pairs: Sequence[tuple[str, Any]]) -> str:
    """The default name of an index: ``field_direction`` pairs joined by ``_``."""
    return "_".join(f"{field}_{direction}" for field, direction in pairs)


class IndexModel:
    """One index to create: ``IndexModel(keys, **options)``, options in the server's spelling
    (``name``, ``unique``, ``sparse``, ``expireAfterSeconds``, ``partialFilterExpression``,
    ``collation``, ``hidden``, ``weights``...).  ``document`` is the createIndexes entry."""

    __slots__ = ("_document",)

    def __init__(self, keys: Any, **kwargs: Any) -> None:
        pairs = index_key_pairs(keys)
        name = kwargs.pop("name", None)
        if name is None:
            name = index_name(pairs)
        elif not isinstance(name, str):
            raise ArgumentTypeError(f"name must be a string, not {type(name).__name__}")
        collation = kwargs.pop("collation", None)
        document: dict[str, Any] = {"name": name, "key": dict(pairs), **kwargs}
        if collation is not None:
            document["collation"] = check_mapping(collation, "collation")
        self._document = document

    @property
    def document(self) -> dict[str, Any]:
        """The index document: ``{name, key, <options>}`` (a copy)."""
        return dict(self._document)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexModel):
            return NotImplemented
        return self._document == other._document

    __hash__ = None  # type: ignore[assignment]  # mutable options, as PyMongo's

    def __repr__(self) -> str:
        options = {k: v for k, v in self._document.items() if k != "key"}
        rest = "".join(f", {k}={v!r}" for k, v in options.items())
        return f"IndexModel({self._document['key']!r}{rest})"


def _with_write_concern(body: dict[str, Any], write_concern: WriteConcern) -> dict[str, Any]:
    if "writeConcern" not in body and not write_concern.is_server_default:
        body["writeConcern"] = write_concern.to_document()
    return body


def create_indexes(db: str, body: Mapping[str, Any]) -> Flow[list[str]]:
    """Run a createIndexes ``body``; the names of its indexes, in order."""
    yield from crud.write_command(db, body)
    return [index["name"] for index in body["indexes"]]


def list_indexes(db: str, collection: str, body: Mapping[str, Any]) -> Flow[Cursor]:
    """Open the listIndexes cursor on the primary; an empty cursor when the collection does
    not exist."""
    try:
        return (yield from crud.read_cursor(db, body))
    except ServerError as error:
        if error.code != crud.NAMESPACE_NOT_FOUND:
            raise
        return Cursor(0, Namespace(db, collection), _NO_SERVER)


def index_information(db: str, collection: str, body: Mapping[str, Any]) -> Flow[dict[str, Any]]:
    """``{name: {key: [(field, direction), ...], v, <options>}}`` for every index."""
    cursor = yield from list_indexes(db, collection, body)
    information: dict[str, Any] = {}
    while batch := (yield from cursor_next_batch(cursor)):
        for index in batch:
            entry = dict(index)
            entry["key"] = list(entry["key"].items())
            information[entry.pop("name")] = entry
    return information


def drop_index(db: str, body: Mapping[str, Any]) -> Flow[None]:
    """Run a dropIndexes ``body``; "ns not found" is success, as in PyMongo."""
    try:
        yield from crud.write_command(db, body)
    except ServerError as error:
        if error.code != crud.NAMESPACE_NOT_FOUND and error.errmsg != "ns not found":
            raise


class IndexOps:
    """The index methods of ``CollectionOps`` (a mixin: the collection's attributes are
    declared here)."""

    __slots__ = ()
    database: str
    name: str
    write_concern: WriteConcern

    def create_indexes(
        self, indexes: Sequence[IndexModel], *, comment: Any = None, **kwargs: Any
    ) -> Flow[list[str]]:
        """Create ``indexes`` (IndexModel values) in one createIndexes; their names."""
        if not isinstance(indexes, list | tuple):
            raise ArgumentTypeError(f"indexes must be a list, not {type(indexes).__name__}")
        for index in indexes:
            if not isinstance(index, IndexModel):
                raise ArgumentTypeError(f"{index!r} is not an instance of IndexModel")
        if not indexes:
            raise ConfigurationError("indexes must not be empty")
        body: dict[str, Any] = {
            "createIndexes": self.name,
            "indexes": [index.document for index in indexes],
            **kwargs,
        }
        if comment is not None:
            body["comment"] = comment
        return create_indexes(self.database, _with_write_concern(body, self.write_concern))

    def create_index(self, keys: Any, *, comment: Any = None, **kwargs: Any) -> Flow[str]:
        """Create one index on ``keys``; ``kwargs`` are IndexModel options, or command
        fields (``maxTimeMS``, ``commitQuorum``).  Returns its name."""
        command_fields = {key: kwargs.pop(key) for key in _COMMAND_OPTIONS if key in kwargs}
        flow = self.create_indexes([IndexModel(keys, **kwargs)], comment=comment, **command_fields)
        return _first(flow)

    def _list_indexes_body(self, comment: Any, raw_data: bool | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"listIndexes": self.name, "cursor": {}}
        if comment is not None:
            body["comment"] = comment
        put_raw_data(body, raw_data)  # (left out for servers before 8.2: for_server)
        return body

    def list_indexes(
        self, *, comment: Any = None, raw_data: bool | None = None, timeout_mode: str | None = None
    ) -> Flow[Cursor]:
        """A cursor over the collection's index documents (``{v, key, name, ...}``);
        ``timeout_mode``: the CSOT spec's (:mod:`~mongo_sansio.cursors.timeout_mode`)."""
        flow = list_indexes(self.database, self.name, self._list_indexes_body(comment, raw_data))
        return flow if timeout_mode is None else checked_timeout_mode(timeout_mode, flow)

    def index_information(self, *, comment: Any = None) -> Flow[dict[str, Any]]:
        """The indexes as PyMongo's ``index_information`` dictionary."""
        return index_information(self.database, self.name, self._list_indexes_body(comment))

    def drop_index(self, index_or_name: Any, *, comment: Any = None, **kwargs: Any) -> Flow[None]:
        """Drop one index, by name or by the key specification (a list) it was created with
        (``"*"``, as in PyMongo, drops them all)."""
        name = index_or_name
        if isinstance(index_or_name, list):
            name = index_name(index_key_pairs(index_or_name))
        if not isinstance(name, str):
            raise ArgumentTypeError(
                f"index_or_name must be an instance of str or list, not {type(name).__name__}"
            )
        return self._drop(name, comment, kwargs)

    def drop_indexes(self, *, comment: Any = None, **kwargs: Any) -> Flow[None]:
        """Drop every index but the one on ``_id``."""
        return self._drop("*", comment, kwargs)

    def _drop(self, name: str, comment: Any, fields: Mapping[str, Any]) -> Flow[None]:
        body: dict[str, Any] = {"dropIndexes": self.name, "index": name, **fields}
        if comment is not None:
            body["comment"] = comment
        return drop_index(self.database, _with_write_concern(body, self.write_concern))


def _first(flow: Flow[list[str]]) -> Flow[str]:
    names = yield from flow
    return names[0]
