"""The client under test, as one swappable object: :class:`Driver`.

The runner never imports a client library itself.  It receives a :class:`Driver`, which names
the client class (``MongoClient(uri, event_listeners=[...], **uri_options)``, PyMongo's
shape), the module holding the listener base classes (``pymongo.monitoring`` or
``mongo_sansio.monitoring``), how to read that library's errors, its Extended JSON parser (test
files must be parsed into the library's own BSON types), the option objects
(read/write concern, read preference), and how to read its structured log records.

Drivers built here: :func:`pymongo_driver` (the reference, used to validate the runner and the
simulator), :func:`sansio_driver` (ours, the blocking client) and :func:`runtime_driver` (ours
on asyncio, trio or gevent, behind the synchronous facade of :mod:`.runtimes`).
:func:`selected_driver` picks one from ``$MONGO_SANSIO_UNIFIED_DRIVER``: ``pymongo``,
``sansio`` (the default), ``sansio-asyncio``, ``sansio-trio`` or ``sansio-gevent``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import logging
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from types import ModuleType, SimpleNamespace
from typing import Any

import attrs

LogSink = Callable[[str, str, Mapping[str, Any]], None]

__all__ = [
    "DRIVER_ENV",
    "RUNTIMES",
    "Driver",
    "pymongo_driver",
    "runtime_driver",
    "runtime_portal",
    "sansio_driver",
    "selected_driver",
]

DRIVER_ENV = "MONGO_SANSIO_UNIFIED_DRIVER"
LISTENER_BASES = (
    "CommandListener",
    "ServerHeartbeatListener",
    "ServerListener",
    "TopologyListener",
    "ConnectionPoolListener",
)
#: the unified format's log components, by the suffix of the driver's logger names
LOG_COMPONENTS = ("command", "topology", "serverSelection", "connection")
#: The longest document a log message carries whole, for every client the runner makes.  The
#: logging spec's default of 1000 characters cuts a replica-set member's hello reply (about
#: 1100-1200 characters of Extended JSON for three members, mongod's as the simulator's), and
#: tests that match a logged hello reply need it whole; no unified test checks the
#: truncation itself (the logging spec's prose tests do, with the default: tests/unit).  The
#: reference driver's own test suite sets 2000 for the same reason.
LOG_MAX_DOCUMENT_LENGTH = 2000


@attrs.frozen
class Driver:
    """Everything the runner needs to know about one client library (see the module docstring).

    ``log_data(record)`` returns the structured data of a log record (with its ``message``),
    or None when the record carries none; ``client_log_key(client)`` is the value the
    library puts in a record's ``clientId``/``topologyId`` for that client (None: messages
    cannot be told apart by client, and every capturing client sees them all).
    """

    name: str
    client_class: Any
    monitoring: Any  # the module with the listener base classes (or a namespace of them)
    base_error: tuple[type[BaseException], ...]
    server_error: tuple[type[BaseException], ...]
    timeout_error: Callable[[BaseException], bool]
    error_code: Callable[[BaseException], Any]
    error_code_name: Callable[[BaseException], Any]
    error_labels: Callable[[BaseException], frozenset[str]]
    error_details: Callable[[BaseException], Mapping[str, Any] | None]
    load_json: Callable[[str], Any]
    read_concern: Callable[[Mapping[str, Any]], Any]
    write_concern: Callable[[Mapping[str, Any]], Any]
    read_preference: Callable[[Mapping[str, Any]], Any]
    server_api: Callable[[Mapping[str, Any]], Any]
    transaction_options: Callable[[Mapping[str, Any]], Any] | None
    gridfs_bucket: Callable[[Any, Mapping[str, Any]], Any] | None
    write_models: Any  # module with InsertOne, UpdateOne, ... (None: no bulk writes)
    logger_prefix: str
    log_data: Callable[[logging.LogRecord], Mapping[str, Any] | None]
    client_log_key: Callable[[Any], Any]
    #: per-client log capture, when the library has one: ``(levels, sink) -> client kwargs``;
    #: ``sink(component, level_name, data)`` receives each message of that client only
    client_log_options: Callable[[Mapping[str, int], LogSink], dict[str, Any]] | None = None
    #: a session's transaction state as the format names it (none, starting, in_progress,
    #: committed, aborted), or None when the library does not tell
    transaction_state: Callable[[Any], str | None] = lambda _session: None
    #: whether a session's server session is dirty (a network error), None when not told
    session_dirty: Callable[[Any], bool | None] = lambda _session: None
    #: ``timeout(seconds)``: the library's client-side operation timeout block (CSOT's
    #: ``timeoutMS`` argument), like ``pymongo.timeout``; None when it has none
    timeout: Callable[[float | None], AbstractContextManager[Any]] | None = None
    #: the library's ``close()`` is slow but needs nothing from the test (PyMongo's waits up to
    #: 0.5 s for its cursor-killing thread): the runner closes its clients on a background
    #: thread, and the deployment pool waits for those at the end of the module
    close_in_background: bool = False
    #: the library's ``SearchIndexModel(definition, name=None, type=None)`` (None: no search
    #: index helpers)
    search_index_model: Any = None
    #: the library's cursor types by the format's ``cursorType`` (nonTailable, tailable,
    #: tailableAwait); empty: the runner cannot ask for one
    cursor_types: Mapping[str, Any] = attrs.field(factory=dict)

    def listener_bases(self) -> tuple[type, ...]:
        bases = tuple(getattr(self.monitoring, n) for n in LISTENER_BASES if hasattr(self.monitoring, n))
        return tuple(b for b in bases if isinstance(b, type)) or (object,)

    def logger_name(self, component: str) -> str:
        return f"{self.logger_prefix}.{component}"


# -- PyMongo -----------------------------------------------------------------------------------


def _pymongo_log_data(record: logging.LogRecord) -> Mapping[str, Any] | None:
    message = record.msg
    if not hasattr(message, "_kwargs"):
        return None
    str(message)  # PyMongo redacts and serializes documents when the message is formatted
    return dict(message._kwargs)


PYMONGO_TXN_STATES = {1: "none", 2: "starting", 3: "in_progress", 4: "committed", 5: "committed", 6: "aborted"}


def _pymongo_transaction_state(session: Any) -> str | None:
    state = getattr(getattr(session, "_transaction", None), "state", None)
    return PYMONGO_TXN_STATES.get(state) if isinstance(state, int) else None


def _cursor_types(cursor_type: Any) -> dict[str, Any]:
    """The format's cursorType names, on a class with PyMongo's cursor type names."""
    names = {"nonTailable": "NON_TAILABLE", "tailable": "TAILABLE", "tailableAwait": "TAILABLE_AWAIT"}
    return {k: getattr(cursor_type, v) for k, v in names.items() if hasattr(cursor_type, v)}


def _pymongo_session_dirty(session: Any) -> bool | None:
    dirty = getattr(getattr(session, "_server_session", None), "dirty", None)
    return dirty if isinstance(dirty, bool) else None


def _pymongo_client_key(client: Any) -> Any:
    topology = getattr(client, "_topology", None)
    return getattr(topology, "_topology_id", None)


def _read_preference_factory(module: ModuleType) -> Callable[[Mapping[str, Any]], Any]:
    classes = {
        "primary": "Primary",
        "primarypreferred": "PrimaryPreferred",
        "secondary": "Secondary",
        "secondarypreferred": "SecondaryPreferred",
        "nearest": "Nearest",
    }

    def make(document: Mapping[str, Any]) -> Any:
        cls = getattr(module, classes[str(document["mode"]).lower()])
        if cls.__name__ == "Primary":
            return cls()
        options: dict[str, Any] = {}
        if "tagSets" in document:
            options["tag_sets"] = list(document["tagSets"])
        if "maxStalenessSeconds" in document:
            options["max_staleness"] = document["maxStalenessSeconds"]
        if "hedge" in document:
            options["hedge"] = document["hedge"]
        return cls(**options)

    return make


def pymongo_driver() -> Driver:
    """PyMongo (a test dependency): the reference client."""
    # PyMongo reads its log document length from the environment at each message (the
    # variable as PyMongo spells it)
    os.environ.setdefault("MONGOB_LOG_MAX_DOCUMENT_LENGTH", str(LOG_MAX_DOCUMENT_LENGTH))
    bson_json = importlib.import_module("bson.json_util")
    errors = importlib.import_module("pymongo.errors")
    pymongo = importlib.import_module("pymongo")
    read_preferences = importlib.import_module("pymongo.read_preferences")
    json_options = bson_json.JSONOptions(
        json_mode=bson_json.JSONMode.RELAXED, tz_aware=False
    )

    def code_name(error: BaseException) -> Any:
        details = getattr(error, "details", None)
        return details.get("codeName") if isinstance(details, Mapping) else None

    def code(error: BaseException) -> Any:
        # (a NotPrimaryError is an AutoReconnect: no ``code``, the server's reply in details)
        value = getattr(error, "code", None)
        details = getattr(error, "details", None)
        if value is None and isinstance(details, Mapping):
            value = details.get("code")
        return value

    def labels(error: BaseException) -> frozenset[str]:
        return frozenset(getattr(error, "_error_labels", ()) or ())

    def write_concern(document: Mapping[str, Any]) -> Any:
        options: dict[str, Any] = {}
        if "w" in document:
            options["w"] = document["w"]
        if "wtimeoutMS" in document:
            options["wtimeout"] = document["wtimeoutMS"]
        if "journal" in document:
            options["j"] = document["journal"]
        return pymongo.WriteConcern(**options)

    read_preference = _read_preference_factory(read_preferences)

    def transaction_options(document: Mapping[str, Any]) -> Any:
        sessions = importlib.import_module("pymongo.client_session")
        return sessions.TransactionOptions(
            read_concern=pymongo.read_concern.ReadConcern(document["readConcern"].get("level"))
            if "readConcern" in document
            else None,
            write_concern=write_concern(document["writeConcern"]) if "writeConcern" in document else None,
            read_preference=read_preference(document["readPreference"])
            if "readPreference" in document
            else None,
            max_commit_time_ms=document.get("maxCommitTimeMS"),
        )

    def gridfs_bucket(database: Any, options: Mapping[str, Any]) -> Any:
        gridfs = importlib.import_module("gridfs")
        kwargs: dict[str, Any] = {}
        if "bucketName" in options:
            kwargs["bucket_name"] = options["bucketName"]
        if "chunkSizeBytes" in options:
            kwargs["chunk_size_bytes"] = options["chunkSizeBytes"]
        if "writeConcern" in options:
            kwargs["write_concern"] = write_concern(options["writeConcern"])
        if "readPreference" in options:
            kwargs["read_preference"] = read_preference(options["readPreference"])
        return gridfs.GridFSBucket(database, **kwargs)

    return Driver(
        name="pymongo",
        client_class=pymongo.MongoClient,
        monitoring=importlib.import_module("pymongo.monitoring"),
        base_error=(errors.PyMongoError,),
        server_error=(errors.OperationFailure,),
        timeout_error=lambda error: bool(getattr(error, "timeout", False)),
        error_code=code,
        error_code_name=code_name,
        error_labels=labels,
        error_details=lambda error: getattr(error, "details", None),
        load_json=lambda text: bson_json.loads(text, json_options=json_options),
        read_concern=lambda document: pymongo.read_concern.ReadConcern(document.get("level")),
        write_concern=write_concern,
        read_preference=_read_preference_factory(read_preferences),
        server_api=lambda document: importlib.import_module("pymongo.server_api").ServerApi(
            document["version"],
            strict=document.get("strict"),
            deprecation_errors=document.get("deprecationErrors"),
        ),
        transaction_options=transaction_options,
        gridfs_bucket=gridfs_bucket,
        write_models=pymongo,
        logger_prefix="pymongo",
        log_data=_pymongo_log_data,
        client_log_key=_pymongo_client_key,
        transaction_state=_pymongo_transaction_state,
        session_dirty=_pymongo_session_dirty,
        timeout=pymongo.timeout,
        close_in_background=True,
        search_index_model=importlib.import_module("pymongo.operations").SearchIndexModel,
        cursor_types=_cursor_types(pymongo.CursorType),
    )


# -- mongo-sansio ------------------------------------------------------------------------------


def _sansio_log_data(record: logging.LogRecord) -> Mapping[str, Any] | None:
    """Our records carry their data as ``extra={"data": {...}}``, as a mapping message, or as
    a message object with a ``data`` mapping; the text is the ``message`` field or the
    record's message."""
    for candidate in (getattr(record, "data", None), record.msg, getattr(record.msg, "data", None)):
        if isinstance(candidate, Mapping):
            data = dict(candidate)
            data.setdefault("message", record.getMessage() if candidate is not record.msg else "")
            return data
    return None


