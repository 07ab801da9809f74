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
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .events import EventLog, LogCapture, make_listener
from .matching import UnsupportedInTest

if TYPE_CHECKING:
    from .driver import Driver
    from .requirements import Deployment

__all__ = ["ClientEntity", "EntityMap", "ThreadEntity", "call_api", "create_entity"]

#: client options the runner sets unless the test does (bounded waits)
CLIENT_DEFAULTS: dict[str, Any] = {"serverSelectionTimeoutMS": 10000}
CLIENT_KEYS = frozenset(
    {"id", "uriOptions", "useMultipleMongoses", "observeEvents", "ignoreCommandMonitoringEvents",
     "observeSensitiveCommands", "storeEventsAsEntities", "observeLogMessages", "serverApi",
     "awaitMinPoolSizeMS"}
)


def call_api(target: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``target.method(*args, **kwargs)``, or UnsupportedInTest when the client under test has
    no such method or option (checked before the call, so errors inside are never masked)."""
    function = getattr(target, method, None)
    owner = type(target).__name__
    if function is None or not callable(function):
        raise UnsupportedInTest(f"the client under test has no {owner}.{method}")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return function(*args, **kwargs)
    parameters = signature.parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        unknown = sorted(set(kwargs) - set(signature.parameters))
        if unknown:
            raise UnsupportedInTest(f"the client under test's {owner}.{method} has no option {unknown}")
    return function(*args, **kwargs)


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
        else:
            raise UnsupportedInTest(f"collection/database option {key!r} is not supported by this runner")
    return converted


def _client(driver: Driver, deployment: Deployment, spec: Mapping[str, Any], entities: EntityMap) -> ClientEntity:
    unknown = set(spec) - CLIENT_KEYS
    if unknown:
        raise UnsupportedInTest(f"client entity option(s) {sorted(unknown)} not supported by this runner")
    uri_options = dict(spec.get("uriOptions", {}))
    for key, value in uri_options.items():
        if isinstance(value, Mapping) and "$$placeholder" in value:
            raise UnsupportedInTest(f"uriOptions {key} is a $$placeholder (needs credentials from the environment)")
    direct = uri_options.get("directConnection") is True
    options = {k: v for k, v in CLIENT_DEFAULTS.items() if k.lower() not in {o.lower() for o in uri_options}}
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
        client = driver.client_class(deployment.uri(direct=direct), event_listeners=[make_listener(driver, events)], **options)
    except BaseException:
        if logs is not None:
            logs.close()
        raise
    if logs is not None:
        logs.client_key = driver.client_log_key(client)
    return ClientEntity(client, events, logs)


def create_entity(
    driver: Driver, deployment: Deployment, entities: EntityMap, entry: Mapping[str, Any]
) -> None:
    """Create one ``{kind: spec}`` entity and add it to ``entities``."""
    ((kind, spec),) = entry.items()
    name = spec["id"]
    if kind == "client":
        entities.add(name, _client(driver, deployment, spec, entities))
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
        options: dict[str, Any] = {}
        for key, value in spec.get("sessionOptions", {}).items():
            if key == "causalConsistency":
                options["causal_consistency"] = value
            elif key == "snapshot":
                options["snapshot"] = value
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
