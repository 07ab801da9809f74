"""A small interpreter of the unified test format, limited to what the change streams suite uses.

Inputs: one parsed (Extended JSON) test file and one of its tests, a running
:class:`~mongo_sansio.adapters.sim.SimulatedReplicaSet` and the server version it reports.
Outputs: nothing on success; an ``AssertionError`` naming the mismatch on failure; a pytest skip
whose reason names the missing piece (a requirement the deployment does not meet, an operation
or failpoint this runner or the simulator does not implement).

What is supported: runOnRequirements (topologies, min/maxServerVersion, serverless),
createEntities (client, database, collection), initialData, the operations in
:data:`OPERATIONS`, the ``failPoint`` test runner operation, expectResult, expectError
(isError, isClientError, errorCode, errorLabelsContain/Omit) and expectEvents for command
events, with the format's matching rules ($$exists, $$type, $$unsetOrMatches; extra fields
only in root-level documents; numbers compared by value).
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mongo_sansio.bson import Binary, Decimal128, Int64, ObjectId, Timestamp, extjson
from mongo_sansio.client import CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent
from mongo_sansio.client.events import redacted
from mongo_sansio.errors import MongoError, ServerError
from mongo_sansio.testing.server.failpoints import SUPPORTED as SIMULATED_FAILPOINTS

if TYPE_CHECKING:
    # mypy reads the source tree, where adapters/ is top level (see adapters/sim.py).
    from adapters.blocking import ChangeStream, Collection, Database, MongoClient
    from adapters.sim import SimulatedReplicaSet
else:
    from mongo_sansio.adapters.blocking import ChangeStream, Collection, Database, MongoClient
    from mongo_sansio.adapters.sim import SimulatedReplicaSet

__all__ = ["OPERATIONS", "TestRunner", "load_file", "requirements_skip_reason"]

TOPOLOGY = "replicaset"
CLIENT_OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5000,
    "connectTimeoutMS": 3000,
    "socketTimeoutMS": 10000,
}
OPERATIONS = frozenset(
    {
        "createChangeStream",
        "iterateUntilDocumentOrError",
        "insertOne",
        "updateOne",
        "replaceOne",
        "deleteOne",
        "runCommand",
        "createCollection",
        "dropCollection",
        "createIndex",
        "dropIndex",
        "rename",
        "failPoint",
    }
)
WATCH_OPTIONS = {
    "fullDocument": "full_document",
    "fullDocumentBeforeChange": "full_document_before_change",
    "resumeAfter": "resume_after",
    "startAfter": "start_after",
    "startAtOperationTime": "start_at_operation_time",
    "maxAwaitTimeMS": "max_await_time_ms",
    "batchSize": "batch_size",
    "collation": "collation",
    "comment": "comment",
    "showExpandedEvents": "show_expanded_events",
}
EVENT_NAMES = {
    CommandStartedEvent: "commandStartedEvent",
    CommandSucceededEvent: "commandSucceededEvent",
    CommandFailedEvent: "commandFailedEvent",
}


def load_file(path: Path) -> Any:
    """The file as Extended JSON (so ``{"$numberLong": ...}`` and friends come out typed)."""
    return extjson.loads(path.read_text(encoding="utf-8"))


# -- requirements ----------------------------------------------------------------------------


def _version(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def _unmet(requirement: Mapping[str, Any], server_version: str) -> str | None:
    """Why ``requirement`` is not met by the simulated replica set (None when it is)."""
    version = _version(server_version)
    for key, value in requirement.items():
        if key == "minServerVersion" and version < _version(value):
            return f"needs server version >= {value} (the simulator reports {server_version})"
        if key == "maxServerVersion" and version > _version(value):
            return f"needs server version <= {value} (the simulator reports {server_version})"
        if key == "topologies" and TOPOLOGY not in value:
            return f"needs a {' or '.join(value)} deployment (the simulator is a replica set)"
        if key == "serverless" and value == "require":
            return "needs a serverless deployment"
        if key not in ("minServerVersion", "maxServerVersion", "topologies", "serverless"):
            return f"runOnRequirements {key!r} is not supported by this runner"
    return None


def requirements_skip_reason(
    requirements: Sequence[Mapping[str, Any]] | None, server_version: str
) -> str | None:
    """None when any requirement is met (or there are none), else the first one's reason."""
    if not requirements:
        return None
    reasons = [_unmet(r, server_version) for r in requirements]
    if any(reason is None for reason in reasons):
        return None
    return reasons[0]


