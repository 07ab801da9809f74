"""Actions: what the pool asks its adapter to do, and the connection handles it hands out.

The adapter carries each action out and reports back through the pool's inputs:

* :class:`OpenConnection` -- open a socket to the pool's address, run the handshake (and auth),
  then call ``Pool.connection_established`` or ``Pool.connection_failed`` with the same id.
* :class:`CloseConnection` -- close that connection's socket, without blocking; if it was still
  being established, abandon the attempt (a late result for it is ignored by the pool).
* :class:`InterruptConnection` -- cancel whatever the checked-out connection is doing and close
  its socket; the operation fails with ``error``, and the connection is still checked in.
* :class:`GiveConnection` -- wake ``waiter`` with ``connection``.
* :class:`FailWaiter` -- wake ``waiter`` with ``error`` (raise it in the waiting task).

Every :class:`~mongo_sansio.cmap.events.ConnectionClosed` event comes with a
:class:`CloseConnection` for the same id, and every waiter gets exactly one of
:class:`GiveConnection` / :class:`FailWaiter` unless the caller cancelled it first.
"""

from __future__ import annotations

import attrs

from mongo_sansio.bson.objectid import ObjectId
from mongo_sansio.cmap.errors import PoolClearedError
from mongo_sansio.cmap.events import ConnectionClosedReason

__all__ = [
    "PooledConnection",
    "PoolAction",
    "OpenConnection",
    "CloseConnection",
    "InterruptConnection",
    "GiveConnection",
    "FailWaiter",
]


def _positive(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if type(value) is int and value > 0:  # (the pool's own counters: no isinstance calls)
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{attribute.name} must be a positive integer, not {value!r}")


@attrs.frozen(kw_only=True)
class PooledConnection:
    """A checked-out connection as the pool knows it; give it back to ``Pool.check_in``.

    ``generation`` is the pool's (or, load-balanced, its service's) generation when the
    connection was made; ``waiter`` is the check-out it was given to.  ``pool_token``
    identifies the pool that created the handle, so that a connection cannot be checked in to
    another pool; it takes no part in equality.
    """

    # (no validators: only the pool makes these, from its own counters, one per check-out)
    address: str
    connection_id: int
    generation: int
    service_id: ObjectId | None = None
    waiter: int
    pool_token: object = attrs.field(eq=False, repr=False)


@attrs.frozen(kw_only=True)
class PoolAction:
    """Base of every action; ``address`` is the pool's server address."""

    address: str


@attrs.frozen(kw_only=True)
class OpenConnection(PoolAction):
    connection_id: int = attrs.field(validator=_positive)


@attrs.frozen(kw_only=True)
class CloseConnection(PoolAction):
    connection_id: int = attrs.field(validator=_positive)
    reason: ConnectionClosedReason = attrs.field(
        validator=attrs.validators.instance_of(ConnectionClosedReason)
    )


@attrs.frozen(kw_only=True)
class InterruptConnection(PoolAction):
    connection_id: int = attrs.field(validator=_positive)
    error: PoolClearedError = attrs.field(
        validator=attrs.validators.instance_of(PoolClearedError), eq=False
    )


@attrs.frozen(kw_only=True)
class GiveConnection(PoolAction):
    # (no validators, as for PooledConnection: one is made per check-out)
    waiter: int
    connection: PooledConnection


@attrs.frozen(kw_only=True)
class FailWaiter(PoolAction):
    waiter: int = attrs.field(validator=_positive)
    error: BaseException = attrs.field(
        validator=attrs.validators.instance_of(BaseException), eq=False
    )
