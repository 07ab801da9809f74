"""Connection monitoring and pooling: the pure pool machine (docs/architecture.md).

Inputs: check-out requests, cancellations, connection results, check-ins, ready/clear/close and
``now``.  Outputs: monitoring events (:mod:`.events`) and actions for the adapter
(:mod:`.actions`), pulled from :class:`Pool` in order.  See :mod:`.pool` for the theory of
operation.
"""

from mongo_sansio.cmap.actions import (
    CloseConnection,
    FailWaiter,
    GiveConnection,
    InterruptConnection,
    OpenConnection,
    PoolAction,
    PooledConnection,
)
from mongo_sansio.cmap.errors import (
    ConnectionStateError,
    PoolClearedError,
    PoolClosedError,
    PoolError,
    PoolMisuseError,
    UnknownConnectionError,
    UnknownWaiterError,
    WaitQueueTimeoutError,
)
from mongo_sansio.cmap.events import (
    CheckOutFailedReason,
    ConnectionCheckedIn,
    ConnectionCheckedOut,
    ConnectionCheckOutFailed,
    ConnectionCheckOutStarted,
    ConnectionClosed,
    ConnectionClosedReason,
    ConnectionCreated,
    ConnectionReady,
    PoolCleared,
    PoolClosed,
    PoolCreated,
    PoolEvent,
    PoolReady,
)
from mongo_sansio.cmap.options import PoolOptions
from mongo_sansio.cmap.pool import (
    CHECK_OUT_REFUSALS,
    TRANSITIONS,
    CheckoutPurpose,
    Output,
    Pool,
    PoolInput,
    PoolState,
)

__all__ = [
    "Pool",
    "PoolOptions",
    "PoolState",
    "PoolInput",
    "CheckoutPurpose",
    "Output",
    "TRANSITIONS",
    "CHECK_OUT_REFUSALS",
    # actions
    "PoolAction",
    "PooledConnection",
    "OpenConnection",
    "CloseConnection",
    "InterruptConnection",
    "GiveConnection",
    "FailWaiter",
    # events
    "PoolEvent",
    "PoolCreated",
    "PoolReady",
    "PoolCleared",
    "PoolClosed",
    "ConnectionCreated",
    "ConnectionReady",
    "ConnectionClosed",
    "ConnectionClosedReason",
    "ConnectionCheckOutStarted",
    "ConnectionCheckOutFailed",
    "CheckOutFailedReason",
    "ConnectionCheckedOut",
    "ConnectionCheckedIn",
    # errors
    "PoolError",
    "PoolClosedError",
    "PoolClearedError",
    "WaitQueueTimeoutError",
    "PoolMisuseError",
    "UnknownConnectionError",
    "ConnectionStateError",
    "UnknownWaiterError",
]
