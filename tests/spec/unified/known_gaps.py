"""Known gaps by reason: the one switch for expected failures (``xfail(strict=False)``).

Each entry maps a reason to a predicate on ``(file, test)``; a test a predicate selects is
marked ``xfail(strict=False)`` with that reason: it still runs, and an unexpected pass shows as
XPASS.  No entry names files or tests: predicates look at what a test needs.

* :data:`OUR_CLIENT_GAPS` -- what OUR client lacks; applied with our drivers (``sansio``, the
  default, and ``sansio-<runtime>``: every runtime runs the same API code).  Delete an entry
  when the client gains the feature.
* :data:`SIMULATOR_GAPS` -- what the simulator (or the deployment) lacks; applied with every
  driver.  Delete an entry when the simulator gains it.
* :data:`PYMONGO_DIFFERENCES` -- where the reference driver departs from the specs; applied
  only with ``$MONGO_SANSIO_UNIFIED_DRIVER=pymongo``.
* :data:`SPEC_DATA_QUIRKS` and :data:`RUNNER_GAPS` -- spec data that cannot pass as written,
  and what this runner does not do yet; applied with every driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = [
    "OUR_CLIENT_GAPS",
    "PYMONGO_DIFFERENCES",
    "RUNNER_GAPS",
    "SIMULATOR_GAPS",
    "SPEC_DATA_QUIRKS",
    "gap_reasons",
]

Predicate = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]


def _names(value: Any) -> Iterator[str]:
    """Every key and string anywhere in ``value``."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield str(key)
            yield from _names(inner)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            yield from _names(inner)
    elif isinstance(value, str):
        yield value


