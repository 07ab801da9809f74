"""The retry decisions (:mod:`mongo_sansio.retry`, Retryable Reads and Retryable Writes specs):
which errors a read retries, which write errors the driver labels RetryableWriteError (network
errors always; codes and writeConcernError codes only for servers before 4.4, wire 9), the
first error kept when the retry says NoWritesPerformed, one retry without a client-side
timeout, and code 20's advice."""

from __future__ import annotations

import pytest

from mongo_sansio.errors import (
    MongoError,
    NetworkError,
    NetworkTimeout,
    NotPrimaryError,
    ServerError,
    WriteConcernError,
    server_error_from_reply,
)
from mongo_sansio.retry import (
    LABEL_WIRE_VERSION,
    NO_WRITES_PERFORMED,
    RETRYABLE_READ_CODES,
    RETRYABLE_WRITE_CODES,
    RETRYABLE_WRITE_ERROR,
    error_to_raise,
    explain_unsupported,
    is_retryable_read_error,
    is_retryable_write_error,
    label_write_error,
)

# The specs' lists, written out: HostUnreachable, HostNotFound, NetworkTimeout,
# ShutdownInProgress, PrimarySteppedDown, ExceededTimeLimit, SocketException, NotWritablePrimary,
# InterruptedAtShutdown, InterruptedDueToReplStateChange, NotPrimaryNoSecondaryOk,
# NotPrimaryOrSecondary; reads also ReadConcernMajorityNotAvailableYet (134).
SPEC_WRITE_CODES = {6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436}
SPEC_READ_CODES = SPEC_WRITE_CODES | {134}


def reply_error(code: int, *labels: str) -> ServerError:
    reply = {"ok": 0, "code": code, "errmsg": "failed", "errorLabels": list(labels)}
    return server_error_from_reply(reply)


def test_code_lists_are_the_specs() -> None:
    assert set(RETRYABLE_WRITE_CODES) == SPEC_WRITE_CODES
    assert set(RETRYABLE_READ_CODES) == SPEC_READ_CODES


# -- reads ------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(SPEC_READ_CODES))
def test_reads_retry_the_specs_codes(code: int) -> None:
    assert is_retryable_read_error(reply_error(code))


@pytest.mark.parametrize("code", [2, 11000, 50, 112, 251, 43, 13])
def test_reads_do_not_retry_other_codes(code: int) -> None:
    assert not is_retryable_read_error(reply_error(code))


def test_reads_retry_network_errors_and_timeouts_only_among_local_errors() -> None:
    assert is_retryable_read_error(NetworkError("reset"))
    assert is_retryable_read_error(NetworkTimeout("timed out"))
    assert not is_retryable_read_error(MongoError("something else"))
    assert not is_retryable_read_error(ValueError("not ours"))


def test_reads_retry_a_pool_cleared_error() -> None:
    # the retryable reads spec lists PoolClearedError: a paused pool at check-out, or the
    # connection in use interrupted by a clear (interruptInUseConnections)
    from mongo_sansio.cmap.errors import PoolClearedError

    assert is_retryable_read_error(PoolClearedError("a:27017"))
    assert is_retryable_read_error(PoolClearedError("a:27017", interrupted=True))


def test_a_read_error_label_alone_does_not_make_a_read_retryable() -> None:
    assert not is_retryable_read_error(reply_error(2, RETRYABLE_WRITE_ERROR))


# -- write labels -----------------------------------------------------------------------------


@pytest.mark.parametrize("wire", [6, 8, 9, 21])
def test_network_errors_are_labelled_on_every_wire_version(wire: int) -> None:
    error = NetworkError("reset")
    label_write_error(error, wire)
    assert is_retryable_write_error(error)


@pytest.mark.parametrize("code", sorted(SPEC_WRITE_CODES))
def test_before_4_4_the_driver_labels_retryable_codes(code: int) -> None:
    old = reply_error(code)
    label_write_error(old, LABEL_WIRE_VERSION - 1)
    assert is_retryable_write_error(old)
    new = reply_error(code)
    label_write_error(new, LABEL_WIRE_VERSION)
    assert not is_retryable_write_error(new)  # from 4.4 only the server labels


def test_read_only_codes_are_not_write_retryable() -> None:
    error = reply_error(134)
    label_write_error(error, 8)
    assert not is_retryable_write_error(error)


def test_from_4_4_the_servers_label_is_the_only_word() -> None:
    labelled = reply_error(2, RETRYABLE_WRITE_ERROR)
    label_write_error(labelled, 21)
    assert is_retryable_write_error(labelled)


def test_write_concern_error_codes_are_labelled_before_4_4() -> None:
    details = {"ok": 1, "writeConcernError": {"code": 91, "errmsg": "shutting down"}}
    old = WriteConcernError("shutting down", code=91, details=details)
    label_write_error(old, 8)
    assert is_retryable_write_error(old)
    other = ServerError("x", code=2, details={"writeConcernError": {"code": 189}})
    label_write_error(other, 8)
    assert is_retryable_write_error(other)
    unrelated = ServerError("x", code=2, details={"writeConcernError": {"code": 64}})
    label_write_error(unrelated, 8)
    assert not is_retryable_write_error(unrelated)
    modern = WriteConcernError("shutting down", code=91, details=details)
    label_write_error(modern, 9)
    assert not is_retryable_write_error(modern)


def test_not_primary_errors_are_write_retryable_before_4_4() -> None:
    error = reply_error(10107)
    assert isinstance(error, NotPrimaryError)
    label_write_error(error, 7)
    assert error.has_error_label(RETRYABLE_WRITE_ERROR)


# -- which error is raised --------------------------------------------------------------------


def test_no_writes_performed_keeps_the_first_error() -> None:
    first = reply_error(91, RETRYABLE_WRITE_ERROR)
    second = reply_error(10107, RETRYABLE_WRITE_ERROR, NO_WRITES_PERFORMED)
    assert error_to_raise(first, second) is first
    third = reply_error(10107, RETRYABLE_WRITE_ERROR)
    assert error_to_raise(first, third) is third


# -- code 20 ----------------------------------------------------------------------------------


def test_code_20_asks_for_retry_writes_false() -> None:
    original = ServerError(
        "Transaction numbers are only allowed on a replica set member or mongos",
        code=20,
        code_name="IllegalOperation",
        details={"ok": 0, "code": 20},
    )
    raised = explain_unsupported(original)
    assert isinstance(raised, ServerError) and raised is not original
    assert raised.errmsg == (
        "This MongoDB deployment does not support retryable writes. Please add "
        "retryWrites=false to your connection string."
    )
    assert raised.code == 20 and raised.code_name == "IllegalOperation"
    assert raised.details == original.details and raised.__cause__ is original


def test_other_code_20_errors_and_other_codes_are_unchanged() -> None:
    other_20 = ServerError("something else is illegal", code=20)
    assert explain_unsupported(other_20) is other_20
    other = reply_error(2)
    assert explain_unsupported(other) is other
    network = NetworkError("reset")
    assert explain_unsupported(network) is network
