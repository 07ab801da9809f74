"""The CRUD commands as documents: arguments checked, then the bodies the server expects.

Inputs: the arguments of a CRUD call (filters, updates, pipelines, options in PyMongo's
spelling), and for ``$readPreference`` the server an operation was given.  Outputs: command
bodies (the command name first; options only when the caller set them, as crud.md says),
update and delete statements, and the pieces the cursor needs.  Pure: nothing here runs a
command (the flows in :mod:`mongo_sansio.ops.crud` do).

``rawData`` (MongoDB 8.2, for internal use by MongoDB teams: access to the underlying
namespaces of time series collections) is put in the bodies that take it when given;
:func:`for_server` leaves it out of what is sent to a server before 8.2, as the CRUD and
index-management specifications say ("MUST NOT be sent when connected to pre-8.2 servers").

Argument errors are the caller's: a wrong type raises :class:`ArgumentTypeError` (a
:class:`~mongo_sansio.errors.LocalProtocolError` and a ``TypeError``, as PyMongo raises
``TypeError``); a wrong value raises :class:`~mongo_sansio.errors.ConfigurationError` (a
``ValueError``).  Both name the argument.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from itertools import chain, islice
from typing import Any, Final

from mongo_sansio._numbers import is_int
from mongo_sansio.bson import CodecOptions, RawDocument, encode
from mongo_sansio.errors import ConfigurationError, LocalProtocolError
from mongo_sansio.flow import ServerInfo
from mongo_sansio.ops.write_concern import ReadConcern, WriteConcern
from mongo_sansio.selection.read_preference import Mode, ReadPreference

__all__ = [
    "ArgumentValueError",
    "ArgumentTypeError",
    "CursorType",
    "check_filter",
    "check_update",
    "check_replacement",
    "check_pipeline",
    "has_write_stage",
    "index_document",
    "sort_document",
    "hint_value",
    "projection_document",
    "prepare_insert",
    "write_command",
    "update_statement",
    "delete_statement",
    "find_command",
    "aggregate_command",
    "count_documents_pipeline",
    "read_preference_field",
    "RAW_DATA_WIRE_VERSION",
    "for_server",
    "put_raw_data",
    "put_write_options",
    "check_bool",
]


class ArgumentTypeError(TypeError, LocalProtocolError):
    """An argument has the wrong type (a filter that is not a document, a pipeline that is
    not a list...); the message names the argument.  TypeError first: PyMongo raises a plain
    TypeError, which stays the first of Python's or PyMongo's classes in the MRO once our
    errors also derive from PyMongo's."""


class ArgumentValueError(ValueError, LocalProtocolError):
    """An argument of the right type with a value PyMongo refuses with a plain ValueError (an
    update without ``$`` operators, a replacement with them, an empty update)."""


class CursorType(enum.Enum):
    """PyMongo's cursor types (exhaust cursors are not offered)."""

    NON_TAILABLE = 0
    #: stays open at the end of a capped collection; getMore returns new documents
    TAILABLE = 2
    #: tailable, and a getMore waits (up to maxAwaitTimeMS) for new documents
    TAILABLE_AWAIT = 34


#: the pipeline stages that write their results to a collection
WRITE_STAGES = frozenset({"$out", "$merge"})
#: maxWireVersion of MongoDB 8.2, the first server that takes ``rawData`` (8.0 is 25, 8.1 26)
RAW_DATA_WIRE_VERSION: Final = 27


def for_server(body: Mapping[str, Any], server: ServerInfo) -> Mapping[str, Any]:
    """``body`` as sent to ``server``: without ``rawData`` when the server is older than 8.2
    (the specifications' tests expect the option left out there, not refused)."""
    if "rawData" in body and server.max_wire_version < RAW_DATA_WIRE_VERSION:
        return {key: value for key, value in body.items() if key != "rawData"}
    return body


def _type_name(value: object) -> str:
    return type(value).__name__


def check_mapping(value: Any, name: str) -> Mapping[str, Any]:
    """``value`` when it is a document (a mapping); else the TypeError PyMongo raises, in its
    words (code moved over may match them)."""
    if type(value) is not dict and not isinstance(value, Mapping):
        raise ArgumentTypeError(
            f"{name} must be an instance of dict, bson.son.SON, or any other type that "
            "inherits from collections.Mapping"
        )
    return value


def _optional_mapping(value: Any, name: str) -> Mapping[str, Any] | None:
    return None if value is None else check_mapping(value, name)


