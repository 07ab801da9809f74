"""A runtime-independent collection: a value object whose methods return flows.

A :class:`CollectionOps` holds a namespace, a read preference, read and write concerns and
codec options; each method checks its arguments at once (raising before any flow runs), builds
the command and returns a flow from :mod:`mongo_sansio.ops.crud`.  Each runtime's ``Collection``
is a thin wrapper that runs those flows::

    def insert_one(self, document, **kwargs):
        return self._client._run(self._ops.insert_one(document, **kwargs))

:class:`~mongo_sansio.ops.database.DatabaseOps` does the same for a database (commands,
database aggregates, listing, creating and dropping collections).

Inputs: the caller's arguments, PyMongo-shaped.  Outputs: ``Flow[T]`` generators (see
:mod:`mongo_sansio.flow`) returning results, cursors, documents or counts.

Codec options apply to what this layer encodes itself (the documents of writes, which travel
pre-encoded) and to the documents it returns (find_one, distinct, find_one_and_*: see
:mod:`mongo_sansio.ops.decoding`); the documents of cursors are converted by the adapter's cursor.

The write, bulk, findAndModify and index methods come from mixins (:mod:`mongo_sansio.ops.writes`,
:mod:`mongo_sansio.ops.bulk`, :mod:`mongo_sansio.ops.find_and_modify`,
:mod:`mongo_sansio.ops.indexes`), which keeps each module small.

``raw_data`` is the specifications' ``rawData`` option (MongoDB 8.2, internal: the underlying
namespaces of time series collections); the flows leave it out for older servers
(:func:`~mongo_sansio.ops.crud_commands.for_server`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from mongo_sansio.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.cursors.cursor import Cursor, Namespace, cursor_close, cursor_next
from mongo_sansio.cursors.timeout_mode import checked_timeout_mode, writes_out
from mongo_sansio.errors import ConfigurationError, InvalidName
from mongo_sansio.flow import Flow
from mongo_sansio.ops import crud
from mongo_sansio.ops.bulk import BulkOps
from mongo_sansio.ops.crud_commands import (
    ArgumentTypeError,
    CursorType,
    aggregate_command,
    check_filter,
    check_mapping,
    check_non_negative,
    count_documents_pipeline,
    find_command,
    hint_value,
    put_raw_data,
)
from mongo_sansio.ops.decoding import apply_codec_options
from mongo_sansio.ops.find_and_modify import FindAndModifyOps
from mongo_sansio.ops.indexes import IndexOps
from mongo_sansio.ops.search_indexes import SearchIndexOps
from mongo_sansio.ops.write_concern import (
    DEFAULT_READ_CONCERN,
    DEFAULT_WRITE_CONCERN,
    ReadConcern,
    WriteConcern,
)
from mongo_sansio.ops.writes import WriteOps
from mongo_sansio.selection.read_preference import PRIMARY, ReadPreference

__all__ = [
    "OperationSettings",
    "CollectionOps",
    "check_database_name",
    "check_collection_name",
]

_BAD_DATABASE_CHARACTERS = frozenset(' ./\\\x00"$')


def check_database_name(name: Any) -> str:
    """A database name: a non-empty string without ``/\\. "$`` or NUL."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"a database name must be a string, not {type(name).__name__}")
    if not name or _BAD_DATABASE_CHARACTERS.intersection(name):
        raise InvalidName(
            f"database name {name!r}: must be non-empty without any of ' ./\\\"$' or NUL"
        )
    return name