def unsupported_reason(test: Mapping[str, Any]) -> str | None:
    """Why this runner (or the simulator) cannot run ``test`` at all, before it starts."""
    for operation in test["operations"]:
        name = operation["name"]
        if name not in OPERATIONS:
            return f"uses operation {name!r}, which the runner does not implement"
        arguments = operation.get("arguments", {})
        if name == "failPoint":
            point = arguments["failPoint"]["configureFailPoint"]
            if point not in SIMULATED_FAILPOINTS:
                return f"needs the {point!r} failpoint, which the simulator does not implement"
        if name == "createCollection" and "viewOn" in arguments:
            return "creates a view (createCollection viewOn): the simulator has no views"
        if name == "runCommand" and arguments["commandName"] == "shardCollection":
            return "runs shardCollection: needs a sharded cluster"
    for expected in test.get("expectEvents", []):
        if expected.get("eventType", "command") != "command":
            return f"expects {expected['eventType']} events; the runner observes command events"
    return None


# -- matching --------------------------------------------------------------------------------

TYPES: dict[str, tuple[type, ...]] = {
    "double": (float,),
    "string": (str,),
    "object": (Mapping,),
    "array": (list, tuple),
    "binData": (Binary, bytes),
    "objectId": (ObjectId,),
    "bool": (bool,),
    "date": (datetime.datetime,),
    "timestamp": (Timestamp,),
    "decimal": (Decimal128,),
    "long": (Int64, int),
    "int": (int,),
}


