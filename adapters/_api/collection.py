"""What the blocking and async ``Collection`` share: PyMongo's Collection API, each method
written once as a program over the core's flows (:mod:`.program`).

Each method takes PyMongo's arguments (same names, positions and keywords), builds a flow with
:class:`~mongo_sansio.ops.collection.CollectionOps` (which checks the arguments at once) and
runs it on the client's engine with the caller's ``session`` and the collection's timeoutMS:
the blocking collection returns the result, the async one is awaited for it.  Keyword options
that PyMongo passes to the server in its own spelling (``maxTimeMS``, ``batchSize``,
``allowDiskUse``...) are accepted as well as our snake_case names.  ``rawData`` (MongoDB 8.2,
for MongoDB's own tools: time series collections' underlying namespaces) is the
specifications' option, spelt as they spell it since PyMongo has none; it is sent only to
servers of 8.2 or later.  :meth:`CollectionBase.find`
returns a lazily opened cursor (no I/O, in both flavours, as in PyMongo); ``aggregate``,
``list_indexes`` and ``watch`` run first and hand out the flavour's open cursor or stream.

The write methods (``insert_one`` ... ``find_one_and_update``) live in :mod:`.collection_writes`
and the Atlas Search index methods in :mod:`.search_indexes`, mixed into :class:`CollectionBase`.

The flavour's classes (its database, cursors and change stream) are type parameters, so that
each flavour's methods are typed with its own classes, and class attributes, so that the
shared bodies build them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, NoReturn, Self, TypeVar

from mongo_sansio.bson.codec_options import CodecOptions
from mongo_sansio.cursors import ChangeStreamTarget
from mongo_sansio.errors import ConfigurationError
from mongo_sansio.flow import Flow
from mongo_sansio.ops.collection import CollectionOps
from mongo_sansio.ops.decoding import raw_batch_options
from mongo_sansio.ops.indexes import IndexModel
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection import ReadPreference

from .._timeout import operation_timeout
from .change_stream import ChangeStreamBase, watch_options
from .collection_writes import WriteMethods
from .program import Program, Run, operation, run_blocking
from .pymongo_objects import adopt, adopt_index_models, adopt_keywords
from .pymongo_values import id_factory_for, pymongo_index_information, son_codec_options
from .search_indexes import SearchIndexMethods
from .settings import Settings

__all__ = ["CollectionBase"]

DatabaseT = TypeVar("DatabaseT")
CursorT = TypeVar("CursorT")
RawCursorT = TypeVar("RawCursorT")
CommandCursorT = TypeVar("CommandCursorT")
RawCommandCursorT = TypeVar("RawCommandCursorT")
ChangeStreamT = TypeVar("ChangeStreamT", bound=ChangeStreamBase)

#: PyMongo's spelling of options (passed to the server as they are) -> our keyword names
_SERVER_SPELLING = {
    "maxTimeMS": "max_time_ms",
    "maxAwaitTimeMS": "max_await_time_ms",
    "batchSize": "batch_size",
    "allowDiskUse": "allow_disk_use",
    "bypassDocumentValidation": "bypass_document_validation",
    "rawData": "raw_data",
    "timeoutMode": "timeout_mode",  # (the CSOT spec's; checked by the core)
}


def _options(kwargs: dict[str, Any]) -> dict[str, Any]:
    if not kwargs:
        return kwargs  # (most calls pass none: no comprehension to run)
    # (PyMongo's objects, e.g. a Collation, made ours: pymongo_objects.py)
    return adopt_keywords({_SERVER_SPELLING.get(key, key): value for key, value in kwargs.items()})


class CollectionBase(
    Settings,
    WriteMethods,
    SearchIndexMethods[CommandCursorT],
    Generic[DatabaseT, CursorT, RawCursorT, CommandCursorT, RawCommandCursorT, ChangeStreamT],
):
    """One collection; methods as in PyMongo (see the module docstring).

    ``codec_options``, ``read_preference``, ``write_concern`` and ``read_concern`` default to
    the database's.  ``create=True`` (or creation options in ``kwargs``) creates it at once on
    a blocking client; an async one refuses them, as PyMongo's ``AsyncCollection`` does (use
    ``await db.create_collection(...)``).
    """

    _cursor_class: Callable[..., CursorT]
    _raw_cursor_class: Callable[..., RawCursorT]
    _command_cursor_class: Callable[..., CommandCursorT]
    _raw_command_cursor_class: Callable[..., RawCommandCursorT]
    _change_stream_class: Callable[..., ChangeStreamT]

    def __init__(
        self,
        database: DatabaseT,
        name: str,
        create: bool | None = False,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        session: Any = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be an instance of str, not {type(name)}")
        parent: Any = database
        #: timeoutMS in seconds for this collection's operations (None: the database's)
        self.timeout: float | None = parent.timeout
        settings = {
            "codec_options": codec_options,
            "read_preference": read_preference,
            "write_concern": write_concern,
            "read_concern": read_concern,
        }
        # (PyMongo's objects made ours: pymongo_objects.py)
        changes = {key: adopt(value) for key, value in settings.items() if value is not None}
        if "codec_options" in changes:  # (the _id it generates follows its values' classes)
            changes["id_factory"] = id_factory_for(changes["codec_options"])
        self._ops: CollectionOps = parent.ops.get_collection(name, **changes)
        self._database = database
        self._name = name
        self._engine = parent.client.engine
        if create or kwargs:
            if getattr(self, "_awaits", False):
                raise ValueError(
                    f"{type(self).__name__} does not support the `create` or `kwargs` arguments."
                )
            run_blocking(self._engine, self._creating(kwargs, session))

    def _creating(self, options: dict[str, Any], session: Any) -> Program[None]:
        parent: Any = self._database
        flow = parent.ops.create_collection(self._name, check_exists=False, **options)
        yield self._op(flow, session)

    # -- identity and settings -------------------------------------------------------------------

    @property
    def database(self) -> DatabaseT:
        return self._database

    @property
    def name(self) -> str:
        return self._name

    @property
    def full_name(self) -> str:
        return self._ops.full_name

    @property
    def ops(self) -> CollectionOps:
        """The runtime-independent collection whose flows this one runs."""
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
        """This collection with other settings (those not given stay this collection's)."""
        collection = type(self)(
            self._database,
            self._name,
            False,
            codec_options or self.codec_options,
            read_preference or self.read_preference,
            write_concern or self.write_concern,
            read_concern or self.read_concern,
        )
        collection.timeout = self.timeout if timeoutMS is None else operation_timeout(timeoutMS)
        return collection

    def __getitem__(self, name: str) -> Self:
        """The sub-collection ``<this name>.<name>``, with this collection's settings."""
        sub = type(self)(
            self._database,
            f"{self._name}.{name}",
            False,
            self.codec_options,
            self.read_preference,
            self.write_concern,
            self.read_concern,
        )
        sub.timeout = self.timeout
        return sub

    def __getattr__(self, name: str) -> Self:
        if name.startswith("_"):
            full_name = f"{self._name}.{name}"
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}. To access the {full_name} "
                f"collection, use database[{full_name!r}]."
            )
        return self[name]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CollectionBase):
            return self._database == other.database and self._name == other.name
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._database, self._name))

    def __bool__(self) -> NoReturn:
        raise NotImplementedError(
            f"{type(self).__name__} objects do not implement truth value testing or bool(). "
            "Please compare with None instead: collection is not None"
        )

    __iter__ = None

    def __next__(self) -> NoReturn:
        raise TypeError(f"'{type(self).__name__}' object is not iterable")

    next = __next__

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Calling a collection is a misspelt method name (``coll.insert_on(...)``)."""
        if "." not in self._name:
            raise TypeError(
                f"'{type(self).__name__}' object is not callable. If you meant to call the "
                f"'{self._name}' method on a 'Database' object it is failing because no such "
                "method exists."
            )
        raise TypeError(
            f"'{type(self).__name__}' object is not callable. If you meant to call the "
            f"'{self._name.split('.')[-1]}' method on a '{type(self).__name__}' object it is "
            "failing because no such method exists."
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._database!r}, {self._name!r})"

    def _op(self, flow: Flow[Any], session: Any = None) -> Run:
        """Run ``flow`` in ``session`` under this collection's timeoutMS."""
        return Run(flow, session, self.timeout, self.codec_options)

    # -- collection-level operations -------------------------------------------------------------

    @operation
    def drop(
        self,
        session: Any = None,
        comment: Any = None,
        encrypted_fields: Mapping[str, Any] | None = None,
    ) -> Program[None]:
        if encrypted_fields is not None:
            raise ConfigurationError("encrypted_fields: queryable encryption is not supported")
        yield self._op(self._ops.drop(comment=comment), session)

    @operation
    def rename(
        self, /, new_name: str, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Program[Mapping[str, Any]]:
        """Rename the collection; ``kwargs`` are renameCollection fields (``dropTarget``)."""
        reply: Mapping[str, Any] = yield self._op(
            self._ops.rename(new_name, comment=comment, **kwargs), session=session
        )
        return reply

    @operation
    def options(self, session: Any = None, comment: Any = None) -> Program[dict[str, Any]]:
        """The collection's creation options (``{}`` when it does not exist)."""
        options: dict[str, Any] = yield self._op(self._ops.options(comment=comment), session)
        return options

    # -- indexes ---------------------------------------------------------------------------------

    @operation
    def create_indexes(
        self,
        /,
        indexes: Sequence[IndexModel],
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[list[str]]:
        names: list[str] = yield self._op(
            self._ops.create_indexes(adopt_index_models(indexes), comment=comment, **kwargs),
            session=session,
        )
        return names

    @operation
    def create_index(
        self, /, keys: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Program[str]:
        """Create an index on ``keys`` ("field", [("a", 1), ("b", -1)] or a mapping); its name."""
        name: str = yield self._op(
            self._ops.create_index(keys, comment=comment, **adopt_keywords(kwargs)),
            session=session,
        )
        return name

    @operation
    def drop_indexes(
        self, /, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Program[None]:
        yield self._op(self._ops.drop_indexes(comment=comment, **kwargs), session)

    @operation
    def drop_index(
        self, /, index_or_name: Any, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> Program[None]:
        yield self._op(self._ops.drop_index(index_or_name, comment=comment, **kwargs), session)

    @operation
    def list_indexes(
        self,
        session: Any = None,
        comment: Any = None,
        *,
        rawData: bool | None = None,  # noqa: N803 - the specifications' name (PyMongo has none)
        timeoutMode: str | None = None,  # noqa: N803 - the CSOT spec's name (PyMongo has none)
    ) -> Program[CommandCursorT]:
        flow = self._ops.list_indexes(comment=comment, raw_data=rawData, timeout_mode=timeoutMode)
        opened = yield self._op(flow, session)
        database: Any = self._database
        client = database.client
        return self._command_cursor_class(
            self, opened, session=session, codec_options=son_codec_options(client.pymongo_types)
        )

    @operation
    def index_information(
        self, session: Any = None, comment: Any = None
    ) -> Program[dict[str, Any]]:
        information: dict[str, Any] = yield self._op(
            self._ops.index_information(comment=comment), session=session
        )
        database: Any = self._database
        client = database.client
        if client.pymongo_types:
            return pymongo_index_information(information)
        return information

    # -- reads -----------------------------------------------------------------------------------

    def find(
        self, filter: Mapping[str, Any] | None = None, projection: Any = None, **kwargs: Any
    ) -> CursorT:
        """A lazily opened cursor; ``kwargs`` are find's (sort, skip, limit, batch_size ...)."""
        session = kwargs.pop("session", None)
        return self._cursor_class(self, filter, projection, session=session, **_options(kwargs))

    def find_raw_batches(
        self, filter: Mapping[str, Any] | None = None, projection: Any = None, **kwargs: Any
    ) -> RawCursorT:
        """As :meth:`find`, but each batch comes as the BSON bytes of its documents."""
        session = kwargs.pop("session", None)
        cursor_class = self._raw_cursor_class
        return cursor_class(self, filter, projection, session=session, **_options(kwargs))

    @operation
    def find_one(self, /, filter: Any = None, *args: Any, **kwargs: Any) -> Program[Any]:
        """The first document matching ``filter`` (a document, or an ``_id`` value), or None."""
        session = kwargs.pop("session", None)
        flow = self._ops.find_one(filter, *args, **_options(kwargs))
        return (yield self._op(flow, session))

    @operation
    def aggregate(
        self,
        /,
        pipeline: list[Mapping[str, Any]],
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[CommandCursorT]:
        flow = self._ops.aggregate(pipeline, let=let, comment=comment, **_options(kwargs))
        opened = yield self._op(flow, session)
        return self._command_cursor_class(self, opened, session=session)

    @operation
    def aggregate_raw_batches(
        self,
        /,
        pipeline: list[Mapping[str, Any]],
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[RawCommandCursorT]:
        """As :meth:`aggregate`, but each batch comes as the BSON bytes of its documents."""
        flow = self._ops.aggregate(pipeline, comment=comment, **_options(kwargs))
        # the first batch stays views over the reply's bytes, as the getMores' do
        opened = yield Run(flow, session, self.timeout, raw_batch_options(self.codec_options))
        return self._raw_command_cursor_class(self, opened, session=session)

    @operation
    def count_documents(
        self,
        /,
        filter: Mapping[str, Any],
        session: Any = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Program[int]:
        flow = self._ops.count_documents(filter, comment=comment, **_options(kwargs))
        count: int = yield self._op(flow, session)
        return count

    @operation
    def estimated_document_count(self, /, comment: Any = None, **kwargs: Any) -> Program[int]:
        session = kwargs.pop("session", None)
        flow = self._ops.estimated_document_count(comment=comment, **_options(kwargs))
        count: int = yield self._op(flow, session)
        return count

    @operation
    def distinct(
        self,
        /,
        key: str,
        filter: Mapping[str, Any] | None = None,
        session: Any = None,
        comment: Any = None,
        hint: Any = None,
        **kwargs: Any,
    ) -> Program[list[Any]]:
        flow = self._ops.distinct(key, filter, comment=comment, hint=hint, **_options(kwargs))
        values: list[Any] = yield self._op(flow, session)
        return values

    # -- change streams --------------------------------------------------------------------------

    @operation
    def watch(
        self,
        pipeline: Sequence[Mapping[str, Any]] | None = None,
        full_document: str | None = None,
        resume_after: Mapping[str, Any] | None = None,
        max_await_time_ms: int | None = None,
        batch_size: int | None = None,
        collation: Mapping[str, Any] | None = None,
        start_at_operation_time: Any = None,
        session: Any = None,
        start_after: Mapping[str, Any] | None = None,
        comment: Any = None,
        full_document_before_change: str | None = None,
        show_expanded_events: bool | None = None,
    ) -> Program[ChangeStreamT]:
        """A change stream over this collection (PyMongo's options), open."""
        options = {
            "full_document": full_document,
            "resume_after": resume_after,
            "max_await_time_ms": max_await_time_ms,
            "batch_size": batch_size,
            "collation": collation,
            "start_at_operation_time": start_at_operation_time,
            "start_after": start_after,
            "comment": comment,
            "full_document_before_change": full_document_before_change,
            "show_expanded_events": show_expanded_events,
        }
        given = {key: value for key, value in options.items() if value is not None}
        stream = self._change_stream_class(
            self._engine,
            ChangeStreamTarget.collection(self._ops.database, self._name),
            pipeline,
            watch_options(**given),
            self.read_preference,
            self._ops.read_concern.to_document() or None,
            session=session,
            codec_options=self.codec_options,
            timeout=self.timeout,
        )
        yield from stream._opening()
        return stream
