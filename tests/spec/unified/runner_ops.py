"""The format's special test operations (``object: testRunner``).

Input: the :class:`~.runner.TestRunner` of the test, the operation's name and arguments.
Output: nothing; an ``AssertionError`` when an assertion operation fails or a wait times out
(waits are bounded by the runner's ``wait_timeout``, 20 s by default); an
:class:`~.matching.UnsupportedInTest` for an operation this runner or the deployment cannot
carry out (``targetedFailPoint`` and session pinning need mongoses).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .entities import ThreadEntity, create_entity
from .events import type_name
from .matching import UnsupportedInTest

if TYPE_CHECKING:
    from .runner import TestRunner

__all__ = ["SPECIAL_OPERATIONS", "run_special"]

_MISSING = object()


def _fail_point(runner: TestRunner, args: Mapping[str, Any]) -> None:
    command = args["failPoint"]
    client = runner.client_entity(args["client"]).client
    runner.failpoints.add(command["configureFailPoint"])
    client.admin.command(dict(command))


def _targeted_fail_point(runner: TestRunner, args: Mapping[str, Any]) -> None:
    """The fail point set on the mongos the session is pinned to (directly on the simulator)."""
    address = _pinned_address(runner.entities[args["session"]])
    simulator = runner.deployment.simulator
    if address is None or simulator is None or not hasattr(simulator, "mongos"):
        raise UnsupportedInTest("targetedFailPoint needs a session pinned to a mongos of a sharded deployment")
    command = args["failPoint"]
    runner.failpoints.add(command["configureFailPoint"])
    host, port = address
    simulator.configure_failpoint(f"{host}:{port}", dict(command))


def _pinned_address(session: Any) -> Any:
    # PyMongo's _pinned_address answers None once the transaction is committed; its
    # transaction's pinned_address is the pin itself (which a commit keeps, as the spec says)
    transaction = getattr(session, "_transaction", None)
    if transaction is not None and hasattr(transaction, "pinned_address"):
        return transaction.pinned_address
    address = getattr(session, "_pinned_address", _MISSING)
    if address is _MISSING:
        raise UnsupportedInTest("the client under test's session does not tell its pinned server")
    return address


def _assert_pinned(runner: TestRunner, args: Mapping[str, Any]) -> None:
    assert _pinned_address(runner.entities[args["session"]]) is not None, "session is not pinned"


def _assert_unpinned(runner: TestRunner, args: Mapping[str, Any]) -> None:
    address = _pinned_address(runner.entities[args["session"]])
    assert address is None, f"session is pinned to {address}"


def _assert_transaction_state(runner: TestRunner, args: Mapping[str, Any]) -> None:
    state = runner.driver.transaction_state(runner.entities[args["session"]])
    if state is None:
        raise UnsupportedInTest("the client under test's session does not tell its transaction state")
    assert state == args["state"], f"transaction state {state}, expected {args['state']}"


def _dirty(runner: TestRunner, args: Mapping[str, Any], expected: bool) -> None:
    dirty = runner.driver.session_dirty(runner.entities[args["session"]])
    if dirty is None:
        raise UnsupportedInTest("the client under test's session does not tell whether it is dirty")
    assert dirty == expected, f"session dirty={dirty}, expected {expected}"


def _lsids(runner: TestRunner, args: Mapping[str, Any], same: bool) -> None:
    events = runner.client_entity(args["client"]).events.events("command")
    started = [e for e in events if type(e).__name__ == "CommandStartedEvent"]
    assert len(started) >= 2, f"fewer than two commandStartedEvents: {len(started)}"
    first, second = (e.command.get("lsid") for e in started[-2:])
    assert first is not None and second is not None, "a command has no lsid"
    assert (first == second) == same, f"lsids {first!r} and {second!r} should {'' if same else 'not '}be equal"


def _collection_names(runner: TestRunner, database: str) -> list[str]:
    return list(runner.internal_client()[database].list_collection_names())


def _collection_exists(runner: TestRunner, args: Mapping[str, Any], expected: bool) -> None:
    names = _collection_names(runner, args["databaseName"])
    present = args["collectionName"] in names
    assert present == expected, f"collection {args['collectionName']} exists={present}: {names}"


def _index_exists(runner: TestRunner, args: Mapping[str, Any], expected: bool) -> None:
    collection = runner.internal_client()[args["databaseName"]][args["collectionName"]]
    names = [index["name"] for index in collection.list_indexes()]
    present = args["indexName"] in names
    assert present == expected, f"index {args['indexName']} exists={present}: {names}"


def _create_entities(runner: TestRunner, args: Mapping[str, Any]) -> None:
    for entry in args["entities"]:
        create_entity(runner.driver, runner.deployment, runner.entities, entry, runner.client_defaults)


def _wait(runner: TestRunner, args: Mapping[str, Any]) -> None:
    time.sleep(float(args["ms"]) / 1000)


def _wait_for_event(runner: TestRunner, args: Mapping[str, Any]) -> None:
    events = runner.client_entity(args["client"]).events
    seen = events.wait_for(args["event"], args["count"], runner.matcher, runner.wait_timeout)
    assert seen >= args["count"], (
        f"waitForEvent {args['event']!r}: saw {seen} of {args['count']} in {runner.wait_timeout} s"
    )


def _assert_event_count(runner: TestRunner, args: Mapping[str, Any]) -> None:
    seen = runner.client_entity(args["client"]).events.count(args["event"], runner.matcher)
    assert seen == args["count"], f"assertEventCount {args['event']!r}: {seen}, expected {args['count']}"


def _topology_description(runner: TestRunner, client_name: str) -> Any:
    client = runner.client_entity(client_name).client
    description = getattr(client, "topology_description", None)
    if description is None:
        raise UnsupportedInTest("the client under test has no topology_description")
    return description


def _primary(description: Any) -> Any:
    servers = getattr(description, "server_descriptions", None)
    servers = servers() if callable(servers) else getattr(description, "servers", {})
    for address, server in dict(servers).items():
        if type_name(server, "server") == "RSPrimary":
            return address
    return None


def _record_topology(runner: TestRunner, args: Mapping[str, Any]) -> None:
    runner.entities.add(args["id"], _topology_description(runner, args["client"]))


def _assert_topology_type(runner: TestRunner, args: Mapping[str, Any]) -> None:
    description = runner.entities[args["topologyDescription"]]
    actual = type_name(description, "topology")
    assert actual == args["topologyType"], f"topology type {actual}, expected {args['topologyType']}"


def _wait_for_primary_change(runner: TestRunner, args: Mapping[str, Any]) -> None:
    prior = _primary(runner.entities[args["priorTopologyDescription"]])
    timeout = float(args.get("timeoutMS", runner.wait_timeout * 1000)) / 1000
    deadline = time.monotonic() + timeout
    while True:
        current = _primary(_topology_description(runner, args["client"]))
        if current is not None and current != prior:
            return
        assert time.monotonic() < deadline, f"primary still {current} (was {prior}) after {timeout} s"
        time.sleep(0.05)


def _run_on_thread(runner: TestRunner, args: Mapping[str, Any]) -> None:
    thread: ThreadEntity = runner.entities.get_typed(args["thread"], ThreadEntity, "thread")
    operation = args["operation"]
    thread.schedule(lambda: runner.operation(operation))


def _wait_for_thread(runner: TestRunner, args: Mapping[str, Any]) -> None:
    thread: ThreadEntity = runner.entities.get_typed(args["thread"], ThreadEntity, "thread")
    finished = thread.stop(runner.wait_timeout)
    assert finished, f"thread {thread.name} still running after {runner.wait_timeout} s"
    if thread.errors:
        raise thread.errors[0]


def _number_checked_out(runner: TestRunner, args: Mapping[str, Any]) -> None:
    count = runner.client_entity(args["client"]).events.checked_out
    assert count == args["connections"], f"{count} connections checked out, expected {args['connections']}"


def _loop(runner: TestRunner, args: Mapping[str, Any]) -> None:
    entities = runner.entities
    errors_name = args.get("storeErrorsAsEntity")
    failures_name = args.get("storeFailuresAsEntity")
    for name in {n for n in (errors_name, failures_name) if n is not None}:
        if name in entities:
            assert isinstance(entities[name], list), f"entity {name} is not an array"
        else:
            entities.add(name, [])
    counters = {key: args.get(key) for key in ("storeSuccessesAsEntity", "storeIterationsAsEntity")}
    for name in counters.values():
        if name is not None:
            entities.add(name, 0)
    successes = iterations = 0
    deadline = time.monotonic() + runner.loop_seconds
    while not runner.loops_stopped.is_set() and time.monotonic() < deadline:
        iterations += 1
        for operation in args["operations"]:
            try:
                runner.operation(operation)
            except UnsupportedInTest:
                raise
            except AssertionError as failure:
                target = failures_name or errors_name
                if target is None:
                    raise
                entities[target].append({"error": str(failure), "time": time.time()})
                break
            except Exception as error:  # noqa: BLE001 -- stored, as the format asks
                target = errors_name or failures_name
                if target is None:
                    raise
                entities[target].append({"error": f"{type(error).__name__}: {error}", "time": time.time()})
                break
            successes += 1
        if counters["storeSuccessesAsEntity"]:
            entities[counters["storeSuccessesAsEntity"]] = successes
        if counters["storeIterationsAsEntity"]:
            entities[counters["storeIterationsAsEntity"]] = iterations


SPECIAL_OPERATIONS: dict[str, Callable[[TestRunner, Mapping[str, Any]], None]] = {
    "failPoint": _fail_point,
    "targetedFailPoint": _targeted_fail_point,
    "assertSessionPinned": _assert_pinned,
    "assertSessionUnpinned": _assert_unpinned,
    "assertSessionTransactionState": _assert_transaction_state,
    "assertSessionDirty": lambda runner, args: _dirty(runner, args, True),
    "assertSessionNotDirty": lambda runner, args: _dirty(runner, args, False),
    "assertSameLsidOnLastTwoCommands": lambda runner, args: _lsids(runner, args, True),
    "assertDifferentLsidOnLastTwoCommands": lambda runner, args: _lsids(runner, args, False),
    "assertCollectionExists": lambda runner, args: _collection_exists(runner, args, True),
    "assertCollectionNotExists": lambda runner, args: _collection_exists(runner, args, False),
    "assertIndexExists": lambda runner, args: _index_exists(runner, args, True),
    "assertIndexNotExists": lambda runner, args: _index_exists(runner, args, False),
    "createEntities": _create_entities,
    "wait": _wait,
    "waitForEvent": _wait_for_event,
    "assertEventCount": _assert_event_count,
    "recordTopologyDescription": _record_topology,
    "assertTopologyType": _assert_topology_type,
    "waitForPrimaryChange": _wait_for_primary_change,
    "runOnThread": _run_on_thread,
    "waitForThread": _wait_for_thread,
    "assertNumberConnectionsCheckedOut": _number_checked_out,
    "loop": _loop,
}


def run_special(runner: TestRunner, name: str, args: Mapping[str, Any]) -> None:
    if name not in SPECIAL_OPERATIONS:
        raise UnsupportedInTest(f"test runner operation {name!r} is not implemented by this runner")
    SPECIAL_OPERATIONS[name](runner, args)
