"""The data source's options: Spark hands them over as case-insensitive strings.

:func:`parse_options` checks them once, on the driver, and returns :class:`SourceOptions`, a
picklable value the readers and writers carry to the executors (clients are never pickled:
each task opens its own from ``uri``).  A bad option raises :class:`MongoDataSourceError`
naming it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from mongo_sansio.bson import extjson
from mongo_sansio.pipeline.offsets import StartAt, parse_start_at
from mongo_sansio.pipeline.parse_modes import CORRUPT_RECORD, ParseMode, parse_mode
from mongo_sansio.pipeline.schema import Kind, parse_hints

from .errors import MongoDataSourceError

__all__ = ["SourceOptions", "parse_options"]

_OPERATION_TYPES = ("replace", "insert", "update")
_FULL_DOCUMENT = ("default", "updateLookup", "whenAvailable", "required")
_FULL_DOCUMENT_BEFORE = ("off", "whenAvailable", "required")
_PARTITIONERS = ("sample", "shardChunks")
_READ_PREFERENCES = ("primary", "primaryPreferred", "secondary", "secondaryPreferred", "nearest")


@attrs.frozen
class SourceOptions:
    uri: str
    database: str
    collection: str
    # batch reads
    pipeline: str = "[]"  # canonical Extended JSON of the user's stages
    partitions: int = 4
    partitioner: str = "sample"  # or "shardChunks": one partition per chunk of a sharded collection
    sample_size: int = 1000
    schema_hints: tuple[tuple[str, Kind], ...] = ()
    filter_pushdown: bool = False
    # streams
    start_at: StartAt = attrs.field(factory=lambda: StartAt(latest=True))
    full_document: str | None = None
    full_document_before_change: str | None = None
    max_events_per_batch: int | None = None
    key_partitions: int = 1
    key_partition_filter: str = "server"
    checkpoint_location: str | None = None
    quiet_advance_seconds: float = 60.0
    end_token_timeout_seconds: float = 120.0
    max_await_time_ms: int = 500
    document_format: str = "json"
    publish_full_document_only: bool = False
    # reads: what a document that does not fit the schema becomes
    mode: ParseMode = ParseMode.FAILFAST
    corrupt_column: str = CORRUPT_RECORD
    # every command
    comment: str | None = None
    read_preference: str | None = None
    allow_disk_use: bool | None = None
    # writes
    operation_type: str = "replace"
    id_fields: tuple[str, ...] = ("_id",)
    ordered: bool = True
    max_batch_size: int = 512
    write_concern: str | None = None

    @property
    def namespace(self) -> str:
        return f"{self.database}.{self.collection}"

    @property
    def whole_deployment(self) -> bool:
        """``database`` ``*``: a cluster-wide stream (every database but admin, config, local)."""
        return self.database == "*"

    @property
    def whole_database(self) -> bool:
        """``collection`` ``*``: every collection of ``database``."""
        return self.collection == "*"

    @property
    def collection_names(self) -> tuple[str, ...]:
        """The collections of a comma-separated ``collection`` (one name for most sources)."""
        return tuple(name.strip() for name in self.collection.split(",") if name.strip())

    def single_collection(self, what: str) -> None:
        """Refuse a namespace pattern where one collection is needed (batch reads, writes)."""
        if self.whole_deployment or self.whole_database or len(self.collection_names) != 1:
            raise MongoDataSourceError(
                f"{what} take one collection: database {self.database!r} and collection "
                f"{self.collection!r} name several (only streams take '*' or a list)"
            )

    def user_pipeline(self) -> list[dict[str, Any]]:
        stages: list[dict[str, Any]] = extjson.loads(self.pipeline)
        return stages

    def client_options(self) -> dict[str, Any]:
        """Keywords for each client the source opens (``readPreference`` for reads)."""
        return {} if self.read_preference is None else {"readPreference": self.read_preference}

    def command_options(self) -> dict[str, Any]:
        """Keywords for every command the source sends (``comment``)."""
        return {} if self.comment is None else {"comment": self.comment}

    def read_options(self, *, find: bool = False) -> dict[str, Any]:
        """Keywords for a batch read's aggregate, or ``find`` (``comment``, ``allowDiskUse``:
        PyMongo's find spells it ``allow_disk_use``, aggregate passes the command's name)."""
        if self.allow_disk_use is None:
            return self.command_options()
        name = "allow_disk_use" if find else "allowDiskUse"
        return {**self.command_options(), name: self.allow_disk_use}

    def write_concern_document(self) -> dict[str, Any] | None:
        if self.write_concern is None:
            return None
        text = self.write_concern.strip()
        if text.startswith("{"):
            document: dict[str, Any] = json.loads(text)
            return document
        return {"w": int(text) if text.isdigit() else text}


def _int(options: Mapping[str, str], name: str, default: int | None, minimum: int) -> int | None:
    text = options.get(name.lower())
    if text is None:
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        raise MongoDataSourceError(f"option {name}: expected an integer, got {text!r}") from None
    if value < minimum:
        raise MongoDataSourceError(f"option {name}: must be at least {minimum}, got {value}")
    return value


def _float(options: Mapping[str, str], name: str, default: float) -> float:
    text = options.get(name.lower())
    if text is None:
        return default
    try:
        value = float(str(text).strip())
    except ValueError:
        raise MongoDataSourceError(f"option {name}: expected a number, got {text!r}") from None
    if value < 0:
        raise MongoDataSourceError(f"option {name}: must not be negative, got {value}")
    return value


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = options.get(name.lower())
    if text is None:
        return default
    value = str(text).strip().lower()
    if value not in ("true", "false"):
        raise MongoDataSourceError(f"option {name}: expected true or false, got {text!r}")
    return value == "true"


def _choice(options: Mapping[str, str], name: str, choices: tuple[str, ...], default: str | None) -> str | None:
    text = options.get(name.lower())
    if text is None:
        return default
    for choice in choices:
        if choice.lower() == str(text).strip().lower():
            return choice
    raise MongoDataSourceError(f"option {name}: expected one of {', '.join(choices)}, got {text!r}")


def parse_options(given: Mapping[str, str]) -> SourceOptions:
    """Check Spark's options (keys in any case) and return them typed."""
    options = {str(key).lower(): str(value) for key, value in given.items()}
    uri = options.get("uri") or options.get("connection.uri")
    if not uri:
        raise MongoDataSourceError("option uri is required (a mongodb:// connection string)")
    database = options.get("database")
    collection = options.get("collection")
    if database == "*":
        collection = collection or "*"
        if collection != "*":
            raise MongoDataSourceError(
                "option collection: with database '*' (the whole deployment) give collection '*' or none"
            )
    if not database or not collection:
        raise MongoDataSourceError("options database and collection are required")
    names = [name.strip() for name in collection.split(",")]
    if collection != "*" and (not all(names) or "*" in names):
        raise MongoDataSourceError(
            f"option collection: a name, a comma-separated list of names, or '*'; got {collection!r}"
        )
    pipeline = options.get("pipeline", "[]")
    try:
        stages = extjson.loads(pipeline)
    except (ValueError, TypeError) as exc:
        raise MongoDataSourceError(f"option pipeline: not Extended JSON: {exc}") from None
    if isinstance(stages, dict):
        stages = [stages]
    if not isinstance(stages, list) or not all(isinstance(stage, dict) for stage in stages):
        raise MongoDataSourceError("option pipeline: expected a JSON array of stage documents")
    try:
        hints = parse_hints(options.get("schema"))
        start_at = parse_start_at(options.get("startat"))
        mode = parse_mode(options.get("mode"))
    except ValueError as exc:
        raise MongoDataSourceError(f"option {exc}") from None
    full_document = _choice(options, "fullDocument", _FULL_DOCUMENT, None)
    before = _choice(options, "fullDocumentBeforeChange", _FULL_DOCUMENT_BEFORE, None)
    id_fields = tuple(
        name.strip() for name in options.get("idfields", "_id").split(",") if name.strip()
    )
    if not id_fields:
        raise MongoDataSourceError("option idFields: name at least one field")
    return SourceOptions(
        uri=uri,
        database=database,
        collection=collection,
        pipeline=extjson.dumps(stages, mode="canonical"),
        partitions=_int(options, "partitions", 4, 1) or 4,
        partitioner=_choice(options, "partitioner", _PARTITIONERS, "sample") or "sample",
        sample_size=_int(options, "sampleSize", 1000, 1) or 1000,
        schema_hints=tuple(hints.items()),
        filter_pushdown=_bool(options, "filterPushdown", False),
        start_at=start_at,
        full_document=None if full_document == "default" else full_document,
        full_document_before_change=None if before == "off" else before,
        max_events_per_batch=_int(options, "maxEventsPerBatch", None, 1),
        key_partitions=_int(options, "keyPartitions", 1, 1) or 1,
        key_partition_filter=_choice(options, "keyPartitionFilter", ("server", "client"), "server")
        or "server",
        checkpoint_location=options.get("checkpointlocation"),
        quiet_advance_seconds=_float(options, "quietAdvanceSeconds", 60.0),
        end_token_timeout_seconds=_float(options, "endTokenTimeoutMS", 120_000.0) / 1000.0,
        max_await_time_ms=_int(options, "maxAwaitTimeMS", 500, 1) or 500,
        document_format=_choice(options, "documentFormat", ("json", "variant"), "json") or "json",
        publish_full_document_only=_bool(options, "publishFullDocumentOnly", False),
        mode=mode,
        corrupt_column=options.get("columnnameofcorruptrecord") or CORRUPT_RECORD,
        operation_type=_choice(options, "operationType", _OPERATION_TYPES, "replace") or "replace",
        id_fields=id_fields,
        ordered=_bool(options, "ordered", True),
        max_batch_size=_int(options, "maxBatchSize", 512, 1) or 512,
        write_concern=options.get("writeconcern"),
        comment=options.get("comment"),
        read_preference=_choice(options, "readPreference", _READ_PREFERENCES, None),
        allow_disk_use=None if "allowdiskuse" not in options else _bool(options, "allowDiskUse", False),
    )
