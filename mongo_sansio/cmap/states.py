"""The pool's states and transition table, as data, and the records the pool keeps.

``TRANSITIONS`` maps (state, input) to the next state for the inputs that move the pool between
paused, ready and closed; ``CHECK_OUT_REFUSALS`` says what a check-out meets in each state.  The
pool looks an input up before it changes anything.  ``ConnectionRecord`` and ``WaiterRecord``
are the pool's private bookkeeping (mutable; never handed out).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from mongo_sansio._state_enum import StateEnum
from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.cmap.events import CheckOutFailedReason

__all__ = [
    "PoolState",
    "PoolInput",
    "TRANSITIONS",
    "CHECK_OUT_REFUSALS",
    "CheckoutPurpose",
    "ConnState",
    "ConnectionRecord",
    "WaiterStage",
    "WaiterRecord",
]


class PoolState(StateEnum):
    PAUSED = "paused"
    READY = "ready"
    CLOSED = "closed"


class PoolInput(StateEnum):
    READY = "ready"
    CLEAR = "clear"  # not load-balanced: bumps the generation, pauses, empties the wait queue
    CLEAR_SERVICE = "clear(serviceId)"  # load-balanced: bumps one service's generation only
    CLOSE = "close"


# (state, input) -> next state.  Pairs that map a state to itself without a side effect are
# no-ops by the specification: readying a ready pool, and anything but close on a closed pool.
TRANSITIONS: Mapping[tuple[PoolState, PoolInput], PoolState] = MappingProxyType(
    {
        (PoolState.PAUSED, PoolInput.READY): PoolState.READY,
        (PoolState.READY, PoolInput.READY): PoolState.READY,
        (PoolState.CLOSED, PoolInput.READY): PoolState.CLOSED,
        (PoolState.PAUSED, PoolInput.CLEAR): PoolState.PAUSED,
        (PoolState.READY, PoolInput.CLEAR): PoolState.PAUSED,
        (PoolState.CLOSED, PoolInput.CLEAR): PoolState.CLOSED,
        (PoolState.PAUSED, PoolInput.CLEAR_SERVICE): PoolState.PAUSED,
        (PoolState.READY, PoolInput.CLEAR_SERVICE): PoolState.READY,
        (PoolState.CLOSED, PoolInput.CLEAR_SERVICE): PoolState.CLOSED,
        (PoolState.PAUSED, PoolInput.CLOSE): PoolState.CLOSED,
        (PoolState.READY, PoolInput.CLOSE): PoolState.CLOSED,
        (PoolState.CLOSED, PoolInput.CLOSE): PoolState.CLOSED,
    }
)

# What a check-out meets in each state: None to queue it, otherwise why it fails at once.
CHECK_OUT_REFUSALS: Mapping[PoolState, CheckOutFailedReason | None] = MappingProxyType(
    {
        PoolState.READY: None,
        PoolState.PAUSED: CheckOutFailedReason.CONNECTION_ERROR,
        PoolState.CLOSED: CheckOutFailedReason.POOL_CLOSED,
    }
)


class CheckoutPurpose(enum.StrEnum):
    """Why a connection is checked out (the load balancer spec's connection tracking)."""

    CURSOR = "cursor"
    TRANSACTION = "transaction"
    OTHER = "other"


class ConnState(enum.Enum):
    """Where a connection is in its life (the specification's Connection.state)."""

    PENDING = "pending"
    AVAILABLE = "available"
    IN_USE = "in use"


@attrs.define(eq=False)
class ConnectionRecord:
    id: int
    generation: int
    created_at: float
    state: ConnState = ConnState.PENDING
    owner: int | None = None  # the waiter it is opened for, or that holds it
    service_id: ObjectId | None = None
    available_since: float = 0.0
    interrupted: bool = False
    purpose: CheckoutPurpose = CheckoutPurpose.OTHER


class WaiterStage(enum.Enum):
    QUEUED = "queued"  # in the wait queue
    CLAIMED = "claimed"  # waiting for a background connection it claimed (still "waiting")
    ESTABLISHING = "establishing"  # left the queue; its own connection is being opened


@attrs.define(eq=False)
class WaiterRecord:
    id: int
    started: float
    deadline: float | None
    purpose: CheckoutPurpose
    stage: WaiterStage = WaiterStage.QUEUED
    connection_id: int | None = None
    #: its deadline also bounds the opening of its own connection (an explicit check-out
    #: timeout: client-side operations timeout); waitQueueTimeoutMS does not (CMAP)
    bounds_opening: bool = False