def check_filter(value: Any, name: str = "filter") -> Mapping[str, Any]:
    """The filter document of a read (None means ``{}``: match everything)."""
    return {} if value is None else check_mapping(value, name)


def check_int(value: Any, name: str) -> int:
    if not is_int(value):
        raise ArgumentTypeError(f"{name} must be an integer, not {_type_name(value)}")
    return int(value)


def check_non_negative(value: Any, name: str) -> int:
    number = check_int(value, name)
    if number < 0:
        raise ConfigurationError(f"{name} must be a non-negative integer, got {number}")
    return number


def _optional_non_negative(value: Any, name: str) -> int | None:
    return None if value is None else check_non_negative(value, name)


def check_bool(value: Any, name: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, not {_type_name(value)}")
    return value


def check_update(update: Any) -> Mapping[str, Any] | list[Mapping[str, Any]]:
    """An update document (every top-level key an ``$``-operator) or a non-empty aggregation
    pipeline (a list of stages)."""
    if isinstance(update, list):
        if not update:
            raise ArgumentValueError("update cannot be empty")
        for index, stage in enumerate(update):
            check_mapping(stage, f"update[{index}]")
        return update
    document = check_mapping(update, "update")
    if not document:
        raise ArgumentValueError("update cannot be empty")
    for key in document:
        if not isinstance(key, str) or not key.startswith("$"):
            raise ArgumentValueError(
                f"update only works with $ operators (found {key!r}); "
                f"to replace the whole document use replace_one"
            )
    return document


def check_replacement(replacement: Any) -> Mapping[str, Any]:
    """A replacement document: must not start with an update operator (crud.md)."""
    document = check_mapping(replacement, "replacement")
    first = next(iter(document), None)
    if isinstance(first, str) and first.startswith("$"):
        raise ArgumentValueError(
            f"replacement can not include $ operators (found {first!r}); "
            f"to apply operators use update_one"
        )
    return document


def check_pipeline(pipeline: Any, name: str = "pipeline") -> list[Mapping[str, Any]]:
    if not isinstance(pipeline, list | tuple):
        raise ArgumentTypeError(f"{name} must be a list of stages, not {_type_name(pipeline)}")
    for index, stage in enumerate(pipeline):
        check_mapping(stage, f"{name}[{index}]")
    return list(pipeline)


def has_write_stage(pipeline: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the pipeline ends with ``$out`` or ``$merge`` (it then needs a writable server)."""
    return bool(pipeline) and next(iter(pipeline[-1]), None) in WRITE_STAGES


def _direction(value: Any, name: str, *, index_types: bool) -> Any:
    if is_int(value) and value in (1, -1):
        return value
    if isinstance(value, Mapping):  # {"$meta": "textScore"}
        return value
    if index_types and isinstance(value, str):  # "text", "2dsphere", "hashed"
        return value
    raise ConfigurationError(f"{name}: a direction must be 1 or -1, got {value!r}")


def index_document(value: Any, name: str, *, index_types: bool = False) -> dict[str, Any]:
    """A key specification: a mapping, a list of ``(key, direction)`` pairs, or one key name
    (ascending), as an ordered dict."""
    if isinstance(value, str):
        return {value: 1}
    pairs: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
    if not isinstance(value, Mapping | list | tuple):
        raise ArgumentTypeError(
            f"{name} must be a mapping or a list of (key, direction) pairs, not {_type_name(value)}"
        )
    document: dict[str, Any] = {}
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2 or not isinstance(pair[0], str):
            raise ArgumentTypeError(f"{name}: expected (key, direction) pairs, got {pair!r}")
        document[pair[0]] = _direction(pair[1], name, index_types=index_types)
    return document


def sort_document(sort: Any) -> dict[str, Any] | None:
    return None if sort is None else index_document(sort, "sort")


def hint_value(hint: Any) -> str | dict[str, Any] | None:
    """An index name, or its key specification as a document."""
    if hint is None or isinstance(hint, str):
        return hint
    return index_document(hint, "hint", index_types=True)


def projection_document(projection: Any) -> Mapping[str, Any] | None:
    """A projection document, or a list of field names to include."""
    if projection is None or isinstance(projection, Mapping):
        return projection
    if isinstance(projection, list | tuple) and all(isinstance(f, str) for f in projection):
        return dict.fromkeys(projection, 1)
    raise ArgumentTypeError(
        f"projection must be a mapping or a list of field names, not {_type_name(projection)}"
    )


# Over this many keys a document given an _id is encoded here, with _id first: its items are
# walked in that order (see _IdFirst) instead of copying the dict (about 75 ns a key, 7 ms for
# the benchmark spec's large document of 94,355 keys) or the bytes.
_ENCODE_AHEAD_KEYS = 1024


class _IdFirst(Mapping[str, Any]):
    """A dict whose last key is ``_id``, read with ``_id`` first (for the encoder)."""

    __slots__ = ("_document",)

    def __init__(self, document: dict[str, Any]) -> None:
        self._document = document

    def __len__(self) -> int:
        return len(self._document)

    def __getitem__(self, key: str) -> Any:
        return self._document[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def keys(self) -> Any:
        return [key for key, _ in self.items()]

    def items(self) -> Any:
        document = self._document
        rest = islice(document.items(), len(document) - 1)
        return chain((("_id", document["_id"]),), rest)


def prepare_insert(
    document: Any, id_factory: Callable[[], Any], codec_options: CodecOptions | None = None
) -> tuple[Mapping[str, Any], Any]:
    """``(document to send, its _id)``.

    Like PyMongo, a mutable document without ``_id`` gets one from ``id_factory`` added *to
    the caller's own mapping* (so ``doc["_id"]`` is set after ``insert_one(doc)``); what is
    sent has ``_id`` first, where the server keeps it (a copy, or, given the collection's
    ``codec_options``, a big dict's encoding as a RawDocument).  An immutable mapping without ``_id`` (a RawDocument) is sent
    as it is: the server assigns the id, and it is None here.
    """
    if type(document) is not dict:  # (a dict needs no ABC checks: they cost more here)
        check_mapping(document, "document")
        if "_id" not in document and not isinstance(document, MutableMapping):
            return document, None
    if "_id" in document:
        return document, document["_id"]
    new_id = id_factory()
    document["_id"] = new_id
    if codec_options is not None and type(document) is dict and len(document) > _ENCODE_AHEAD_KEYS:
        return RawDocument(encode(_IdFirst(document), codec_options)), new_id
    return {"_id": new_id, **document}, new_id


def _put(body: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


def write_command(
    name: str,
    collection: str,
    *,
    ordered: bool = True,
    write_concern: WriteConcern | None = None,
    bypass_document_validation: bool | None = None,
    comment: Any = None,
    let: Mapping[str, Any] | None = None,
    raw_data: bool | None = None,
) -> dict[str, Any]:
    """An insert/update/delete command without its statements (they travel as an OP_MSG
    document sequence)."""
    if not isinstance(ordered, bool):
        raise ArgumentTypeError(f"ordered must be True or False, not {_type_name(ordered)}")
    return put_write_options(
        {name: collection, "ordered": ordered},
        write_concern=write_concern,
        bypass_document_validation=bypass_document_validation,
        comment=comment,
        let=let,
        raw_data=raw_data,
    )


def put_write_options(
    body: dict[str, Any],
    *,
    write_concern: WriteConcern | None,
    bypass_document_validation: bool | None,
    comment: Any,
    let: Mapping[str, Any] | None,
    raw_data: bool | None,
) -> dict[str, Any]:
    """Add to ``body`` the options every write command carries alike (insert, update, delete
    and the client's bulkWrite), each only when given, checked; returns ``body``.  The write
    concern is left out when it is the server's default."""
    # (each option tested here before any call: this runs once per write, mostly with none)
    if let is not None:
        body["let"] = _optional_mapping(let, "let")
    if bypass_document_validation is not None:
        # sent whenever given, False too (crud's unified "passes bypassDocumentValidation: false")
        body["bypassDocumentValidation"] = check_bool(
            bypass_document_validation, "bypass_document_validation"
        )
    if comment is not None:
        body["comment"] = comment
    if raw_data is not None:
        put_raw_data(body, raw_data)
    if write_concern is not None and not write_concern.is_server_default:
        body["writeConcern"] = write_concern.to_document()
    return body


def update_statement(
    filter: Any,
    update: Any,
    *,
    multi: bool,
    upsert: bool = False,
    replacement: bool = False,
    array_filters: Any = None,
    collation: Any = None,
    hint: Any = None,
    sort: Any = None,
) -> dict[str, Any]:
    """One entry of an update command's ``updates``: ``{q, u, multi?, upsert?, ...}``."""
    check_bool(upsert, "upsert")
    statement: dict[str, Any] = {
        # a write's filter is required: None would update every document (PyMongo refuses)
        "q": check_mapping(filter, "filter"),
        "u": check_replacement(update) if replacement else check_update(update),
    }
    if multi:
        statement["multi"] = True
    if upsert:
        statement["upsert"] = True
    if array_filters is not None:
        if replacement:
            raise ConfigurationError("array_filters: not allowed with a replacement document")
        if not isinstance(array_filters, list | tuple):
            raise ArgumentTypeError("array_filters must be a list of documents")
        statement["arrayFilters"] = [
            check_mapping(f, f"array_filters[{i}]") for i, f in enumerate(array_filters)
        ]
    _put(statement, "collation", _optional_mapping(collation, "collation"))
    _put(statement, "hint", hint_value(hint))
    _put(statement, "sort", sort_document(sort))
    return statement


def delete_statement(
    filter: Any, *, multi: bool, collation: Any = None, hint: Any = None
) -> dict[str, Any]:
    """One entry of a delete command's ``deletes``: ``{q, limit: 0 | 1, ...}``."""
    # required, as in PyMongo: a None filter would delete every document
    statement: dict[str, Any] = {"q": check_mapping(filter, "filter"), "limit": 0 if multi else 1}
    _put(statement, "collation", _optional_mapping(collation, "collation"))
    _put(statement, "hint", hint_value(hint))
    return statement


def find_command(
    collection: str,
    filter: Any = None,
    projection: Any = None,
    *,
    sort: Any = None,
    skip: int = 0,
    limit: int = 0,
    batch_size: int | None = None,
    hint: Any = None,
    max_time_ms: int | None = None,
    collation: Any = None,
    comment: Any = None,
    allow_disk_use: bool | None = None,
    let: Any = None,
    read_concern: ReadConcern | None = None,
    cursor_type: CursorType = CursorType.NON_TAILABLE,
    no_cursor_timeout: bool | None = None,
    allow_partial_results: bool | None = None,
    return_key: bool | None = None,
    show_record_id: bool | None = None,
    min: Any = None,
    max: Any = None,
    raw_data: bool | None = None,
) -> dict[str, Any]:
    """The find command (fields in the order of the find command's documentation).

    ``limit`` follows PyMongo: 0 is no limit, a negative limit asks for one batch of at most
    ``-limit`` documents (``singleBatch``).  A ``batch_size`` equal to the limit is sent as
    limit + 1, so the server closes the cursor with the last document instead of leaving a
    cursor that needs a killCursors (crud's "Find with batchSize equal to limit" test).
    """
    limit = check_int(limit, "limit")
    skip = check_non_negative(skip, "skip")
    batch_size = _optional_non_negative(batch_size, "batch_size")
    if not isinstance(cursor_type, CursorType):
        raise ArgumentTypeError(f"cursor_type must be a CursorType, not {_type_name(cursor_type)}")
    body: dict[str, Any] = {"find": collection, "filter": check_filter(filter)}
    # each option's checker runs only when the option is given (find_one runs this per call)
    if sort is not None:
        _put(body, "sort", sort_document(sort))
    if projection is not None:
        _put(body, "projection", projection_document(projection))
    if hint is not None:
        _put(body, "hint", hint_value(hint))
    if skip:
        body["skip"] = skip
    single_batch = limit < 0
    if limit:
        body["limit"] = abs(limit)
    if batch_size and not single_batch:
        body["batchSize"] = batch_size + 1 if batch_size == limit else batch_size
    if single_batch:
        body["singleBatch"] = True
    _put(body, "comment", comment)
    if max_time_ms is not None:
        _put(body, "maxTimeMS", _optional_non_negative(max_time_ms, "max_time_ms"))
    if read_concern is not None and not read_concern.is_server_default:
        body["readConcern"] = read_concern.to_document()
    if max is not None:
        _put(body, "max", _optional_mapping(max, "max"))
    if min is not None:
        _put(body, "min", _optional_mapping(min, "min"))
    if return_key is not None:
        _put(body, "returnKey", check_bool(return_key, "return_key"))
    if show_record_id is not None:
        _put(body, "showRecordId", check_bool(show_record_id, "show_record_id"))
    if cursor_type is not CursorType.NON_TAILABLE:
        body["tailable"] = True
    if no_cursor_timeout is not None:
        _put(body, "noCursorTimeout", check_bool(no_cursor_timeout, "no_cursor_timeout"))
    if cursor_type is CursorType.TAILABLE_AWAIT:
        body["awaitData"] = True
    if allow_partial_results is not None:
        _put(
            body, "allowPartialResults", check_bool(allow_partial_results, "allow_partial_results")
        )
    if collation is not None:
        _put(body, "collation", _optional_mapping(collation, "collation"))
    if allow_disk_use is not None:
        _put(body, "allowDiskUse", check_bool(allow_disk_use, "allow_disk_use"))
    if let is not None:
        _put(body, "let", _optional_mapping(let, "let"))
    if raw_data is not None:
        put_raw_data(body, raw_data)
    return body


def aggregate_command(
    target: str | int,
    pipeline: Any,
    *,
    batch_size: int | None = None,
    collation: Any = None,
    hint: Any = None,
    comment: Any = None,
    let: Any = None,
    allow_disk_use: bool | None = None,
    max_time_ms: int | None = None,
    bypass_document_validation: bool | None = None,
    read_concern: ReadConcern | None = None,
    write_concern: WriteConcern | None = None,
    raw_data: bool | None = None,
) -> dict[str, Any]:
    """The aggregate command on a collection (``target`` its name) or a database (``1``).

    A pipeline ending in ``$out``/``$merge`` gets no ``cursor.batchSize`` (a batchSize of 0
    would stop it from running: crud.md) and carries the write concern; others do not.
    """
    stages = check_pipeline(pipeline)
    batch_size = _optional_non_negative(batch_size, "batch_size")
    writes = has_write_stage(stages)
    cursor: dict[str, Any] = {}
    if batch_size is not None and not writes:
        cursor["batchSize"] = batch_size
    body: dict[str, Any] = {"aggregate": target, "pipeline": stages, "cursor": cursor}
    _put(body, "allowDiskUse", check_bool(allow_disk_use, "allow_disk_use"))
    _put(body, "maxTimeMS", _optional_non_negative(max_time_ms, "max_time_ms"))
    # sent whenever given, False too, as for writes (crud's "passes bypassDocumentValidation")
    _put(
        body,
        "bypassDocumentValidation",
        check_bool(bypass_document_validation, "bypass_document_validation"),
    )
    if read_concern is not None and not read_concern.is_server_default:
        body["readConcern"] = read_concern.to_document()
    if writes and write_concern is not None and not write_concern.is_server_default:
        body["writeConcern"] = write_concern.to_document()
    _put(body, "collation", _optional_mapping(collation, "collation"))
    _put(body, "hint", hint_value(hint))
    _put(body, "comment", comment)
    _put(body, "let", _optional_mapping(let, "let"))
    put_raw_data(body, raw_data)
    return body


def put_raw_data(body: dict[str, Any], raw_data: Any) -> None:
    """Add the ``rawData`` option when given (True or False); see :func:`for_server`."""
    _put(body, "rawData", check_bool(raw_data, "rawData"))


def count_documents_pipeline(
    filter: Any, skip: int | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """crud.md's countDocuments: ``$match``, then ``$skip`` and ``$limit`` when set, then
    ``{$group: {_id: 1, n: {$sum: 1}}}``."""
    # None is sent as it is, as PyMongo sends it: the server refuses it (code 15959), where
    # reading it as {} would count every document
    match = None if filter is None else check_mapping(filter, "filter")
    pipeline: list[dict[str, Any]] = [{"$match": match}]
    skip = _optional_non_negative(skip, "skip")
    limit = _optional_non_negative(limit, "limit")
    if skip:
        pipeline.append({"$skip": skip})
    if limit:
        pipeline.append({"$limit": limit})
    pipeline.append({"$group": {"_id": 1, "n": {"$sum": 1}}})
    return pipeline


def read_preference_field(
    read_preference: ReadPreference, server: ServerInfo
) -> dict[str, Any] | None:
    """The ``$readPreference`` of a read sent to ``server`` (None: send none).

    server-selection.md, "Passing read preference": every mode but primary is sent as it is.
    Primary is not sent, except to a server that is not writable: a primary read can only have
    been given one over a direct connection (topology Single) to a secondary or another
    non-primary member, which must be told ``primaryPreferred`` to accept the read.
    A standalone is sent none at all (server-selection.md, "Topology type: Single").
    """
    if server.is_standalone:
        return None
    if read_preference.mode is Mode.PRIMARY:
        return None if server.is_writable else {"mode": Mode.PRIMARY_PREFERRED.value}
    return read_preference.to_document()