def _sansio_client_key(client: Any) -> Any:
    """The topology id our client stamps on its log messages (as text, as they carry it)."""
    engine = getattr(client, "_engine", None)
    for holder, name in ((client, "topology_id"), (getattr(engine, "core", None), "topology_id")):
        value = getattr(holder, name, None)
        if value is not None:
            return str(value)
    return None


def _sansio_log_options(levels: Mapping[str, int], sink: LogSink) -> dict[str, Any]:
    """``log_settings=`` with a sink: our client hands this client's messages to the runner
    directly (no global logger, so clients never see each other's messages)."""
    publish = importlib.import_module("mongo_sansio.adapters._publish")
    settings = publish.LogSettings(
        levels=dict(levels),
        max_document_length=LOG_MAX_DOCUMENT_LENGTH,
        sink=lambda message: sink(message.component, message.level, message.data),
    )
    return {"log_settings": settings}


def _sansio_core_session(session: Any) -> Any:
    """The core's session behind our blocking ClientSession (None when there is none)."""
    return getattr(session, "_session", None)


def _sansio_transaction_state(session: Any) -> str | None:
    state = getattr(getattr(_sansio_core_session(session), "transaction_state", None), "value", None)
    if not isinstance(state, str):
        return None
    return "committed" if state == "committed_empty" else state


