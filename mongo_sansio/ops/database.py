"""A runtime-independent database: a value object whose methods return flows.

:class:`DatabaseOps` holds a database name, a read preference, read and write concerns and
codec options (shared with its collections through
:class:`~mongo_sansio.ops.collection.OperationSettings`).  Its methods check their arguments at
once, build the command and return a flow from :mod:`mongo_sansio.ops.crud`: user commands
(``db.command(...)``, ``db.cursor_command(...)``), database aggregates, listing, creating and
dropping collections, dropping the database.  Each runtime's ``Database`` wraps it as
``Collection`` wraps :class:`~mongo_sansio.ops.collection.CollectionOps`.  The client-level
listing of databases (:func:`list_databases`, :func:`list_database_names`) lives here too.

PyMongo's rules kept here: ``command`` runs on the primary unless told otherwise and ignores
the database's read preference; ``list_collection_names`` asks for ``nameOnly`` only when the
filter is empty or names nothing but ``name`` (enumerate-collections spec);
``create_collection`` first checks that the collection does not exist (``check_exists``) and
raises :class:`CollectionInvalid` if it does; ``drop_collection`` of a missing collection
returns the server's "ns not found" reply instead of raising.

Inputs: the caller's arguments, PyMongo-shaped.  Outputs: ``Flow[T]`` generators (see
:mod:`mongo_sansio.flow`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mongo_sansio.cursors.cursor import Cursor
from mongo_sansio.cursors.timeout_mode import checked_timeout_mode
from mongo_sansio.errors import (
    CollectionInvalid,
    InvalidOperation,
    RemoteProtocolError,
    ServerError,
)
from mongo_sansio.flow import Flow, GetContext
from mongo_sansio.ops import crud
from mongo_sansio.ops.collection import (
    CollectionOps,
    OperationSettings,
    check_collection_name,
    database_name_validator,
)
from mongo_sansio.ops.crud_commands import ArgumentTypeError, check_mapping, check_non_negative
from mongo_sansio.selection.read_preference import PRIMARY, ReadPreference

__all__ = [
    "CollectionInvalid",
    "DatabaseOps",
    "list_databases",
    "list_database_names",
]


def _command_body(
    command: str | Mapping[str, Any], value: Any, comment: Any, fields: Mapping[str, Any]
) -> dict[str, Any]:
    if isinstance(command, str):
        body: dict[str, Any] = {command: value, **fields}
    else:
        body = {**check_mapping(command, "command"), **fields}
    if comment is not None:
        body["comment"] = comment
    return body


def _read_preference_or_primary(read_preference: ReadPreference | None) -> ReadPreference:
    if read_preference is None:
        return PRIMARY
    if not isinstance(read_preference, ReadPreference):
        raise ArgumentTypeError("read_preference must be a ReadPreference")
    return read_preference


def _is_namespace_not_found(error: ServerError) -> bool:
    return error.code == crud.NAMESPACE_NOT_FOUND or error.errmsg == "ns not found"


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
        override them (None values inherit)."""
        given = {key: value for key, value in changes.items() if value is not None}
        return CollectionOps(self.name, name, **{**self._inherited(), **given})

    # -- commands ------------------------------------------------------------------------------

    def command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        *,
        check: bool = True,
        allowable_errors: Sequence[str | int] | None = None,
        read_preference: ReadPreference | None = None,
        comment: Any = None,
        **fields: Any,
    ) -> Flow[Mapping[str, Any]]:
        """Run a command as given: ``command("ping")``, ``command("count", "coll", query=...)``
        or ``command({"count": "coll", ...})``.  Like PyMongo it runs on the primary unless a
        ``read_preference`` is passed (the database's own is not used: the command may
        write).  ``ok: 0`` raises the typed ServerError, unless ``check`` is False or the
        error's message or code is among ``allowable_errors``: its reply is returned then."""
        body = _command_body(command, value, comment, fields)
        asks_non_primary = read_preference is not None and read_preference != PRIMARY
        read_preference = _read_preference_or_primary(read_preference)
        return self._checked_command(
            body, read_preference, check, frozenset(allowable_errors or ()), asks_non_primary
        )

    def _checked_command(
        self,
        body: Mapping[str, Any],
        read_preference: ReadPreference,
        check: bool,
        allowed: frozenset[str | int],
        asks_non_primary: bool = False,
    ) -> Flow[Mapping[str, Any]]:
        if asks_non_primary:
            # a transaction runs on the primary: a command asking for another member by its
            # own read preference is refused, not silently redirected (Transactions spec)
            context = yield GetContext()
            if context.in_transaction:
                raise InvalidOperation("read preference in a transaction must be primary")
        try:
            return (
                yield from crud.database_command(self.name, body, read_preference=read_preference)
            )
        except ServerError as error:
            if check and error.errmsg not in allowed and error.code not in allowed:
                raise
            return error.details

    def cursor_command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        *,
        read_preference: ReadPreference | None = None,
        comment: Any = None,
        max_await_time_ms: int | None = None,
        **fields: Any,
    ) -> Flow[Cursor]:
        """Run a command that opens a cursor (``find``, ``aggregate``, ``listCollections``...)
        and return the cursor; a reply without one raises InvalidOperation, as in PyMongo.
        ``comment`` goes on the getMores (as PyMongo's: a comment for the command itself is
        written in it); ``max_await_time_ms`` on the getMores of a tailable-await cursor."""
        timeout_mode = _pop_timeout_mode(fields)
        body = _command_body(command, value, None, fields)
        if max_await_time_ms is not None:
            check_non_negative(max_await_time_ms, "max_await_time_ms")
        flow = self._cursor_command(
            body, _read_preference_or_primary(read_preference), comment, max_await_time_ms
        )
        if timeout_mode is None:
            return flow
        return checked_timeout_mode(timeout_mode, flow, tailable=bool(body.get("tailable")))

    def _cursor_command(
        self,
        body: Mapping[str, Any],
        read_preference: ReadPreference,
        comment: Any,
        max_await_time_ms: int | None,
    ) -> Flow[Cursor]:
        try:
            return (
                yield from crud.read_cursor(
                    self.name,
                    body,
                    read_preference=read_preference,
                    comment=comment,
                    max_await_time_ms=max_await_time_ms,
                    as_given=True,
                )
            )
        except RemoteProtocolError as error:
            # the cursor machine's words for an ok reply whose "cursor" is not a document
            if "no 'cursor' document" in str(error):
                raise InvalidOperation("Command does not return a cursor.") from None
            raise

    # -- collections ---------------------------------------------------------------------------

    def list_collections(
        self,
        filter: Mapping[str, Any] | None = None,
        *,
        name_only: bool = False,
        authorized_collections: bool | None = None,
        comment: Any = None,
        batch_size: int | None = None,
        **fields: Any,
    ) -> Flow[Cursor]:
        """A cursor over the database's collection descriptions (on the primary); ``fields``
        are more listCollections fields in the command's spelling (``nameOnly=True``...)."""
        timeout_mode = _pop_timeout_mode(fields)
        body = self._list_collections_body(
            filter, name_only, authorized_collections, comment, batch_size
        )
        body.update(fields)
        flow = crud.read_cursor(self.name, body, batch_size=batch_size or None, comment=comment)
        return flow if timeout_mode is None else checked_timeout_mode(timeout_mode, flow)

    def list_collection_names(
        self, filter: Mapping[str, Any] | None = None, *, comment: Any = None, **fields: Any
    ) -> Flow[list[str]]:
        """The names of the database's collections.  ``nameOnly`` is asked for unless the
        filter looks at more than the name (the other fields would be missing)."""
        name_only = filter is None or set(check_mapping(filter, "filter")) <= {"name"}
        body = self._list_collections_body(filter, name_only, True, comment, None)
        body.update(fields)
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
        self,
        name: str,
        *,
        check_exists: bool = True,
        codec_options: Any = None,
        read_preference: ReadPreference | None = None,
        write_concern: Any = None,
        read_concern: Any = None,
        **options: Any,
    ) -> Flow[CollectionOps]:
        """Create collection ``name``; ``options`` are the create command's, in its own
        spelling (``capped=True, size=4096``, ``validator={...}``, ``comment``...).  Returns
        the collection, with the given settings.  ``check_exists``: first list the database's
        collections and raise :class:`CollectionInvalid` if ``name`` is among them."""
        check_collection_name(name)
        collection = self.get_collection(
            name,
            codec_options=codec_options,
            read_preference=read_preference,
            write_concern=write_concern,
            read_concern=read_concern,
        )
        body: dict[str, Any] = {"create": name, **options}
        if not collection.write_concern.is_server_default:
            body["writeConcern"] = collection.write_concern.to_document()
        return self._create(body, collection, check_exists)

    def _create(
        self, body: Mapping[str, Any], collection: CollectionOps, check_exists: bool
    ) -> Flow[CollectionOps]:
        if check_exists:
            existing = yield from self.list_collection_names({"name": collection.name})
            if collection.name in existing:
                raise CollectionInvalid(f"collection {collection.name} already exists")
        yield from crud.write_command(self.name, body)
        return collection

    def drop_collection(self, name: str, *, comment: Any = None) -> Flow[Mapping[str, Any]]:
        """Drop collection ``name`` and return the server's reply (a missing collection is no
        error: its "ns not found" reply is returned)."""
        check_collection_name(name)
        body: dict[str, Any] = {"drop": name}
        if comment is not None:
            body["comment"] = comment
        if not self.write_concern.is_server_default:
            body["writeConcern"] = self.write_concern.to_document()
        return self._drop_collection(body)

    def _drop_collection(self, body: Mapping[str, Any]) -> Flow[Mapping[str, Any]]:
        try:
            return (yield from crud.write_command(self.name, body))
        except ServerError as error:
            if not _is_namespace_not_found(error):
                raise
            return error.details

    def drop(self, *, comment: Any = None) -> Flow[None]:
        """Drop the whole database."""
        body: dict[str, Any] = {"dropDatabase": 1}
        if comment is not None:
            body["comment"] = comment
        if not self.write_concern.is_server_default:
            body["writeConcern"] = self.write_concern.to_document()
        return crud.drop(self.name, body)


