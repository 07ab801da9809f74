"""Application error classification (mongo_sansio.sdam.errors)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from mongo_sansio.bson import ObjectId
from mongo_sansio.errors import LocalProtocolError
from mongo_sansio.sdam import (
    ApplicationError,
    CancelCheck,
    ClearPool,
    ErrorKind,
    ErrorPhase,
    MarkUnknown,
    RequestImmediateCheck,
    ServerDescription,
    TopologyType,
    TopologyVersion,
    classify_application_error,
    is_not_writable_primary,
    is_recovering,
    is_shutdown,
    is_state_change_error,
)
from mongo_sansio.sdam.errors import error_code_and_message

A = ("a", 27017)
PID = ObjectId("000000000000000000000001")
SERVICE = ObjectId("0000000000000000000000ff")
RS = TopologyType.REPLICA_SET_WITH_PRIMARY
LB = TopologyType.LOAD_BALANCED


def primary(counter: int | None = None) -> ServerDescription:
    reply: dict[str, Any] = {
        "ok": 1,
        "isWritablePrimary": True,
        "setName": "rs",
        "maxWireVersion": 21,
    }
    if counter is not None:
        reply["topologyVersion"] = {"processId": PID, "counter": counter}
    return ServerDescription.from_hello(A, reply, round_trip_time=0.01, now=1.0)


def classify(
    error: ApplicationError,
    *,
    server: ServerDescription | None = None,
    generation: int = 0,
    topology_type: TopologyType = RS,
) -> tuple[Any, ...]:
    return classify_application_error(
        error,
        topology_type=topology_type,
        server=server if server is not None else primary(),
        pool_generation=generation,
    )


def command(code: int | None = None, errmsg: str = "", **extra: Any) -> ApplicationError:
    reply: dict[str, Any] = {"ok": 0, "errmsg": errmsg, **extra}
    if code is not None:
        reply["code"] = code
    return ApplicationError(address=A, kind=ErrorKind.COMMAND, reply=reply, max_wire_version=21)


def kinds(actions: tuple[Any, ...]) -> list[type]:
    return [type(a) for a in actions]


@pytest.mark.parametrize(
    ("code", "message", "recovering", "not_primary"),
    [
        (11600, "", True, False),
        (11602, "", True, False),
        (13436, "", True, False),
        (189, "", True, False),
        (91, "", True, False),
        (10107, "", False, True),
        (13435, "", False, True),
        (10058, "", False, True),
        (1, "not master", False, False),  # a code is decisive: the message is not checked
        (None, "not master", False, True),
        (None, "not master or secondary", True, False),
        (None, "node is recovering", True, False),
        (None, "something else", False, False),
    ],
)
def test_state_change_detection(
    code: int | None, message: str, recovering: bool, not_primary: bool
) -> None:
    assert is_recovering(code, message) is recovering
    assert is_not_writable_primary(code, message) is not_primary
    assert is_state_change_error(code, message) is (recovering or not_primary)


def test_shutdown_codes() -> None:
    assert is_shutdown(91) and is_shutdown(11600)
    assert not is_shutdown(189) and not is_shutdown(None)


def test_code_and_message_sources() -> None:
    assert error_code_and_message({"ok": 0, "code": 91, "errmsg": "x"}) == (91, "x")
    assert error_code_and_message({"ok": 0, "$err": "not master"}) == (None, "not master")
    wce = {"ok": 1, "writeConcernError": {"code": 10107, "errmsg": "wce"}}
    assert error_code_and_message(wce) == (10107, "wce")
    assert error_code_and_message({"ok": 1}) == (None, "")
    assert error_code_and_message({"ok": 0, "code": "91", "errmsg": 3}) == (None, "")
    assert error_code_and_message(None) == (None, "")


def test_not_writable_primary_marks_unknown_and_requests_a_check() -> None:
    actions = classify(command(10107, "not primary"))
    assert kinds(actions) == [MarkUnknown, RequestImmediateCheck]
    assert "not primary" in actions[0].error and "10107" in actions[0].error


def test_shutdown_also_clears_the_pool() -> None:
    assert kinds(classify(command(91))) == [MarkUnknown, ClearPool, RequestImmediateCheck]


def test_servers_before_4_2_clear_the_pool() -> None:
    error = command(10107)
    old = ApplicationError(address=A, kind=error.kind, reply=error.reply, max_wire_version=7)
    assert kinds(classify(old)) == [MarkUnknown, ClearPool, RequestImmediateCheck]


def test_write_concern_errors_are_checked() -> None:
    reply = {"ok": 1, "writeConcernError": {"code": 189, "errmsg": "stepped down"}}
    error = ApplicationError(address=A, kind=ErrorKind.COMMAND, reply=reply, max_wire_version=21)
    assert kinds(classify(error)) == [MarkUnknown, RequestImmediateCheck]


def test_other_command_errors_change_nothing() -> None:
    assert classify(command(11000, "duplicate key")) == ()
    assert classify(command(6, "HostUnreachable")) == ()


def test_topology_version_is_recorded_and_staleness_checked() -> None:
    tv = {"processId": PID, "counter": 5}
    actions = classify(command(10107, topologyVersion=tv), server=primary(4))
    assert actions[0].topology_version == TopologyVersion(process_id=PID, counter=5)
    assert classify(command(10107, topologyVersion=tv), server=primary(5)) == ()
    assert classify(command(10107, topologyVersion=tv), server=primary(6)) == ()
    # a malformed topologyVersion counts as absent
    assert classify(command(10107, topologyVersion={"counter": "x"}), server=primary(6)) != ()


def test_stale_generation_changes_nothing() -> None:
    error = ApplicationError(address=A, kind=ErrorKind.NETWORK, generation=1)
    assert classify(error, generation=2) == ()
    assert kinds(classify(error, generation=1)) == [MarkUnknown, ClearPool, CancelCheck]


@pytest.mark.parametrize(
    ("kind", "phase", "expected"),
    [
        (ErrorKind.NETWORK, ErrorPhase.ESTABLISHED, [MarkUnknown, ClearPool, CancelCheck]),
        (ErrorKind.TIMEOUT, ErrorPhase.ESTABLISHED, []),
        # without the pool's backpressure labels (a name that does not resolve, a certificate
        # that does not verify): the SDAM spec's "MongoDB Handshake errors" mark it Unknown
        (ErrorKind.NETWORK, ErrorPhase.CONNECTING, [MarkUnknown, ClearPool, CancelCheck]),
        (ErrorKind.TIMEOUT, ErrorPhase.CONNECTING, [MarkUnknown, ClearPool, CancelCheck]),
        (ErrorKind.NETWORK, ErrorPhase.AUTHENTICATING, [MarkUnknown, ClearPool, CancelCheck]),
        (ErrorKind.TIMEOUT, ErrorPhase.AUTHENTICATING, [MarkUnknown, ClearPool, CancelCheck]),
        (ErrorKind.COMMAND, ErrorPhase.AUTHENTICATING, [MarkUnknown, ClearPool, CancelCheck]),
        (ErrorKind.COMMAND, ErrorPhase.CONNECTING, [MarkUnknown, ClearPool, CancelCheck]),
        (ErrorKind.COMMAND, ErrorPhase.ESTABLISHED, []),
    ],
)
def test_network_and_handshake_errors(
    kind: ErrorKind, phase: ErrorPhase, expected: list[type]
) -> None:
    reply = {"ok": 0, "code": 18, "errmsg": "auth failed"} if kind is ErrorKind.COMMAND else None
    error = ApplicationError(address=A, kind=kind, phase=phase, reply=reply, message="reset")
    actions = classify(error)
    assert kinds(actions) == expected
    if actions:
        assert actions[1] == ClearPool(address=A)


def test_system_overloaded_errors_are_backpressure() -> None:
    labelled = ApplicationError(
        address=A,
        kind=ErrorKind.NETWORK,
        phase=ErrorPhase.AUTHENTICATING,
        error_labels={"SystemOverloadedError", "RetryableError"},
    )
    assert classify(labelled) == ()
    from_reply = command(18, errorLabels=["SystemOverloadedError"])
    auth = ApplicationError(
        address=A, kind=ErrorKind.COMMAND, phase=ErrorPhase.AUTHENTICATING, reply=from_reply.reply
    )
    assert classify(auth) == ()


@pytest.mark.parametrize("kind", [ErrorKind.NETWORK, ErrorKind.TIMEOUT])
def test_labelled_connection_establishment_errors_change_nothing(kind: ErrorKind) -> None:
    """The pool labels network errors and timeouts of connecting and hello (CMAP spec,
    "backpressure-enabled"); SDAM then neither marks the server Unknown nor clears its pool."""
    labelled = ApplicationError(
        address=A,
        kind=kind,
        phase=ErrorPhase.CONNECTING,
        error_labels={"SystemOverloadedError", "RetryableError"},
    )
    assert classify(labelled) == ()
    unlabelled = attrs.evolve(labelled, error_labels=frozenset())
    assert kinds(classify(unlabelled)) == [MarkUnknown, ClearPool, CancelCheck]


def test_load_balanced_never_marks_unknown() -> None:
    lb_server = ServerDescription.unknown(A)
    error = ApplicationError(
        address=A, kind=ErrorKind.COMMAND, reply={"ok": 0, "code": 91}, service_id=SERVICE
    )
    actions = classify(error, server=lb_server, topology_type=LB)
    assert actions == (ClearPool(address=A, service_id=SERVICE),)
    network = ApplicationError(address=A, kind=ErrorKind.NETWORK, service_id=SERVICE)
    assert classify(network, server=lb_server, topology_type=LB) == (
        ClearPool(address=A, service_id=SERVICE),
    )
    before_hello = ApplicationError(
        address=A, kind=ErrorKind.COMMAND, phase=ErrorPhase.CONNECTING, reply={"ok": 0}
    )
    assert classify(before_hello, server=lb_server, topology_type=LB) == ()
    not_primary = ApplicationError(
        address=A, kind=ErrorKind.COMMAND, reply={"ok": 0, "code": 10107}, service_id=SERVICE
    )
    assert classify(not_primary, server=lb_server, topology_type=LB) == ()


def test_describe_mentions_the_address() -> None:
    error = ApplicationError(address=("::1", 1), kind=ErrorKind.TIMEOUT, message="slow")
    assert error.describe() == "network timeout after the handshake on [::1]:1: slow"


@pytest.mark.parametrize(
    "fields",
    [
        {"address": "a:27017"},
        {"kind": "network"},
        {"phase": "connecting"},
        {"generation": "1"},
        {"max_wire_version": True},
        {"reply": [1]},
    ],
)
def test_application_errors_are_validated_when_built(fields: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"address": A, "kind": ErrorKind.NETWORK, **fields}
    with pytest.raises(LocalProtocolError):
        ApplicationError(**arguments)
