"""A runtime-independent database: a value object whose methods return flows.

:class:`DatabaseOps` holds a database name, a read preference, read and write concerns and
codec options (shared with its collections through
:class:`~mongo_sansio.ops.collection.OperationSettings`).  Its methods check their arguments at
once, build the command and return a flow from :mod:`mongo_sansio.ops.crud`: user commands
(``db.command(...)``), database aggregates, listing, creating and dropping collections,
dropping the database.  Each runtime's ``Database`` wraps it as ``Collection`` wraps
:class:`~mongo_sansio.ops.collection.CollectionOps`.

Inputs: the caller's arguments, PyMongo-shaped.  Outputs: ``Flow[T]`` generators (see
:mod:`mongo_sansio.flow`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.cursors.cursor import Cursor
from mongo_sansio.flow import Flow
from mongo_sansio.ops import crud
from mongo_sansio.ops.collection import (
    CollectionOps,
    OperationSettings,
    check_collection_name,
    database_name_validator,
)
from mongo_sansio.ops.crud_commands import ArgumentTypeError, check_mapping, check_non_negative
from mongo_sansio.selection.read_preference import PRIMARY, ReadPreference

__all__ = ["DatabaseOps", "list_database_names"]

#: the listDatabases flow (a client-level operation; re-exported here for the adapters)
list_database_names = crud.list_database_names


@attrs.frozen
class DatabaseOps(OperationSettings):
    """One database's operations (PyMongo's Database API, as flows)."""

    name: str = attrs.field(validator=database_name_validator)

    def _aggregate_namespace(self) -> tuple[str, str | int]:
        return self.name, 1

    def with_options(self, **changes: Any) -> DatabaseOps:
        return attrs.evolve(self, **changes)

    def get_collection(self, name: str, **changes: Any) -> CollectionOps:
        """The collection ``name``, inheriting this database's settings unless ``changes``
        override them."""
        return CollectionOps(self.name, name, **{**self._inherited(), **changes})

    def command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        *,
        read_preference: ReadPreference | None = None,
        **fields: Any,
    ) -> Flow[Mapping[str, Any]]:
        """Run a command as given: ``command("ping")``, ``command("count", "coll", query=...)``
        or ``command({"count": "coll", ...})``.  Like PyMongo it runs on the primary unless a
        ``read_preference`` is passed (the database's own is not used: the command may
        write).  ``ok: 0`` raises the typed ServerError."""
        if isinstance(command, str):
            body: dict[str, Any] = {command: value, **fields}
        else:
            body = {**check_mapping(command, "command"), **fields}
        read_preference = PRIMARY if read_preference is None else read_preference
        if not isinstance(read_preference, ReadPreference):
            raise ArgumentTypeError("read_preference must be a ReadPreference")
        return crud.database_command(self.name, body, read_preference=read_preference)

    def list_collections(
        self,
        filter: Mapping[str, Any] | None = None,
        *,
        name_only: bool = False,
        authorized_collections: bool | None = None,
        comment: Any = None,
        batch_size: int | None = None,
    ) -> Flow[Cursor]:
        """A cursor over the database's collection descriptions (on the primary)."""
        body = self._list_collections_body(
            filter, name_only, authorized_collections, comment, batch_size
        )
        return crud.read_cursor(self.name, body, batch_size=batch_size or None, comment=comment)

    def list_collection_names(
        self, filter: Mapping[str, Any] | None = None, *, comment: Any = None
    ) -> Flow[list[str]]:
        """The names of the database's collections."""
        body = self._list_collections_body(filter, True, True, comment, None)
        return crud.list_names(self.name, body)

    @staticmethod
    def _list_collections_body(
        filter: Any, name_only: bool, authorized: bool | None, comment: Any, batch_size: int | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"listCollections": 1, "cursor": {}}
        if filter is not None:
            body["filter"] = check_mapping(filter, "filter")
        if name_only:
            body["nameOnly"] = True
        if authorized is not None:
            body["authorizedCollections"] = authorized
        if batch_size is not None:
            body["cursor"] = {"batchSize": check_non_negative(batch_size, "batch_size")}
        if comment is not None:
            body["comment"] = comment
        return body

    def create_collection(
        self, name: str, *, comment: Any = None, **options: Any
    ) -> Flow[CollectionOps]:
        """Create collection ``name``; ``options`` are the create command's, in its own
        spelling (``capped=True, size=4096``, ``validator={...}``...).  Returns the collection."""
        check_collection_name(name)
        body: dict[str, Any] = {"create": name, **options}
        if comment is not None:
            body["comment"] = comment
        if not self.write_concern.is_server_default:
            body["writeConcern"] = self.write_concern.to_document()
        return self._create(body, name)

    def _create(self, body: Mapping[str, Any], name: str) -> Flow[CollectionOps]:
        yield from crud.write_command(self.name, body)
        return self.get_collection(name)

    def drop_collection(self, name: str, *, comment: Any = None) -> Flow[None]:
        """Drop collection ``name`` (not an error when it does not exist)."""
        return self.get_collection(name).drop(comment=comment)

    def drop(self, *, comment: Any = None) -> Flow[None]:
        """Drop the whole database."""
        body: dict[str, Any] = {"dropDatabase": 1}
        if comment is not None:
            body["comment"] = comment
        if not self.write_concern.is_server_default:
            body["writeConcern"] = self.write_concern.to_document()
        return crud.drop(self.name, body)
