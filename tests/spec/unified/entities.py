"""The entity map and the entities a test creates (createEntities).

Inputs: entity descriptions from a test file (client, database, collection, session, thread,
bucket), the :class:`~.driver.Driver` and the :class:`~.requirements.Deployment`.  Outputs:
entities in an :class:`EntityMap`: driver objects, :class:`ClientEntity` (a client with its
event log and log capture), :class:`ThreadEntity` (a worker running operations in order).
Whatever the client under test cannot do (an option, GridFS) raises
:class:`~.matching.UnsupportedInTest` naming it.
"""

from __future__ import annotations

import inspect
import queue
import re
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .events import EventLog, LogCapture, make_listener
from .matching import UnsupportedInTest

if TYPE_CHECKING:
    from .driver import Driver
    from .requirements import Deployment

__all__ = [
    "ClientEntity",
    "EntityMap",
    "ThreadEntity",
    "call_api",
    "call_class",
    "close_in_background",
    "create_entity",
    "join_background_closes",
    "resolve_keywords",
    "snake",
]

#: client options the runner sets unless the test does (bounded waits)
CLIENT_DEFAULTS: dict[str, Any] = {"serverSelectionTimeoutMS": 10000}
CLIENT_KEYS = frozenset(
    {"id", "uriOptions", "useMultipleMongoses", "observeEvents", "ignoreCommandMonitoringEvents",
     "observeSensitiveCommands", "storeEventsAsEntities", "observeLogMessages", "serverApi",
     "awaitMinPoolSizeMS"}
)


#: format names whose PyMongo keyword is not their plain snake_case
SPECIAL_NAMES = {
    "maxTimeMS": "max_time_ms",
    "maxAwaitTimeMS": "max_await_time_ms",
    "maxCommitTimeMS": "max_commit_time_ms",
    "wtimeoutMS": "wtimeout",
    "timeoutMS": "timeout",
}


def snake(name: str) -> str:
    """``batchSize`` -> ``batch_size`` (PyMongo's keyword names)."""
    if name in SPECIAL_NAMES:
        return SPECIAL_NAMES[name]
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


#: PyMongo methods whose ``**kwargs`` are fields of the command, spelt as the server spells
#: them (``aggregate(batchSize=...)``, ``create_collection(capped=True)``); other methods'
#: ``**kwargs`` are keywords, in snake_case (``find(**kwargs)`` builds a Cursor)
COMMAND_FIELD_KWARGS = frozenset(
    {"aggregate", "aggregate_raw_batches", "count_documents", "estimated_document_count",
     "distinct", "list_collections", "list_collection_names", "list_databases",
     "list_database_names", "create_collection", "create_index", "create_indexes", "drop_index",
     "drop_indexes", "list_indexes", "list_search_indexes", "cursor_command", "command",
     "rename", "drop_collection", "drop", "find_one_and_delete", "find_one_and_replace",
     "find_one_and_update"}
)


def resolve_keywords(
    function: Callable[..., Any], kwargs: Mapping[str, Any], where: str, *, command_fields: bool = False
) -> dict[str, Any]:
    """The format's option names as ``function``'s keywords: a named parameter by its name or
    its snake_case (``batchSize`` -> ``batch_size``); otherwise, when the function takes
    ``**kwargs``, the name as the server spells it for ``command_fields`` (see
    :data:`COMMAND_FIELD_KWARGS`), else in snake_case; an option with no home raises
    UnsupportedInTest naming it."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return {snake(k): v for k, v in kwargs.items()}
    named = {
        name
        for name, p in signature.parameters.items()
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    resolved: dict[str, Any] = {}
    unknown = []
    for key, value in kwargs.items():
        if key in named:
            resolved[key] = value
        elif snake(key) in named:
            resolved[snake(key)] = value
        elif open_ended:
            resolved[key if command_fields else snake(key)] = value
        else:
            unknown.append(key)
    if unknown:
        raise UnsupportedInTest(f"the client under test's {where} has no option {sorted(unknown)}")
    return resolved


def call_api(target: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``target.method(*args, **kwargs)`` with the keywords of :func:`resolve_keywords`, or
    UnsupportedInTest when the client under test has no such method or option (checked before
    the call, so errors inside are never masked)."""
    owner = type(target).__name__
    # the class, not the instance: PyMongo's Database and Collection answer any attribute with
    # a sub-collection, which is callable (to raise TypeError)
    function = getattr(target, method, None) if hasattr(type(target), method) else None
    if function is None or not callable(function):
        raise UnsupportedInTest(f"the client under test has no {owner}.{method}")
    keywords = resolve_keywords(
        function, kwargs, f"{owner}.{method}", command_fields=method in COMMAND_FIELD_KWARGS
    )
    return function(*args, **keywords)