def _mentions(words: frozenset[str]) -> Predicate:
    def predicate(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
        scope = (file.get("createEntities", []), test)
        return any(name in words for name in _names(scope))

    return predicate


def _expected_logs(test: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for expected in test.get("expectLogMessages", []):
        yield from expected.get("messages", [])


def _logs_component(component: str) -> Predicate:
    def predicate(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
        return any(m.get("component") == component for m in _expected_logs(test))

    return predicate


def _failpoint_data(test: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for operation in test.get("operations", []):
        if operation.get("name") == "failPoint":
            yield operation["arguments"]["failPoint"].get("data", {})


def _waiting_logged_at_info(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    return any(
        m.get("level") == "info"
        and m.get("data", {}).get("message") == "Waiting for suitable server to become available"
        for m in _expected_logs(test)
    )


RETRYABLE_CODES = frozenset({6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436})


def _operations(test: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every operation of a test, with those nested in withTransaction callbacks, loops and
    runOnThread."""

    def walk(operations: Any) -> Iterator[Mapping[str, Any]]:
        for operation in operations or ():
            if not isinstance(operation, Mapping):
                continue
            yield operation
            arguments = operation.get("arguments", {})
            if isinstance(arguments, Mapping):
                yield from walk(arguments.get("callback"))
                yield from walk(arguments.get("operations"))
                if isinstance(arguments.get("operation"), Mapping):
                    yield from walk([arguments["operation"]])

    return walk(test.get("operations", []))


def _arguments(test: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The arguments of every operation, and of every write model of a bulk write."""
    for operation in _operations(test):
        arguments = operation.get("arguments", {})
        if not isinstance(arguments, Mapping):
            continue
        yield arguments
        for model in list(arguments.get("requests", ())) + list(arguments.get("models", ())):
            if isinstance(model, Mapping):
                yield from (v for v in model.values() if isinstance(v, Mapping))


def _uses_argument(*names: str) -> Predicate:
    def predicate(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
        return any(name in arguments for arguments in _arguments(test) for name in names)

    return predicate


def _entity_specs(
    file: Mapping[str, Any], test: Mapping[str, Any], kind: str
) -> Iterator[Mapping[str, Any]]:
    """The specs of every entity of ``kind`` the file or the test creates."""
    entries = list(file.get("createEntities", []))
    for operation in _operations(test):
        if operation.get("name") == "createEntities":
            entries += operation.get("arguments", {}).get("entities", [])
    for entry in entries:
        if isinstance(entry, Mapping) and kind in entry:
            yield entry[kind]


def _bulk_result_after_outright_failure(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A collection bulkWrite expected to fail with its partial result, in a test whose
    failpoint fails commands outright (a closed connection, a command error), not with write
    errors: the error is then not a bulk write error."""
    expects_result = any(
        operation.get("name") == "bulkWrite"
        and isinstance(operation.get("expectError"), Mapping)
        and "expectResult" in operation["expectError"]
        for operation in _operations(test)
    )
    outright = {"failBeforeCommitExceptionCode", "closeConnection", "errorCode"}
    return expects_result and any(outright & set(data) for data in _failpoint_data(test))


def _expected_events_mention(test: Mapping[str, Any], word: str) -> bool:
    return word in set(_names(test.get("expectEvents", [])))


def _uses_timeout_ms(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    return "timeoutMS" in set(_names((file.get("createEntities", []), test)))


def _one_rtt_sample_expected(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A maxTimeMS bound that holds only while the client has a single RTT sample of a server
    whose hello is blocked for at least the client's timeoutMS (the spec's "short-circuit ...
    only 1 RTT measurement"): with two samples, the minimum RTT alone exceeds the timeout."""
    blocked = [
        data.get("blockTimeMS", 0)
        for data in _failpoint_data(test)
        if "hello" in data.get("failCommands", ()) and data.get("blockConnection")
    ]
    timeouts = [
        spec.get("uriOptions", {}).get("timeoutMS") for spec in _entity_specs(file, test, "client")
    ]
    short_circuited = any(
        isinstance(t, int) and t > 0 and b >= t for b in blocked for t in timeouts
    )
    return short_circuited and _expected_events_mention(test, "maxTimeMS")


def _timeout_ms_with(*features: str) -> Predicate:
    """timeoutMS, with an operation or argument of ``features`` (operation names or argument
    keys)."""

    def predicate(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
        if not _uses_timeout_ms(file, test):
            return False
        return any(
            o.get("name") in features or set(features) & set(o.get("arguments", {}))
            for o in _operations(test)
        )

    return predicate


def _iteration_mode_on_a_plain_cursor(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A non-tailable find or aggregate run with timeoutMode ITERATION that is expected to
    succeed (the refusals, such as $out/$merge with ITERATION, are checked)."""
    return any(
        arguments.get("timeoutMode") == "iteration" and "cursorType" not in arguments
        and not _expects_client_error(operation)
        for operation in _operations(test)
        for arguments in [operation.get("arguments", {})]
        if isinstance(arguments, Mapping)
    )


def _expects_client_error(operation: Mapping[str, Any]) -> bool:
    expected = operation.get("expectError")
    return isinstance(expected, Mapping) and bool(expected.get("isClientError"))


OUR_CLIENT_GAPS: dict[str, Predicate] = {
    "CSOT: timeoutMode is checked (timeoutMS required, CURSOR_LIFETIME refused for tailable "
    "cursors, ITERATION for $out/$merge) but not yet honoured: a non-tailable cursor's first "
    "command still gets maxTimeMS, which ITERATION forbids": _iteration_mode_on_a_plain_cursor,
    "CSOT: our RTT monitor takes its first sample at once, so with hello blocked for at least "
    "the client's timeoutMS the minimum RTT is known (two samples) before the test's second "
    "operation, which is short-circuited where the test expects one sample only": _one_rtt_sample_expected,
}


#: Gaps of the simulator, whichever client runs (reported to the simulator's owner).
SIMULATOR_GAPS: dict[str, Predicate] = {}
SIMULATOR_GAPS[
    "mongos transactions: the test expects the recoveryToken a mongos returns in a "
    "transaction's replies, which the routers of the load balancer front over a replica set "
    "(the runner's load-balanced deployment) do not return (the sharded simulator's mongos do, "
    "also behind its front, and our client sends it back: on the sharded deployment, where "
    "these tests run unless MONGO_SANSIO_UNIFIED_TOPOLOGY=load-balanced, they pass)"
] = _mentions(frozenset({"recoveryToken"}))


def _pinned_count_after_failure(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A fail point makes getMore or commitTransaction fail, and the test then counts the
    connections still checked out (load-balanced pinning)."""
    failing = {name for data in _failpoint_data(test) for name in data.get("failCommands", ())}
    counts = any(o.get("name") == "assertNumberConnectionsCheckedOut" for o in _operations(test))
    return counts and bool(failing & {"getMore", "commitTransaction"}) and not (
        "commitTransaction" in failing and any(d.get("errorCode") for d in _failpoint_data(test))
    )


#: Where PyMongo (the reference driver) differs from the specs, applied with the pymongo driver.
def _pool_cleared_before_auth_failure_close(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A fail point makes saslContinue fail (an error or a closed connection), and the test
    expects the pool cleared before the connection that failed to authenticate is closed,
    in its events or its log messages."""
    auth_failure = any("saslContinue" in data.get("failCommands", ()) for data in _failpoint_data(test))
    if not auth_failure:
        return False
    orders = [
        ([next(iter(event), "") for event in expected.get("events", [])], "poolClearedEvent", "connectionClosedEvent")
        for expected in test.get("expectEvents", [])
    ] + [
        ([m.get("data", {}).get("message", "") for m in _expected_logs(test)], "Connection pool cleared", "Connection closed")
    ]
    for names, cleared, closed in orders:
        if cleared in names and closed in names:
            return names.index(cleared) < names.index(closed)
    return False


def _ordered_client_bulk_write_without_partial_result(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """An ordered MongoClient.bulkWrite of several models expected to fail with its partial
    result unset (the bulk-write spec: an ordered bulk write succeeded in part only when its
    write error's idx is above 0)."""
    for operation in _operations(test):
        arguments = operation.get("arguments", {})
        expected = operation.get("expectError")
        if (operation.get("name") != "clientBulkWrite" or not isinstance(arguments, Mapping)
                or arguments.get("ordered", True) is False or len(arguments.get("models", ())) < 2
                or not isinstance(expected, Mapping)):
            continue
        result = expected.get("expectResult")
        inner = result.get("$$unsetOrMatches") if isinstance(result, Mapping) else None
        if isinstance(inner, Mapping) and inner and all(v == {"$$exists": False} for v in inner.values()):
            return True
    return False


PYMONGO_DIFFERENCES: dict[str, Predicate] = {
    "load-balanced: PyMongo checks a cursor's pinned connection in after a failed getMore "
    "(the spec keeps it pinned until close), and pins the connection of a commit retried "
    "after a network error": _pinned_count_after_failure,
    "PyMongo 4.20 reports a partial result of an ordered MongoClient.bulk_write whenever the "
    "server's nErrors is below the number of models sent, even when the first model failed "
    "(the spec: only when the write error's idx is above 0)": _ordered_client_bulk_write_without_partial_result,
    "PyMongo under the runner's timeout() stand-in for timeoutMS: tailable cursors, change "
    "streams, transactions and close do not follow the CSOT spec": lambda file, test: any(
        predicate(file, test)
        for predicate in (
            _timeout_ms_with(
                "cursorType", "maxAwaitTimeMS", "createChangeStream", "createCommandCursor"
            ),
            _timeout_ms_with("startTransaction", "withTransaction"),
            _timeout_ms_with("close"),
        )
    ),
    "PyMongo raises an error of bulk_write that is not a write error (an AutoReconnect ending "
    "it) without the partial result the test's expectError.expectResult asks for": _bulk_result_after_outright_failure,
    "PyMongo 4.20 has no rawData option (the runner's rawData goes into the command, even "
    "to servers before 8.2)": _uses_argument("rawData"),
    "PyMongo logs 'Waiting for suitable server to become available' at debug (the spec says info)": _waiting_logged_at_info,
    "PyMongo closes a connection whose authentication failed before it clears the pool (the "
    "SDAM spec clears the pool first)": _pool_cleared_before_auth_failure_close,
}


def _timeout_expected_without_timeout_ms(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """The test expects a timeout error, yet neither it nor its entities set timeoutMS."""
    expects_timeout = any(
        isinstance(o.get("expectError"), Mapping) and o["expectError"].get("isTimeoutError")
        for o in _operations(test)
    )
    return expects_timeout and not _uses_timeout_ms(file, test)


#: Spec test data that cannot pass as written, whichever client runs.
def _logged_pool_option_never_given(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """An expected "Connection pool created" message carries a waitQueue option that no client
    of the test was given (the CMAP logging file's waitQueueMultiple case sets waitQueueSize)."""
    given = {key for spec in _entity_specs(file, test, "client") for key in spec.get("uriOptions", {})}
    for expected in test.get("expectLogMessages", []):
        for message in expected.get("messages", []) if isinstance(expected, Mapping) else []:
            data = message.get("data", {}) if isinstance(message, Mapping) else {}
            if data.get("message") == "Connection pool created" and any(
                key.startswith("waitQueue") and key not in given for key in data
            ):
                return True
    return False


SPEC_DATA_QUIRKS: dict[str, Predicate] = {
    "spec data: the expected 'Connection pool created' message carries a waitQueue option the "
    "client was not given (the waitQueueMultiple case sets waitQueueSize)": _logged_pool_option_never_given,
    "spec data: the test expects a timeout error but sets no timeoutMS anywhere (a second test "
    "of the same name in the CSOT runCursorCommand file; the first one, which sets it, runs)": _timeout_expected_without_timeout_ms,
}


#: Gaps of this runner, whichever client runs.
RUNNER_GAPS: dict[str, Predicate] = {}


def gap_reasons(file: Mapping[str, Any], test: Mapping[str, Any], *, driver: str) -> list[str]:
    """The reasons of every gap that applies to ``test`` run with ``driver``."""
    gaps = dict(SIMULATOR_GAPS)
    gaps.update(SPEC_DATA_QUIRKS)
    gaps.update(RUNNER_GAPS)
    gaps.update(
        OUR_CLIENT_GAPS
        if driver == "sansio" or driver.startswith("sansio-")
        else PYMONGO_DIFFERENCES
        if driver == "pymongo"
        else {}
    )
    return [reason for reason, applies in gaps.items() if applies(file, test)]


# -- GridFS (kept apart: bucket operations) --------------------------------------------------------


def _download_by_id_events_checked(file: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A bucket ``download`` (by id) in a test that checks the commands sent."""
    return "expectEvents" in test and any(o.get("name") == "download" for o in _operations(test))


PYMONGO_DIFFERENCES[
    "PyMongo's GridFS finds a file by {_id: {$eq: id}}, where the GridFS tests of retryable "
    "reads expect the find command's filter {_id: id}"
] = _download_by_id_events_checked