def _is_type(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "number":
        return any(_is_type(value, n) for n in ("int", "long", "double", "decimal"))
    if name not in TYPES:
        pytest.skip(f"$$type {name!r} is not supported by this runner")
    if isinstance(value, bool) and name != "bool":
        return False
    if name == "int" and (isinstance(value, Int64) or not -(2**31) <= value < 2**31):
        return False
    return isinstance(value, TYPES[name])


def _operator(expected: Any) -> str | None:
    if isinstance(expected, Mapping) and len(expected) == 1:
        key = next(iter(expected))
        if isinstance(key, str) and key.startswith("$$"):
            return key
    return None


def match(expected: Any, actual: Any, path: str = "", *, root: bool = True) -> None:
    """Assert ``actual`` matches ``expected`` by the unified format's rules."""
    operator = _operator(expected)
    if operator is not None:
        argument = expected[operator]
        if operator == "$$exists":
            assert argument, f"{path or 'value'}: expected to be absent, got {actual!r}"
            return
        if operator == "$$type":
            names = [argument] if isinstance(argument, str) else list(argument)
            assert any(_is_type(actual, n) for n in names), (
                f"{path}: expected $$type {names}, got {actual!r}"
            )
            return
        if operator == "$$unsetOrMatches":
            match(argument, actual, path, root=False)
            return
        pytest.skip(f"uses the {operator} matching operator, which the runner does not support")
    if isinstance(expected, Mapping):
        assert isinstance(actual, Mapping), f"{path}: expected a document, got {actual!r}"
        for key, value in expected.items():
            where = f"{path}.{key}" if path else str(key)
            inner = _operator(value)
            if key not in actual:
                if inner == "$$exists" and not value[inner]:
                    continue
                if inner == "$$unsetOrMatches":
                    continue
                raise AssertionError(f"{where}: missing (expected {value!r}) in {dict(actual)!r}")
            if inner == "$$exists" and not value[inner]:
                raise AssertionError(f"{where}: expected absent, got {actual[key]!r}")
            match(value, actual[key], where, root=False)
        if not root:
            extra = set(actual) - set(expected)
            assert not extra, f"{path}: unexpected fields {sorted(extra)} in {dict(actual)!r}"
        return
    if isinstance(expected, list):
        assert isinstance(actual, (list, tuple)), f"{path}: expected an array, got {actual!r}"
        assert len(expected) == len(actual), f"{path}: expected {expected!r}, got {actual!r}"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            match(want, got, f"{path}[{index}]", root=False)
        return
    numbers = (int, float, Int64)
    if (
        isinstance(expected, numbers)
        and isinstance(actual, numbers)
        and not isinstance(expected, bool)
        and not isinstance(actual, bool)
    ):
        assert expected == actual, f"{path}: expected {expected!r}, got {actual!r}"
        return
    assert type(expected) is type(actual) and expected == actual, (
        f"{path}: expected {expected!r}, got {actual!r}"
    )


# -- entities --------------------------------------------------------------------------------


class EventLog:
    """The command events one client entity observes (observeEvents minus the ignored)."""

    def __init__(self, observe: Sequence[str], ignore: Sequence[str]) -> None:
        self.observe = set(observe)
        self.ignore = set(ignore) | {"configureFailPoint"}
        self.events: list[CommandStartedEvent | CommandSucceededEvent | CommandFailedEvent] = []
        self._lock = threading.Lock()

    def _record(
        self, event: CommandStartedEvent | CommandSucceededEvent | CommandFailedEvent
    ) -> None:
        if EVENT_NAMES[type(event)] not in self.observe or event.command_name in self.ignore:
            return
        with self._lock:
            self.events.append(event)

    def started(self, event: CommandStartedEvent) -> None:
        if not redacted(event.command_name, event.command):
            self._record(event)

    def succeeded(self, event: CommandSucceededEvent) -> None:
        if event.command_name.lower() not in ("hello", "ismaster"):
            self._record(event)

    def failed(self, event: CommandFailedEvent) -> None:
        self._record(event)


class TestRunner:
    """Runs one test of a file against ``rs`` (see the module docstring)."""

    __test__ = False  # not a pytest class

    def __init__(self, rs: SimulatedReplicaSet, file: Mapping[str, Any], test: Mapping[str, Any]):
        self.rs = rs
        self.file = file
        self.test = test
        self.entities: dict[str, Any] = {}
        self.logs: dict[str, EventLog] = {}
        self.clients: list[MongoClient] = []
        self.databases: set[str] = set()
        self.failpoints: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._create_entities()
            self._initial_data()
            for operation in self.test["operations"]:
                self._operation(operation)
            for expected in self.test.get("expectEvents", []):
                self._check_events(expected)
        finally:
            self._clean_up()

    def _client(self) -> MongoClient:
        client = MongoClient(self.rs.uri, **CLIENT_OPTIONS)
        self.clients.append(client)
        return client

    def _clean_up(self) -> None:
        for entity in self.entities.values():
            if isinstance(entity, ChangeStream):
                try:
                    entity.close()
                except MongoError:
                    pass
        for member in self.rs.members:
            for name in self.failpoints:
                self.rs.failpoint_off(member, name)
        if self.databases:
            helper = self._client()
            for name in self.databases:
                helper.drop_database(name)
        for client in self.clients:
            client.close()

    def _create_entities(self) -> None:
        for entry in self.file.get("createEntities", []):
            ((kind, spec),) = entry.items()
            if kind == "client":
                unknown = set(spec) - {
                    "id",
                    "observeEvents",
                    "ignoreCommandMonitoringEvents",
                    "useMultipleMongoses",
                }
                if unknown:
                    pytest.skip(f"client entity option(s) {sorted(unknown)} not supported")
                log = EventLog(
                    spec.get("observeEvents", ()), spec.get("ignoreCommandMonitoringEvents", ())
                )
                client = MongoClient(self.rs.uri, event_listeners=[log], **CLIENT_OPTIONS)
                self.clients.append(client)
                self.entities[spec["id"]] = client
                self.logs[spec["id"]] = log
            elif kind == "database":
                self.entities[spec["id"]] = self.entities[spec["client"]][spec["databaseName"]]
                self.databases.add(spec["databaseName"])
            elif kind == "collection":
                self.entities[spec["id"]] = self.entities[spec["database"]][spec["collectionName"]]
            else:
                pytest.skip(f"entity type {kind!r} is not supported by this runner")

    def _initial_data(self) -> None:
        if not self.file.get("initialData"):
            return
        client = self._client()
        for data in self.file["initialData"]:
            name = data["databaseName"]
            self.databases.add(name)
            database = client.get_database(name)
            database.drop_collection(data["collectionName"])
            options = dict(data.get("createOptions", {}))
            collection = database.create_collection(data["collectionName"], **options)
            if data["documents"]:
                collection.insert_many(data["documents"])

    # -- operations --------------------------------------------------------------------------

    def _operation(self, operation: Mapping[str, Any]) -> None:
        name = operation["name"]
        arguments = dict(operation.get("arguments", {}))
        try:
            if operation["object"] == "testRunner":
                result = self._runner_operation(name, arguments)
            else:
                result = self._entity_operation(self.entities[operation["object"]], name, arguments)
        except MongoError as error:
            expected_error = operation.get("expectError")
            assert expected_error is not None, f"{name} raised {error!r}"
            self._check_error(expected_error, error)
            return
        assert "expectError" not in operation, f"{name} succeeded, expected an error"
        if "expectResult" in operation:
            match(operation["expectResult"], result)
        if "saveResultAsEntity" in operation:
            self.entities[operation["saveResultAsEntity"]] = result

    def _runner_operation(self, name: str, arguments: dict[str, Any]) -> Any:
        assert name == "failPoint", name
        command = arguments["failPoint"]
        self.failpoints.add(command["configureFailPoint"])
        client: MongoClient = self.entities[arguments["client"]]
        return client.admin.command(command)

    def _entity_operation(self, target: Any, name: str, arguments: dict[str, Any]) -> Any:
        if name == "createChangeStream":
            pipeline = arguments.pop("pipeline", [])
            options = {WATCH_OPTIONS[k]: v for k, v in arguments.items()}
            return target.watch(pipeline, **options)
        if name == "iterateUntilDocumentOrError":
            assert isinstance(target, ChangeStream)
            return target.next()
        if isinstance(target, Collection):
            return self._collection_operation(target, name, arguments)
        assert isinstance(target, Database), f"{name} on {target!r}"
        if name == "runCommand":
            return target.command(arguments["command"])
        if name == "createCollection":
            return target.create_collection(arguments.pop("collection"), **arguments)
        if name == "dropCollection":
            return target.drop_collection(arguments["collection"])
        raise AssertionError(f"operation {name} on a database is not implemented")

    def _collection_operation(
        self, target: Collection, name: str, arguments: dict[str, Any]
    ) -> Any:
        if name == "insertOne":
            return target.insert_one(arguments["document"])
        if name == "updateOne":
            return target.update_one(arguments["filter"], arguments["update"])
        if name == "replaceOne":
            return target.replace_one(arguments["filter"], arguments["replacement"])
        if name == "deleteOne":
            return target.delete_one(arguments["filter"])
        database = target.database
        if name == "createIndex":
            index = {"key": arguments["keys"], "name": arguments["name"]}
            return database.command({"createIndexes": target.name, "indexes": [index]})
        if name == "dropIndex":
            return database.command({"dropIndexes": target.name, "index": arguments["name"]})
        if name == "rename":
            command: dict[str, Any] = {
                "renameCollection": target.full_name,
                "to": f"{database.name}.{arguments['to']}",
            }
            if "dropTarget" in arguments:
                command["dropTarget"] = arguments["dropTarget"]
            return database.client.admin.command(command)
        raise AssertionError(f"operation {name} on a collection is not implemented")

    # -- expectations ------------------------------------------------------------------------

    def _check_error(self, expected: Mapping[str, Any], error: MongoError) -> None:
        unknown = set(expected) - {
            "isError",
            "isClientError",
            "errorCode",
            "errorCodeName",
            "errorLabelsContain",
            "errorLabelsOmit",
        }
        if unknown:
            pytest.skip(f"expectError field(s) {sorted(unknown)} not supported by this runner")
        is_server = isinstance(error, ServerError)
        if "isClientError" in expected:
            assert expected["isClientError"] == (not is_server), f"isClientError: {error!r}"
        if "errorCode" in expected:
            assert isinstance(error, ServerError) and error.code == expected["errorCode"], (
                f"expected error code {expected['errorCode']}, got {error!r}"
            )
        if "errorCodeName" in expected:
            assert (
                isinstance(error, ServerError) and error.code_name == expected["errorCodeName"]
            ), f"expected error {expected['errorCodeName']}, got {error!r}"
        labels = error.error_labels if isinstance(error, ServerError) else frozenset()
        for label in expected.get("errorLabelsContain", ()):
            assert label in labels, f"label {label} missing from {sorted(labels)} ({error!r})"
        for label in expected.get("errorLabelsOmit", ()):
            assert label not in labels, f"label {label} present in {sorted(labels)} ({error!r})"

    def _check_events(self, expected: Mapping[str, Any]) -> None:
        client_id = expected["client"]
        actual = self.logs[client_id].events
        wanted = expected["events"]
        if expected.get("ignoreExtraEvents"):
            actual = actual[: len(wanted)]
        names = [f"{EVENT_NAMES[type(e)]}:{e.command_name}" for e in actual]
        assert len(actual) == len(wanted), (
            f"{client_id}: expected {len(wanted)} events, got {names}"
        )
        for index, (want, got) in enumerate(zip(wanted, actual, strict=True)):
            ((kind, fields),) = want.items()
            where = f"{client_id} event {index}"
            assert kind == EVENT_NAMES[type(got)], f"{where}: expected {kind}, got {names}"
            for key, value in fields.items():
                if key == "command":
                    assert isinstance(got, CommandStartedEvent)
                    match(value, got.command, f"{where}.command")
                elif key == "reply":
                    assert isinstance(got, CommandSucceededEvent)
                    match(value, got.reply, f"{where}.reply")
                elif key == "commandName":
                    assert got.command_name == value, f"{where}: commandName {got.command_name}"
                elif key == "databaseName":
                    assert got.database_name == value, f"{where}: databaseName {got.database_name}"
                else:
                    pytest.skip(f"event field {key!r} is not supported by this runner")
