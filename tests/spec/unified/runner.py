"""Runs one test of a unified-format file: :class:`TestRunner`.

Inputs: the :class:`~.driver.Driver` under test, the running :class:`~.requirements.Deployment`,
the parsed file (parsed with the driver's Extended JSON parser) and one of its tests.
Outputs: nothing when the test passes; an ``AssertionError`` naming the first mismatch; a
:class:`~.matching.UnsupportedInTest` naming what the runner or the client lacks (the caller
skips with that reason).  The order follows "Executing a Test": initialData, createEntities,
the operations, then (listeners off, failpoints off) expectEvents, expectLogMessages and
outcome; cleanup always runs (cursors and sessions closed, threads stopped, clients closed,
failpoints disabled on every member, log handlers detached).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .entities import ClientEntity, EntityMap, ThreadEntity, close_in_background, create_entity
from .events import check_event, describe
from .matching import Matcher, UnsupportedInTest
from .operations import entity_kind, execute, to_document

if TYPE_CHECKING:
    from .driver import Driver
    from .requirements import Deployment

__all__ = ["TestRunner"]

SCHEMA_MAJOR = 1
#: operations whose result is an iterable of root-level documents
ITERABLE_OPERATIONS = frozenset(
    {"find", "aggregate", "listCollections", "listDatabases", "listIndexes",
     "listSearchIndexes", "runCursorCommand"}
)
REDACTED_FAILURE_KEYS = frozenset({"code", "codeName", "errorLabels"})


class TestRunner:
    """One test (see the module docstring).  ``wait_timeout`` bounds waitForEvent,
    waitForThread and waitForPrimaryChange; ``loop_seconds`` bounds a ``loop`` operation when
    nothing calls :meth:`stop_loops`; ``client_defaults`` are URI options every client entity
    gets unless the test sets them (a suite's shorter heartbeatFrequencyMS, say)."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        driver: Driver,
        deployment: Deployment,
        file: Mapping[str, Any],
        test: Mapping[str, Any],
        *,
        # 20 s: an event that follows the next heartbeat may take the default heartbeat
        # frequency (10 s, an awaitable hello's wait) plus the time to get there
        wait_timeout: float = 20.0,
        loop_seconds: float = 5.0,
        client_defaults: Mapping[str, Any] | None = None,
    ) -> None:
        self.driver = driver
        self.deployment = deployment
        self.file = file
        self.test = test
        self.wait_timeout = wait_timeout
        self.loop_seconds = loop_seconds
        self.client_defaults = dict(client_defaults or {})
        self.entity_timeouts: dict[str, Any] = {}
        self.entities = EntityMap()
        self.matcher = Matcher(self.entities, driver.load_json, self._session_lsid)
        self.failpoints: set[str] = set()
        self.loops_stopped = threading.Event()
        self._internal: Any = None
        self._log_snapshots: dict[str, list[dict[str, Any]]] = {}

    def stop_loops(self) -> None:
        """Ask a running ``loop`` operation to finish its iteration and stop."""
        self.loops_stopped.set()

    # -- lifecycle --------------------------------------------------------------------------

    def run(self) -> None:
        version = str(self.file.get("schemaVersion", "1.0"))
        if int(version.split(".")[0]) != SCHEMA_MAJOR:
            raise AssertionError(f"schemaVersion {version} is not supported by this runner (1.x)")
        if self.test.get("skipReason"):
            raise UnsupportedInTest(f"the test file skips it: {self.test['skipReason']}")
        try:
            self._initial_data()
            for entry in self.file.get("createEntities", []):
                create_entity(self.driver, self.deployment, self.entities, entry, self.client_defaults)
            for operation in self.test["operations"]:
                self.operation(operation)
            self._stop_observing()
            self._failpoints_off()
            for expected in self.test.get("expectEvents", []):
                self._check_events(expected)
            for expected in self.test.get("expectLogMessages", []):
                self._check_logs(expected)
            for expected in self.test.get("outcome", []):
                self._check_outcome(expected)
        finally:
            self._clean_up()

    def internal_client(self) -> Any:
        if self._internal is None:
            self._internal = self.driver.client_class(
                self.deployment.uri(), serverSelectionTimeoutMS=10000
            )
        return self._internal

    def _kill_all_sessions(self) -> None:
        """End every server session (and so its open transaction) a former test left behind,
        as the format asks before each test: a transaction left open holds its documents."""
        try:
            self.internal_client().admin.command({"killAllSessions": []})
        except self.driver.base_error:
            pass  # a server without sessions, or Interrupted: nothing is left open either way

    def _initial_data(self) -> None:
        self._kill_all_sessions()
        for data in self.file.get("initialData", []):
            database = self.internal_client()[data["databaseName"]]
            name = data["collectionName"]
            database.drop_collection(name)
            database.create_collection(name, **dict(data.get("createOptions", {})))
            if data["documents"]:
                database[name].insert_many(list(data["documents"]))

    def _stop_observing(self) -> None:
        for name, entity in self.entities.items():
            if isinstance(entity, ClientEntity):
                entity.events.enabled = False
                if entity.logs is not None:
                    self._log_snapshots[name] = entity.logs.snapshot()

    def _failpoints_off(self) -> None:
        simulator = self.deployment.simulator
        for name in sorted(self.failpoints):
            for member in self.deployment.members:
                if simulator is not None:
                    simulator.failpoint_off(member, name)
        self.failpoints.clear()

    def _clean_up(self) -> None:
        errors: list[BaseException] = []
        entities = list(self.entities.values())
        for entity in entities:
            try:
                if isinstance(entity, ThreadEntity):
                    entity.stop(self.wait_timeout)
                elif entity_kind(entity) == "cursor":
                    entity.close()
                elif entity_kind(entity) == "session":
                    entity.end_session()
            except Exception as error:  # noqa: BLE001 -- cleanup goes on
                errors.append(error)
        try:
            self._failpoints_off()
        except Exception as error:  # noqa: BLE001
            errors.append(error)
        for entity in entities:
            if isinstance(entity, ClientEntity):
                try:
                    self._close(entity.close)
                except Exception as error:  # noqa: BLE001
                    errors.append(error)
                if entity.logs is not None:
                    entity.logs.close()
        if self._internal is not None:
            self._close(self._internal.close)
        self.entities.clear()

    def _close(self, close: Callable[[], None]) -> None:
        if self.driver.close_in_background:
            close_in_background(close)
        else:
            close()

    # -- operations -------------------------------------------------------------------------

    def prepare_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        prepared: dict[str, Any] = {}
        for key, value in arguments.items():
            if key == "session":
                value = self.entities.get_typed(value, object, "session")
            elif key == "readConcern":
                value = self.driver.read_concern(value)
            elif key == "writeConcern":
                value = self.driver.write_concern(value)
            elif key == "readPreference":
                value = self.driver.read_preference(value)
            prepared[key] = value
        return prepared

    def operation_errors(self) -> tuple[type[BaseException], ...]:
        return (*self.driver.base_error, TypeError, ValueError)

    def operation(self, operation: Mapping[str, Any], *, nested: bool = False) -> None:
        """Execute one operation with its expectations (see "Executing an Operation").  In a
        callback (``nested``), an operation's error propagates as it is once checked (expected
        or ignored alike), so that withTransaction sees the driver's error and its labels."""
        name = operation["name"]
        target = operation["object"]
        arguments = dict(operation.get("arguments", {}))
        if target == "testRunner":
            from .runner_ops import run_special

            run_special(self, name, arguments)
            return
        if target not in self.entities:
            raise AssertionError(f"operation {name}: no entity named {target!r}")
        entity = self.entities[target]
        # a cursor or change stream keeps the timeoutMS it was created with for its iterations
        timeout_ms = arguments.pop("timeoutMS", self.entity_timeouts.get(target))
        try:
            with self._operation_timeout(timeout_ms):
                result = execute(
                    self.driver, entity, name, self.prepare_arguments(arguments), self.run_nested,
                    self.wait_timeout,
                )
        except self.operation_errors() as error:
            if "expectError" in operation:
                self.check_error(operation["expectError"], error, client_bulk_write=name == "clientBulkWrite")
            elif not operation.get("ignoreResultAndError") and not nested:
                raise AssertionError(f"{name} on {target} raised {type(error).__name__}: {error}") from error
            if nested:
                raise  # withTransaction decides on the callback's error (retry, abort, raise)
            return
        if operation.get("ignoreResultAndError"):
            return
        assert "expectError" not in operation, (
            f"{name} on {target} succeeded with {result!r}, expected an error {operation['expectError']!r}"
        )
        if "expectResult" in operation:
            self.check_result(name, operation["expectResult"], result)
        if "saveResultAsEntity" in operation:
            self.entities.add(operation["saveResultAsEntity"], result)
            if timeout_ms is not None:
                self.entity_timeouts[operation["saveResultAsEntity"]] = timeout_ms

    def _operation_timeout(self, timeout_ms: Any) -> AbstractContextManager[Any]:
        """The driver's timeout block for an operation's ``timeoutMS`` (none without one)."""
        if timeout_ms is None:
            return contextlib.nullcontext()
        if self.driver.timeout is None:
            raise UnsupportedInTest("the client under test has no client-side operation timeout (timeoutMS)")
        # timeoutMS=0 is timeout(0): no limit, in place of the client's (pymongo.timeout's rule)
        return self.driver.timeout(float(timeout_ms) / 1000)

    def check_result(self, name: str, expected: Any, actual: Any) -> None:
        if isinstance(expected, list) and name in ITERABLE_OPERATIONS:
            assert isinstance(actual, list), f"{name}: expected a list, got {actual!r}"
            assert len(expected) == len(actual), f"{name}: expected {expected!r}, got {actual!r}"
            for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
                self.matcher.match(want, got, f"result[{index}]", root=True)
            return
        self.matcher.match(expected, to_document(actual), "result", root=True)

    # -- expectations -----------------------------------------------------------------------

    def check_error(self, expected: Mapping[str, Any], error: BaseException, *, client_bulk_write: bool = False) -> None:
        driver = self.driver
        text = f"{type(error).__name__}: {error}"
        # MongoClient.bulkWrite's BulkWriteException keeps a top-level error (a command's
        # failure) in its ``error`` field: the format says the error assertions look at that
        # one, and the write errors, write concern errors and partial result at the exception.
        outer = error
        top_level = getattr(error, "error", None) if client_bulk_write else None
        if isinstance(top_level, BaseException):
            error = top_level
        for key, value in expected.items():
            if key == "isError":
                continue
            if key == "isClientError":
                is_client = not isinstance(error, driver.server_error)
                assert is_client == value, f"isClientError {value} but got {text}"
            elif key == "isTimeoutError":
                assert driver.timeout_error(error) == value, f"isTimeoutError {value} but got {text}"
            elif key == "errorContains":
                details = driver.error_details(error) or {}
                haystack = f"{error} {details.get('errmsg', '') if isinstance(details, Mapping) else ''}"
                assert str(value).lower() in haystack.lower(), f"error should contain {value!r}: {text}"
            elif key == "errorCode":
                code = driver.error_code(error)
                assert code == value, f"expected error code {value}, got {code!r} ({text})"
            elif key == "errorCodeName":
                code_name = driver.error_code_name(error)
                assert str(code_name).lower() == str(value).lower(), (
                    f"expected error {value}, got {code_name!r} ({text})"
                )
            elif key in ("errorLabelsContain", "errorLabelsOmit"):
                labels = driver.error_labels(error)
                for label in value:
                    present = label in labels
                    assert present == (key == "errorLabelsContain"), (
                        f"label {label} {'missing from' if not present else 'present in'} {sorted(labels)} ({text})"
                    )
            elif key == "errorResponse":
                response = driver.error_details(error)
                assert response is not None, f"errorResponse expected, the error has none: {text}"
                self.matcher.match(value, response, "errorResponse", root=True)
            elif key == "expectResult":
                partial: Any = getattr(outer, "partial_result", None)
                if partial is None and not client_bulk_write:
                    # (a collection bulk write error's counts are in its details; MongoClient's
                    # leaves partialResult unset when no write succeeded: the format's "unset")
                    partial = _bulk_result(driver.error_details(outer))
                if partial is None and isinstance(value, Mapping) and set(value) == {"$$unsetOrMatches"}:
                    continue  # no partial result: "unset"
                self.matcher.match(value, to_document(partial), "error result", root=True)
            elif key == "writeErrors":
                by_index = {str(e.get("idx", e.get("index"))): e for e in getattr(outer, "write_errors", None) or []}
                assert set(by_index) == {str(k) for k in value}, f"writeErrors: expected {value!r}, got {by_index!r}"
                for index, want in value.items():
                    self.matcher.match(want, by_index[str(index)], f"writeErrors[{index}]", root=True)
            elif key == "writeConcernErrors":
                concern_errors = list(getattr(outer, "write_concern_errors", None) or [])
                assert len(concern_errors) == len(value), (
                    f"writeConcernErrors: expected {value!r}, got {concern_errors!r}"
                )
                for index, (want, got) in enumerate(zip(value, concern_errors, strict=True)):
                    self.matcher.match(want, _write_concern_error(got), f"writeConcernErrors[{index}]", root=True)
            else:
                raise UnsupportedInTest(f"expectError field {key!r} is not supported by this runner")

    def client_entity(self, name: str) -> ClientEntity:
        entity: ClientEntity = self.entities.get_typed(name, ClientEntity, "client")
        return entity

    def _check_events(self, expected: Mapping[str, Any]) -> None:
        client = expected["client"]
        category = expected.get("eventType", "command")
        actual = self.client_entity(client).events.events(category)
        wanted = expected["events"]
        if expected.get("ignoreExtraEvents"):
            actual = actual[: len(wanted)]
        names = [describe(e) for e in actual]
        assert len(actual) == len(wanted), (
            f"{client} {category} events: expected {len(wanted)} "
            f"({[next(iter(w)) for w in wanted]}), got {len(actual)}: {names}"
        )
        for index, (want, got) in enumerate(zip(wanted, actual, strict=True)):
            check_event(want, got, self.matcher, f"{client} {category} event {index} of {names}:")

    def _check_logs(self, expected: Mapping[str, Any]) -> None:
        client = expected["client"]
        if client not in self._log_snapshots:
            raise AssertionError(f"expectLogMessages for {client}, which has no observeLogMessages")
        messages = self._log_snapshots[client]
        ignore = expected.get("ignoreMessages", [])
        messages = [m for m in messages if not any(self._log_matches(i, m) for i in ignore)]
        wanted = expected["messages"]
        if expected.get("ignoreExtraMessages"):
            messages = messages[: len(wanted)]
        summary = [f"{m['component']}:{m['data'].get('message')}" for m in messages]
        assert len(messages) == len(wanted), (
            f"{client} log messages: expected {len(wanted)} "
            f"({[w['data'].get('message') for w in wanted]}), got {len(messages)}: {summary}"
        )
        for index, (want, got) in enumerate(zip(wanted, messages, strict=True)):
            self._check_log(want, got, f"{client} log message {index} of {summary}")

    def _log_matches(self, expected: Mapping[str, Any], message: Mapping[str, Any]) -> bool:
        try:
            self._check_log(expected, message, "ignored message")
        except AssertionError:
            return False
        return True

    def _check_log(self, expected: Mapping[str, Any], message: Mapping[str, Any], where: str) -> None:
        assert expected["component"] == message["component"], (
            f"{where}: component {message['component']}, expected {expected['component']}"
        )
        level = "info" if expected["level"] in ("informational", "notice") else expected["level"]
        assert level == message["level"], f"{where}: level {message['level']}, expected {expected['level']}"
        self.matcher.match(expected["data"], message["data"], f"{where} data", root=True)
        if "failureIsRedacted" in expected:
            failure = message["data"].get("failure")
            assert failure is not None, f"{where}: no failure in {message['data']!r}"
            document = failure
            if isinstance(failure, str):
                try:
                    document = self.driver.load_json(failure)
                except Exception:  # noqa: BLE001 -- a plain message is not redacted
                    document = failure
            redacted = isinstance(document, Mapping) and set(document) <= REDACTED_FAILURE_KEYS
            assert redacted == expected["failureIsRedacted"], (
                f"{where}: failure {'is' if redacted else 'is not'} redacted: {failure!r}"
            )

    def _check_outcome(self, expected: Mapping[str, Any]) -> None:
        collection = self.internal_client()[expected["databaseName"]][expected["collectionName"]]
        actual = list(collection.find({}, sort=[("_id", 1)]))
        wanted = list(expected["documents"])
        assert [dict(d) for d in actual] == [dict(d) for d in wanted], (
            f"outcome {expected['databaseName']}.{expected['collectionName']}: expected {wanted!r}, got {actual!r}"
        )

    def _session_lsid(self, name: str) -> Any:
        if name not in self.entities.lsids:
            raise AssertionError(f"$$sessionLsid names no session entity {name!r}")
        lsid = self.entities.lsids[name]
        if lsid is None:
            raise UnsupportedInTest("the client under test's session has no session_id")
        return lsid

    def run_nested(self, operations: Sequence[Mapping[str, Any]]) -> None:
        for operation in operations:
            self.operation(operation, nested=True)


def _write_concern_error(error: Any) -> Any:
    """A write concern error in the format's fields (code, message, details): a driver may
    keep the server's document as it came (errmsg, errInfo)."""
    if not isinstance(error, Mapping):
        return error
    renamed = {"errmsg": "message", "errInfo": "details"}
    return {renamed.get(key, key): value for key, value in error.items()}


def _bulk_result(details: Any) -> Any:
    if not isinstance(details, Mapping) or "nInserted" not in details:
        return None
    upserted = {str(u["index"]): u["_id"] for u in details.get("upserted", [])}
    return {
        "insertedCount": details.get("nInserted", 0),
        "matchedCount": details.get("nMatched", 0),
        "modifiedCount": details.get("nModified", 0),
        "deletedCount": details.get("nRemoved", 0),
        "upsertedCount": details.get("nUpserted", 0),
        "upsertedIds": upserted,
    }