def check_collection_name(name: Any) -> str:
    """A collection name: non-empty, no NUL, no ``$`` (but ``$cmd`` and ``oplog.$main``), and
    not starting or ending with a dot."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"a collection name must be a string, not {type(name).__name__}")
    dollar_ok = name.startswith(("$cmd", "oplog.$main"))
    if (
        not name
        or "\x00" in name
        or ".." in name
        or name.startswith(".")
        or name.endswith(".")
        or ("$" in name and not dollar_ok)
    ):
        raise InvalidName(
            f"collection name {name!r}: must be non-empty, without '$', NUL or '..', and not "
            "start or end with '.'"
        )
    return name


def database_name_validator(_instance: Any, _attribute: Any, value: Any) -> None:
    check_database_name(value)


def _collection_name(_instance: Any, _attribute: Any, value: Any) -> None:
    check_collection_name(value)


def _instance_of(kind: type, option: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if not isinstance(value, kind):
            raise ArgumentTypeError(
                f"{option} must be a {kind.__name__}, not {type(value).__name__}"
            )

    return check


@attrs.frozen
class OperationSettings:
    """What databases and collections share: settings (inherited from one another), and
    :meth:`aggregate`, whose namespace each subclass names."""

    read_preference: ReadPreference = attrs.field(
        default=PRIMARY, kw_only=True, validator=_instance_of(ReadPreference, "read_preference")
    )
    read_concern: ReadConcern = attrs.field(
        default=DEFAULT_READ_CONCERN,
        kw_only=True,
        validator=_instance_of(ReadConcern, "read_concern"),
    )
    write_concern: WriteConcern = attrs.field(
        default=DEFAULT_WRITE_CONCERN,
        kw_only=True,
        validator=_instance_of(WriteConcern, "write_concern"),
    )
    codec_options: CodecOptions = attrs.field(
        default=DEFAULT_CODEC_OPTIONS,
        kw_only=True,
        validator=_instance_of(CodecOptions, "codec_options"),
    )
    #: makes the ``_id`` of inserted documents that have none (tests pass a deterministic one)
    id_factory: Callable[[], Any] = attrs.field(
        default=ObjectId, kw_only=True, eq=False, repr=False
    )

    def _inherited(self) -> dict[str, Any]:
        return {
            "read_preference": self.read_preference,
            "read_concern": self.read_concern,
            "write_concern": self.write_concern,
            "codec_options": self.codec_options,
            "id_factory": self.id_factory,
        }

    def _read_preference(self, override: ReadPreference | None) -> ReadPreference:
        if override is None:
            return self.read_preference
        if not isinstance(override, ReadPreference):
            raise ArgumentTypeError(
                f"read_preference must be a ReadPreference, not {type(override).__name__}"
            )
        return override

    def _aggregate_namespace(self) -> tuple[str, str | int]:
        """The database an aggregate runs in and its ``aggregate`` field (a collection name,
        or 1 for a database aggregate)."""
        raise NotImplementedError

    def aggregate(
        self,
        pipeline: list[Mapping[str, Any]],
        *,
        batch_size: int | None = None,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        allow_disk_use: bool | None = None,
        max_time_ms: int | None = None,
        bypass_document_validation: bool | None = None,
        max_await_time_ms: int | None = None,
        read_preference: ReadPreference | None = None,
        raw_data: bool | None = None,
        timeout_mode: str | None = None,
    ) -> Flow[Cursor]:
        """Run an aggregation pipeline on the collection, or on the database (``aggregate:
        1``, for stages such as $currentOp, $listLocalSessions and $documents).  A pipeline
        ending in $out/$merge runs on a writable server and returns an empty cursor.
        ``timeout_mode``: the CSOT spec's (:mod:`~mongo_sansio.cursors.timeout_mode`)."""
        db, target = self._aggregate_namespace()
        body = aggregate_command(
            target,
            pipeline,
            batch_size=batch_size,
            collation=collation,
            hint=hint,
            comment=comment,
            let=let,
            allow_disk_use=allow_disk_use,
            max_time_ms=max_time_ms,
            bypass_document_validation=bypass_document_validation,
            read_concern=self.read_concern,
            write_concern=self.write_concern,
            raw_data=raw_data,
        )
        flow = crud.read_cursor(
            db,
            body,
            read_preference=self._read_preference(read_preference),
            batch_size=batch_size or None,
            comment=comment,
            max_await_time_ms=None
            if max_await_time_ms is None
            else check_non_negative(max_await_time_ms, "max_await_time_ms"),
        )
        if timeout_mode is None:
            return flow
        return checked_timeout_mode(timeout_mode, flow, writes=writes_out(pipeline))