def _sansio_session_dirty(session: Any) -> bool | None:
    server_session = getattr(_sansio_core_session(session), "server_session", None)
    dirty = getattr(server_session, "dirty", None)
    return dirty if isinstance(dirty, bool) else None


def _optional_attribute(module: str, name: str) -> Any:
    """``module.name``, or None while our client does not have it."""
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def _bucket_options(
    options: Mapping[str, Any],
    write_concern: Callable[[Mapping[str, Any]], Any],
    read_preference: Callable[[Mapping[str, Any]], Any],
) -> dict[str, Any]:
    """A bucket entity's ``bucketOptions`` as GridFSBucket's keywords (PyMongo's names)."""
    names = {"bucketName": "bucket_name", "chunkSizeBytes": "chunk_size_bytes"}
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if key in names:
            kwargs[names[key]] = value
        elif key == "writeConcern":
            kwargs["write_concern"] = write_concern(value)
        elif key == "readPreference":
            kwargs["read_preference"] = read_preference(value)
        else:
            matching = importlib.import_module(f"{__package__}.matching")
            raise matching.UnsupportedInTest(f"bucket option {key!r} is not supported by this runner")
    return kwargs


def _sansio_bucket(
    module: str,
    class_name: str,
    write_concern: Callable[[Mapping[str, Any]], Any],
    read_preference: Callable[[Mapping[str, Any]], Any],
    database: Any,
    options: Mapping[str, Any],
) -> Any:
    """Our GridFSBucket over ``database``; behind a runtime's facade (asyncio, trio,
    gevent) the bucket is made from the database it wraps, and wrapped the same way."""
    bucket_class = getattr(importlib.import_module(module), class_name)
    kwargs = _bucket_options(options, write_concern, read_preference)
    portal = getattr(database, "_portal", None)
    if portal is None:
        return bucket_class(database, **kwargs)
    runtimes = importlib.import_module(f"{__package__}.runtimes")
    return runtimes.wrap(portal.call(bucket_class, database._target, **kwargs), portal)