# -- the client's databases ----------------------------------------------------------------------


def list_databases(*, comment: Any = None, **fields: Any) -> Flow[list[Mapping[str, Any]]]:
    """``listDatabases`` on the admin database (the primary): its ``databases`` documents.
    ``fields`` are more of the command's fields (``nameOnly=True``, ``filter={...}``,
    ``authorizedDatabases=True``)."""
    timeout_mode = _pop_timeout_mode(fields)
    body: dict[str, Any] = {"listDatabases": 1, **fields}
    if comment is not None:
        body["comment"] = comment
    flow = _list_databases(body)
    return flow if timeout_mode is None else checked_timeout_mode(timeout_mode, flow)


def _pop_timeout_mode(fields: dict[str, Any]) -> Any:
    """The CSOT ``timeoutMode`` among a command's fields (a client option, never sent)."""
    found = fields.pop("timeout_mode", None)
    return fields.pop("timeoutMode", found)


def _list_databases(body: Mapping[str, Any]) -> Flow[list[Mapping[str, Any]]]:
    reply = yield from crud.read_command("admin", body)
    databases = reply.get("databases")
    if not isinstance(databases, list) or not all(isinstance(d, Mapping) for d in databases):
        raise RemoteProtocolError("listDatabases: reply has no 'databases' array of documents")
    return databases


def list_database_names(*, comment: Any = None) -> Flow[list[str]]:
    """The names of the client's databases (``listDatabases`` with ``nameOnly``)."""
    return crud.list_database_names(comment=comment)
