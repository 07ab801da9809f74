"""The CMAP pool machine: one test per transition, then a hypothesis state machine.

The state machine plays an adapter that opens, fails, checks in and cancels at random, with a
clock that only moves forward, and checks the pool's books after every step.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.cmap import (
    CHECK_OUT_REFUSALS,
    TRANSITIONS,
    CheckOutFailedReason,
    CheckoutPurpose,
    CloseConnection,
    ConnectionCheckedIn,
    ConnectionCheckOutStarted,
    ConnectionClosed,
    ConnectionClosedReason,
    ConnectionCreated,
    ConnectionReady,
    ConnectionStateError,
    FailWaiter,
    GiveConnection,
    InterruptConnection,
    OpenConnection,
    Output,
    Pool,
    PoolClearedError,
    PoolClosed,
    PoolClosedError,
    PoolCreated,
    PooledConnection,
    PoolInput,
    PoolMisuseError,
    PoolOptions,
    PoolReady,
    PoolState,
    UnknownConnectionError,
    UnknownWaiterError,
    WaitQueueTimeoutError,
)
from mongo_sansio.errors import ConfigurationError, LocalProtocolError

ADDRESS = "db.example:27017"
SERVICE_A = ObjectId("0123456789abcdef01234567")
SERVICE_B = ObjectId("89abcdef0123456789abcdef")


def new_pool(**options: Any) -> Pool:
    return Pool(ADDRESS, PoolOptions(**options))


def ready_pool(**options: Any) -> Pool:
    pool = new_pool(**options)
    pool.ready(0.0)
    pool.drain_outputs()
    return pool


def types(outputs: list[Output]) -> list[str]:
    return [type(o).__name__ for o in outputs]


def one(outputs: list[Output], kind: type[Any]) -> Any:
    found = [o for o in outputs if isinstance(o, kind)]
    assert len(found) == 1, f"expected one {kind.__name__} in {types(outputs)}"
    return found[0]


def opened(outputs: list[Output]) -> list[int]:
    return [o.connection_id for o in outputs if isinstance(o, OpenConnection)]


def check_out_new(pool: Pool, now: float = 0.0, **kwargs: Any) -> PooledConnection:
    """Check out, completing the handshake of the connection the pool opens for it."""
    waiter = pool.check_out(now, **kwargs)
    out = pool.drain_outputs()
    (connection_id,) = opened(out)
    pool.connection_established(connection_id, now)
    give = one(pool.drain_outputs(), GiveConnection)
    assert give.waiter == waiter
    handle: PooledConnection = give.connection
    return handle


# -- tables, creation, options ------------------------------------------------------------------


def test_transition_table_covers_every_state_and_input() -> None:
    assert set(TRANSITIONS) == {(s, i) for s in PoolState for i in PoolInput}
    assert set(CHECK_OUT_REFUSALS) == set(PoolState)
    assert all(TRANSITIONS[(PoolState.CLOSED, i)] is PoolState.CLOSED for i in PoolInput)


def test_created_paused_with_non_default_options() -> None:
    pool = new_pool(max_pool_size=5, wait_queue_timeout_ms=100)
    (created,) = pool.drain_outputs()
    assert isinstance(created, PoolCreated)
    assert dict(created.options) == {"maxPoolSize": 5, "waitQueueTimeoutMS": 100}
    assert pool.state is PoolState.PAUSED and pool.generation == 0
    assert pool.next_deadline() is None and pool.next_output() is None


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"max_pool_size": -1}, "maxPoolSize"),
        ({"max_pool_size": 2, "min_pool_size": 3}, "minPoolSize"),
        ({"max_connecting": 0}, "maxConnecting"),
        ({"max_idle_time_ms": -5}, "maxIdleTimeMS"),
        ({"wait_queue_timeout_ms": math.nan}, "waitQueueTimeoutMS"),
        ({"max_pool_size": True}, "maxPoolSize"),
        ({"load_balanced": 1}, "loadBalanced"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], name: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        PoolOptions(**options)


def test_options_from_spec_names() -> None:
    assert PoolOptions.from_mapping({"maxPoolSize": 0, "minPoolSize": 4}).min_pool_size == 4
    with pytest.raises(ConfigurationError, match="waitQueueLength"):
        PoolOptions.from_mapping({"waitQueueLength": 3})
    # the legacy queue bounds are taken and reported (PoolCreated, its log message), not enforced
    legacy = PoolOptions.from_mapping({"waitQueueSize": 3, "waitQueueMultiple": 2})
    assert legacy.non_default() == {"waitQueueSize": 3, "waitQueueMultiple": 2}
    with pytest.raises(ConfigurationError, match="waitQueueSize"):
        PoolOptions.from_mapping({"waitQueueSize": -1})
    with pytest.raises(ConfigurationError):
        Pool("", PoolOptions())


def test_events_are_validated_frozen_records() -> None:
    with pytest.raises(ValueError):
        ConnectionReady(address=ADDRESS, connection_id=1, duration=-1.0)
    with pytest.raises(ValueError):
        ConnectionCreated(address=ADDRESS, connection_id=0)
    with pytest.raises(TypeError):
        PoolReady(address="")
    event = ConnectionCheckedIn(address=ADDRESS, connection_id=3)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.connection_id = 4  # type: ignore[misc]


# -- ready ----------------------------------------------------------------------------------------


def test_ready_emits_once_and_never_reopens_a_closed_pool() -> None:
    pool = new_pool()
    pool.drain_outputs()
    pool.ready(0.0)
    assert types(pool.drain_outputs()) == ["PoolReady"]
    pool.ready(1.0)
    assert pool.drain_outputs() == []
    pool.close(2.0)
    pool.drain_outputs()
    pool.ready(3.0)
    assert pool.drain_outputs() == [] and pool.state is PoolState.CLOSED


# -- check-out ------------------------------------------------------------------------------------


def _quiet_pool_with_one_available(**options: Any) -> tuple[Pool, PooledConnection]:
    pool = Pool(ADDRESS, PoolOptions(**options), events=False)
    pool.ready(0.0)
    handle = check_out_new(pool, 0.0)
    pool.check_in(handle, 1.0)
    assert pool.drain_outputs() == []
    return pool, handle


def test_check_out_now_hands_over_as_check_out_and_its_give_connection_do() -> None:
    pool, first = _quiet_pool_with_one_available()
    fast = pool.check_out_now(2.0)
    assert fast is not None and pool.drain_outputs() == []  # no waiter, no GiveConnection
    assert fast.connection_id == first.connection_id and fast.waiter > first.waiter
    assert pool.in_use_connection_count == 1 and pool.available_connection_count == 0
    assert pool.check_out_now(2.0) is None  # nothing else available: nothing changes
    assert pool.in_use_connection_count == 1
    pool.check_in(fast, 3.0)
    with pytest.raises(ConnectionStateError):
        pool.check_in(fast, 3.0)  # the handle's books are check_out's
    slow_pool, _ = _quiet_pool_with_one_available()
    waiter = slow_pool.check_out(2.0)
    slow = one(slow_pool.drain_outputs(), GiveConnection).connection
    assert attrs.evolve(fast, waiter=waiter, pool_token=slow.pool_token) == slow


@pytest.mark.parametrize(
    "situation", ["events", "queued", "paused", "stale", "idle", "closed"]
)
def test_check_out_now_declines_whatever_check_out_would_wait_for_or_publish(
    situation: str,
) -> None:
    if situation == "events":
        pool = ready_pool()
        pool.check_in(check_out_new(pool, 0.0), 1.0)
    else:
        pool, _ = _quiet_pool_with_one_available(max_idle_time_ms=500, max_pool_size=1)
    if situation == "queued":
        held = pool.check_out_now(1.0)
        assert held is not None
        pool.check_out(1.0)  # waits: the pool is full
        pool.check_in(held, 1.0)  # ... and is served at once
        pool.drain_outputs()
        pool.check_out(1.0)  # queued: the pool is full again
    elif situation == "paused":
        pool.clear(1.0)
    elif situation == "stale":
        pool.clear(1.0)
        pool.ready(1.0)
    elif situation == "closed":
        pool.close(1.0)
    pool.drain_outputs()
    before = (pool.in_use_connection_count, pool.available_connection_count)
    now = 2.0 if situation == "idle" else 1.2
    assert pool.check_out_now(now) is None
    assert (pool.in_use_connection_count, pool.available_connection_count) == before
    assert pool.drain_outputs() == []
    with pytest.raises(PoolMisuseError):
        pool.check_out_now(math.nan)


def test_check_out_from_paused_pool_fails_retryably() -> None:
    pool = new_pool()
    pool.drain_outputs()
    waiter = pool.check_out(1.0)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionCheckOutStarted", "ConnectionCheckOutFailed", "FailWaiter"]
    assert out[1].reason is CheckOutFailedReason.CONNECTION_ERROR and out[1].duration == 0
    error = out[2].error
    assert out[2].waiter == waiter and isinstance(error, PoolClearedError)
    assert error.retryable and error.network_error and not error.timeout
    assert error.has_error_label("RetryableWriteError") and error.address == ADDRESS


def test_paused_error_names_the_cause_of_the_clear() -> None:
    pool = ready_pool()
    pool.clear(0.0, cause=OSError("connection reset"))
    pool.drain_outputs()
    pool.check_out(0.0)
    error = one(pool.drain_outputs(), FailWaiter).error
    assert "was cleared because another operation failed with: connection reset" in str(error)
    assert isinstance(error.cause, OSError)


def test_check_out_from_closed_pool() -> None:
    pool = ready_pool()
    pool.close(0.0)
    pool.drain_outputs()
    pool.check_out(0.5)
    out = pool.drain_outputs()
    assert out[1].reason is CheckOutFailedReason.POOL_CLOSED
    assert isinstance(out[2].error, PoolClosedError)
    assert str(out[2].error) == "Attempted to check out a connection from closed connection pool"


def test_check_out_opens_then_gives_with_durations() -> None:
    pool = ready_pool()
    waiter = pool.check_out(1.0)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionCheckOutStarted", "ConnectionCreated", "OpenConnection"]
    assert out[1].connection_id == 1 and pool.pending_connection_count == 1
    pool.connection_established(1, 1.25)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionReady", "ConnectionCheckedOut", "GiveConnection"]
    assert out[0].duration == 0.25 and out[1].duration == 0.25
    assert out[2].waiter == waiter and out[2].connection.connection_id == 1
    assert pool.in_use_connection_count == 1 and pool.total_connection_count == 1


def test_check_in_then_reuse_most_recent_connection() -> None:
    pool = ready_pool()
    first = check_out_new(pool)
    second = check_out_new(pool)
    pool.check_in(first, 1.0)
    pool.check_in(second, 2.0)
    assert types(pool.drain_outputs()) == ["ConnectionCheckedIn", "ConnectionCheckedIn"]
    assert pool.available_connection_count == 2
    pool.check_out(3.0)
    give = one(pool.drain_outputs(), GiveConnection)
    assert give.connection.connection_id == second.connection_id  # LIFO keeps idle ones idle


def test_max_pool_size_queues_fifo_and_check_in_serves_the_head() -> None:
    pool = ready_pool(max_pool_size=1)
    held = check_out_new(pool)
    first = pool.check_out(1.0)
    second = pool.check_out(2.0)
    assert opened(pool.drain_outputs()) == [] and pool.wait_queue_length == 2
    pool.check_in(held, 3.0)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionCheckedIn", "ConnectionCheckedOut", "GiveConnection"]
    assert out[2].waiter == first and out[1].duration == 2.0
    pool.check_in(out[2].connection, 4.0)
    assert one(pool.drain_outputs(), GiveConnection).waiter == second


def test_max_connecting_limits_pending_connections() -> None:
    pool = ready_pool(max_connecting=2)
    for _ in range(3):
        pool.check_out(0.0)
    assert opened(pool.drain_outputs()) == [1, 2] and pool.wait_queue_length == 1
    pool.connection_established(1, 0.5)
    out = pool.drain_outputs()
    assert types(out) == [
        "ConnectionReady",
        "ConnectionCheckedOut",
        "GiveConnection",
        "ConnectionCreated",
        "OpenConnection",
    ]


def test_connection_failure_fails_its_waiter_with_the_error() -> None:
    pool = ready_pool()
    waiter = pool.check_out(0.0)
    pool.drain_outputs()
    error = OSError("refused")
    pool.connection_failed(1, 0.1, error)
    out = pool.drain_outputs()
    assert types(out) == [
        "ConnectionClosed",
        "CloseConnection",
        "ConnectionCheckOutFailed",
        "FailWaiter",
    ]
    assert out[0].reason is ConnectionClosedReason.ERROR and out[0].error is error
    assert out[2].reason is CheckOutFailedReason.CONNECTION_ERROR
    assert out[3].waiter == waiter and out[3].error is error
    assert pool.total_connection_count == 0


# -- check-in -------------------------------------------------------------------------------------


def test_check_in_with_error_closes() -> None:
    pool = ready_pool()
    handle = check_out_new(pool)
    pool.check_in(handle, 1.0, error=TimeoutError("socket timed out"))
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionCheckedIn", "ConnectionClosed", "CloseConnection"]
    assert out[1].reason is ConnectionClosedReason.ERROR and pool.total_connection_count == 0


def test_misuse_raises_and_changes_nothing() -> None:
    pool = ready_pool()
    handle = check_out_new(pool)
    other = ready_pool()
    foreign = check_out_new(other)
    pool.check_in(handle, 1.0)
    pool.drain_outputs()
    with pytest.raises(ConnectionStateError):
        pool.check_in(handle, 2.0)  # twice
    with pytest.raises(UnknownConnectionError):
        pool.check_in(foreign, 2.0)  # another pool's, though the id exists here too
    again = pool.check_out(3.0)
    assert one(pool.drain_outputs(), GiveConnection).waiter == again
    with pytest.raises(ConnectionStateError):
        pool.check_in(handle, 4.0)  # the old holder's handle: same id, another check-out
    with pytest.raises(UnknownConnectionError):
        pool.connection_established(99, 4.0)
    with pytest.raises(ConnectionStateError):
        pool.connection_established(1, 4.0)  # established and in use already
    with pytest.raises(UnknownWaiterError):
        pool.cancel(1000, 4.0)
    with pytest.raises(PoolMisuseError):
        pool.check_out(math.nan)
    with pytest.raises(PoolMisuseError):
        pool.check_out(4.0, timeout=-1)
    with pytest.raises(PoolMisuseError):
        pool.clear(4.0, service_id=SERVICE_A)  # not load-balanced
    assert isinstance(PoolMisuseError("x"), LocalProtocolError)
    assert pool.drain_outputs() == [] and pool.in_use_connection_count == 1


# -- timeouts -------------------------------------------------------------------------------------


def test_wait_queue_timeout() -> None:
    pool = ready_pool(max_pool_size=1, wait_queue_timeout_ms=50)
    check_out_new(pool)
    waiter = pool.check_out(1.0)
    pool.drain_outputs()
    assert pool.next_deadline() == pytest.approx(1.05)
    pool.handle_timeout(1.04)
    assert pool.drain_outputs() == []
    pool.handle_timeout(1.05)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionCheckOutFailed", "FailWaiter"]
    assert out[0].reason is CheckOutFailedReason.TIMEOUT and out[0].duration == pytest.approx(0.05)
    assert out[1].waiter == waiter and isinstance(out[1].error, WaitQueueTimeoutError)
    assert out[1].error.timeout and pool.next_deadline() is None


def test_per_request_timeout_overrides_the_option() -> None:
    pool = ready_pool(max_pool_size=1, wait_queue_timeout_ms=50)
    check_out_new(pool)
    pool.check_out(1.0, timeout=2.0)
    assert pool.next_deadline() == 3.0


def test_establishment_is_not_limited_by_the_wait_queue_timeout() -> None:
    pool = ready_pool(wait_queue_timeout_ms=50)
    pool.check_out(0.0)
    pool.drain_outputs()
    assert pool.next_deadline() is None  # it left the queue to open its own connection


def test_an_operation_timeout_bounds_the_opening_of_its_connection() -> None:
    """Client-side operations timeout: an explicit check-out timeout bounds the establishment
    of the connection opened for the request; at the deadline the request fails (a timeout
    error naming the establishment) and the connection goes on opening for the pool, then
    serves the next request."""
    pool = ready_pool(wait_queue_timeout_ms=50)
    waiter = pool.check_out(0.0, timeout=2.0)
    assert opened(pool.drain_outputs()) == [1]
    assert pool.next_deadline() == 2.0
    pool.handle_timeout(1.99)
    assert pool.drain_outputs() == []
    pool.handle_timeout(2.0)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionCheckOutFailed", "FailWaiter"]
    assert out[0].reason is CheckOutFailedReason.TIMEOUT and out[0].duration == 2.0
    assert out[1].waiter == waiter and isinstance(out[1].error, WaitQueueTimeoutError)
    assert out[1].error.timeout and "being established" in str(out[1].error)
    assert pool.next_deadline() is None and pool.total_connection_count == 1
    pool.connection_established(1, 6.0)
    assert types(pool.drain_outputs()) == ["ConnectionReady"]
    assert pool.available_connection_count == 1
    later = pool.check_out(7.0, timeout=1.0)
    give = one(pool.drain_outputs(), GiveConnection)
    assert give.waiter == later and give.connection.connection_id == 1


def test_idle_connections_close_on_timeout_and_on_check_out() -> None:
    pool = ready_pool(max_idle_time_ms=1000)
    first, second = check_out_new(pool), check_out_new(pool)
    pool.check_in(first, 1.0)
    pool.check_in(second, 1.5)
    pool.drain_outputs()
    assert pool.next_deadline() == 2.0
    pool.handle_timeout(2.0)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionClosed", "CloseConnection"]
    assert out[0].reason is ConnectionClosedReason.IDLE and out[0].connection_id == 1
    assert pool.next_deadline() == 2.5
    pool.check_out(2.7)  # meets connection 2, perished: closes it and opens a new one
    out = pool.drain_outputs()
    assert [o.reason for o in out if isinstance(o, ConnectionClosed)] == ["idle"]
    assert opened(out) == [3]


# -- minPoolSize ----------------------------------------------------------------------------------


def test_min_pool_size_is_kept_while_ready_only() -> None:
    pool = new_pool(min_pool_size=3, max_connecting=2)
    pool.drain_outputs()
    assert pool.next_deadline() is None
    pool.ready(0.0)
    out = pool.drain_outputs()
    assert types(out)[0] == "PoolReady" and opened(out) == [1, 2]
    pool.connection_established(1, 0.1)
    assert opened(pool.drain_outputs()) == [3]
    pool.connection_established(2, 0.1)
    pool.connection_established(3, 0.1)
    assert pool.available_connection_count == 3 and pool.drain_outputs()[-1].connection_id == 3
    pool.clear(0.2)
    pool.handle_timeout(5.0)
    assert opened(pool.drain_outputs()) == [] and pool.total_connection_count == 0


def test_failed_background_connection_backs_off() -> None:
    pool = ready_pool(min_pool_size=1, populate_backoff_ms=500)
    pool.drain_outputs()
    assert opened(pool.drain_outputs()) == []
    pool = new_pool(min_pool_size=1, populate_backoff_ms=500)
    pool.ready(0.0)
    assert opened(pool.drain_outputs()) == [1]
    pool.connection_failed(1, 1.0, OSError("refused"))
    out = pool.drain_outputs()
    assert opened(out) == [] and types(out) == ["ConnectionClosed", "CloseConnection"]
    assert pool.next_deadline() == 1.5
    pool.handle_timeout(1.5)
    assert opened(pool.drain_outputs()) == [2]


def test_waiter_claims_a_background_connection_instead_of_opening_another() -> None:
    pool = ready_pool(min_pool_size=1, wait_queue_timeout_ms=100)
    waiter = pool.check_out(0.0)
    out = pool.drain_outputs()
    assert opened(out) == [] and pool.total_connection_count == 1
    assert pool.wait_queue_length == 1 and pool.next_deadline() == pytest.approx(0.1)
    pool.connection_established(1, 0.05)
    assert one(pool.drain_outputs(), GiveConnection).waiter == waiter


def test_claimed_waiter_times_out_and_the_connection_stays() -> None:
    pool = ready_pool(min_pool_size=1, wait_queue_timeout_ms=100)
    pool.check_out(0.0)
    pool.drain_outputs()
    pool.handle_timeout(0.1)
    assert types(pool.drain_outputs()) == ["ConnectionCheckOutFailed", "FailWaiter"]
    pool.connection_established(1, 0.2)
    assert types(pool.drain_outputs()) == ["ConnectionReady"]
    assert pool.available_connection_count == 1


# -- clear ----------------------------------------------------------------------------------------


def test_clear_pauses_and_closes_available_connections() -> None:
    pool = ready_pool()
    in_use, available = check_out_new(pool), check_out_new(pool)
    pool.check_in(available, 0.5)
    pool.drain_outputs()
    pool.clear(2.0)
    out = pool.drain_outputs()
    assert types(out) == ["PoolCleared", "ConnectionClosed", "CloseConnection"]
    assert out[0].interrupt_in_use_connections is False and out[0].service_id is None
    assert out[1].reason is ConnectionClosedReason.STALE
    assert out[1].connection_id == available.connection_id
    assert pool.state is PoolState.PAUSED and pool.generation == 1
    assert pool.is_stale(in_use)
    pool.check_in(in_use, 3.0)
    assert one(pool.drain_outputs(), ConnectionClosed).reason is ConnectionClosedReason.STALE


def test_clear_empties_the_wait_queue() -> None:
    pool = ready_pool(max_pool_size=1)
    check_out_new(pool)
    first, second = pool.check_out(1.0), pool.check_out(1.5)
    pool.drain_outputs()
    pool.clear(2.0)
    out = pool.drain_outputs()
    assert types(out) == ["PoolCleared"] + ["ConnectionCheckOutFailed", "FailWaiter"] * 2
    assert [o.waiter for o in out if isinstance(o, FailWaiter)] == [first, second]
    assert all(isinstance(o.error, PoolClearedError) for o in out if isinstance(o, FailWaiter))
    assert out[1].reason is CheckOutFailedReason.CONNECTION_ERROR and out[1].duration == 1.0
    assert pool.wait_queue_length == 0 and pool.next_deadline() is None


def test_clearing_a_paused_pool_is_silent_but_counts() -> None:
    pool = new_pool()
    pool.drain_outputs()
    pool.clear(0.0)
    assert pool.drain_outputs() == [] and pool.generation == 1
    pool.close(0.0)
    pool.drain_outputs()
    pool.clear(0.0)
    assert pool.drain_outputs() == [] and pool.generation == 1


def test_clear_without_interrupt_lets_an_establishing_waiter_finish() -> None:
    pool = ready_pool()
    waiter = pool.check_out(0.0)
    pool.drain_outputs()
    pool.clear(0.1)
    assert types(pool.drain_outputs()) == ["PoolCleared"]
    pool.connection_established(1, 0.2)
    give = one(pool.drain_outputs(), GiveConnection)
    assert give.waiter == waiter and pool.is_stale(give.connection)


def test_clear_with_interrupt() -> None:
    pool = ready_pool()
    in_use = check_out_new(pool)
    waiter = pool.check_out(1.0)
    pool.drain_outputs()
    pool.clear(2.0, interrupt_in_use_connections=True)
    out = pool.drain_outputs()
    assert types(out) == [
        "PoolCleared",
        "InterruptConnection",
        "ConnectionClosed",
        "CloseConnection",
        "ConnectionCheckOutFailed",
        "FailWaiter",
    ]
    assert out[0].interrupt_in_use_connections is True
    assert out[1].connection_id == in_use.connection_id and out[1].error.interrupted
    assert "interrupted due to server monitor timeout" in str(out[1].error)
    assert out[2].connection_id == 2 and out[5].waiter == waiter
    pool.connection_established(2, 2.5)  # too late: ignored
    assert pool.drain_outputs() == []
    pool.ready(3.0)
    pool.clear(3.0, interrupt_in_use_connections=True)  # interrupted once only
    assert types(pool.drain_outputs()) == ["PoolReady", "PoolCleared"]
    pool.check_in(in_use, 4.0)
    assert one(pool.drain_outputs(), ConnectionClosed).reason is ConnectionClosedReason.STALE


# -- close ----------------------------------------------------------------------------------------


def test_close_closes_everything_it_can_and_fails_waiters() -> None:
    pool = ready_pool(max_pool_size=3)
    in_use, available = check_out_new(pool), check_out_new(pool)
    pool.check_in(available, 0.0)
    establishing = pool.check_out(0.0)  # takes the available one
    pool.drain_outputs()
    establishing = pool.check_out(0.0)  # opens connection 3
    queued = pool.check_out(0.0)
    pool.drain_outputs()
    pool.close(1.0)
    out = pool.drain_outputs()
    assert types(out) == [
        "ConnectionClosed",
        "CloseConnection",
        "ConnectionCheckOutFailed",
        "FailWaiter",
        "ConnectionCheckOutFailed",
        "FailWaiter",
        "PoolClosed",
    ]
    assert out[0].connection_id == 3 and out[0].reason is ConnectionClosedReason.POOL_CLOSED
    assert [o.waiter for o in out if isinstance(o, FailWaiter)] == [establishing, queued]
    assert all(isinstance(o.error, PoolClosedError) for o in out if isinstance(o, FailWaiter))
    pool.close(2.0)
    assert pool.drain_outputs() == []
    pool.check_in(in_use, 3.0)
    assert one(pool.drain_outputs(), ConnectionClosed).reason is ConnectionClosedReason.POOL_CLOSED
    assert pool.total_connection_count == 1  # the one given to the first re-check-out


def test_close_closes_available_before_pool_closed() -> None:
    pool = ready_pool()
    handle = check_out_new(pool)
    pool.check_in(handle, 0.0)
    pool.drain_outputs()
    pool.close(1.0)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionClosed", "CloseConnection", "PoolClosed"]
    assert isinstance(out[-1], PoolClosed)


# -- cancellation ---------------------------------------------------------------------------------


def test_cancel_a_queued_waiter() -> None:
    pool = ready_pool(max_pool_size=1)
    held = check_out_new(pool)
    waiter = pool.check_out(1.0)
    pool.drain_outputs()
    pool.cancel(waiter, 2.0, reason=CheckOutFailedReason.TIMEOUT)
    out = pool.drain_outputs()
    assert types(out) == ["ConnectionCheckOutFailed"] and out[0].reason == "timeout"
    pool.check_in(held, 3.0)
    assert types(pool.drain_outputs()) == ["ConnectionCheckedIn"]
    pool.cancel(waiter, 4.0)  # finished: nothing
    assert pool.drain_outputs() == []


def test_cancel_while_establishing_keeps_the_connection_for_the_next_waiter() -> None:
    pool = ready_pool(max_pool_size=1)
    first = pool.check_out(0.0)
    pool.drain_outputs()
    pool.cancel(first, 0.1)
    second = pool.check_out(0.2)
    out = pool.drain_outputs()
    assert opened(out) == [] and pool.total_connection_count == 1
    pool.connection_established(1, 0.3)
    assert one(pool.drain_outputs(), GiveConnection).waiter == second


def test_cancel_while_establishing_with_no_one_waiting_makes_it_available() -> None:
    pool = ready_pool()
    waiter = pool.check_out(0.0)
    pool.cancel(waiter, 0.1)
    pool.drain_outputs()
    pool.connection_established(1, 0.2)
    assert types(pool.drain_outputs()) == ["ConnectionReady"]
    assert pool.available_connection_count == 1


def test_cancel_after_being_served_checks_the_connection_back_in() -> None:
    pool = ready_pool()
    waiter = pool.check_out(0.0)
    pool.connection_established(1, 0.0)
    pool.drain_outputs()
    pool.cancel(waiter, 0.1)
    assert types(pool.drain_outputs()) == ["ConnectionCheckedIn"]
    assert pool.available_connection_count == 1
    pool.cancel(waiter, 0.2)
    assert pool.drain_outputs() == []


# -- load-balanced mode ---------------------------------------------------------------------------


def lb_check_out(pool: Pool, service: ObjectId, now: float = 0.0, **kw: Any) -> PooledConnection:
    pool.check_out(now, **kw)
    (connection_id,) = opened(pool.drain_outputs())
    pool.connection_established(connection_id, now, service_id=service)
    handle: PooledConnection = one(pool.drain_outputs(), GiveConnection).connection
    return handle


def test_load_balanced_generations_per_service() -> None:
    pool = ready_pool(load_balanced=True)
    a1, a2, b1 = (lb_check_out(pool, s) for s in (SERVICE_A, SERVICE_A, SERVICE_B))
    assert a1.service_id == SERVICE_A and pool.service_connection_count(SERVICE_A) == 2
    pool.check_in(a2, 1.0)
    pool.drain_outputs()
    pool.clear(2.0, service_id=SERVICE_A)
    out = pool.drain_outputs()
    assert types(out) == ["PoolCleared", "ConnectionClosed", "CloseConnection"]
    assert out[0].service_id == SERVICE_A and out[1].connection_id == a2.connection_id
    assert pool.state is PoolState.READY and pool.service_generation(SERVICE_A) == 1
    assert pool.is_stale(a1) and not pool.is_stale(b1)
    pool.check_in(a1, 3.0)
    pool.check_in(b1, 3.0)
    closed = [o for o in pool.drain_outputs() if isinstance(o, ConnectionClosed)]
    assert [c.connection_id for c in closed] == [a1.connection_id]
    assert pool.service_connection_count(SERVICE_A) == 0  # entry dropped at zero
    assert pool.service_generation(SERVICE_A) == 0


def test_load_balanced_misuse() -> None:
    pool = ready_pool(load_balanced=True)
    pool.check_out(0.0)
    pool.drain_outputs()
    with pytest.raises(PoolMisuseError):
        pool.connection_established(1, 0.0)  # no serviceId from the handshake
    with pytest.raises(PoolMisuseError):
        pool.clear(0.0)
    pool.clear(0.0, service_id=SERVICE_B)  # no connection to it: just the event
    assert types(pool.drain_outputs()) == ["PoolCleared"]


def test_load_balanced_timeout_message_counts_purposes() -> None:
    pool = ready_pool(load_balanced=True, max_pool_size=2, wait_queue_timeout_ms=10)
    lb_check_out(pool, SERVICE_A, purpose=CheckoutPurpose.CURSOR)
    lb_check_out(pool, SERVICE_A, purpose=CheckoutPurpose.TRANSACTION)
    pool.check_out(1.0)
    pool.handle_timeout(2.0)
    error = one(pool.drain_outputs(), FailWaiter).error
    assert str(error) == (
        "Timeout waiting for connection from the connection pool. maxPoolSize: 2, connections"
        " in use by cursors: 1, connections in use by transactions: 1, connections in use by"
        " other operations: 0"
    )


def test_load_balanced_interrupt_only_that_service() -> None:
    pool = ready_pool(load_balanced=True)
    a, b = lb_check_out(pool, SERVICE_A), lb_check_out(pool, SERVICE_B)
    pool.clear(1.0, service_id=SERVICE_B, interrupt_in_use_connections=True)
    interrupts = [o for o in pool.drain_outputs() if isinstance(o, InterruptConnection)]
    assert [i.connection_id for i in interrupts] == [b.connection_id]
    assert not pool.is_stale(a)


# -- hypothesis: random adapters, checked after every step ---------------------------------------


class PoolMachine(RuleBasedStateMachine):
    """A random adapter driving one pool; the invariants are the pool's books."""

    options = PoolOptions(
        max_pool_size=3, min_pool_size=1, max_connecting=2, wait_queue_timeout_ms=200,
        max_idle_time_ms=500, populate_backoff_ms=100,
    )  # fmt: skip
    services: tuple[ObjectId, ...] = ()

    def __init__(self) -> None:
        super().__init__()
        self.pool = Pool(ADDRESS, self.options)
        self.now = 0.0
        self.opening: set[int] = set()  # the adapter is running these handshakes
        self.abandoned: set[int] = set()  # the pool closed them mid-handshake
        self.live: set[int] = set()  # opened and not closed
        self.outstanding: set[int] = set()  # waiters with no answer yet
        self.answered: dict[int, str] = {}
        self.held: dict[int, PooledConnection] = {}  # waiter -> connection it holds
        self.started = 0
        self.cancelled = 0
        self.generations = [0]
        self.absorb()

    def absorb(self) -> None:
        closed_events: list[int] = []
        for output in self.pool.drain_outputs():
            if isinstance(output, ConnectionCheckOutStarted):
                self.started += 1
            elif isinstance(output, ConnectionClosed):
                closed_events.append(output.connection_id)
            elif isinstance(output, OpenConnection):
                assert output.connection_id not in self.live
                self.live.add(output.connection_id)
                self.opening.add(output.connection_id)
            elif isinstance(output, CloseConnection):
                assert closed_events.pop() == output.connection_id
                self.live.remove(output.connection_id)
                if output.connection_id in self.opening:
                    self.opening.remove(output.connection_id)
                    self.abandoned.add(output.connection_id)
            elif isinstance(output, GiveConnection):
                assert output.waiter in self.outstanding, "answered twice, or after cancel"
                self.outstanding.remove(output.waiter)
                self.answered[output.waiter] = "give"
                assert output.connection.connection_id in self.live
                assert all(
                    h.connection_id != output.connection.connection_id for h in self.held.values()
                ), "one connection given to two waiters"
                self.held[output.waiter] = output.connection
            elif isinstance(output, FailWaiter):
                assert output.waiter in self.outstanding, "answered twice, or after cancel"
                self.outstanding.remove(output.waiter)
                self.answered[output.waiter] = "fail"
            elif isinstance(output, InterruptConnection):
                assert any(h.connection_id == output.connection_id for h in self.held.values())
        assert not closed_events, "a ConnectionClosed without its CloseConnection"
        self.generations.append(self.pool.generation)

    def tick(self, dt: float) -> None:
        self.now += dt

    @rule(dt=st.sampled_from([0.0, 0.0, 0.05, 0.2]), timeout=st.sampled_from([None, 0.0, 0.3]))
    def check_out(self, dt: float, timeout: float | None) -> None:
        self.tick(dt)
        waiter = self.pool.check_out(self.now, timeout=timeout)
        self.outstanding.add(waiter)
        self.absorb()

    @precondition(lambda self: self.opening)
    @rule(data=st.data(), dt=st.sampled_from([0.0, 0.1]))
    def establish(self, data: st.DataObject, dt: float) -> None:
        self.tick(dt)
        connection_id = data.draw(st.sampled_from(sorted(self.opening)))
        self.opening.remove(connection_id)
        service = data.draw(st.sampled_from(self.services)) if self.services else None
        self.pool.connection_established(connection_id, self.now, service_id=service)
        self.absorb()

    @precondition(lambda self: self.opening)
    @rule(data=st.data())
    def fail(self, data: st.DataObject) -> None:
        connection_id = data.draw(st.sampled_from(sorted(self.opening)))
        self.opening.remove(connection_id)
        self.pool.connection_failed(connection_id, self.now, OSError("refused"))
        self.absorb()

    @precondition(lambda self: self.abandoned)
    @rule(data=st.data(), ok=st.booleans())
    def late_result(self, data: st.DataObject, ok: bool) -> None:
        connection_id = data.draw(st.sampled_from(sorted(self.abandoned)))
        self.abandoned.remove(connection_id)
        if ok:
            service = self.services[0] if self.services else None
            self.pool.connection_established(connection_id, self.now, service_id=service)
        else:
            self.pool.connection_failed(connection_id, self.now, OSError("late"))
        assert self.pool.drain_outputs() == [], "a late result changed something"

    @precondition(lambda self: self.held)
    @rule(data=st.data(), broken=st.booleans(), dt=st.sampled_from([0.0, 0.1]))
    def check_in(self, data: st.DataObject, broken: bool, dt: float) -> None:
        self.tick(dt)
        waiter = data.draw(st.sampled_from(sorted(self.held)))
        handle = self.held.pop(waiter)
        self.pool.check_in(handle, self.now, error=OSError("broken") if broken else None)
        self.absorb()
        with pytest.raises(ConnectionStateError):
            self.pool.check_in(handle, self.now)

    @precondition(lambda self: self.started)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        waiter = data.draw(st.integers(1, self.started))
        if waiter in self.outstanding:
            self.outstanding.remove(waiter)
            self.cancelled += 1
        self.held.pop(waiter, None)  # a served waiter's connection goes back by itself
        self.pool.cancel(waiter, self.now)
        self.absorb()

    @rule(interrupt=st.booleans(), data=st.data())
    def clear(self, interrupt: bool, data: st.DataObject) -> None:
        service = data.draw(st.sampled_from(self.services)) if self.services else None
        self.pool.clear(self.now, service_id=service, interrupt_in_use_connections=interrupt)
        self.absorb()

    @rule()
    def ready(self) -> None:
        self.pool.ready(self.now)
        self.absorb()

    @precondition(lambda self: self.started > 6)
    @rule()
    def close(self) -> None:
        self.pool.close(self.now)
        self.absorb()
        assert not self.outstanding, "close left a waiter unanswered"

    @rule(dt=st.sampled_from([0.01, 0.1, 0.25, 1.0]))
    def advance(self, dt: float) -> None:
        self.tick(dt)
        deadline = self.pool.next_deadline()
        if deadline is not None and deadline <= self.now:
            self.pool.handle_timeout(self.now)
            self.absorb()
            after = self.pool.next_deadline()
            assert after is None or after > self.now, "handle_timeout left work due"

    @invariant()
    def books_balance(self) -> None:
        pool = self.pool
        total = pool.total_connection_count
        assert total == len(self.live)
        assert pool.pending_connection_count == len(self.opening)
        assert pool.in_use_connection_count == len(self.held)
        assert (
            pool.available_connection_count
            + pool.pending_connection_count
            + pool.in_use_connection_count
            == total
        )
        if self.options.max_pool_size:
            assert total <= self.options.max_pool_size
        assert pool.pending_connection_count <= self.options.max_connecting
        assert self.generations == sorted(self.generations)
        assert self.started == len(self.answered) + len(self.outstanding) + self.cancelled
        if pool.state is PoolState.CLOSED:
            assert pool.available_connection_count == pool.pending_connection_count == 0
            assert not self.outstanding

    @invariant()
    def nobody_waits_for_nothing(self) -> None:
        pool = self.pool
        queued = pool._queue  # the wait queue proper (not the waiters tied to a connection)
        if queued and pool.state is PoolState.READY:
            assert pool.available_connection_count == 0
            assert not pool._may_open()
            assert pool._claimable() is None