def sansio_driver() -> Driver:
    """Our blocking client (``mongo_sansio.adapters.blocking.MongoClient``) and
    ``mongo_sansio.monitoring`` (command listeners only until that module exists)."""
    blocking = importlib.import_module("mongo_sansio.adapters.blocking")
    errors = importlib.import_module("mongo_sansio.errors")
    extjson = importlib.import_module("mongo_sansio.bson.extjson")
    write_concern = importlib.import_module("mongo_sansio.ops.write_concern")
    selection = importlib.import_module("mongo_sansio.selection")
    try:
        monitoring: Any = importlib.import_module("mongo_sansio.monitoring")
    except ImportError:
        monitoring = SimpleNamespace()  # the client calls started/succeeded/failed by name

    def wc(document: Mapping[str, Any]) -> Any:
        return write_concern.WriteConcern(
            w=document.get("w"),
            wtimeout_ms=document.get("wtimeoutMS"),
            journal=document.get("journal"),
        )

    def read_preference(document: Mapping[str, Any]) -> Any:
        options: dict[str, Any] = {"mode": document["mode"]}
        if "tagSets" in document:
            options["tag_sets"] = document["tagSets"]
        if "maxStalenessSeconds" in document:
            options["max_staleness_seconds"] = document["maxStalenessSeconds"]
        if "hedge" in document:
            options["hedge"] = document["hedge"]
        return selection.ReadPreference(**options)

    transaction_options_class = _optional_attribute("mongo_sansio.sessions", "TransactionOptions")

    def transaction_options(document: Mapping[str, Any]) -> Any:
        return transaction_options_class(
            read_concern=write_concern.ReadConcern.from_document(document["readConcern"])
            if "readConcern" in document
            else None,
            write_concern=wc(document["writeConcern"]) if "writeConcern" in document else None,
            read_preference=read_preference(document["readPreference"])
            if "readPreference" in document
            else None,
            max_commit_time_ms=document.get("maxCommitTimeMS"),
        )

    timeout_types = tuple(
        t for t in (getattr(errors, "NetworkTimeout", None), getattr(errors, "ExecutionTimeout", None))
        if isinstance(t, type)
    )
    return Driver(
        name="sansio",
        client_class=blocking.MongoClient,
        monitoring=monitoring,
        base_error=(errors.MongoError,),
        server_error=(errors.ServerError,),
        timeout_error=lambda error: bool(getattr(error, "timeout", False))
        or isinstance(error, timeout_types),
        error_code=lambda error: getattr(error, "code", None),
        error_code_name=lambda error: getattr(error, "code_name", None),
        error_labels=lambda error: frozenset(getattr(error, "error_labels", ()) or ()),
        error_details=lambda error: getattr(error, "details", None),
        load_json=extjson.loads,
        read_concern=write_concern.ReadConcern.from_document,
        write_concern=wc,
        read_preference=read_preference,
        server_api=lambda document: importlib.import_module("mongo_sansio.connection").ServerApi(
            document["version"],
            strict=document.get("strict"),
            deprecation_errors=document.get("deprecationErrors"),
        ),
        transaction_options=transaction_options if transaction_options_class is not None else None,
        gridfs_bucket=functools.partial(_sansio_bucket, "mongo_sansio.adapters.blocking.gridfs", "GridFSBucket", wc, read_preference),
        write_models=getattr(blocking, "InsertOne", None) and blocking,
        logger_prefix="mongo_sansio",
        log_data=_sansio_log_data,
        client_log_key=_sansio_client_key,
        client_log_options=_sansio_log_options
        if importlib.util.find_spec("mongo_sansio.adapters._publish") is not None
        else None,
        transaction_state=_sansio_transaction_state,
        session_dirty=_sansio_session_dirty,
        timeout=getattr(blocking, "timeout", None),
        search_index_model=getattr(blocking, "SearchIndexModel", None),
        cursor_types=_cursor_types(_optional_attribute("mongo_sansio.ops.crud_commands", "CursorType")),
    )