def call_class(cls: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    """``cls(**kwargs)`` with the keywords of :func:`resolve_keywords`."""
    return cls(**resolve_keywords(cls, kwargs, getattr(cls, "__name__", str(cls))))


class EntityMap(dict[str, Any]):
    """Entities by name; adding a name twice is an error of the test file.  ``lsids`` keeps
    each session entity's id as it was at creation (it must stay readable after endSession)."""

    def __init__(self) -> None:
        super().__init__()
        self.lsids: dict[str, Any] = {}

    def add(self, name: str, value: Any) -> None:
        if name in self:
            raise AssertionError(f"entity {name!r} already exists")
        self[name] = value

    def get_typed(self, name: str, cls: type, what: str) -> Any:
        if name not in self:
            raise AssertionError(f"no entity named {name!r}")
        value = self[name]
        if not isinstance(value, cls):
            raise AssertionError(f"entity {name!r} is not a {what} ({type(value).__name__})")
        return value


@attrs.define
class ClientEntity:
    """A client under test and what it observes."""

    client: Any
    events: EventLog
    logs: LogCapture | None
    closed: bool = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.client.close()


_background_closes: list[threading.Thread] = []


def close_in_background(close: Callable[[], None]) -> None:
    """Run ``close`` on a daemon thread (see ``Driver.close_in_background``)."""
    thread = threading.Thread(target=close, name="unified-close", daemon=True)
    thread.start()
    _background_closes.append(thread)


def join_background_closes(timeout: float) -> None:
    """Wait (each at most ``timeout`` seconds) for the closes started in the background."""
    while _background_closes:
        _background_closes.pop().join(timeout)


class ThreadEntity:
    """A worker thread running the operations scheduled on it, in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.errors: list[BaseException] = []
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name=f"unified-{name}", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                job()
            except BaseException as error:  # noqa: BLE001 -- reported by waitForThread
                self.errors.append(error)

    def schedule(self, job: Callable[[], None]) -> None:
        self._queue.put(job)

    def stop(self, timeout: float) -> bool:
        """Let the queued work finish; False when it did not within ``timeout``."""
        self._queue.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()


def _collection_options(driver: Driver, options: Mapping[str, Any]) -> dict[str, Any]:
    converted: dict[str, Any] = {}
    for key, value in options.items():
        if key == "readConcern":
            converted["read_concern"] = driver.read_concern(value)
        elif key == "writeConcern":
            converted["write_concern"] = driver.write_concern(value)
        elif key == "readPreference":
            converted["read_preference"] = driver.read_preference(value)
        elif key == "timeoutMS":
            converted["timeoutMS"] = value  # PyMongo has none: call_api then skips, naming it
        else:
            raise UnsupportedInTest(f"collection/database option {key!r} is not supported by this runner")
    return converted


def _client(
    driver: Driver,
    deployment: Deployment,
    spec: Mapping[str, Any],
    entities: EntityMap,
    defaults: Mapping[str, Any],
) -> ClientEntity:
    unknown = set(spec) - CLIENT_KEYS
    if unknown:
        raise UnsupportedInTest(f"client entity option(s) {sorted(unknown)} not supported by this runner")
    uri_options = dict(spec.get("uriOptions", {}))
    oidc = uri_options.get("authMechanism") == "MONGODB-OIDC"
    for key, value in uri_options.items():
        if isinstance(value, Mapping) and "$$placeholder" in value:
            if oidc and key == "authMechanismProperties" and deployment.oidc_token_file:
                # the auth spec's OIDC tests: the placeholder is the environment's properties;
                # here ENVIRONMENT test, its token file minted for the simulator's issuer
                uri_options[key] = {"ENVIRONMENT": "test"}
                continue
            raise UnsupportedInTest(f"uriOptions {key} is a $$placeholder (needs credentials from the environment)")
    direct = uri_options.get("directConnection") is True
    options = {
        k: v
        for k, v in {**CLIENT_DEFAULTS, **defaults}.items()
        if k.lower() not in {o.lower() for o in uri_options}
    }
    options.update(uri_options)
    if "serverApi" in spec:
        options["server_api"] = driver.server_api(spec["serverApi"])
    stores: list[tuple[list[dict[str, Any]], frozenset[str]]] = []
    for store in spec.get("storeEventsAsEntities", ()):
        target: list[dict[str, Any]] = []
        entities.add(store["id"], target)
        stores.append((target, frozenset(store["events"])))
    events = EventLog(
        spec.get("observeEvents", ()),
        spec.get("ignoreCommandMonitoringEvents", ()),
        bool(spec.get("observeSensitiveCommands", False)),
        stores,
    )
    logs = LogCapture(driver, spec["observeLogMessages"]) if spec.get("observeLogMessages") else None
    if logs is not None:
        options.update(logs.client_options)
    try:
        multiple = spec.get("useMultipleMongoses") is True
        uri = deployment.uri(
            direct=direct, credentials=not oidc, multiple=multiple, one_mongos=not multiple
        )
        client = driver.client_class(uri, event_listeners=[make_listener(driver, events)], **options)
    except BaseException:
        if logs is not None:
            logs.close()
        raise
    if logs is not None:
        logs.client_key = driver.client_log_key(client)
    return ClientEntity(client, events, logs)


def create_entity(
    driver: Driver,
    deployment: Deployment,
    entities: EntityMap,
    entry: Mapping[str, Any],
    client_defaults: Mapping[str, Any] | None = None,
) -> None:
    """Create one ``{kind: spec}`` entity and add it to ``entities``; a client gets the URI
    options of ``client_defaults`` (a suite's, e.g. a shorter heartbeatFrequencyMS) unless
    the test sets them."""
    ((kind, spec),) = entry.items()
    name = spec["id"]
    if kind == "client":
        entities.add(name, _client(driver, deployment, spec, entities, client_defaults or {}))
    elif kind == "database":
        client = entities.get_typed(spec["client"], ClientEntity, "client").client
        options = _collection_options(driver, spec.get("databaseOptions", {}))
        entities.add(name, call_api(client, "get_database", spec["databaseName"], **options))
    elif kind == "collection":
        database = entities[spec["database"]]
        options = _collection_options(driver, spec.get("collectionOptions", {}))
        entities.add(name, call_api(database, "get_collection", spec["collectionName"], **options))
    elif kind == "session":
        client = entities.get_typed(spec["client"], ClientEntity, "client").client
        options = {}
        for key, value in spec.get("sessionOptions", {}).items():
            if key == "causalConsistency":
                options["causal_consistency"] = value
            elif key == "snapshot":
                options["snapshot"] = value
            elif key == "snapshotTime":
                options["snapshot_time"] = entities[value] if isinstance(value, str) else value
            elif key == "defaultTimeoutMS":
                options["defaultTimeoutMS"] = value  # PyMongo has none: call_api skips, naming it
            elif key == "defaultTransactionOptions":
                if driver.transaction_options is None:
                    raise UnsupportedInTest("the client under test has no transactions")
                options["default_transaction_options"] = driver.transaction_options(value)
            else:
                raise UnsupportedInTest(f"session option {key!r} is not supported by this runner")
        session = call_api(client, "start_session", **options)
        entities.add(name, session)
        entities.lsids[name] = getattr(session, "session_id", None)
    elif kind == "thread":
        entities.add(name, ThreadEntity(name))
    elif kind == "bucket":
        if driver.gridfs_bucket is None:
            raise UnsupportedInTest("the client under test has no GridFS (bucket entity)")
        entities.add(name, driver.gridfs_bucket(entities[spec["database"]], spec.get("bucketOptions", {})))
    else:
        raise UnsupportedInTest(f"entity type {kind!r} is not supported by this runner")