@attrs.frozen
class CollectionOps(
    WriteOps, BulkOps, FindAndModifyOps, IndexOps, SearchIndexOps, OperationSettings
):
    """One collection's operations (PyMongo's Collection API, as flows)."""

    database: str = attrs.field(validator=database_name_validator)
    name: str = attrs.field(validator=_collection_name)

    @property
    def namespace(self) -> Namespace:
        return Namespace(self.database, self.name)

    @property
    def full_name(self) -> str:
        return f"{self.database}.{self.name}"

    def _aggregate_namespace(self) -> tuple[str, str | int]:
        return self.database, self.name

    def with_options(self, **changes: Any) -> CollectionOps:
        """A copy with other ``read_preference``, ``read_concern``, ``write_concern``,
        ``codec_options`` or ``id_factory``."""
        return attrs.evolve(self, **changes)

    def drop(self, *, comment: Any = None) -> Flow[None]:
        """Drop the collection (dropping one that does not exist is not an error)."""
        body: dict[str, Any] = {"drop": self.name}
        if comment is not None:
            body["comment"] = comment
        if not self.write_concern.is_server_default:
            body["writeConcern"] = self.write_concern.to_document()
        return crud.drop(self.database, body)

    def rename(self, new_name: str, *, comment: Any = None, **kwargs: Any) -> Flow[Any]:
        """Rename the collection to ``new_name`` in the same database (renameCollection on
        admin); ``kwargs`` are command fields (``dropTarget=True``).  Returns the reply."""
        check_collection_name(new_name)
        body: dict[str, Any] = {
            "renameCollection": self.full_name,
            "to": f"{self.database}.{new_name}",
        }
        body.update(kwargs)
        if comment is not None:
            body["comment"] = comment
        if "writeConcern" not in body and not self.write_concern.is_server_default:
            body["writeConcern"] = self.write_concern.to_document()
        return crud.write_command("admin", body)

    def options(self, *, comment: Any = None) -> Flow[dict[str, Any]]:
        """The collection's creation options (``{}`` when it does not exist)."""
        body: dict[str, Any] = {"listCollections": 1, "filter": {"name": self.name}, "cursor": {}}
        if comment is not None:
            body["comment"] = comment
        return _collection_options(self.database, body, self.codec_options)

    # --- reads -------------------------------------------------------------------------------

    def find(
        self,
        filter: Mapping[str, Any] | None = None,
        projection: Any = None,
        *,
        sort: Any = None,
        skip: int = 0,
        limit: int = 0,
        batch_size: int | None = None,
        hint: Any = None,
        max_time_ms: int | None = None,
        collation: Mapping[str, Any] | None = None,
        comment: Any = None,
        allow_disk_use: bool | None = None,
        let: Mapping[str, Any] | None = None,
        cursor_type: CursorType = CursorType.NON_TAILABLE,
        max_await_time_ms: int | None = None,
        no_cursor_timeout: bool | None = None,
        allow_partial_results: bool | None = None,
        return_key: bool | None = None,
        show_record_id: bool | None = None,
        min: Mapping[str, Any] | None = None,
        max: Mapping[str, Any] | None = None,
        read_preference: ReadPreference | None = None,
        raw_data: bool | None = None,
        timeout_mode: str | None = None,
    ) -> Flow[Cursor]:
        """Open a find cursor.  ``sort``: a mapping or ``[(key, 1 | -1), ...]``; ``limit``: 0
        for none, negative for a single batch of at most ``-limit`` documents.
        ``timeout_mode``: the CSOT spec's (:mod:`~mongo_sansio.cursors.timeout_mode`)."""
        body = find_command(
            self.name,
            filter,
            projection,
            sort=sort,
            skip=skip,
            limit=limit,
            batch_size=batch_size,
            hint=hint,
            max_time_ms=max_time_ms,
            collation=collation,
            comment=comment,
            allow_disk_use=allow_disk_use,
            let=let,
            read_concern=self.read_concern,
            cursor_type=cursor_type,
            no_cursor_timeout=no_cursor_timeout,
            allow_partial_results=allow_partial_results,
            return_key=return_key,
            show_record_id=show_record_id,
            min=min,
            max=max,
            raw_data=raw_data,
        )
        awaits = cursor_type is CursorType.TAILABLE_AWAIT
        flow = crud.read_cursor(
            self.database,
            body,
            read_preference=self._read_preference(read_preference),
            batch_size=batch_size or None,
            limit=limit,
            comment=comment,
            max_await_time_ms=check_non_negative(max_await_time_ms, "max_await_time_ms")
            if awaits and max_await_time_ms is not None
            else None,
        )
        if timeout_mode is None:
            return flow
        return checked_timeout_mode(timeout_mode, flow, tailable=cursor_type is not CursorType.NON_TAILABLE)

    def find_one(
        self,
        filter: Any = None,
        projection: Any = None,
        *,
        read_preference: ReadPreference | None = None,
        **options: Any,
    ) -> Flow[Any | None]:
        """The first document matching ``filter`` (or None).  A ``filter`` that is not a
        mapping is an ``_id`` value (``find_one(oid)``).  ``options`` are find's, but limit."""
        if filter is not None and type(filter) is not dict and not isinstance(filter, Mapping):
            filter = {"_id": filter}
        if "limit" in options or "batch_size" in options:
            raise ConfigurationError(
                "find_one: limit and batch_size cannot be given (one document)"
            )
        body = find_command(
            self.name, filter, projection, limit=-1, read_concern=self.read_concern, **options
        )
        flow = crud.find_one(
            self.database, body, read_preference=self._read_preference(read_preference)
        )
        return _decoded(flow, self.codec_options)

    def count_documents(
        self,
        filter: Mapping[str, Any],
        *,
        skip: int | None = None,
        limit: int | None = None,
        hint: Any = None,
        collation: Mapping[str, Any] | None = None,
        comment: Any = None,
        max_time_ms: int | None = None,
        read_preference: ReadPreference | None = None,
        raw_data: bool | None = None,
    ) -> Flow[int]:
        """The number of documents matching ``filter`` (an aggregate: crud.md's countDocuments)."""
        pipeline = count_documents_pipeline(filter, skip, limit)
        body = aggregate_command(
            self.name,
            pipeline,
            collation=collation,
            hint=hint,
            comment=comment,
            max_time_ms=max_time_ms,
            read_concern=self.read_concern,
            raw_data=raw_data,
        )
        return crud.count_documents(
            self.database, body, read_preference=self._read_preference(read_preference)
        )

    def estimated_document_count(
        self,
        *,
        max_time_ms: int | None = None,
        comment: Any = None,
        read_preference: ReadPreference | None = None,
        raw_data: bool | None = None,
    ) -> Flow[int]:
        """The collection's document count from its metadata (the count command)."""
        body: dict[str, Any] = {"count": self.name}
        put_raw_data(body, raw_data)
        if max_time_ms is not None:
            body["maxTimeMS"] = check_non_negative(max_time_ms, "max_time_ms")
        if comment is not None:
            body["comment"] = comment
        if not self.read_concern.is_server_default:
            body["readConcern"] = self.read_concern.to_document()
        return crud.estimated_document_count(
            self.database, body, read_preference=self._read_preference(read_preference)
        )

    def distinct(
        self,
        key: str,
        filter: Mapping[str, Any] | None = None,
        *,
        collation: Mapping[str, Any] | None = None,
        comment: Any = None,
        max_time_ms: int | None = None,
        hint: Any = None,
        read_preference: ReadPreference | None = None,
        raw_data: bool | None = None,
    ) -> Flow[list[Any]]:
        """The distinct values of ``key`` among the documents matching ``filter``."""
        if not isinstance(key, str):
            raise ArgumentTypeError(f"key must be a string, not {type(key).__name__}")
        body: dict[str, Any] = {"distinct": self.name, "key": key, "query": check_filter(filter)}
        if not self.read_concern.is_server_default:
            body["readConcern"] = self.read_concern.to_document()
        if collation is not None:
            body["collation"] = check_mapping(collation, "collation")
        if comment is not None:
            body["comment"] = comment
        if max_time_ms is not None:
            body["maxTimeMS"] = check_non_negative(max_time_ms, "max_time_ms")
        if hint is not None:
            body["hint"] = hint_value(hint)
        put_raw_data(body, raw_data)
        flow = crud.distinct(
            self.database, body, read_preference=self._read_preference(read_preference)
        )
        return _decoded_values(flow, self.codec_options)


def _decoded(flow: Flow[Any], codec_options: CodecOptions) -> Flow[Any]:
    return apply_codec_options((yield from flow), codec_options)


def _decoded_values(flow: Flow[list[Any]], codec_options: CodecOptions) -> Flow[list[Any]]:
    values = yield from flow
    return list(apply_codec_options({"values": values}, codec_options)["values"])


def _collection_options(
    db: str, body: Mapping[str, Any], codec_options: CodecOptions
) -> Flow[dict[str, Any]]:
    cursor = yield from crud.read_cursor(db, body)
    document = yield from cursor_next(cursor)
    yield from cursor_close(cursor)
    if not isinstance(document, Mapping):
        return {}
    options = dict(apply_codec_options(document.get("options") or {}, codec_options))
    options.pop("create", None)
    return options