class LoadBalancedPoolMachine(PoolMachine):
    options = PoolOptions(
        max_pool_size=2, max_connecting=1, wait_queue_timeout_ms=300, load_balanced=True,
    )  # fmt: skip
    services = (SERVICE_A, SERVICE_B)


class UnlimitedPoolMachine(PoolMachine):
    options = PoolOptions(max_pool_size=0, min_pool_size=2, max_connecting=3)


_settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)  # fmt: skip
TestPoolMachine = PoolMachine.TestCase
TestPoolMachine.settings = _settings
TestLoadBalancedPoolMachine = LoadBalancedPoolMachine.TestCase
TestLoadBalancedPoolMachine.settings = _settings
TestUnlimitedPoolMachine = UnlimitedPoolMachine.TestCase
TestUnlimitedPoolMachine.settings = _settings


# -- a pool nobody listens to ---------------------------------------------------------------------


def _scenario(pool: Pool) -> list[Output]:
    """Check-outs (new and reused connections, a queued one, a timed-out one), check-ins, a
    clear and a close; every output in order."""
    out: list[Output] = []
    pool.ready(0.0)
    first = pool.check_out(0.0)
    out += pool.drain_outputs()
    (opening,) = opened(out)
    pool.connection_established(opening, 0.1)
    out += pool.drain_outputs()
    handle = next(o.connection for o in out if isinstance(o, GiveConnection) and o.waiter == first)
    pool.check_out(0.2, timeout=0.5)  # waits: maxPoolSize is 1
    out += pool.drain_outputs()
    pool.handle_timeout(1.0)  # ... and times out
    out += pool.drain_outputs()
    pool.check_in(handle, 1.1)
    again = pool.check_out(1.2)  # reuses the idle connection
    out += pool.drain_outputs()
    reused = next(o.connection for o in out if isinstance(o, GiveConnection) and o.waiter == again)
    pool.clear(1.3)
    pool.check_in(reused, 1.4)  # stale: closed
    pool.close(1.5)
    out += pool.drain_outputs()
    return out


def test_a_pool_without_events_gives_the_same_actions_and_no_event() -> None:
    loud = _scenario(Pool(ADDRESS, PoolOptions(max_pool_size=1)))
    quiet = _scenario(Pool(ADDRESS, PoolOptions(max_pool_size=1), events=False))
    assert any(isinstance(o, ConnectionCheckedIn) for o in loud)  # the scenario has events
    assert not any(
        isinstance(o, PoolCreated | ConnectionCheckedIn | ConnectionClosed) for o in quiet
    )
    assert quiet == [o for o in loud if not type(o).__module__.endswith(".events")]
    assert any(isinstance(o, FailWaiter) for o in quiet)  # the timed-out waiter is answered
