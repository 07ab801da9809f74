"""The blocking ``Database``: one database of a :class:`~.client.MongoClient`, as PyMongo's.

``db.name`` / ``db["name"]`` / :meth:`Database.get_collection` give a
:class:`~.collection.Collection` that inherits the database's settings (codec options, read
preference, write and read concerns), which the database inherited from its client unless
given.  Its methods build flows with :class:`~mongo_sansio.ops.database.DatabaseOps` (which
checks the arguments at once) and run them on the client's engine with the caller's
``session``: :meth:`Database.command` and :meth:`Database.cursor_command`, listing, creating
and dropping collections, database aggregates and change streams.

As in PyMongo: ``command`` ignores the database's read preference and codec options (pass
``read_preference`` / ``codec_options``); ``bool(db)`` raises NotImplementedError (compare
with None); a database is not iterable; attribute names starting with ``_`` are not
collections (use ``db["_name"]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.cursors import ChangeStreamTarget
from mongo_sansio.flow import Flow
from mongo_sansio.ops.database import DatabaseOps
from mongo_sansio.ops.decoding import apply_codec_options
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection import ReadPreference

from .._timeout import operation_timeout
from .change_stream import ChangeStream, watch_options
from .collection import Collection
from .cursor import CommandCursor

if TYPE_CHECKING:
    from .client import MongoClient

__all__ = ["Database"]

#: PyMongo's (server) spelling of aggregate options -> the keyword names of the core
_AGGREGATE_SPELLING = {
    "batchSize": "batch_size",
    "maxTimeMS": "max_time_ms",
    "maxAwaitTimeMS": "max_await_time_ms",
    "allowDiskUse": "allow_disk_use",
    "bypassDocumentValidation": "bypass_document_validation",
}


class Database:
    """One database of a client (see the module docstring).  Settings not given are the
    client's."""

    def __init__(
        self,
        client: MongoClient,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        *,
        timeoutMS: float | None = None,  # noqa: N803 - the option's name (CSOT spec)
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be an instance of str, not {type(name)}")
        self._client = client
        self._name = name
        #: timeoutMS in seconds for this database's operations (None: the client's)
        self.timeout = operation_timeout(timeoutMS)
        self._ops = DatabaseOps(
            name,
            codec_options=codec_options or client.codec_options,
            read_preference=read_preference or client.read_preference,
            write_concern=write_concern or client.write_concern,
            read_concern=read_concern or client.read_concern,
        )

    # -- identity and settings -------------------------------------------------------------------

    @property
    def client(self) -> MongoClient:
        return self._client

    @property
    def name(self) -> str:
        return self._name

    @property
    def ops(self) -> DatabaseOps:
        """The runtime-independent database whose flows this one runs."""
        return self._ops

    @property
    def codec_options(self) -> CodecOptions:
        return self._ops.codec_options

    @property
    def read_preference(self) -> ReadPreference:
        return self._ops.read_preference

    @property
    def write_concern(self) -> WriteConcern:
        return self._ops.write_concern

    @property
    def read_concern(self) -> ReadConcern:
        return self._ops.read_concern

    def with_options(
        self,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        *,
        timeoutMS: float | None = None,  # noqa: N803 - the option's name (CSOT spec)
    ) -> Database:
        """This database with other settings (those not given stay this database's)."""
        database = Database(
            self._client,
            self._name,
            codec_options or self.codec_options,
            read_preference or self.read_preference,
            write_concern or self.write_concern,
            read_concern or self.read_concern,
        )
        database.timeout = self.timeout if timeoutMS is None else operation_timeout(timeoutMS)
        return database

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Database):
            return self._client == other._client and self._name == other._name
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._client, self._name))

    def __repr__(self) -> str:
        return f"Database({self._client!r}, {self._name!r})"

    def __bool__(self) -> NoReturn:
        raise NotImplementedError(
            "Database objects do not implement truth value testing or bool(). Please compare "
            "with None instead: database is not None"
        )

    # PyMongo: not iterable (``for c in db`` would otherwise call __getitem__ with 0, 1, ...)
    __iter__ = None

    def __next__(self) -> NoReturn:
        raise TypeError("'Database' object is not iterable")

    next = __next__

    # -- collections ------------------------------------------------------------------------------

    def get_collection(
        self,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        *,
        timeoutMS: float | None = None,  # noqa: N803 - the option's name (CSOT spec)
    ) -> Collection:
        """The collection ``name``; settings not given are this database's (``timeoutMS``,
        milliseconds, bounds each of its operations; 0: no limit)."""
        collection = Collection(
            self, name, False, codec_options, read_preference, write_concern, read_concern
        )
        if timeoutMS is not None:
            collection.timeout = operation_timeout(timeoutMS)
        return collection

    def __getitem__(self, name: str) -> Collection:
        return Collection(self, name)

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(
                f"Database has no attribute {name!r}. To access the {name} collection, use "
                f"database[{name!r}]."
            )
        return self[name]

    def _commands(self, codec_options: CodecOptions | None = None) -> Collection:
        """The ``$cmd`` pseudo-collection that database-level cursors belong to."""
        return self.get_collection("$cmd", codec_options=codec_options)

    def _run(self, flow: Flow[Any], session: Any) -> Any:
        return self._client.engine.run(flow, session=session, timeout=self.timeout)

    def list_collections(
        self,
        session: Any = None,
        filter: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """A cursor over the collections' descriptions; ``kwargs`` are listCollections fields
        (``nameOnly``, ``authorizedCollections``...)."""
        flow = self._ops.list_collections(filter, comment=comment, **kwargs)
        return CommandCursor(
            self._commands(),
            self._run(flow, session),
            session=session,
            codec_options=DEFAULT_CODEC_OPTIONS,
        )

    def list_collection_names(
        self,
        session: Any = None,
        filter: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> list[str]:
        names: list[str] = self._run(
            self._ops.list_collection_names(filter, comment=comment, **kwargs), session
        )
        return names

    def create_collection(
        self,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        session: Any = None,
        check_exists: bool | None = True,
        **kwargs: Any,
    ) -> Collection:
        """Create collection ``name`` (``kwargs``: the create command's options, such as
        ``capped=True, size=4096`` or ``validator={...}``) and return it.  With
        ``check_exists`` an existing collection raises
        :class:`~mongo_sansio.ops.database.CollectionInvalid` before anything is created."""
        flow = self._ops.create_collection(
            name,
            check_exists=bool(check_exists),
            codec_options=codec_options,
            read_preference=read_preference,
            write_concern=write_concern,
            read_concern=read_concern,
            **kwargs,
        )
        self._run(flow, session)
        return self.get_collection(
            name, codec_options, read_preference, write_concern, read_concern
        )

    def drop_collection(
        self,
        name_or_collection: str | Collection,
        session: Any = None,
        comment: Any = None,
        encrypted_fields: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Drop a collection (by name or :class:`~.collection.Collection`) and return the
        server's reply; a collection that does not exist is no error."""
        if encrypted_fields is not None:
            raise NotImplementedError("drop_collection: Queryable Encryption is not supported")
        name = name_or_collection
        if isinstance(name, Collection):
            name = name.name
        if not isinstance(name, str):
            raise TypeError(f"name_or_collection must be an instance of str, not {type(name)}")
        return dict(self._run(self._ops.drop_collection(name, comment=comment), session))

    # -- commands ------------------------------------------------------------------------------

    def command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        check: bool = True,
        allowable_errors: Sequence[str | int] | None = None,
        read_preference: ReadPreference | None = None,
        codec_options: CodecOptions | None = None,
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Run a command and return its reply.  ``command`` is a name (its value ``value``,
        more fields in ``kwargs``) or a whole document.  It runs on the primary unless
        ``read_preference`` says otherwise; ``ok: 0`` raises the typed ServerError unless
        ``check`` is False or the error is in ``allowable_errors``; the reply decodes with
        ``codec_options`` (default: the defaults, not the database's)."""
        flow = self._ops.command(
            command,
            value,
            check=check,
            allowable_errors=allowable_errors,
            read_preference=read_preference,
            comment=comment,
            **kwargs,
        )
        reply = self._run(flow, session)
        return apply_codec_options(reply, codec_options or DEFAULT_CODEC_OPTIONS)

    def cursor_command(
        self,
        command: str | Mapping[str, Any],
        value: Any = 1,
        read_preference: ReadPreference | None = None,
        codec_options: CodecOptions | None = None,
        session: Any = None,
        comment: Any = None,
        max_await_time_ms: int | None = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """Run a command that returns a cursor (``find``, ``aggregate``...) and iterate it;
        a command without a cursor raises InvalidOperation."""
        flow = self._ops.cursor_command(
            command,
            value,
            read_preference=read_preference,
            comment=comment,
            max_await_time_ms=max_await_time_ms,
            **kwargs,
        )
        return CommandCursor(
            self._commands(),
            self._run(flow, session),
            session=session,
            codec_options=codec_options or DEFAULT_CODEC_OPTIONS,
        )

    def aggregate(
        self, pipeline: list[Mapping[str, Any]], session: Any = None, **kwargs: Any
    ) -> CommandCursor:
        """A database aggregate (``aggregate: 1``: $currentOp, $listLocalSessions,
        $documents...); ``kwargs`` are aggregate's options, in either spelling."""
        options = {_AGGREGATE_SPELLING.get(key, key): value for key, value in kwargs.items()}
        flow = self._ops.aggregate(pipeline, **options)
        return CommandCursor(self._commands(), self._run(flow, session), session=session)

    def watch(
        self,
        pipeline: Sequence[Mapping[str, Any]] | None = None,
        *,
        session: Any = None,
        **options: Any,
    ) -> ChangeStream:
        """A change stream over every collection of this database."""
        return ChangeStream(
            self._client.engine,
            ChangeStreamTarget.database(self._name),
            pipeline,
            watch_options(**options),
            self.read_preference,
            self._ops.read_concern.to_document() or None,
            session=session,
        )

    def drop(self, session: Any = None, comment: Any = None) -> None:
        """Drop this database (``client.drop_database(db)``)."""
        self._run(self._ops.drop(comment=comment), session)