#: our client's other runtimes: (client module, client class, portal class of .runtimes)
RUNTIMES: dict[str, tuple[str, str, str]] = {
    "asyncio": ("mongo_sansio.adapters.asyncio", "AsyncMongoClient", "AsyncioPortal"),
    "trio": ("mongo_sansio.adapters.trio", "AsyncMongoClient", "TrioPortal"),
    "gevent": ("mongo_sansio.adapters.gevent", "MongoClient", "GeventPortal"),
}


@functools.cache
def runtime_portal(runtime: str) -> Any:
    """The one loop thread of ``runtime`` in this process, started on first use."""
    runtimes = importlib.import_module(f"{__package__}.runtimes")
    return getattr(runtimes, RUNTIMES[runtime][2])()


def runtime_driver(runtime: str) -> Driver:
    """Our client on ``runtime`` (asyncio, trio or gevent), used through the synchronous
    facade of :mod:`.runtimes`; everything else is :func:`sansio_driver`'s (named
    ``sansio-<runtime>``).  ImportError when the runtime's package is not installed."""
    module_name, class_name, _ = RUNTIMES[runtime]
    module = importlib.import_module(module_name)
    runtimes = importlib.import_module(f"{__package__}.runtimes")
    base = sansio_driver()
    bucket_class = "GridFSBucket" if runtime == "gevent" else "AsyncGridFSBucket"
    return attrs.evolve(
        base,
        name=f"sansio-{runtime}",
        client_class=runtimes.facade_client(
            getattr(module, class_name), functools.partial(runtime_portal, runtime)
        ),
        write_models=getattr(module, "InsertOne", None) and module,
        timeout=getattr(module, "timeout", None),
        search_index_model=getattr(module, "SearchIndexModel", None),
        gridfs_bucket=functools.partial(
            _sansio_bucket, f"{module_name}.gridfs", bucket_class, base.write_concern, base.read_preference
        ),
    )


DRIVERS: dict[str, Callable[[], Driver]] = {
    "pymongo": pymongo_driver,
    "sansio": sansio_driver,
    **{f"sansio-{runtime}": functools.partial(runtime_driver, runtime) for runtime in RUNTIMES},
}


def selected_driver() -> Driver:
    """The driver named by ``$MONGO_SANSIO_UNIFIED_DRIVER`` (default ``sansio``; see the
    module docstring)."""
    name = os.environ.get(DRIVER_ENV, "sansio").strip().lower() or "sansio"
    if name not in DRIVERS:
        raise ValueError(f"{DRIVER_ENV}={name!r}: expected one of {sorted(DRIVERS)}")
    return DRIVERS[name]()


def dumps(value: Any) -> str:
    """A short text of a value for assertion messages."""
    try:
        return json.dumps(value, default=repr)[:2000]
    except (TypeError, ValueError):
        return repr(value)[:2000]
