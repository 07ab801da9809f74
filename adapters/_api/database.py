"""What the blocking and async ``Database`` share: one database of a client, as PyMongo's,
each method written once as a program over the core's flows (:mod:`.program`).

``db.name`` / ``db["name"]`` / ``get_collection`` give the flavour's collection, which
inherits the database's settings (codec options, read preference, write and read concerns),
which the database inherited from its client unless given.  Its methods build flows with
:class:`~mongo_sansio.ops.database.DatabaseOps` (which checks the arguments at once) and run
them on the client's engine with the caller's ``session``: ``command`` and
``cursor_command``, listing, creating and dropping collections, database aggregates and change
streams.

As in PyMongo: ``command`` ignores the database's read preference and codec options (pass
``read_preference`` / ``codec_options``); ``bool(db)`` raises NotImplementedError (compare
with None); a database is not iterable; attribute names starting with ``_`` are not
collections (use ``db["_name"]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, NoReturn, Self, TypeVar

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.cursors import ChangeStreamTarget
from mongo_sansio.flow import Flow
from mongo_sansio.ops.database import DatabaseOps
from mongo_sansio.ops.decoding import apply_codec_options
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection import ReadPreference

from .._pymongo_gridfs import bridge_pymongo_gridfs
from .._timeout import operation_timeout
from .change_stream import ChangeStreamBase, watch_options
from .collection import CollectionBase
from .program import Program, Run, operation
from .pymongo_objects import adopt, adopt_codec_options, adopt_keywords, adopt_settings
from .pymongo_values import id_factory_for
from .settings import Settings

__all__ = ["DatabaseBase"]

ClientT = TypeVar("ClientT")
CollectionT = TypeVar("CollectionT", bound=CollectionBase[Any, Any, Any, Any, Any, Any])
CommandCursorT = TypeVar("CommandCursorT")
ChangeStreamT = TypeVar("ChangeStreamT", bound=ChangeStreamBase)

#: PyMongo's (server) spelling of aggregate options -> the keyword names of the core
_AGGREGATE_SPELLING = {
    "batchSize": "batch_size",
    "maxTimeMS": "max_time_ms",
    "maxAwaitTimeMS": "max_await_time_ms",
    "allowDiskUse": "allow_disk_use",
    "bypassDocumentValidation": "bypass_document_validation",
    "rawData": "raw_data",
    "timeoutMode": "timeout_mode",  # (the CSOT spec's; checked by the core)
}


class DatabaseBase(Settings, Generic[ClientT, CollectionT, CommandCursorT, ChangeStreamT]):
    """One database of a client (see the module docstring).  Settings not given are the
    client's."""

    _collection_class: Callable[..., CollectionT]
    _command_cursor_class: Callable[..., CommandCursorT]
    _change_stream_class: Callable[..., ChangeStreamT]

    def __init__(
        self,
        client: ClientT,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        *,
        timeoutMS: float | None = None,  # noqa: N803 - the option's name (CSOT spec)
    ) -> None:
        bridge_pymongo_gridfs()  # (PyMongo's gridfs may be imported after the client was made)
        if not isinstance(name, str):
            raise TypeError(f"name must be an instance of str, not {type(name)}")
        parent: Any = client
        self._client = client
        self._engine = parent.engine
        self._name = name
        #: timeoutMS in seconds for this database's operations (None: the client's)
        self.timeout = operation_timeout(timeoutMS)
        given = adopt_settings(  # PyMongo's objects made ours (pymongo_objects.py)
            codec_options=codec_options,
            read_preference=read_preference,
            write_concern=write_concern,
            read_concern=read_concern,
        )
        codec = given["codec_options"] or parent.codec_options
        # (PyMongo's ObjectId for the _ids it generates when its values are PyMongo's)
        ids = {"id_factory": id_factory_for(codec)} if codec.pymongo_types else {}
        self._ops: DatabaseOps = DatabaseOps(
            name,
            codec_options=codec,
            read_preference=given["read_preference"] or parent.read_preference,
            write_concern=given["write_concern"] or parent.write_concern,
            read_concern=given["read_concern"] or parent.read_concern,
            **ids,
        )

    # -- identity and settings -------------------------------------------------------------------

    @property
    def client(self) -> ClientT:
        return self._client

    @property
    def _plain_codec_options(self) -> CodecOptions:
        """PyMongo's default codec options, for this client (see :mod:`.pymongo_values`)."""
        client: Any = self._client
        return client.plain_codec_options  # type: ignore[no-any-return]

    @property
    def name(self) -> str:
        return self._name

    @property
    def ops(self) -> DatabaseOps:
        """The runtime-independent database whose flows this one runs."""
        return self._ops

    def with_options(
        self,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        *,
        timeoutMS: float | None = None,  # noqa: N803 - the option's name (CSOT spec)
    ) -> Self:
        """This database with other settings (those not given stay this database's)."""
        database = type(self)(
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
        if isinstance(other, DatabaseBase):
            return self._client == other._client and self._name == other._name
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._client, self._name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._client!r}, {self._name!r})"

    def __bool__(self) -> NoReturn:
        raise NotImplementedError(
            f"{type(self).__name__} objects do not implement truth value testing or bool(). "
            "Please compare with None instead: database is not None"
        )

    # PyMongo: not iterable (``for c in db`` would otherwise call __getitem__ with 0, 1, ...)
    __iter__ = None

    def __next__(self) -> NoReturn:
        raise TypeError(f"'{type(self).__name__}' object is not iterable")

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
    ) -> CollectionT:
        """The collection ``name``; settings not given are this database's (``timeoutMS``,
        milliseconds, bounds each of its operations; 0: no limit)."""
        collection = self._collection_class(
            self, name, False, codec_options, read_preference, write_concern, read_concern
        )
        if timeoutMS is not None:
            collection.timeout = operation_timeout(timeoutMS)
        return collection

    def __getitem__(self, name: str) -> CollectionT:
        return self._collection_class(self, name)

    def __getattr__(self, name: str) -> CollectionT:
        if name.startswith("_"):
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}. To access the {name} "
                f"collection, use database[{name!r}]."
            )
        return self[name]

    def _commands(self, codec_options: CodecOptions | None = None) -> CollectionT:
        """The ``$cmd`` pseudo-collection that database-level cursors belong to."""
        return self.get_collection("$cmd", codec_options=codec_options)

    def _op(self, flow: Flow[Any], session: Any) -> Run:
        """Run ``flow`` in ``session`` under this database's timeoutMS."""
        return Run(flow, session, self.timeout, self.codec_options)

    @operation
    def list_collections(
        self,
        /,
        session: Any = None,
        filter: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[CommandCursorT]:
        """A cursor over the collections' descriptions; ``kwargs`` are listCollections fields
        (``nameOnly``, ``authorizedCollections``...)."""
        flow = self._ops.list_collections(filter, comment=comment, **kwargs)
        opened = yield self._op(flow, session)
        return self._command_cursor_class(
            self._commands(), opened, session=session, codec_options=self._plain_codec_options
        )

    @operation
    def list_collection_names(
        self,
        /,
        session: Any = None,
        filter: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[list[str]]:
        flow = self._ops.list_collection_names(filter, comment=comment, **kwargs)
        names: list[str] = yield self._op(flow, session)
        return names

    @operation
    def create_collection(
        self,
        /,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        session: Any = None,
        check_exists: bool | None = True,
        **kwargs: Any,
    ) -> Program[CollectionT]:
        """Create collection ``name`` (``kwargs``: the create command's options, such as
        ``capped=True, size=4096`` or ``validator={...}``) and return it.  With
        ``check_exists`` an existing collection raises
        :class:`~mongo_sansio.ops.database.CollectionInvalid` before anything is created."""
        given = adopt_settings(  # PyMongo's objects made ours (pymongo_objects.py)
            codec_options=codec_options,
            read_preference=read_preference,
            write_concern=write_concern,
            read_concern=read_concern,
        )
        flow = self._ops.create_collection(
            name, check_exists=bool(check_exists), **given, **adopt_keywords(kwargs)
        )
        yield self._op(flow, session)
        return self.get_collection(name, **given)

    @operation
    def drop_collection(
        self,
        name_or_collection: Any,
        session: Any = None,
        comment: Any = None,
        encrypted_fields: Mapping[str, Any] | None = None,
    ) -> Program[dict[str, Any]]:
        """Drop a collection (by name or collection object) and return the server's reply; a
        collection that does not exist is no error."""
        if encrypted_fields is not None:
            raise NotImplementedError("drop_collection: Queryable Encryption is not supported")
        name = name_or_collection
        if isinstance(name, CollectionBase):
            name = name.name
        if not isinstance(name, str):
            raise TypeError(f"name_or_collection must be an instance of str, not {type(name)}")
        reply = yield self._op(self._ops.drop_collection(name, comment=comment), session)
        return dict(reply)

    # -- commands ------------------------------------------------------------------------------

    @operation
    def command(
        self,
        /,
        command: str | Mapping[str, Any],
        value: Any = 1,
        check: bool = True,
        allowable_errors: Sequence[str | int] | None = None,
        read_preference: ReadPreference | None = None,
        codec_options: CodecOptions | None = None,
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[Any]:
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
            read_preference=adopt(read_preference),
            comment=comment,
            **kwargs,
        )
        reply = yield self._op(flow, session)
        return apply_codec_options(
            reply, adopt_codec_options(codec_options) or self._plain_codec_options
        )

    @operation
    def cursor_command(
        self,
        /,
        command: str | Mapping[str, Any],
        value: Any = 1,
        read_preference: ReadPreference | None = None,
        codec_options: CodecOptions | None = None,
        session: Any = None,
        comment: Any = None,
        max_await_time_ms: int | None = None,
        **kwargs: Any,
    ) -> Program[CommandCursorT]:
        """Run a command that returns a cursor (``find``, ``aggregate``...) and iterate it;
        a command without a cursor raises InvalidOperation."""
        flow = self._ops.cursor_command(
            command,
            value,
            read_preference=adopt(read_preference),
            comment=comment,
            max_await_time_ms=max_await_time_ms,
            **kwargs,
        )
        opened = yield self._op(flow, session)
        return self._command_cursor_class(
            self._commands(),
            opened,
            session=session,
            codec_options=adopt_codec_options(codec_options) or self._plain_codec_options,
        )

    @operation
    def aggregate(
        self, /, pipeline: list[Mapping[str, Any]], session: Any = None, **kwargs: Any
    ) -> Program[CommandCursorT]:
        """A database aggregate (``aggregate: 1``: $currentOp, $listLocalSessions,
        $documents...); ``kwargs`` are aggregate's options, in either spelling."""
        options = {_AGGREGATE_SPELLING.get(key, key): value for key, value in kwargs.items()}
        opened = yield self._op(self._ops.aggregate(pipeline, **options), session)
        return self._command_cursor_class(self._commands(), opened, session=session)

    @operation
    def watch(
        self,
        /,
        pipeline: Sequence[Mapping[str, Any]] | None = None,
        *,
        session: Any = None,
        **options: Any,
    ) -> Program[ChangeStreamT]:
        """A change stream over every collection of this database, open."""
        stream = self._change_stream_class(
            self._engine,
            ChangeStreamTarget.database(self._name),
            pipeline,
            watch_options(**options),
            self.read_preference,
            self._ops.read_concern.to_document() or None,
            session=session,
            codec_options=self.codec_options,
            timeout=self.timeout,
        )
        yield from stream._opening()
        return stream

    @operation
    def drop(self, session: Any = None, comment: Any = None) -> Program[None]:
        """Drop this database (``client.drop_database(db)``)."""
        yield self._op(self._ops.drop(comment=comment), session)
